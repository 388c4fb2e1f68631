#include "trainer/serve/jinja/renderer.h"

#include "trainer/serve/jinja/builtins.h"
#include "trainer/serve/jinja/error.h"

namespace fabkit::trainer::serve::jinja {

namespace {

using FramePtr = std::shared_ptr<Frame>;

enum class Flow { kNormal, kBreak, kContinue };

class Renderer {
 public:
  Renderer(const std::string& src, const std::unordered_map<std::string, Value>& globals,
           const RenderLimits& limits)
      : src_(src), globals_(globals), limits_(limits) {}

  std::string run(const Body& body) {
    auto root = std::make_shared<Frame>();
    std::string out;
    exec(body, root, out);
    return out;
  }

 private:
  [[noreturn]] void fail(size_t offset, ErrorKind kind, const std::string& message) const {
    int line, column;
    line_column(src_, offset, &line, &column);
    throw TemplateError(kind, line, column, message);
  }

  void emit(std::string& out, const std::string& s, size_t offset) {
    emitted_ += s.size();
    if (emitted_ > limits_.max_output_bytes)
      fail(offset, ErrorKind::kLimit,
           "the output passed " + std::to_string(limits_.max_output_bytes) +
               " bytes (a template that loops or repeats without bound?)");
    out += s;
  }

  // Every exec and eval level, across macro calls: the C++ stack they use is bounded by this,
  // whatever the template nests (blocks in macros calling themselves), so a render fits in a
  // small thread stack (measured: 512 KiB).
  struct Nest {
    Nest(Renderer* r, size_t offset) : r_(r) {
      if (++r_->nesting_ > kMaxRenderNesting)
        r_->fail(offset, ErrorKind::kLimit,
                 "blocks, expressions and macro calls nested deeper than " +
                     std::to_string(kMaxRenderNesting) + " levels in all");
    }
    ~Nest() { --r_->nesting_; }
    Renderer* r_;
  };

  Flow exec(const Body& body, const FramePtr& frame, std::string& out) {
    Nest nest(this, body.empty() ? 0 : body.front()->offset);
    for (const auto& stmt : body) {
      Flow flow = exec_one(*stmt, frame, out);
      if (flow != Flow::kNormal) return flow;
    }
    return Flow::kNormal;
  }

  Flow exec_one(const Stmt& s, const FramePtr& frame, std::string& out) {
    switch (s.kind) {
      case Stmt::Kind::kText:
        emit(out, s.text, s.offset);
        return Flow::kNormal;
      case Stmt::Kind::kOutput: {
        Value v = eval(*s.expr, frame);
        std::string text;
        try {
          text = to_str(v);
        } catch (const EvalError& e) {
          fail(s.expr->offset, e.kind(), e.what());
        }
        emit(out, text, s.offset);
        return Flow::kNormal;
      }
      case Stmt::Kind::kIf:
        for (size_t i = 0; i < s.bodies.size(); ++i) {
          if (i < s.conditions.size() && !truthy(eval(*s.conditions[i], frame))) continue;
          return exec(s.bodies[i], frame, out);
        }
        return Flow::kNormal;
      case Stmt::Kind::kFor:
        exec_for(s, frame, out);
        return Flow::kNormal;
      case Stmt::Kind::kSet:
        assign(s, frame, eval(*s.expr, frame));
        return Flow::kNormal;
      case Stmt::Kind::kSetBlock: {
        std::string captured;
        exec(s.body, frame, captured);
        frame->vars[s.targets[0]] = Value::string(std::move(captured));
        return Flow::kNormal;
      }
      case Stmt::Kind::kMacro: {
        auto fn = std::make_shared<Callable>();
        fn->name = s.macro->name;
        fn->macro = s.macro.get();
        fn->closure = frame;
        frame->vars[s.macro->name] = Value::callable(fn);
        return Flow::kNormal;
      }
      case Stmt::Kind::kBreak:
        return Flow::kBreak;
      case Stmt::Kind::kContinue:
        return Flow::kContinue;
    }
    return Flow::kNormal;
  }

