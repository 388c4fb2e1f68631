// jinja2's filters and tests (jinja2/filters.py, jinja2/tests.py) that chat templates use, with
// HF's tojson override. Everything else of jinja2's is refused by name at parse time.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include "trainer/serve/jinja/builtins.h"
#include "trainer/serve/jinja/error.h"
#include "trainer/serve/jinja/unicode.h"

namespace fabkit::trainer::serve::jinja {

namespace {

[[noreturn]] void runtime(const std::string& m) { throw EvalError(ErrorKind::kRuntime, m); }
[[noreturn]] void unsupported(const std::string& m) { throw EvalError(ErrorKind::kUnsupported, m); }

const std::set<std::string> kFilters = {
    "abs",     "capitalize", "count",      "d",         "default",  "first",      "float",
    "indent",  "int",        "items",      "join",      "last",     "length",     "list",
    "lower",   "map",        "max",        "min",       "reject",   "rejectattr", "replace",
    "reverse", "select",     "selectattr", "string",    "sum",      "title",      "tojson",
    "trim",    "unique",     "upper",      "wordcount", "dictsort", "sort"};
const std::set<std::string> kJinjaFilters = {
    "e",           "escape",   "safe",      "attr",   "batch",    "center", "filesizeformat",
    "forceescape", "format",   "groupby",   "pprint", "random",   "round",  "slice",
    "striptags",   "truncate", "urlencode", "urlize", "wordwrap", "xmlattr"};
const std::set<std::string> kTests = {
    "boolean",  "callable", "defined",  "divisibleby", "eq",   "equalto",     "==",  "escaped",
    "even",     "false",    "float",    "ge",          ">=",   "greaterthan", "gt",  ">",
    "in",       "integer",  "iterable", "le",          "<=",   "lessthan",    "lt",  "<",
    "lower",    "mapping",  "ne",       "!=",          "none", "number",      "odd", "sameas",
    "sequence", "string",   "true",     "undefined",   "upper"};
const std::set<std::string> kJinjaTests = {"filter", "test"};

std::string case_change(const std::string& filter, const std::string& s) {
  try {
    if (filter == "upper") return py_upper(s);
    if (filter == "lower") return py_lower(s);
    if (filter == "capitalize") return py_capitalize(s);
    // jinja2's title filter: capitalize each piece split at runs of [-\s({[<].
    std::u32string cps = utf8_decode(s), out;
    bool word_start = true;
    for (char32_t c : cps) {
      bool sep = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || py_isspace(c);
      if (sep) {
        out.push_back(c);
        word_start = true;
      } else if (word_start) {
        // item[0].upper() in jinja2's title filter: "ß" -> "SS" here, unlike str.title()
        py_upper(c, out);
        word_start = false;
      } else {
        py_lower(c, out);
      }
    }
    return utf8_encode(out);
  } catch (const std::domain_error& e) {
    unsupported(std::string(e.what()) + " in the '" + filter + "' filter");
  }
}

// jinja2's attribute lookup for map/selectattr: dotted names, integer parts index.
Value attribute_of(const Value& item, const std::string& attribute) {
  Value v = item;
  size_t start = 0;
  while (true) {
    size_t dot = attribute.find('.', start);
    std::string part =
        attribute.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool digits = !part.empty() && part.size() <= 18 &&
                  part.find_first_not_of("0123456789") == std::string::npos;
    v = digits ? get_item(v, Value::integer(std::stoll(part))) : get_item(v, Value::string(part));
    if (dot == std::string::npos) return v;
    start = dot + 1;
  }
}

Value arg_or(const Args& args, const Kwargs& kwargs, size_t i, const char* name,
             const Value& fallback) {
  const Value* v = find_arg(args, kwargs, i, name);
  return v ? *v : fallback;
}

std::vector<Value> select_items(const std::string& filter, const Value& value, const Args& args,
                                const Kwargs& kwargs) {
  bool by_attr = filter == "selectattr" || filter == "rejectattr";
  bool keep = filter == "select" || filter == "selectattr";
  if (!kwargs.empty()) unsupported("keyword arguments to the '" + filter + "' filter");
  size_t next = 0;
  std::string attribute;
  if (by_attr) {
    if (args.empty() || !args[0].is_string()) runtime(filter + " needs an attribute name");
    attribute = args[0].as_string();
    next = 1;
  }
  std::string test;
  Args test_args;
  if (args.size() > next) {
    if (!args[next].is_string()) runtime(filter + ": the test name must be a string");
    test = args[next].as_string();
    std::string why;
    if (!test_supported(test, &why)) unsupported(why);
    test_args.assign(args.begin() + next + 1, args.end());
  }
  std::vector<Value> out;
  if (!truthy(value)) return out;  // jinja2 selects from a falsy value (None, "") nothing
  for (const Value& item : iterate(value)) {
    Value subject = by_attr ? attribute_of(item, attribute) : item;
    bool pass = test.empty() ? truthy(subject) : apply_test(test, subject, test_args);
    if (pass == keep) out.push_back(item);
  }
  return out;
}

std::string indent_text(const std::string& s, const std::string& indention, bool first,
                        bool blank) {
  // jinja2's do_indent: appends "\n" so splitlines() keeps a trailing empty line.
  std::string text = s + "\n";
  std::vector<std::string> lines;
  Value split = get_attr(Value::string(text), "splitlines");
  Value split_lines = split.fn()->native({}, {});  // kept alive for the loop
  for (const Value& line : split_lines.items()) lines.push_back(line.as_string());
  std::string rv;
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) rv += (i ? "\n" + indention : "") + lines[i];
  } else {
    rv = lines.empty() ? "" : lines[0];
    for (size_t i = 1; i < lines.size(); ++i)
      rv += "\n" + (lines[i].empty() ? lines[i] : indention + lines[i]);
  }
  return first ? indention + rv : rv;
}

}  // namespace

