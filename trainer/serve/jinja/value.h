// The values a chat template computes with, and Python's semantics for them: jinja2 evaluates
// templates as Python, so truthiness, equality, ordering, str(), repr() and json.dumps() here
// follow CPython's rules for str, int, float, bool, None, list, tuple and dict (insertion-ordered,
// as Python's dicts and the request's JSON objects are). Lists and dicts are shared and never
// mutated after construction (HF renders in jinja2's ImmutableSandboxedEnvironment); namespace()
// objects are the one mutable kind, as in jinja2.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace fabkit::trainer::serve::jinja {

class Value;
struct MacroDef;
struct Frame;

struct ListData {
  std::vector<Value> items;
  bool tuple = false;
  // jinja2's map/select/selectattr/reverse/items filters return Python generators: always truthy,
  // no len(), consumed by iterating (a second loop over one sees nothing), and printing one shows
  // an object address. Marked so they behave so, and printing one is refused.
  bool generator = false;
  mutable size_t consumed = 0;  // generator: items already taken
  // dict.items()/keys()/values() return views: iterable and sized, but not indexable, not equal
  // to lists, printed as dict_items([...]). The Python type name, or empty for a list or tuple.
  std::string view;
  int depth = 1;  // nesting of lists and dicts inside, bounded by kMaxValueDepth
};

struct DictData {
  std::vector<std::pair<Value, Value>> items;  // insertion order
  int depth = 1;
  const Value* find(const Value& key) const;
  const Value* find(const std::string& key) const;
  void set(const Value& key, Value value);
};

using Args = std::vector<Value>;
using Kwargs = std::vector<std::pair<std::string, Value>>;
using NativeFn = std::function<Value(const Args&, const Kwargs&)>;

struct Callable {
  std::string name;
  NativeFn native;                  // a builtin or a bound method, or
  const MacroDef* macro = nullptr;  // a {% macro %} defined in the template
  // The frame the macro was defined in. Weak: that frame holds the macro, and a strong reference
  // would make a cycle that leaks the render's variables on every render.
  std::weak_ptr<Frame> closure;
};

class Value {
 public:
  enum class Type {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,
    kDict,
    kNamespace,
    kCallable
  };

  Value() = default;  // undefined
  static Value undefined(std::string hint);
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value number(double d);
  static Value string(std::string s);
  static Value list(std::vector<Value> items, bool tuple = false, bool generator = false);
  static Value dict_view(std::vector<Value> items, std::string view_type);
  static Value dict(std::shared_ptr<DictData> data);
  static Value new_namespace(std::shared_ptr<DictData> data, std::string type_name);
  static Value callable(std::shared_ptr<Callable> fn);

  Type type() const { return type_; }
  bool is_undefined() const { return type_ == Type::kUndefined; }
  bool is_none() const { return type_ == Type::kNone; }
  bool is_string() const { return type_ == Type::kString; }
  bool is_int() const { return type_ == Type::kInt || type_ == Type::kBool; }  // bool is an int
  bool is_number() const { return is_int() || type_ == Type::kFloat; }
  bool is_list() const { return type_ == Type::kList; }  // list, tuple, generator or dict view
  // A list or tuple proper (indexable, sliceable, comparable), not a generator or dict view.
  bool is_sequence() const {
    return type_ == Type::kList && !list_->generator && list_->view.empty();
  }
  bool is_dict() const { return type_ == Type::kDict; }

  bool as_bool() const { return b_; }
  int64_t as_int() const { return type_ == Type::kBool ? (b_ ? 1 : 0) : i_; }
  double as_float() const { return type_ == Type::kFloat ? f_ : static_cast<double>(as_int()); }
  const std::string& as_string() const { return *s_; }
  const std::string& undefined_hint() const { return hint_; }
  const ListData& list_data() const { return *list_; }
  const std::vector<Value>& items() const { return list_->items; }
  const DictData& dict_data() const { return *dict_; }
  const std::shared_ptr<DictData>& shared_dict() const { return dict_; }
  const std::shared_ptr<Callable>& fn() const { return fn_; }

 private:
  Type type_ = Type::kUndefined;
  bool b_ = false;
  int64_t i_ = 0;
  double f_ = 0;
  std::shared_ptr<const std::string> s_;
  std::string hint_;  // undefined: the name or expression; namespace: the Python type name
  std::shared_ptr<const ListData> list_;
  std::shared_ptr<DictData> dict_;
  std::shared_ptr<Callable> fn_;
};

// Python's type name, for messages: 'str', 'int', 'dict', 'NoneType', ...
std::string type_name(const Value& v);
bool truthy(const Value& v);
// str(v); an undefined value is "" (jinja2's default Undefined).
std::string to_str(const Value& v);
// repr(v): how Python prints a list or dict and its items.
std::string repr(const Value& v);
std::string float_repr(double d);  // Python's repr(float): shortest round-trip digits
bool equals(const Value& a, const Value& b);
// Python's a < b as -1/0/1; throws EvalError (kRuntime) where Python raises TypeError.
int compare(const Value& a, const Value& b);
// json.dumps(v, ensure_ascii=False, indent=indent): HF's tojson filter. indent_str empty: compact
// separators ", " and ": "; otherwise newline + indent_str per level.
std::string to_json_text(const Value& v, bool indent, const std::string& indent_str);
// The render variables: JSON objects keep their key order, as Python's json.loads does.
Value from_json(const nlohmann::ordered_json& j);
// For iteration: the items of a list, the keys of a dict, the characters of a string; undefined
// iterates as empty (jinja2). Throws EvalError for other types.
std::vector<Value> iterate(const Value& v);
// Takes the next item of a generator (consuming it); false when it is exhausted.
bool next_item(const Value& generator, Value* item);
// Python's hash() refuses lists, dicts and dict views as dict keys or `in dict` operands.
void check_hashable(const Value& key);
// Python's len().
int64_t length(const Value& v);

// The deepest nesting of lists and dicts: building a deeper one is refused (a template can nest
// lists in a loop, and printing, comparing or even freeing them recurses).
int depth_of(const Value& v);
// Whether v holds a namespace() object: one stored in a namespace could make a reference cycle.
bool holds_namespace(const Value& v);
constexpr int kMaxValueDepth = 512;

}  // namespace fabkit::trainer::serve::jinja