  void bind(const std::vector<std::string>& targets, const Value& value, Frame& frame,
            size_t offset) {
    if (targets.size() == 1) {
      frame.vars[targets[0]] = value;
      return;
    }
    std::vector<Value> parts;
    try {
      if (!(value.is_list() || value.is_string()))
        throw EvalError(ErrorKind::kRuntime,
                        "cannot unpack non-iterable " + type_name(value) + " object");
      parts = iterate(value);
    } catch (const EvalError& e) {
      fail(offset, e.kind(), e.what());
    }
    if (parts.size() != targets.size())
      fail(offset, ErrorKind::kRuntime,
           (parts.size() > targets.size() ? "too many values to unpack (expected "
                                          : "not enough values to unpack (expected ") +
               std::to_string(targets.size()) + ", got " + std::to_string(parts.size()) + ")");
    for (size_t i = 0; i < targets.size(); ++i) frame.vars[targets[i]] = parts[i];
  }

  void assign(const Stmt& s, const FramePtr& frame, const Value& value) {
    if (s.target_attr.empty()) {
      bind(s.targets, value, *frame, s.offset);
      return;
    }
    Value ns = lookup(s.targets[0], frame);
    if (ns.type() != Value::Type::kNamespace || ns.undefined_hint() != "Namespace")
      fail(s.offset, ErrorKind::kRuntime,
           "cannot assign attribute on non-namespace object '" + s.targets[0] + "'");
    if (holds_namespace(value))
      fail(s.offset, ErrorKind::kUnsupported,
           "storing a namespace() object inside a namespace (it could refer to itself)");
    ns.shared_dict()->set(Value::string(s.target_attr), value);
  }

  void exec_for(const Stmt& s, const FramePtr& frame, std::string& out) {
    Value iterable = eval(*s.expr, frame);
    std::vector<Value> items;
    try {
      items = iterate(iterable);
    } catch (const EvalError& e) {
      fail(s.expr->offset, e.kind(), e.what());
    }
    if (s.filter) {
      std::vector<Value> kept;
      for (const Value& item : items) {
        count_iteration(s.offset);
        auto scope = std::make_shared<Frame>();
        scope->parent = frame;
        bind(s.targets, item, *scope, s.offset);
        if (truthy(eval(*s.filter, scope))) kept.push_back(item);
      }
      items = std::move(kept);
    }
    const int64_t n = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < n; ++i) {
      count_iteration(s.offset);
      auto scope = std::make_shared<Frame>();
      scope->parent = frame;
      bind(s.targets, items[i], *scope, s.offset);
      scope->vars["loop"] = loop_object(items, i);
      if (exec(s.body, scope, out) == Flow::kBreak) break;
    }
    if (n == 0 && !s.else_body.empty()) exec(s.else_body, frame, out);
  }

  void count_iteration(size_t offset) {
    if (++iterations_ > limits_.max_loop_iterations)
      fail(offset, ErrorKind::kLimit,
           "more than " + std::to_string(limits_.max_loop_iterations) +
               " loop iterations in one render");
  }

  static Value loop_object(const std::vector<Value>& items, int64_t i) {
    const int64_t n = static_cast<int64_t>(items.size());
    auto d = std::make_shared<DictData>();
    auto put = [&](const char* k, Value v) {
      d->items.emplace_back(Value::string(k), std::move(v));
    };
    put("index0", Value::integer(i));
    put("index", Value::integer(i + 1));
    put("revindex0", Value::integer(n - i - 1));
    put("revindex", Value::integer(n - i));
    put("first", Value::boolean(i == 0));
    put("last", Value::boolean(i == n - 1));
    put("length", Value::integer(n));
    put("depth", Value::integer(1));
    put("depth0", Value::integer(0));
    put("previtem", i > 0 ? items[i - 1] : Value::undefined("loop.previtem"));
    put("nextitem", i + 1 < n ? items[i + 1] : Value::undefined("loop.nextitem"));
    auto cycle = std::make_shared<Callable>();
    cycle->name = "loop.cycle";
    cycle->native = [i](const Args& args, const Kwargs&) -> Value {
      if (args.empty()) throw EvalError(ErrorKind::kRuntime, "no items for cycling given");
      return args[static_cast<size_t>(i) % args.size()];
    };
    put("cycle", Value::callable(cycle));
    return Value::new_namespace(d, "LoopContext");
  }