bool filter_supported(const std::string& name, std::string* why) {
  if (kFilters.count(name)) return true;
  if (name == "safe" || name == "e" || name == "escape") {
    // jinja2 returns a Markup string: it escapes what is added to it and prints as Markup(...)
    // inside a list, so treating it as a plain string could render differently.
    *why = "the '" + name + "' filter (a Markup string) is not supported";
  } else if (kJinjaFilters.count(name)) {
    *why = "the '" + name + "' filter is not supported";
  } else {
    *why = "no filter named '" + name + "'";
  }
  return false;
}

bool test_supported(const std::string& name, std::string* why) {
  if (kTests.count(name)) return true;
  if (kJinjaTests.count(name)) {
    *why = "the '" + name + "' test is not supported";
  } else {
    *why = "no test named '" + name + "'";
  }
  return false;
}

Value apply_filter(const std::string& name, const Value& value, const Args& args,
                   const Kwargs& kwargs) {
  static const Value kNone = Value::none();
  static const Value kFalse = Value::boolean(false);
  static const Value kEmpty = Value::string("");
  if (name == "default" || name == "d") {
    Value fallback = arg_or(args, kwargs, 0, "default_value", kEmpty);
    bool boolean = truthy(arg_or(args, kwargs, 1, "boolean", kFalse));
    if (value.is_undefined() || (boolean && !truthy(value))) return fallback;
    return value;
  }
  if (name == "tojson") {
    // HF: json.dumps(x, ensure_ascii=False, indent=indent, separators=None, sort_keys=False)
    if (find_arg(args, kwargs, 2, "separators") || find_arg(args, kwargs, 3, "sort_keys"))
      unsupported("tojson with separators or sort_keys");
    Value indent = arg_or(args, kwargs, 0, "indent", kNone);
    if (indent.is_none()) return Value::string(to_json_text(value, false, ""));
    if (indent.is_string()) return Value::string(to_json_text(value, true, indent.as_string()));
    if (!indent.is_int()) runtime("tojson indent must be an int or a string");
    return Value::string(
        to_json_text(value, true, std::string(std::max<int64_t>(0, indent.as_int()), ' ')));
  }
  if (name == "trim") {
    return Value::string(
        py_strip(to_str(value), arg_or(args, kwargs, 0, "chars", kNone), true, true));
  }
  if (name == "length" || name == "count") return Value::integer(length(value));
  if (name == "upper" || name == "lower" || name == "capitalize" || name == "title")
    return Value::string(case_change(name, to_str(value)));
  if (name == "string") return Value::string(to_str(value));
  if (name == "list") return Value::list(iterate(value));
  if (name == "first" || name == "last") {
    if (name == "last" && value.is_list() && value.list_data().generator)
      runtime("'generator' object is not reversible");
    if (name == "first" && value.is_list() && value.list_data().generator) {
      Value item;  // takes one item, as next() on the generator does
      if (next_item(value, &item)) return item;
      return Value::undefined("No first item, sequence was empty.");
    }
    std::vector<Value> items = iterate(value);
    if (items.empty()) return Value::undefined("No " + name + " item, sequence was empty.");
    return name == "first" ? items.front() : items.back();
  }
  if (name == "join") {
    Value sep = arg_or(args, kwargs, 0, "d", kEmpty);
    const Value* attribute = find_arg(args, kwargs, 1, "attribute");
    std::string out;
    bool first = true;
    for (const Value& item : iterate(value)) {
      if (!first) out += to_str(sep);
      first = false;
      out += to_str(attribute ? attribute_of(item, to_str(*attribute)) : item);
    }
    return Value::string(out);
  }
  if (name == "reverse") {
    if (value.is_string())
      return get_slice(value, Value::none(), Value::none(), Value::integer(-1));
    std::vector<Value> items = iterate(value);
    std::reverse(items.begin(), items.end());
    return Value::list(std::move(items), false, /*generator=*/true);
  }
  if (name == "items") {
    if (value.is_undefined()) return Value::list({}, false, true);
    if (!value.is_dict()) runtime("Can only get item pairs from a mapping.");
    Value pairs = get_attr(value, "items").fn()->native({}, {});
    return Value::list(pairs.items(), false, /*generator=*/true);
  }
  if (name == "map") {
    std::vector<Value> out;
    if (!truthy(value)) return Value::list({}, false, true);  // as jinja2's do_map
    const Value* attribute = find_arg({}, kwargs, 0, "attribute");
    if (attribute) {
      const Value* dflt = find_arg({}, kwargs, 0, "default");
      for (const Value& item : iterate(value)) {
        Value v = attribute_of(item, to_str(*attribute));
        out.push_back(v.is_undefined() && dflt ? *dflt : v);
      }
    } else {
      if (args.empty() || !args[0].is_string()) runtime("map needs a filter name or attribute=");
      std::string filter = args[0].as_string(), why;
      if (!filter_supported(filter, &why)) unsupported(why);
      Args rest(args.begin() + 1, args.end());
      for (const Value& item : iterate(value))
        out.push_back(apply_filter(filter, item, rest, kwargs));
    }
    return Value::list(std::move(out), false, /*generator=*/true);
  }
  if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr")
    return Value::list(select_items(name, value, args, kwargs), false, /*generator=*/true);
  if (name == "indent") {
    Value width = arg_or(args, kwargs, 0, "width", Value::integer(4));
    bool first = truthy(arg_or(args, kwargs, 1, "first", kFalse));
    bool blank = truthy(arg_or(args, kwargs, 2, "blank", kFalse));
    std::string indention = width.is_string()
                                ? width.as_string()
                                : std::string(std::max<int64_t>(0, width.as_int()), ' ');
    // jinja2's do_indent appends "\n" to its argument without str(): only a string works.
    if (!value.is_string())
      runtime("unsupported operand type(s) for +=: '" + type_name(value) + "' and 'str'");
    return Value::string(indent_text(value.as_string(), indention, first, blank));
  }
  if (name == "replace") {
    if (args.size() < 2) runtime("replace needs the old and new strings");
    // jinja2: str(s).replace(str(old), str(new), count)
    Args method_args{Value::string(to_str(args[0])), Value::string(to_str(args[1]))};
    Value s = Value::string(to_str(value));
    if (const Value* count = find_arg(args, kwargs, 2, "count")) method_args.push_back(*count);
    return get_attr(s, "replace").fn()->native(method_args, {});
  }
  if (name == "abs") {
    if (!value.is_number()) runtime("bad operand type for abs(): '" + type_name(value) + "'");
    return value.type() == Value::Type::kFloat ? Value::number(std::fabs(value.as_float()))
                                               : Value::integer(std::llabs(value.as_int()));
  }
  if (name == "int" || name == "float") {
    Value dflt =
        arg_or(args, kwargs, 0, "default", name == "int" ? Value::integer(0) : Value::number(0.0));
    // int(Undefined) and float(Undefined) raise in jinja2 (Undefined.__int__/__float__).
    if (value.is_undefined()) runtime("'" + value.undefined_hint() + "' is undefined");
    if (value.is_number())
      return name == "int" ? Value::integer(static_cast<int64_t>(value.as_float()))
                           : Value::number(value.as_float());
    if (value.is_string()) {
      std::string s = py_strip(value.as_string(), Value::none(), true, true);
      char* end = nullptr;
      errno = 0;
      if (name == "int") {
        long long i = std::strtoll(s.c_str(), &end, 10);
        if (!s.empty() && *end == 0 && errno == 0) return Value::integer(i);
        double d = std::strtod(s.c_str(), &end);  // jinja2 falls back to int(float(value))
        if (!s.empty() && *end == 0) return Value::integer(static_cast<int64_t>(d));
      } else {
        double d = std::strtod(s.c_str(), &end);
        if (!s.empty() && *end == 0) return Value::number(d);
      }
    }
    return dflt;
  }
  if (name == "sum" || name == "max" || name == "min" || name == "unique") {
    if (!kwargs.empty() || !args.empty()) unsupported("arguments to the '" + name + "' filter");
    std::vector<Value> items = iterate(value);
    if (name == "sum") {
      Value total = Value::integer(0);
      for (const Value& v : items) total = binary_op("+", total, v);
      return total;
    }
    if (name == "unique") {
      std::vector<Value> out;
      for (const Value& v : items) {
        check_hashable(v);  // jinja2 keeps a set of the items seen
        bool seen = false;
        for (const Value& o : out) {
          // jinja2 compares strings case-insensitively here (case_sensitive=False)
          if (v.is_string() && o.is_string()) {
            seen |= py_lower(v.as_string()) == py_lower(o.as_string());
          } else {
            seen |= equals(v, o);
          }
        }
        if (!seen) out.push_back(v);
      }
      return Value::list(std::move(out), false, true);
    }
    if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
    Value best = items[0];
    for (size_t i = 1; i < items.size(); ++i) {  // one item is returned without a comparison
      const Value& v = items[i];
      // jinja2 compares strings case-insensitively for min/max
      Value a = v.is_string() ? Value::string(py_lower(v.as_string())) : v;
      Value b = best.is_string() ? Value::string(py_lower(best.as_string())) : best;
      int c = compare(a, b);
      if ((name == "max" && c > 0) || (name == "min" && c < 0)) best = v;
    }
    return best;
  }
  if (name == "dictsort" || name == "sort") {
    // jinja2's do_dictsort / do_sort: a stable sort, strings compared lower-cased unless
    // case_sensitive; dictsort gives (key, value) tuples of a mapping, by key or by value.
    bool case_sensitive =
        truthy(arg_or(args, kwargs, name == "sort" ? 1 : 0, "case_sensitive", kFalse));
    bool reverse = truthy(arg_or(args, kwargs, name == "sort" ? 0 : 2, "reverse", kFalse));
    std::vector<Value> items;
    std::string by = "key";
    const Value* attribute = nullptr;
    if (name == "dictsort") {
      if (!value.is_dict()) runtime("You can only sort by either \"key\" or \"value\"");
      by = to_str(arg_or(args, kwargs, 1, "by", Value::string("key")));
      if (by != "key" && by != "value") runtime("You can only sort by either \"key\" or \"value\"");
      items = get_attr(value, "items").fn()->native({}, {}).items();
    } else {
      attribute = find_arg(args, kwargs, 2, "attribute");
      if (attribute && to_str(*attribute).find(',') != std::string::npos)
        unsupported("sort on several comma-separated attributes");
      items = iterate(value);
    }
    auto sort_key = [&](const Value& item) {
      Value k = name == "dictsort" ? item.items()[by == "key" ? 0 : 1]
                : attribute        ? attribute_of(item, to_str(*attribute))
                                   : item;
      Value key = !case_sensitive && k.is_string() ? Value::string(py_lower(k.as_string())) : k;
      // jinja2's sort compares one-item lists of keys (make_multi_attrgetter), so equal keys,
      // two undefined ones included, are tested with == and never ordered; dictsort compares
      // the keys themselves.
      return name == "sort" ? Value::list({key}) : key;
    };
    std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
      return reverse ? compare(sort_key(b), sort_key(a)) < 0
                     : compare(sort_key(a), sort_key(b)) < 0;
    });
    return Value::list(std::move(items));
  }
  if (name == "wordcount") {
    // jinja2 counts runs of \w (Unicode word characters): exact here for ASCII text only.
    std::string s = to_str(value);
    int64_t words = 0;
    bool in_word = false;
    for (unsigned char c : s) {
      if (c >= 0x80) unsupported("the 'wordcount' filter on non-ASCII text");
      bool w = std::isalnum(c) || c == '_';
      if (w && !in_word) ++words;
      in_word = w;
    }
    return Value::integer(words);
  }
  unsupported("the '" + name + "' filter");
}

