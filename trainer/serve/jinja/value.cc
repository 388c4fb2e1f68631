#include "trainer/serve/jinja/value.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "trainer/serve/jinja/error.h"
#include "trainer/serve/jinja/unicode.h"

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

bool equals_at(const Value& a, const Value& b, int depth) {
  check_depth(depth);
  using T = Value::Type;
  if (a.is_number() && b.is_number()) {
    if (a.type() == T::kFloat || b.type() == T::kFloat) return a.as_float() == b.as_float();
    return a.as_int() == b.as_int();
  }
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case T::kUndefined:
    case T::kNone:
      return true;
    case T::kString:
      return a.as_string() == b.as_string();
    case T::kList: {
      const ListData &x = a.list_data(), &y = b.list_data();
      if (!x.view.empty() || !y.view.empty())
        throw EvalError(ErrorKind::kUnsupported,
                        "comparing a dict view (.items(), .keys(), .values())");
      if (x.generator || y.generator) return &x == &y;
      if (x.tuple != y.tuple || x.items.size() != y.items.size()) return false;
      for (size_t i = 0; i < x.items.size(); ++i)
        if (!equals_at(x.items[i], y.items[i], depth + 1)) return false;
      return true;
    }
    case T::kDict: {
      const DictData &x = a.dict_data(), &y = b.dict_data();
      if (x.items.size() != y.items.size()) return false;
      for (const auto& [k, val] : x.items) {
        const Value* other = y.find(k);
        if (!other || !equals_at(val, *other, depth + 1)) return false;
      }
      return true;
    }
    case T::kNamespace:
      return a.shared_dict() == b.shared_dict();
    case T::kCallable:
      return a.fn() == b.fn();
    default:
      return false;
  }
}

