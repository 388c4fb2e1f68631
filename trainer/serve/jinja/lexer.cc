#include "trainer/serve/jinja/lexer.h"

#include <cstdlib>

#include "trainer/serve/jinja/error.h"
#include "trainer/serve/jinja/unicode.h"

namespace fabkit::trainer::serve::jinja {

namespace {

[[noreturn]] void fail(const std::string& src, size_t offset, ErrorKind kind,
                       const std::string& message) {
  int line, column;
  line_column(src, offset, &line, &column);
  throw TemplateError(kind, line, column, message);
}

// Decodes the code point at s[i], returning its length in bytes.
char32_t code_point_at(const std::string& s, size_t i, size_t* len) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  size_t n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : 4;
  if (i + n > s.size()) n = 1;
  std::u32string cp = utf8_decode(s.substr(i, n));
  *len = n;
  return cp.empty() ? 0xFFFD : cp[0];
}

// Skips Python-regex \s* (Unicode whitespace) from i.
size_t skip_space(const std::string& s, size_t i) {
  while (i < s.size()) {
    size_t len;
    if (!py_isspace(code_point_at(s, i, &len))) break;
    i += len;
  }
  return i;
}

// Python's str.rstrip(): removes trailing Unicode whitespace.
std::string rstrip_space(const std::string& s) {
  std::u32string cps = utf8_decode(s);
  while (!cps.empty() && py_isspace(cps.back())) cps.pop_back();
  return utf8_encode(cps);
}

bool all_space(const std::string& s) {
  if (s.empty()) return false;  // jinja2 tests the text with \s+, which needs one character
  for (char32_t c : utf8_decode(s))
    if (!py_isspace(c)) return false;
  return true;
}

// jinja2 decodes string literals with Python's "unicode-escape" codec after escaping non-ASCII
// characters, so the escapes are Python's: \n \t \\ \' \" \xHH \uHHHH \UHHHHHHHH \ooo \a \b \f \v
// \r, an unknown escape keeps its backslash.
std::string unescape(const std::string& src, size_t offset, const std::string& body) {
  std::string out;
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (c != '\\' || i + 1 >= body.size()) {
      out.push_back(c);
      continue;
    }
    char e = body[++i];
    auto hex = [&](int digits) {
      std::string h = body.substr(i + 1, digits);
      if (h.size() != static_cast<size_t>(digits) ||
          h.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
        fail(src, offset, ErrorKind::kSyntax, "truncated \\x, \\u or \\U escape in a string");
      i += digits;
      utf8_append(out, static_cast<char32_t>(std::strtoul(h.c_str(), nullptr, 16)));
    };
    switch (e) {
      case '\n':
        break;  // line continuation
      case '\\':
        out.push_back('\\');
        break;
      case '\'':
        out.push_back('\'');
        break;
      case '"':
        out.push_back('"');
        break;
      case 'a':
        out.push_back('\a');
        break;
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'v':
        out.push_back('\v');
        break;
      case 'x':
        hex(2);
        break;
      case 'u':
        hex(4);
        break;
      case 'U':
        hex(8);
        break;
      case 'N':
        fail(src, offset, ErrorKind::kUnsupported, "the \\N{...} escape in a string");
      default:
        if (e >= '0' && e <= '7') {
          unsigned v = e - '0';
          for (int k = 0; k < 2 && i + 1 < body.size() && body[i + 1] >= '0' && body[i + 1] <= '7';
               ++k)
            v = v * 8 + (body[++i] - '0');
          utf8_append(out, v);
        } else {
          out.push_back('\\');
          out.push_back(e);
        }
    }
  }
  return out;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

// Digits with Python's optional single underscores between them: (\d+_)*\d+
size_t scan_digits(const std::string& s, size_t i) {
  size_t j = i;
  while (true) {
    size_t k = j;
    while (k < s.size() && is_digit(s[k])) ++k;
    if (k == j) return j == i ? i : j;
    j = k;
    if (j + 1 < s.size() && s[j] == '_' && is_digit(s[j + 1])) {
      ++j;
      continue;
    }
    return j;
  }
}

std::string without_underscores(std::string s) {
  std::string out;
  for (char c : s)
    if (c != '_') out.push_back(c);
  return out;
}

class Lexer {
 public:
  explicit Lexer(const std::string& src) : src_(src) {}

  std::vector<Token> run() {
    size_t pos = 0;
    bool line_starting = true;
    while (pos < src_.size()) {
      size_t begin = find_tag(pos);
      if (begin == std::string::npos) {
        emit(Token::Type::kText, src_.substr(pos), pos);
        break;
      }
      char kind = src_[begin + 1];  // '{', '%' or '#'
      size_t after = begin + 2;
      char sign =
          after < src_.size() && (src_[after] == '-' || src_[after] == '+') ? src_[after] : 0;
      if (sign) ++after;
      std::string text = src_.substr(pos, begin - pos);
      if (sign == '-') {
        text = rstrip_space(text);
      } else if (sign != '+' && kind != '{') {
        // lstrip_blocks: only whitespace between the line start and a block or comment tag.
        size_t l_pos = text.rfind('\n');
        l_pos = l_pos == std::string::npos ? 0 : l_pos + 1;
        if ((l_pos > 0 || line_starting) && all_space(text.substr(l_pos))) text.resize(l_pos);
      }
      if (!text.empty()) emit(Token::Type::kText, text, pos);
      if (kind == '%' && is_raw(after)) {
        fail(src_, begin, ErrorKind::kUnsupported, "'{% raw %}' is not supported");
      }
      if (kind == '#') {
        pos = comment(begin, after, &line_starting);
      } else {
        pos = tag(begin, after, kind == '%', &line_starting);
      }
    }
    emit(Token::Type::kEof, "", src_.size());
    return std::move(tokens_);
  }

 private:
  size_t find_tag(size_t from) const {
    for (size_t i = from; i + 1 < src_.size(); ++i) {
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#'))
        return i;
    }
    return std::string::npos;
  }

  bool is_raw(size_t after) const {
    size_t i = skip_space(src_, after);
    return src_.compare(i, 3, "raw") == 0 && (i + 3 >= src_.size() || !is_name_char(src_[i + 3]));
  }

  void emit(Token::Type type, std::string value, size_t offset) {
    tokens_.push_back(Token{type, std::move(value), offset});
  }

  size_t comment(size_t begin, size_t after, bool* line_starting) {
    size_t end = src_.find("#}", after);
    if (end == std::string::npos)
      fail(src_, begin, ErrorKind::kSyntax, "missing end of comment tag");
    size_t pos = end + 2;
    char sign = end > after && (src_[end - 1] == '-' || src_[end - 1] == '+') ? src_[end - 1] : 0;
    if (sign == '-') {
      pos = skip_space(src_, pos);
    } else if (sign != '+' && pos < src_.size() && src_[pos] == '\n') {
      ++pos;  // trim_blocks
    }
    *line_starting = pos > 0 && src_[pos - 1] == '\n';
    return pos;
  }

  // Tokenizes the inside of {{ }} or {% %} up to its end; returns the position after it.
  size_t tag(size_t begin, size_t pos, bool block, bool* line_starting) {
    emit(block ? Token::Type::kBlockBegin : Token::Type::kVarBegin, "", begin);
    std::vector<char> balancing;
    const char* close = block ? "%}" : "}}";
    while (true) {
      if (pos >= src_.size())
        fail(src_, begin, ErrorKind::kSyntax,
             std::string("unexpected end of template: the tag opened here has no '") + close + "'");
      // An end delimiter closes the tag only outside brackets, as in jinja2.
      if (balancing.empty()) {
        size_t end = std::string::npos;
        if (src_.compare(pos, 3, std::string("-") + close) == 0) {
          emit(block ? Token::Type::kBlockEnd : Token::Type::kVarEnd, "", pos);
          end = skip_space(src_, pos + 3);
        } else if (block && src_.compare(pos, 3, std::string("+") + close) == 0) {
          emit(Token::Type::kBlockEnd, "", pos);
          end = pos + 3;
        } else if (src_.compare(pos, 2, close) == 0) {
          emit(block ? Token::Type::kBlockEnd : Token::Type::kVarEnd, "", pos);
          end = pos + 2;
          if (block && end < src_.size() && src_[end] == '\n') ++end;  // trim_blocks
        }
        if (end != std::string::npos) {
          *line_starting = end > 0 && src_[end - 1] == '\n';
          return end;
        }
      }
      size_t len;
      char32_t cp = code_point_at(src_, pos, &len);
      if (py_isspace(cp)) {
        pos += len;
        continue;
      }
      char c = src_[pos];
      if (is_digit(c)) {
        pos = number(pos);
        continue;
      }
      if (is_name_start(c)) {
        size_t j = pos;
        while (j < src_.size() && is_name_char(src_[j])) ++j;
        emit(Token::Type::kName, src_.substr(pos, j - pos), pos);
        pos = j;
        continue;
      }
      if (c == '\'' || c == '"') {
        pos = string_literal(pos);
        continue;
      }
      static const char* const kTwo[] = {"//", "**", "==", "!=", ">=", "<="};
      bool matched = false;
      for (const char* op : kTwo) {
        if (src_.compare(pos, 2, op) == 0) {
          emit(Token::Type::kOp, op, pos);
          pos += 2;
          matched = true;
          break;
        }
      }
      if (matched) continue;
      if (std::string("+-/*%~[](){}><=.:|,;").find(c) != std::string::npos) {
        if (c == '(' || c == '[' || c == '{') {
          balancing.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
        } else if (c == ')' || c == ']' || c == '}') {
          if (balancing.empty())
            fail(src_, pos, ErrorKind::kSyntax, std::string("unexpected '") + c + "'");
          if (balancing.back() != c)
            fail(src_, pos, ErrorKind::kSyntax,
                 std::string("unexpected '") + c + "', expected '" + balancing.back() + "'");
          balancing.pop_back();
        }
        emit(Token::Type::kOp, std::string(1, c), pos);
        ++pos;
        continue;
      }
      fail(src_, pos, ErrorKind::kSyntax,
           "unexpected character '" + src_.substr(pos, len) + "' in a tag");
    }
  }

  size_t number(size_t pos) {
    size_t int_end = scan_digits(src_, pos);
    // Float: digits '.' digits [exponent] | digits exponent
    size_t j = int_end;
    bool is_float = false;
    if (j + 1 < src_.size() && src_[j] == '.' && is_digit(src_[j + 1])) {
      j = scan_digits(src_, j + 1);
      is_float = true;
    }
    if (j < src_.size() && (src_[j] == 'e' || src_[j] == 'E')) {
      size_t k = j + 1;
      if (k < src_.size() && (src_[k] == '+' || src_[k] == '-')) ++k;
      size_t e = scan_digits(src_, k);
      if (e > k) {
        j = e;
        is_float = true;
      }
    }
    std::string text = without_underscores(src_.substr(pos, (is_float ? j : int_end) - pos));
    if (is_float) {
      Token t{Token::Type::kFloat, text, pos};
      t.float_value = std::strtod(text.c_str(), nullptr);
      tokens_.push_back(t);
      return j;
    }
    if (text.size() > 1 && text[0] == '0' && text.find_first_not_of('0') != std::string::npos) {
      fail(src_, pos, ErrorKind::kUnsupported,
           "the integer literal '" + text + "' (leading zeros, or 0x/0o/0b prefixes)");
    }
    if (int_end < src_.size() && is_name_start(src_[int_end]))
      fail(src_, pos, ErrorKind::kUnsupported,
           "the number literal at '" + src_.substr(pos, int_end - pos + 1) +
               "' (hexadecimal, octal and binary literals)");
    errno = 0;
    Token t{Token::Type::kInt, text, pos};
    t.int_value = std::strtoll(text.c_str(), nullptr, 10);
    if (errno == ERANGE)
      fail(src_, pos, ErrorKind::kUnsupported, "the integer " + text + " (beyond 64-bit)");
    tokens_.push_back(t);
    return int_end;
  }

  size_t string_literal(size_t pos) {
    char quote = src_[pos];
    size_t j = pos + 1;
    while (j < src_.size() && src_[j] != quote) {
      if (src_[j] == '\\') ++j;
      ++j;
    }
    if (j >= src_.size()) fail(src_, pos, ErrorKind::kSyntax, "unterminated string literal");
    emit(Token::Type::kString, unescape(src_, pos, src_.substr(pos + 1, j - pos - 1)), pos);
    return j + 1;
  }

  const std::string& src_;
  std::vector<Token> tokens_;
};

}  // namespace

std::string normalize_source(const std::string& source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out.push_back(source[i]);
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();  // keep_trailing_newline=False
  return out;
}

std::vector<Token> tokenize(const std::string& normalized_source) {
  return Lexer(normalized_source).run();
}

}  // namespace fabkit::trainer::serve::jinja
