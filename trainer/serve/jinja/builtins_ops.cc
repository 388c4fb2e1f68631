// Operators, item and slice lookup (see builtins.h). Methods and attribute lookup are in
// builtins_methods.cc, filters and tests in builtins_filters.cc.
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

[[noreturn]] void undefined_error(const Value& u) {
  runtime("'" + (u.undefined_hint().empty() ? std::string("value") : u.undefined_hint()) +
          "' is undefined");
}

int64_t checked(long double r) {
  if (r > static_cast<long double>(std::numeric_limits<int64_t>::max()) ||
      r < static_cast<long double>(std::numeric_limits<int64_t>::min()))
    unsupported("integer arithmetic beyond 64 bits");
  return static_cast<int64_t>(r);
}

[[noreturn]] void bad_operands(const std::string& op, const Value& a, const Value& b) {
  runtime("unsupported operand type(s) for " + op + ": '" + type_name(a) + "' and '" +
          type_name(b) + "'");
}

Value repeat(const Value& seq, int64_t n) {
  if (n < 0) n = 0;
  if (seq.is_string()) {
    if (n > 0 && seq.as_string().size() * static_cast<size_t>(n) > (64u << 20))
      throw EvalError(ErrorKind::kLimit, "a string repeated past 64 MiB");
    std::string out;
    for (int64_t i = 0; i < n; ++i) out += seq.as_string();
    return Value::string(out);
  }
  if (n > 0 && seq.items().size() * static_cast<size_t>(n) > 1000000)
    throw EvalError(ErrorKind::kLimit, "a list repeated past 1,000,000 items");
  std::vector<Value> out;
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.items().begin(), seq.items().end());
  return Value::list(std::move(out), seq.list_data().tuple);
}

}  // namespace

const Value* find_arg(const Args& args, const Kwargs& kwargs, size_t index, const char* name) {
  for (const auto& [k, v] : kwargs)
    if (k == name) return &v;
  return index < args.size() ? &args[index] : nullptr;
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) undefined_error(obj);
  switch (obj.type()) {
    case Value::Type::kDict:
      if (const Value* v = obj.dict_data().find(key)) return *v;
      break;
    case Value::Type::kNamespace:
      break;
    case Value::Type::kList:
    case Value::Type::kString:
      if (key.is_int() && (obj.is_string() || obj.is_sequence())) {
        int64_t n = length(obj), i = key.as_int();
        if (i < 0) i += n;
        if (i < 0 || i >= n) return Value::undefined("index " + std::to_string(key.as_int()));
        if (obj.is_list()) return obj.items()[i];
        std::string out;
        utf8_append(out, utf8_decode(obj.as_string())[i]);
        return Value::string(out);
      }
      break;
    default:
      break;
  }
  if (key.is_string()) return get_attr(obj, key.as_string());
  return Value::undefined("item");
}

Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  if (obj.is_undefined()) undefined_error(obj);
  // jinja2 compiles a slice to a plain Python subscript (it bypasses environment.getitem), so a
  // slice of anything but a string, list or tuple is a TypeError, not an undefined value.
  if (!(obj.is_string() || obj.is_sequence()))
    unsupported("a slice of a " + type_name(obj) +
                " (jinja2 fails on it at run time but renders a constant one as empty)");
  auto index = [](const Value& v, const char* what) -> const Value* {
    if (v.is_undefined() || v.is_none()) return nullptr;
    if (!v.is_int()) runtime(std::string("slice ") + what + " must be an integer or None");
    return &v;
  };
  const Value* a = index(start, "start");
  const Value* b = index(stop, "stop");
  const Value* s = index(step, "step");
  int64_t st = s ? s->as_int() : 1;
  if (st == 0) runtime("slice step cannot be zero");
  int64_t n = length(obj);
  // CPython's PySlice_AdjustIndices.
  auto adjust = [&](const Value* v, int64_t dflt) {
    if (!v) return dflt;
    int64_t i = v->as_int();
    if (i < 0) {
      i += n;
      if (i < 0) i = st < 0 ? -1 : 0;
    } else if (i >= n) {
      i = st < 0 ? n - 1 : n;
    }
    return i;
  };
  int64_t lo = adjust(a, st < 0 ? n - 1 : 0);
  int64_t hi = adjust(b, st < 0 ? -1 : n);
  std::vector<int64_t> picks;
  for (int64_t i = lo; st > 0 ? i < hi : i > hi; i += st) picks.push_back(i);
  if (obj.is_string()) {
    std::u32string cps = utf8_decode(obj.as_string()), out;
    for (int64_t i : picks) out.push_back(cps[i]);
    return Value::string(utf8_encode(out));
  }
  std::vector<Value> out;
  for (int64_t i : picks) out.push_back(obj.items()[i]);
  return Value::list(std::move(out), obj.list_data().tuple);
}