Value from_json_at(const nlohmann::ordered_json& j, int depth) {
  check_depth(depth);
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::none();
    case nlohmann::ordered_json::value_t::boolean:
      return Value::boolean(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value::integer(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      uint64_t u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        throw EvalError(ErrorKind::kUnsupported,
                        "the integer " + std::to_string(u) + " (beyond 64-bit signed integers)");
      return Value::integer(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float:
      return Value::number(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value::string(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(from_json_at(e, depth + 1));
      return Value::list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      auto d = std::make_shared<DictData>();
      d->items.reserve(j.size());
      for (auto it = j.begin(); it != j.end(); ++it)
        d->items.emplace_back(Value::string(it.key()), from_json_at(it.value(), depth + 1));
      return Value::dict(std::move(d));
    }
    default:
      throw EvalError(ErrorKind::kUnsupported,
                      "a JSON value of type " + std::string(j.type_name()));
  }
}

}  // namespace

const Value* DictData::find(const Value& key) const {
  for (const auto& [k, v] : items)
    if (equals(k, key)) return &v;
  return nullptr;
}

const Value* DictData::find(const std::string& key) const {
  for (const auto& [k, v] : items)
    if (k.is_string() && k.as_string() == key) return &v;
  return nullptr;
}

void DictData::set(const Value& key, Value value) {
  for (auto& [k, v] : items) {
    if (equals(k, key)) {
      v = std::move(value);
      return;
    }
  }
  items.emplace_back(key, std::move(value));
}

Value Value::undefined(std::string hint) {
  Value v;
  v.hint_ = std::move(hint);
  return v;
}
Value Value::none() {
  Value v;
  v.type_ = Type::kNone;
  return v;
}
Value Value::boolean(bool b) {
  Value v;
  v.type_ = Type::kBool;
  v.b_ = b;
  return v;
}
Value Value::integer(int64_t i) {
  Value v;
  v.type_ = Type::kInt;
  v.i_ = i;
  return v;
}
Value Value::number(double d) {
  Value v;
  v.type_ = Type::kFloat;
  v.f_ = d;
  return v;
}
Value Value::string(std::string s) {
  Value v;
  v.type_ = Type::kString;
  v.s_ = std::make_shared<const std::string>(std::move(s));
  return v;
}
namespace {

int deepest(const std::vector<Value>& items) {
  int d = 0;
  for (const Value& v : items) d = std::max(d, depth_of(v));
  if (d + 1 > kMaxValueDepth)
    throw EvalError(ErrorKind::kLimit, "a list or dict nested deeper than " +
                                           std::to_string(kMaxValueDepth) + " levels");
  return d + 1;
}

}  // namespace

int depth_of(const Value& v) {
  if (v.type() == Value::Type::kList) return v.list_data().depth;
  if (v.type() == Value::Type::kDict || v.type() == Value::Type::kNamespace)
    return v.dict_data().depth;
  return 0;
}

bool holds_namespace(const Value& v) {
  if (v.type() == Value::Type::kNamespace) return true;
  if (v.type() == Value::Type::kList) {
    for (const Value& item : v.items())
      if (holds_namespace(item)) return true;
  } else if (v.type() == Value::Type::kDict) {
    for (const auto& kv : v.dict_data().items)
      if (holds_namespace(kv.second)) return true;
  }
  return false;
}

Value Value::list(std::vector<Value> items, bool tuple, bool generator) {
  Value v;
  v.type_ = Type::kList;
  auto data = std::make_shared<ListData>();
  data->depth = deepest(items);
  data->items = std::move(items);
  data->tuple = tuple;
  data->generator = generator;
  v.list_ = std::move(data);
  return v;
}
Value Value::dict_view(std::vector<Value> items, std::string view_type) {
  Value v;
  v.type_ = Type::kList;
  auto data = std::make_shared<ListData>();
  data->depth = deepest(items);
  data->items = std::move(items);
  data->view = std::move(view_type);
  v.list_ = std::move(data);
  return v;
}
Value Value::dict(std::shared_ptr<DictData> data) {
  std::vector<Value> values;
  for (const auto& kv : data->items) values.push_back(kv.second);
  data->depth = deepest(values);
  Value v;
  v.type_ = Type::kDict;
  v.dict_ = std::move(data);
  return v;
}
Value Value::new_namespace(std::shared_ptr<DictData> data, std::string type_name) {
  Value v;
  v.type_ = Type::kNamespace;
  v.dict_ = std::move(data);
  v.hint_ = std::move(type_name);
  return v;
}
Value Value::callable(std::shared_ptr<Callable> fn) {
  Value v;
  v.type_ = Type::kCallable;
  v.fn_ = std::move(fn);
  return v;
}

std::string type_name(const Value& v) {
  switch (v.type()) {
    case Value::Type::kUndefined:
      return "Undefined";
    case Value::Type::kNone:
      return "NoneType";
    case Value::Type::kBool:
      return "bool";
    case Value::Type::kInt:
      return "int";
    case Value::Type::kFloat:
      return "float";
    case Value::Type::kString:
      return "str";
    case Value::Type::kList:
      if (!v.list_data().view.empty()) return v.list_data().view;
      return v.list_data().generator ? "generator" : v.list_data().tuple ? "tuple" : "list";
    case Value::Type::kDict:
      return "dict";
    case Value::Type::kNamespace:
      return v.undefined_hint();
    case Value::Type::kCallable:
      return "function";
  }
  return "object";
}

bool truthy(const Value& v) {
  switch (v.type()) {
    case Value::Type::kUndefined:
    case Value::Type::kNone:
      return false;
    case Value::Type::kBool:
      return v.as_bool();
    case Value::Type::kInt:
      return v.as_int() != 0;
    case Value::Type::kFloat:
      return v.as_float() != 0.0;
    case Value::Type::kString:
      return !v.as_string().empty();
    case Value::Type::kList:
      return v.list_data().generator || !v.items().empty();
    case Value::Type::kDict:
      return !v.dict_data().items.empty();
    default:
      return true;
  }
}

bool equals(const Value& a, const Value& b) { return equals_at(a, b, 0); }
int compare(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.type() == Value::Type::kFloat || b.type() == Value::Type::kFloat) {
      double x = a.as_float(), y = b.as_float();
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    int64_t x = a.as_int(), y = b.as_int();
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    int c = a.as_string().compare(b.as_string());  // UTF-8 byte order is code point order
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if ((a.is_list() && !a.list_data().view.empty()) || (b.is_list() && !b.list_data().view.empty()))
    throw EvalError(ErrorKind::kUnsupported, "ordering dict views (Python compares them as sets)");
  if (a.is_sequence() && b.is_sequence() && a.list_data().tuple == b.list_data().tuple) {
    const auto &x = a.items(), &y = b.items();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (equals(x[i], y[i])) continue;
      return compare(x[i], y[i]);
    }
    return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  }
  runtime("'<' not supported between instances of '" + type_name(a) + "' and '" + type_name(b) +
          "'");
}

Value from_json(const nlohmann::ordered_json& j) { return from_json_at(j, 0); }

void check_hashable(const Value& key) {
  if (key.type() == Value::Type::kDict ||
      (key.type() == Value::Type::kList && !key.list_data().tuple))
    runtime("unhashable type: '" + type_name(key) + "'");
  if (key.is_list())
    for (const Value& item : key.items()) check_hashable(item);
}

bool next_item(const Value& generator, Value* item) {
  const ListData& l = generator.list_data();
  if (l.consumed >= l.items.size()) return false;
  *item = l.items[l.consumed++];
  return true;
}

std::vector<Value> iterate(const Value& v) {
  switch (v.type()) {
    case Value::Type::kUndefined:
      return {};
    case Value::Type::kList: {
      const ListData& l = v.list_data();
      if (!l.generator) return l.items;
      std::vector<Value> rest(l.items.begin() + std::min(l.consumed, l.items.size()),
                              l.items.end());
      l.consumed = l.items.size();  // a generator is used up by iterating it
      return rest;
    }
    case Value::Type::kDict: {
      std::vector<Value> keys;
      for (const auto& kv : v.dict_data().items) keys.push_back(kv.first);
      return keys;
    }
    case Value::Type::kString: {
      std::vector<Value> chars;
      for (char32_t c : utf8_decode(v.as_string())) {
        std::string s;
        utf8_append(s, c);
        chars.push_back(Value::string(std::move(s)));
      }
      return chars;
    }
    default:
      runtime("'" + type_name(v) + "' object is not iterable");
  }
}

int64_t length(const Value& v) {
  switch (v.type()) {
    case Value::Type::kUndefined:
      return 0;
    case Value::Type::kString:
      return static_cast<int64_t>(utf8_decode(v.as_string()).size());
    case Value::Type::kList:
      if (v.list_data().generator) runtime("object of type 'generator' has no len()");
      return static_cast<int64_t>(v.items().size());
    case Value::Type::kDict:
      return static_cast<int64_t>(v.dict_data().items.size());
    default:
      runtime("object of type '" + type_name(v) + "' has no len()");
  }
}

}  // namespace fabkit::trainer::serve::jinja
