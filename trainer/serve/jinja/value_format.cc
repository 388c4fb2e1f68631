// str(), repr() and json.dumps() of values, with CPython's formatting rules (see value.h).
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "trainer/serve/jinja/error.h"
#include "trainer/serve/jinja/unicode.h"
#include "trainer/serve/jinja/value.h"

namespace fabkit::trainer::serve::jinja {

namespace {

[[noreturn]] void runtime(const std::string& message) {
  throw EvalError(ErrorKind::kRuntime, message);
}

void check_depth(int depth) {
  if (depth > kMaxValueDepth)
    throw EvalError(ErrorKind::kLimit,
                    "a value nested deeper than " + std::to_string(kMaxValueDepth) + " levels");
}

void append_hex(std::string& out, const char* prefix, unsigned value, int width) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%0*x", width, value);
  out += prefix;
  out += buf;
}

std::string repr_string(const std::string& s) {
  std::u32string cps = utf8_decode(s);
  bool has_single = false, has_double = false;
  for (char32_t c : cps) {
    has_single |= c == '\'';
    has_double |= c == '"';
  }
  char32_t quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, static_cast<char>(quote));
  for (char32_t c : cps) {
    if (c == quote || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (!py_isprintable(c)) {
      if (c <= 0xFF) {
        append_hex(out, "\\x", c, 2);
      } else if (c <= 0xFFFF) {
        append_hex(out, "\\u", c, 4);
      } else {
        append_hex(out, "\\U", c, 8);
      }
    } else {
      utf8_append(out, c);
    }
  }
  out.push_back(static_cast<char>(quote));
  return out;
}

std::string repr_at(const Value& v, int depth);

std::string repr_items(const Value& v, int depth) {
  const ListData& l = v.list_data();
  std::string out = l.tuple ? "(" : "[";
  for (size_t i = 0; i < l.items.size(); ++i) {
    if (i) out += ", ";
    out += repr_at(l.items[i], depth + 1);
  }
  if (l.tuple && l.items.size() == 1) out += ",";
  out += l.tuple ? ")" : "]";
  return out;
}

std::string repr_dict(const DictData& d, int depth) {
  std::string out = "{";
  bool first = true;
  for (const auto& [k, val] : d.items) {
    if (!first) out += ", ";
    first = false;
    out += repr_at(k, depth + 1) + ": " + repr_at(val, depth + 1);
  }
  return out + "}";
}

std::string repr_at(const Value& v, int depth) {
  check_depth(depth);
  switch (v.type()) {
    case Value::Type::kUndefined:
      return "Undefined";
    case Value::Type::kString:
      return repr_string(v.as_string());
    case Value::Type::kList:
      if (!v.list_data().view.empty())
        throw EvalError(ErrorKind::kUnsupported, "printing a " + v.list_data().view +
                                                     " view (Python prints " + v.list_data().view +
                                                     "([...]))");
      if (v.list_data().generator)
        throw EvalError(ErrorKind::kUnsupported,
                        "printing a generator (the result of map, select, selectattr, reverse "
                        "or items without |list)");
      return repr_items(v, depth);
    case Value::Type::kDict:
      return repr_dict(v.dict_data(), depth);
    case Value::Type::kNamespace:
      if (v.undefined_hint() != "Namespace")
        throw EvalError(ErrorKind::kUnsupported, "printing the loop object");
      return "<" + v.undefined_hint() + " " + repr_dict(v.dict_data(), depth) + ">";
    case Value::Type::kCallable:
      throw EvalError(ErrorKind::kUnsupported,
                      "printing the function '" + v.fn()->name + "' (Python prints its address)");
    default:
      return to_str(v);
  }
}

void json_string(std::string& out, const std::string& s) {
  out.push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20) {
          append_hex(out, "\\u", c, 4);
        } else {
          out.push_back(static_cast<char>(c));  // ensure_ascii=False: UTF-8 as is
        }
    }
  }
  out.push_back('"');
}

std::string json_key(const Value& k) {
  // json.dumps turns str, int, float, bool and None keys into strings; others raise TypeError.
  switch (k.type()) {
    case Value::Type::kString:
      return k.as_string();
    case Value::Type::kBool:
      return k.as_bool() ? "true" : "false";
    case Value::Type::kInt:
      return std::to_string(k.as_int());
    case Value::Type::kFloat:
      return float_repr(k.as_float());
    case Value::Type::kNone:
      return "null";
    default:
      runtime("keys must be str, int, float, bool or None, not " + type_name(k));
  }
}