  Value lookup(const std::string& name, const FramePtr& frame) const {
    for (const Frame* f = frame.get(); f; f = f->parent.get()) {
      auto it = f->vars.find(name);
      if (it != f->vars.end()) return it->second;
    }
    auto it = globals_.find(name);
    if (it != globals_.end()) return it->second;
    // jinja2 gives a macro these when its body names them; this engine does not implement them.
    if (depth_ > 0 && (name == "varargs" || name == "kwargs" || name == "caller"))
      throw EvalError(ErrorKind::kUnsupported, "'" + name + "' inside a macro");
    return Value::undefined(name);
  }

  Value eval(const Expr& e, const FramePtr& frame) {
    Nest nest(this, e.offset);
    try {
      return eval_inner(e, frame);
    } catch (const EvalError& err) {
      fail(e.offset, err.kind(), err.what());
    }
  }

  Value call(const Value& callee, const Args& args, const Kwargs& kwargs, size_t offset) {
    if (callee.is_undefined())
      throw EvalError(ErrorKind::kRuntime, "'" + callee.undefined_hint() + "' is undefined");
    if (callee.type() != Value::Type::kCallable)
      throw EvalError(ErrorKind::kRuntime, "'" + type_name(callee) + "' object is not callable");
    const Callable& fn = *callee.fn();
    if (!fn.macro) return fn.native(args, kwargs);
    const MacroDef& m = *fn.macro;
    if (args.size() > m.params.size())
      throw EvalError(ErrorKind::kRuntime, "macro '" + m.name + "' takes not more than " +
                                               std::to_string(m.params.size()) + " argument(s)");
    if (depth_ >= limits_.max_call_depth)
      throw EvalError(ErrorKind::kLimit, "macro calls nested deeper than " +
                                             std::to_string(limits_.max_call_depth) +
                                             " (a macro that calls itself without end?)");
    auto scope = std::make_shared<Frame>();
    scope->parent = fn.closure.lock();
    if (!scope->parent)
      throw EvalError(ErrorKind::kUnsupported, "calling the macro '" + m.name +
                                                   "' after the loop iteration it was defined in");
    for (size_t i = 0; i < m.params.size(); ++i) {
      const Value* v = nullptr;
      if (i < args.size()) v = &args[i];
      for (const auto& [k, kv] : kwargs)
        if (k == m.params[i]) v = &kv;
      if (v) {
        scope->vars[m.params[i]] = *v;
      } else if (m.defaults[i]) {
        scope->vars[m.params[i]] = eval(*m.defaults[i], scope);
      } else {
        scope->vars[m.params[i]] = Value::undefined(m.params[i]);
      }
    }
    for (const auto& [k, kv] : kwargs) {
      bool known = false;
      for (const auto& p : m.params) known |= p == k;
      if (!known)
        throw EvalError(ErrorKind::kRuntime,
                        "macro '" + m.name + "' takes no keyword argument '" + k + "'");
    }
    std::string out;
    ++depth_;
    struct Leave {
      int* d;
      ~Leave() { --*d; }
    } leave{&depth_};
    (void)offset;
    exec(m.body, scope, out);
    return Value::string(std::move(out));
  }

