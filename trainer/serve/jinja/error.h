// Errors of the chat-template engine. Every error carries the 1-based line and column in the
// template where it arose, so a refused or failing template points at the construct to change.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace fabkit::trainer::serve::jinja {

enum class ErrorKind {
  kSyntax,       // malformed template: unclosed tag, bad expression, unknown tag
  kUnsupported,  // valid Jinja that this engine does not implement (named in the message)
  kRuntime,      // what jinja2 fails on too: undefined attribute, type error, bad call
  kRaised,       // the template called raise_exception(message)
  kLimit,        // output size, loop iterations or recursion depth over the configured bound
};

const char* to_string(ErrorKind kind);

class TemplateError : public std::runtime_error {
 public:
  // detail is the message without the position; what() is "chat template line L:C: detail".
  TemplateError(ErrorKind kind, int line, int column, const std::string& detail);
  ErrorKind kind() const { return kind_; }
  int line() const { return line_; }
  int column() const { return column_; }
  const std::string& detail() const { return detail_; }

 private:
  ErrorKind kind_;
  int line_, column_;
  std::string detail_;
};

// A position in the template source: a byte offset, turned into line:column when reported.
struct Pos {
  size_t offset = 0;
};

// Line and column (1-based, columns in code points) of a byte offset.
void line_column(const std::string& source, size_t offset, int* line, int* column);

}  // namespace fabkit::trainer::serve::jinja

namespace fabkit::trainer::serve::jinja {

// Thrown by value operations and builtins, which know no template position; the renderer adds
// the position of the expression being evaluated and rethrows a TemplateError.
class EvalError : public std::runtime_error {
 public:
  EvalError(ErrorKind kind, const std::string& message)
      : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

}  // namespace fabkit::trainer::serve::jinja