bool contains(const Value& container, const Value& item) {
  switch (container.type()) {
    case Value::Type::kUndefined:
      return false;  // jinja2's Undefined iterates as empty
    case Value::Type::kString:
      if (!item.is_string())
        runtime("'in <string>' requires string as left operand, not " + type_name(item));
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Type::kDict:
      check_hashable(item);
      return container.dict_data().find(item) != nullptr;
    case Value::Type::kList:
      if (container.list_data().generator) {  // `in` consumes a generator up to the match
        Value v;
        while (next_item(container, &v))
          if (equals(v, item)) return true;
        return false;
      }
      for (const auto& v : container.items())
        if (equals(v, item)) return true;
      return false;
    default:
      runtime("argument of type '" + type_name(container) + "' is not iterable");
  }
}

Value unary_op(const std::string& op, const Value& a) {
  if (op == "not") return Value::boolean(!truthy(a));
  if (a.is_undefined()) undefined_error(a);
  if (!a.is_number()) runtime("bad operand type for unary " + op + ": '" + type_name(a) + "'");
  if (a.type() == Value::Type::kFloat)
    return Value::number(op == "-" ? -a.as_float() : a.as_float());
  return Value::integer(op == "-" ? checked(-static_cast<long double>(a.as_int())) : a.as_int());
}

Value binary_op(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") return Value::string(to_str(a) + to_str(b));
  if (op == "%" && a.is_string()) unsupported("printf-style string formatting ('...' % values)");
  if (a.is_undefined()) undefined_error(a);
  if (b.is_undefined()) undefined_error(b);
  bool floats = a.type() == Value::Type::kFloat || b.type() == Value::Type::kFloat;
  if (a.is_number() && b.is_number()) {
    long double x = floats ? a.as_float() : a.as_int();
    long double y = floats ? b.as_float() : b.as_int();
    if (op == "+")
      return floats ? Value::number(a.as_float() + b.as_float()) : Value::integer(checked(x + y));
    if (op == "-")
      return floats ? Value::number(a.as_float() - b.as_float()) : Value::integer(checked(x - y));
    if (op == "*")
      return floats ? Value::number(a.as_float() * b.as_float()) : Value::integer(checked(x * y));
    if (op == "/") {
      if (b.as_float() == 0) runtime("division by zero");
      return Value::number(a.as_float() / b.as_float());
    }
    if (op == "//" || op == "%") {
      if (floats ? b.as_float() == 0 : b.as_int() == 0)
        runtime(op == "%" ? "integer modulo by zero" : "integer division or modulo by zero");
      if (floats) {
        // CPython's float_divmod: floor((x - fmod(x, y)) / y), corrected, not floor(x / y)
        // (1 // 0.1 is 9.0 in Python, floor(1 / 0.1) is 10).
        double x = a.as_float(), y = b.as_float();
        double m = std::fmod(x, y);
        double div = (x - m) / y;
        if (m != 0) {
          if ((y < 0) != (m < 0)) {
            m += y;
            div -= 1.0;
          }
        } else {
          m = std::copysign(0.0, y);
        }
        double q;
        if (div != 0) {
          q = std::floor(div);
          if (div - q > 0.5) q += 1.0;
        } else {
          q = std::copysign(0.0, x / y);
        }
        return op == "//" ? Value::number(q) : Value::number(m);
      }
      int64_t xi = a.as_int(), yi = b.as_int();
      int64_t q = xi / yi, m = xi % yi;
      if (m != 0 && ((m < 0) != (yi < 0))) {  // Python floors toward negative infinity
        --q;
        m += yi;
      }
      return Value::integer(op == "//" ? q : m);
    }
    if (op == "**") {
      if (!floats && b.as_int() >= 0) {
        long double r = 1;
        for (int64_t i = 0; i < b.as_int(); ++i) {
          r *= x;
          checked(r);
        }
        return Value::integer(checked(r));
      }
      return Value::number(std::pow(a.as_float(), b.as_float()));
    }
  }
  if (op == "+") {
    if (a.is_string() && b.is_string()) return Value::string(a.as_string() + b.as_string());
    if (a.is_sequence() && b.is_sequence() && a.list_data().tuple == b.list_data().tuple) {
      std::vector<Value> items = a.items();
      items.insert(items.end(), b.items().begin(), b.items().end());
      return Value::list(std::move(items), a.list_data().tuple);
    }
  }
  if (op == "*") {
    if ((a.is_string() || a.is_sequence()) && b.is_int()) return repeat(a, b.as_int());
    if ((b.is_string() || b.is_sequence()) && a.is_int()) return repeat(b, a.as_int());
  }
  if (op == "%" && a.is_string()) unsupported("printf-style string formatting ('...' % values)");
  bad_operands(op, a, b);
}

}  // namespace fabkit::trainer::serve::jinja