bool apply_test(const std::string& name, const Value& value, const Args& args) {
  // jinja2's tests are Python functions of fixed arity: a wrong count is a TypeError there too.
  static const std::set<std::string> kOneArgument = {
      "divisibleby", "eq", "equalto", "==",          "ne", "!=", "lt", "lessthan", "<",
      "le",          "<=", "gt",      "greaterthan", ">",  "ge", ">=", "in",       "sameas"};
  size_t arity = kOneArgument.count(name) ? 1 : 0;
  if (args.size() != arity)
    runtime("the '" + name + "' test takes " + std::to_string(arity) + " argument(s), " +
            std::to_string(args.size()) + " given");
  auto arg = [&](size_t i) -> const Value& {
    if (i >= args.size()) runtime("the '" + name + "' test needs an argument");
    return args[i];
  };
  using Ty = Value::Type;
  if (name == "defined") return !value.is_undefined();
  if (name == "undefined") return value.is_undefined();
  if (name == "none") return value.is_none();
  if (name == "boolean") return value.type() == Ty::kBool;
  if (name == "true") return value.type() == Ty::kBool && value.as_bool();
  if (name == "false") return value.type() == Ty::kBool && !value.as_bool();
  if (name == "integer") return value.type() == Ty::kInt;
  if (name == "float") return value.type() == Ty::kFloat;
  if (name == "number") return value.is_number();
  if (name == "string") return value.is_string();
  if (name == "mapping") return value.is_dict();
  if (name == "callable") return value.type() == Ty::kCallable;
  if (name == "iterable")
    return value.is_undefined() || value.is_string() || value.is_list() || value.is_dict();
  if (name == "sequence")
    return value.is_undefined() || value.is_string() || value.is_dict() || value.is_sequence();
  if (name == "escaped") return false;
  if (name == "lower" || name == "upper") {
    std::string s = to_str(value);
    Value method = get_attr(Value::string(s), name == "lower" ? "islower" : "isupper");
    return truthy(method.fn()->native({}, {}));
  }
  if (name == "odd" || name == "even" || name == "divisibleby") {
    Value divisor = name == "divisibleby" ? arg(0) : Value::integer(2);
    Value rest = binary_op("%", value, divisor);
    bool zero = !truthy(rest);
    return name == "odd" ? !zero : zero;
  }
  if (name == "eq" || name == "equalto" || name == "==") return equals(value, arg(0));
  if (name == "ne" || name == "!=") return !equals(value, arg(0));
  if (name == "lt" || name == "lessthan" || name == "<") return compare(value, arg(0)) < 0;
  if (name == "le" || name == "<=") return compare(value, arg(0)) <= 0;
  if (name == "gt" || name == "greaterthan" || name == ">") return compare(value, arg(0)) > 0;
  if (name == "ge" || name == ">=") return compare(value, arg(0)) >= 0;
  if (name == "in") return contains(arg(0), value);
  if (name == "sameas") {
    const Value& other = arg(0);
    if (value.type() != other.type()) return false;
    switch (value.type()) {
      case Ty::kNone:
      case Ty::kUndefined:
        return value.is_none();
      case Ty::kBool:
        return value.as_bool() == other.as_bool();
      case Ty::kDict:
      case Ty::kNamespace:
        return value.shared_dict() == other.shared_dict();
      case Ty::kList:
        return &value.list_data() == &other.list_data();
      default:
        unsupported("the 'sameas' test on a " + type_name(value) + " (Python object identity)");
    }
  }
  unsupported("the '" + name + "' test");
}

}  // namespace fabkit::trainer::serve::jinja