void json_at(std::string& out, const Value& v, bool indent, const std::string& ind, int depth) {
  check_depth(depth);
  auto newline = [&](int level) {
    out.push_back('\n');
    for (int i = 0; i < level; ++i) out += ind;
  };
  switch (v.type()) {
    case Value::Type::kNone:
      out += "null";
      return;
    case Value::Type::kBool:
      out += v.as_bool() ? "true" : "false";
      return;
    case Value::Type::kInt:
      out += std::to_string(v.as_int());
      return;
    case Value::Type::kFloat: {
      double d = v.as_float();
      if (std::isnan(d)) {
        out += "NaN";
      } else if (std::isinf(d)) {
        out += d > 0 ? "Infinity" : "-Infinity";
      } else {
        out += float_repr(d);
      }
      return;
    }
    case Value::Type::kString:
      json_string(out, v.as_string());
      return;
    case Value::Type::kList: {
      if (!v.list_data().view.empty())
        throw EvalError(ErrorKind::kUnsupported, "printing a " + v.list_data().view +
                                                     " view (Python prints " + v.list_data().view +
                                                     "([...]))");
      if (v.list_data().generator || !v.list_data().view.empty())
        runtime("Object of type " + type_name(v) + " is not JSON serializable");
      const auto& items = v.items();
      if (items.empty()) {
        out += "[]";
        return;
      }
      out.push_back('[');
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += indent ? "," : ", ";
        if (indent) newline(depth + 1);
        json_at(out, items[i], indent, ind, depth + 1);
      }
      if (indent) newline(depth);
      out.push_back(']');
      return;
    }
    case Value::Type::kDict: {
      const auto& items = v.dict_data().items;
      if (items.empty()) {
        out += "{}";
        return;
      }
      out.push_back('{');
      bool first = true;
      for (const auto& [k, val] : items) {
        if (!first) out += indent ? "," : ", ";
        first = false;
        if (indent) newline(depth + 1);
        json_string(out, json_key(k));
        out += ": ";
        json_at(out, val, indent, ind, depth + 1);
      }
      if (indent) newline(depth);
      out.push_back('}');
      return;
    }
    default:
      runtime("Object of type " + type_name(v) + " is not JSON serializable");
  }
}

}  // namespace

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  int precision = 1;
  for (; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*e", precision - 1, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  // buf: [-]d[.ddd]e[+-]XX
  std::string s(buf);
  bool negative = s[0] == '-';
  if (negative) s.erase(0, 1);
  size_t e = s.find('e');
  int exponent = std::atoi(s.c_str() + e + 1);
  std::string digits;
  for (size_t i = 0; i < e; ++i)
    if (s[i] != '.') digits.push_back(s[i]);
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  int decpt = exponent + 1;
  std::string out = negative ? "-" : "";
  if (decpt <= -4 || decpt > 16) {  // CPython's repr switches to exponent notation here
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char ebuf[16];
    std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    out += ebuf;
  } else if (decpt <= 0) {
    out += "0." + std::string(-decpt, '0') + digits;
  } else if (static_cast<size_t>(decpt) >= digits.size()) {
    out += digits + std::string(decpt - digits.size(), '0') + ".0";
  } else {
    out += digits.substr(0, decpt) + "." + digits.substr(decpt);
  }
  return out;
}

std::string to_str(const Value& v) {
  switch (v.type()) {
    case Value::Type::kUndefined:
      return "";
    case Value::Type::kNone:
      return "None";
    case Value::Type::kBool:
      return v.as_bool() ? "True" : "False";
    case Value::Type::kInt:
      return std::to_string(v.as_int());
    case Value::Type::kFloat:
      return float_repr(v.as_float());
    case Value::Type::kString:
      return v.as_string();
    default:
      return repr_at(v, 0);
  }
}

std::string repr(const Value& v) { return repr_at(v, 0); }

std::string to_json_text(const Value& v, bool indent, const std::string& indent_str) {
  std::string out;
  json_at(out, v, indent, indent_str, 0);
  return out;
}

}  // namespace fabkit::trainer::serve::jinja