  Value eval_inner(const Expr& e, const FramePtr& frame) {
    switch (e.kind) {
      case Expr::Kind::kLiteral:
        return e.literal;
      case Expr::Kind::kName:
        return lookup(e.name, frame);
      case Expr::Kind::kList:
      case Expr::Kind::kTuple: {
        std::vector<Value> items;
        for (const auto& a : e.args) items.push_back(eval(*a, frame));
        return Value::list(std::move(items), e.kind == Expr::Kind::kTuple);
      }
      case Expr::Kind::kDict: {
        auto d = std::make_shared<DictData>();
        for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
          Value k = eval(*e.args[i], frame);
          check_hashable(k);
          d->set(k, eval(*e.args[i + 1], frame));
        }
        return Value::dict(std::move(d));
      }
      case Expr::Kind::kGetAttr:
        return get_attr(eval(*e.args[0], frame), e.name);
      case Expr::Kind::kGetItem: {
        Value obj = eval(*e.args[0], frame);
        return get_item(obj, eval(*e.args[1], frame));
      }
      case Expr::Kind::kSlice: {
        Value obj = eval(*e.args[0], frame);
        Value parts[3];
        for (int i = 0; i < 3; ++i)
          parts[i] = e.args[i + 1] ? eval(*e.args[i + 1], frame) : Value::none();
        return get_slice(obj, parts[0], parts[1], parts[2]);
      }
      case Expr::Kind::kCall: {
        Value callee = eval(*e.args[0], frame);
        Args args;
        for (size_t i = 1; i < e.args.size(); ++i) args.push_back(eval(*e.args[i], frame));
        Kwargs kwargs;
        for (const auto& [k, v] : e.kwargs) kwargs.emplace_back(k, eval(*v, frame));
        return call(callee, args, kwargs, e.offset);
      }
      case Expr::Kind::kFilter:
      case Expr::Kind::kTest: {
        Value subject = eval(*e.args[0], frame);
        Args args;
        for (size_t i = 1; i < e.args.size(); ++i) args.push_back(eval(*e.args[i], frame));
        Kwargs kwargs;
        for (const auto& [k, v] : e.kwargs) kwargs.emplace_back(k, eval(*v, frame));
        if (e.kind == Expr::Kind::kFilter) return apply_filter(e.name, subject, args, kwargs);
        if (!kwargs.empty())
          throw EvalError(ErrorKind::kUnsupported, "keyword arguments to a test");
        bool r = apply_test(e.name, subject, args);
        return Value::boolean(e.negated ? !r : r);
      }
      case Expr::Kind::kUnary:
        return unary_op(e.name, eval(*e.args[0], frame));
      case Expr::Kind::kBinary: {
        Value left = eval(*e.args[0], frame);
        if (e.name == "and") return truthy(left) ? eval(*e.args[1], frame) : left;
        if (e.name == "or") return truthy(left) ? left : eval(*e.args[1], frame);
        return binary_op(e.name, left, eval(*e.args[1], frame));
      }
      case Expr::Kind::kCompare: {
        Value left = eval(*e.args[0], frame);
        for (size_t i = 0; i < e.ops.size(); ++i) {
          Value right = eval(*e.args[i + 1], frame);
          const std::string& op = e.ops[i];
          bool r;
          if (op == "==") {
            r = equals(left, right);
          } else if (op == "!=") {
            r = !equals(left, right);
          } else if (op == "in" || op == "not in") {
            r = contains(right, left) == (op == "in");
          } else {
            for (const Value* v : {&left, &right})
              if (v->is_undefined())
                throw EvalError(ErrorKind::kRuntime, "'" + v->undefined_hint() + "' is undefined");
            int c = compare(left, right);
            r = op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0;
          }
          if (!r) return Value::boolean(false);
          left = std::move(right);
        }
        return Value::boolean(true);
      }
      case Expr::Kind::kCondition:
        if (truthy(eval(*e.args[0], frame))) return eval(*e.args[1], frame);
        return e.args[2] ? eval(*e.args[2], frame) : Value::undefined("conditional expression");
    }
    return Value();
  }

  const std::string& src_;
  const std::unordered_map<std::string, Value>& globals_;
  RenderLimits limits_;
  size_t emitted_ = 0;
  int64_t iterations_ = 0;
  int depth_ = 0;
  int nesting_ = 0;
};

}  // namespace

std::string render(const std::string& normalized_source, const Body& body,
                   const std::unordered_map<std::string, Value>& globals,
                   const RenderLimits& limits) {
  return Renderer(normalized_source, globals, limits).run(body);
}

}  // namespace fabkit::trainer::serve::jinja
