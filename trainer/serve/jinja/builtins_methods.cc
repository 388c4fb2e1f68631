// Attribute lookup and the methods of str, dict and list that templates call (Python's semantics).
#include <cmath>
#include <limits>
#include <set>

#include "trainer/serve/jinja/builtins.h"
#include "trainer/serve/jinja/error.h"
#include "trainer/serve/jinja/unicode.h"

namespace fabkit::trainer::serve::jinja {

namespace {

[[noreturn]] void runtime(const std::string& m) { throw EvalError(ErrorKind::kRuntime, m); }
[[noreturn]] void unsupported(const std::string& m) { throw EvalError(ErrorKind::kUnsupported, m); }

// Every method of Python's str, so an unsupported one is refused by name rather than treated
// as a missing attribute.
const std::set<std::string> kStrMethods = {
    "capitalize",   "casefold",    "center",    "count",      "encode",       "endswith",
    "expandtabs",   "find",        "format",    "format_map", "index",        "isalnum",
    "isalpha",      "isascii",     "isdecimal", "isdigit",    "isidentifier", "islower",
    "isnumeric",    "isprintable", "isspace",   "istitle",    "isupper",      "join",
    "ljust",        "lower",       "lstrip",    "maketrans",  "partition",    "removeprefix",
    "removesuffix", "replace",     "rfind",     "rindex",     "rjust",        "rpartition",
    "rsplit",       "rstrip",      "split",     "splitlines", "startswith",   "strip",
    "swapcase",     "title",       "translate", "upper",      "zfill"};
const std::set<std::string> kDictMethods = {"clear",      "copy",   "fromkeys", "get",
                                            "items",      "keys",   "pop",      "popitem",
                                            "setdefault", "update", "values"};
const std::set<std::string> kListMethods = {"append", "clear",   "copy",   "count",
                                            "extend", "index",   "insert", "pop",
                                            "remove", "reverse", "sort"};
const std::set<std::string> kMutators = {"append",  "clear",      "extend",  "insert",
                                         "pop",     "remove",     "reverse", "sort",
                                         "popitem", "setdefault", "update"};

void check_args(const std::string& name, const Args& args, const Kwargs& kwargs, size_t max) {
  if (args.size() > max)
    runtime(name + "() takes at most " + std::to_string(max) + " arguments (" +
            std::to_string(args.size()) + " given)");
  if (!kwargs.empty()) runtime(name + "() takes no keyword arguments");
}

const std::string& str_arg(const std::string& method, const Value& v) {
  if (!v.is_string()) runtime(method + "() argument must be str, not " + type_name(v));
  return v.as_string();
}

std::vector<std::string> py_split(const std::string& s, const Value* sep, int64_t maxsplit,
                                  bool from_right) {
  std::vector<std::string> parts;
  if (!sep || sep->is_none()) {
    std::u32string cps = utf8_decode(s);
    std::vector<std::u32string> words;
    if (!from_right) {
      size_t i = 0;
      while (i < cps.size()) {
        while (i < cps.size() && py_isspace(cps[i])) ++i;
        if (i >= cps.size()) break;
        if (maxsplit >= 0 && static_cast<int64_t>(words.size()) == maxsplit) {
          std::u32string rest = cps.substr(i);
          while (!rest.empty() && py_isspace(rest.back())) rest.pop_back();
          words.push_back(rest);
          break;
        }
        size_t j = i;
        while (j < cps.size() && !py_isspace(cps[j])) ++j;
        words.push_back(cps.substr(i, j - i));
        i = j;
      }
    } else {
      size_t i = cps.size();
      while (i > 0) {
        while (i > 0 && py_isspace(cps[i - 1])) --i;
        if (i == 0) break;
        if (maxsplit >= 0 && static_cast<int64_t>(words.size()) == maxsplit) {
          size_t b = 0;
          while (b < i && py_isspace(cps[b])) ++b;
          words.insert(words.begin(), cps.substr(b, i - b));
          break;
        }
        size_t j = i;
        while (j > 0 && !py_isspace(cps[j - 1])) --j;
        words.insert(words.begin(), cps.substr(j, i - j));
        i = j;
      }
    }
    for (auto& w : words) parts.push_back(utf8_encode(w));
    return parts;
  }
  const std::string& d = str_arg(from_right ? "rsplit" : "split", *sep);
  if (d.empty()) runtime("empty separator");
  if (!from_right) {
    size_t start = 0;
    while (true) {
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) break;
      size_t hit = s.find(d, start);
      if (hit == std::string::npos) break;
      parts.push_back(s.substr(start, hit - start));
      start = hit + d.size();
    }
    parts.push_back(s.substr(start));
  } else {
    size_t end = s.size();
    std::vector<std::string> rev;
    while (true) {
      if (maxsplit >= 0 && static_cast<int64_t>(rev.size()) == maxsplit) break;
      if (end < d.size()) break;
      size_t hit = s.rfind(d, end - d.size());
      if (hit == std::string::npos) break;
      rev.push_back(s.substr(hit + d.size(), end - hit - d.size()));
      end = hit;
    }
    rev.push_back(s.substr(0, end));
    parts.assign(rev.rbegin(), rev.rend());
  }
  return parts;
}

Value strings(const std::vector<std::string>& parts) {
  std::vector<Value> items;
  for (const auto& p : parts) items.push_back(Value::string(p));
  return Value::list(std::move(items));
}

bool affix_match(const std::string& method, const std::string& s, const Value& affix, bool prefix) {
  auto one = [&](const std::string& a) {
    if (a.size() > s.size()) return false;
    return prefix ? s.compare(0, a.size(), a) == 0
                  : s.compare(s.size() - a.size(), a.size(), a) == 0;
  };
  if (affix.is_list() && affix.list_data().tuple) {
    for (const auto& a : affix.items())
      if (one(str_arg(method, a))) return true;
    return false;
  }
  if (!affix.is_string())
    runtime(method + " first arg must be str or a tuple of str, not " + type_name(affix));
  return one(affix.as_string());
}

int64_t count_of(const std::string& s, const std::string& sub) {
  if (sub.empty()) return static_cast<int64_t>(utf8_decode(s).size()) + 1;
  int64_t n = 0;
  for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
  return n;
}

// Byte offset -> code point index, for find()/rfind() results.
int64_t cp_index(const std::string& s, size_t byte_offset) {
  return static_cast<int64_t>(utf8_decode(s.substr(0, byte_offset)).size());
}

template <typename Pred>
bool all_chars(const std::string& s, Pred pred) {
  std::u32string cps = utf8_decode(s);
  if (cps.empty()) return false;
  for (char32_t c : cps)
    if (!pred(c)) return false;
  return true;
}

bool ascii_only(const std::string& s) {
  for (unsigned char c : s)
    if (c >= 0x80) return false;
  return true;
}

Value call_str_method(const std::string& s, const std::string& name, const Args& args,
                      const Kwargs& kwargs) {
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    check_args(name, args, kwargs, 1);
    Value chars = args.empty() ? Value::none() : args[0];
    return Value::string(py_strip(s, chars, name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit") {
    const Value* sep = find_arg(args, kwargs, 0, "sep");
    const Value* maxsplit = find_arg(args, kwargs, 1, "maxsplit");
    int64_t m = maxsplit ? maxsplit->as_int() : -1;
    return strings(py_split(s, sep, m, name == "rsplit"));
  }
  if (name == "startswith" || name == "endswith") {
    if (args.size() != 1 || !kwargs.empty()) unsupported(name + "() with start/end arguments");
    return Value::boolean(affix_match(name, s, args[0], name == "startswith"));
  }
  if (name == "upper" || name == "lower" || name == "title" || name == "capitalize") {
    check_args(name, args, kwargs, 0);
    try {
      if (name == "upper") return Value::string(py_upper(s));
      if (name == "lower") return Value::string(py_lower(s));
      if (name == "title") return Value::string(py_title(s));
      return Value::string(py_capitalize(s));
    } catch (const std::domain_error& e) {
      unsupported(std::string(e.what()) + " in str." + name + "()");
    }
  }
  if (name == "replace") {
    check_args(name, args, kwargs, 3);
    if (args.size() < 2) runtime("replace() takes at least 2 arguments");
    const std::string& old_s = str_arg(name, args[0]);
    const std::string& new_s = str_arg(name, args[1]);
    int64_t limit = args.size() > 2 ? args[2].as_int() : -1;
    if (old_s.empty()) unsupported("str.replace() with an empty old string");
    std::string out;
    size_t start = 0;
    int64_t done = 0;
    for (size_t p = s.find(old_s); p != std::string::npos && (limit < 0 || done < limit);
         p = s.find(old_s, start)) {
      out += s.substr(start, p - start) + new_s;
      start = p + old_s.size();
      ++done;
    }
    return Value::string(out + s.substr(start));
  }
  if (name == "removeprefix" || name == "removesuffix") {
    check_args(name, args, kwargs, 1);
    if (args.empty()) runtime(name + "() takes exactly one argument");
    const std::string& a = str_arg(name, args[0]);
    if (name == "removeprefix" && s.compare(0, a.size(), a) == 0)
      return Value::string(s.substr(a.size()));
    if (name == "removesuffix" && !a.empty() && a.size() <= s.size() &&
        s.compare(s.size() - a.size(), a.size(), a) == 0)
      return Value::string(s.substr(0, s.size() - a.size()));
    return Value::string(s);
  }
  if (name == "find" || name == "rfind" || name == "count") {
    if (args.size() != 1 || !kwargs.empty()) unsupported(name + "() with start/end arguments");
    const std::string& sub = str_arg(name, args[0]);
    if (name == "count") return Value::integer(count_of(s, sub));
    size_t p = name == "find" ? s.find(sub) : s.rfind(sub);
    return Value::integer(p == std::string::npos ? -1 : cp_index(s, p));
  }
  if (name == "join") {
    check_args(name, args, kwargs, 1);
    if (args.empty()) runtime("join() takes exactly one argument");
    std::string out;
    bool first = true;
    for (const Value& item : iterate(args[0])) {
      if (!item.is_string())
        runtime("sequence item: expected str instance, " + type_name(item) + " found");
      if (!first) out += s;
      first = false;
      out += item.as_string();
    }
    return Value::string(out);
  }
  if (name == "splitlines") {
    check_args(name, args, kwargs, 0);
    std::vector<std::string> lines;
    std::u32string cps = utf8_decode(s), line;
    for (size_t i = 0; i < cps.size(); ++i) {
      char32_t c = cps[i];
      bool br = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D ||
                c == 0x1E || c == 0x85 || c == 0x2028 || c == 0x2029;
      if (!br) {
        line.push_back(c);
        continue;
      }
      if (c == '\r' && i + 1 < cps.size() && cps[i + 1] == '\n') ++i;
      lines.push_back(utf8_encode(line));
      line.clear();
    }
    if (!line.empty()) lines.push_back(utf8_encode(line));
    return strings(lines);
  }
  if (name == "isdigit" || name == "isalpha" || name == "isalnum" || name == "isspace" ||
      name == "islower" || name == "isupper") {
    check_args(name, args, kwargs, 0);
    if (name == "isspace") return Value::boolean(all_chars(s, py_isspace));
    if (!ascii_only(s)) unsupported("str." + name + "() on non-ASCII text");
    auto digit = [](char32_t c) { return c >= '0' && c <= '9'; };
    auto alpha = [](char32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
    if (name == "isdigit") return Value::boolean(all_chars(s, digit));
    if (name == "isalpha") return Value::boolean(all_chars(s, alpha));
    if (name == "isalnum")
      return Value::boolean(all_chars(s, [&](char32_t c) { return digit(c) || alpha(c); }));
    bool has_cased = false, ok = true;
    for (char c : s) {
      if (c >= 'a' && c <= 'z') {
        has_cased = true;
        ok &= name == "islower";
      } else if (c >= 'A' && c <= 'Z') {
        has_cased = true;
        ok &= name == "isupper";
      }
    }
    return Value::boolean(has_cased && ok);
  }
  unsupported("the string method '" + name + "()'");
}

Value call_dict_method(const Value& d, const std::string& name, const Args& args,
                       const Kwargs& kwargs) {
  if (name == "items" || name == "keys" || name == "values") {
    check_args(name, args, kwargs, 0);
    std::vector<Value> out;
    for (const auto& [k, v] : d.dict_data().items) {
      if (name == "items") {
        out.push_back(Value::list({k, v}, /*tuple=*/true));
      } else {
        out.push_back(name == "keys" ? k : v);
      }
    }
    return Value::dict_view(std::move(out), "dict_" + name);
  }
  if (name == "get") {
    check_args(name, args, kwargs, 2);
    if (args.empty()) runtime("get expected at least 1 argument, got 0");
    check_hashable(args[0]);
    const Value* v = d.dict_data().find(args[0]);
    if (v) return *v;
    return args.size() > 1 ? args[1] : Value::none();
  }
  if (name == "copy") return d;
  unsupported("the dict method '" + name + "()'");
}

Value call_list_method(const Value& l, const std::string& name, const Args& args,
                       const Kwargs& kwargs) {
  if (name == "count" || name == "index") {
    check_args(name, args, kwargs, 1);
    if (args.empty()) runtime(name + "() takes exactly one argument");
    int64_t n = 0;
    for (size_t i = 0; i < l.items().size(); ++i) {
      if (!equals(l.items()[i], args[0])) continue;
      if (name == "index") return Value::integer(static_cast<int64_t>(i));
      ++n;
    }
    if (name == "index") runtime(repr(args[0]) + " is not in list");
    return Value::integer(n);
  }
  if (name == "copy") return l;
  unsupported("the list method '" + name + "()'");
}

Value bound(const Value& self, const std::string& name) {
  auto fn = std::make_shared<Callable>();
  fn->name = type_name(self) + "." + name;
  if (kMutators.count(name)) {
    fn->native = [name, self](const Args&, const Kwargs&) -> Value {
      unsupported("calling '." + name + "()' on a " + type_name(self) +
                  " (HF renders in jinja2's ImmutableSandboxedEnvironment, which refuses it)");
    };
  } else {
    fn->native = [name, self](const Args& args, const Kwargs& kwargs) -> Value {
      if (self.is_string()) return call_str_method(self.as_string(), name, args, kwargs);
      if (self.is_dict()) return call_dict_method(self, name, args, kwargs);
      return call_list_method(self, name, args, kwargs);
    };
  }
  return Value::callable(fn);
}

[[noreturn]] void undefined_error(const Value& u) {
  runtime("'" + (u.undefined_hint().empty() ? std::string("value") : u.undefined_hint()) +
          "' is undefined");
}

}  // namespace

std::string py_strip(const std::string& s, const Value& chars, bool left, bool right) {
  std::u32string cps = utf8_decode(s);
  std::u32string set;
  bool whitespace = chars.is_none() || chars.is_undefined();
  if (!whitespace) set = utf8_decode(str_arg("strip", chars));
  auto strip_it = [&](char32_t c) {
    return whitespace ? py_isspace(c) : set.find(c) != std::u32string::npos;
  };
  size_t b = 0, e = cps.size();
  if (left)
    while (b < e && strip_it(cps[b])) ++b;
  if (right)
    while (e > b && strip_it(cps[e - 1])) --e;
  return utf8_encode(cps.substr(b, e - b));
}

Value get_attr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) undefined_error(obj);
  if (!name.empty() && name[0] == '_') return Value::undefined(name);  // the sandbox hides these
  switch (obj.type()) {
    case Value::Type::kString:
      if (kStrMethods.count(name)) return bound(obj, name);
      return Value::undefined(name);
    case Value::Type::kDict:
      if (kDictMethods.count(name)) return bound(obj, name);
      if (const Value* v = obj.dict_data().find(name)) return *v;
      return Value::undefined(name);
    case Value::Type::kList:
      if (kListMethods.count(name) && obj.is_sequence() &&
          (!obj.list_data().tuple || name == "count" || name == "index"))
        return bound(obj, name);
      return Value::undefined(name);
    case Value::Type::kNamespace:
      if (const Value* v = obj.dict_data().find(name)) return *v;
      return Value::undefined(name);
    default:
      return Value::undefined(name);
  }
}

}  // namespace fabkit::trainer::serve::jinja
