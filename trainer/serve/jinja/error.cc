#include "trainer/serve/jinja/error.h"

namespace fabkit::trainer::serve::jinja {

const char* to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kSyntax:
      return "syntax";
    case ErrorKind::kUnsupported:
      return "unsupported";
    case ErrorKind::kRuntime:
      return "runtime";
    case ErrorKind::kRaised:
      return "raised";
    case ErrorKind::kLimit:
      return "limit";
  }
  return "unknown";
}

TemplateError::TemplateError(ErrorKind kind, int line, int column, const std::string& detail)
    : std::runtime_error(
          "chat template line " + std::to_string(line) + ":" + std::to_string(column) + ": " +
          (kind == ErrorKind::kRaised ? "the template refused the input: " : "") + detail),
      kind_(kind),
      line_(line),
      column_(column),
      detail_(detail) {}

void line_column(const std::string& source, size_t offset, int* line, int* column) {
  int l = 1, c = 1;
  for (size_t i = 0; i < offset && i < source.size(); ++i) {
    unsigned char ch = static_cast<unsigned char>(source[i]);
    if (ch == '\n') {
      ++l;
      c = 1;
    } else if ((ch & 0xC0) != 0x80) {
      ++c;  // count code points, not UTF-8 continuation bytes
    }
  }
  *line = l;
  *column = c;
}

}  // namespace fabkit::trainer::serve::jinja
