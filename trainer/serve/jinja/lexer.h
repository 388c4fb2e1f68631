// Splits a template into text and tag tokens the way jinja2's lexer does with HF's settings
// (trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False): the whitespace rules decide
// the rendered bytes, so they follow jinja2/lexer.py rule by rule (see lexer.cc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fabkit::trainer::serve::jinja {

struct Token {
  enum class Type {
    kText,
    kVarBegin,
    kVarEnd,
    kBlockBegin,
    kBlockEnd,
    kName,
    kString,
    kInt,
    kFloat,
    kOp,
    kEof
  };
  Type type;
  std::string value;  // text, name, operator, or the decoded string literal
  size_t offset;      // byte offset in the normalized source
  int64_t int_value = 0;
  double float_value = 0;
};

// The source with newlines normalized to "\n" and one trailing newline removed, as jinja2 does
// before lexing; token offsets refer to it.
std::string normalize_source(const std::string& source);

// Throws TemplateError (kSyntax, or kUnsupported for {% raw %}) with line:column.
std::vector<Token> tokenize(const std::string& normalized_source);

}  // namespace fabkit::trainer::serve::jinja
