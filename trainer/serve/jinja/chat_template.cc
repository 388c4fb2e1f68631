#include "trainer/serve/jinja/chat_template.h"

#include <new>
#include <unordered_map>

#include "trainer/serve/jinja/ast.h"
#include "trainer/serve/jinja/builtins.h"
#include "trainer/serve/jinja/lexer.h"
#include "trainer/serve/jinja/parser.h"

namespace fabkit::trainer::serve {

namespace j = jinja;

namespace {

// jinja2's sandbox caps range() (jinja2.sandbox.MAX_RANGE) and raises OverflowError past it.
constexpr int64_t kMaxRange = 100000;

std::tm local_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  return tm;
}

j::Value native(const std::string& name, j::NativeFn fn) {
  auto c = std::make_shared<j::Callable>();
  c->name = name;
  c->native = std::move(fn);
  return j::Value::callable(c);
}

[[noreturn]] void runtime(const std::string& m) { throw j::EvalError(j::ErrorKind::kRuntime, m); }

j::Value range_fn(const j::Args& args, const j::Kwargs& kwargs) {
  if (!kwargs.empty()) runtime("range() takes no keyword arguments");
  if (args.empty() || args.size() > 3) runtime("range expected 1 to 3 arguments");
  for (const auto& a : args)
    if (!a.is_int())
      runtime("'" + j::type_name(a) + "' object cannot be interpreted as an integer");
  int64_t start = 0, stop, step = 1;
  if (args.size() == 1) {
    stop = args[0].as_int();
  } else {
    start = args[0].as_int();
    stop = args[1].as_int();
    if (args.size() == 3) step = args[2].as_int();
  }
  if (step == 0) runtime("range() arg 3 must not be zero");
  int64_t n = 0;
  if (step > 0 && start < stop) n = (stop - start + step - 1) / step;
  if (step < 0 && start > stop) n = (start - stop - step - 1) / -step;
  if (n > kMaxRange)
    runtime("Range too big. The sandbox blocks ranges larger than MAX_RANGE (" +
            std::to_string(kMaxRange) + ").");
  std::vector<j::Value> items;
  for (int64_t i = 0; i < n; ++i) items.push_back(j::Value::integer(start + i * step));
  return j::Value::list(std::move(items));
}

std::shared_ptr<j::DictData> kwargs_dict(const j::Args& args, const j::Kwargs& kwargs,
                                         const char* what) {
  auto d = std::make_shared<j::DictData>();
  for (const auto& a : args) {
    if (!a.is_dict()) runtime(std::string(what) + "() takes keyword arguments or a dict");
    for (const auto& [k, v] : a.dict_data().items) d->set(k, v);
  }
  for (const auto& [k, v] : kwargs) d->set(j::Value::string(k), v);
  return d;
}

}  // namespace

struct ChatTemplate::Impl {
  std::string source;  // normalized
  j::Body body;
  std::function<std::tm()> clock = local_now;
  j::RenderLimits limits;
};

ChatTemplate::ChatTemplate(const std::string& source) : impl_(std::make_unique<Impl>()) {
  impl_->source = j::normalize_source(source);
  impl_->body = j::parse(impl_->source, j::tokenize(impl_->source));
}

ChatTemplate::~ChatTemplate() = default;
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;

void ChatTemplate::set_clock(std::function<std::tm()> clock) { impl_->clock = std::move(clock); }
void ChatTemplate::set_limits(const ChatTemplateLimits& limits) { impl_->limits = limits; }

std::string ChatTemplate::render(const ChatTemplateInputs& inputs) const {
  std::unordered_map<std::string, j::Value> globals;
  auto input = [&](const char* what, const nlohmann::ordered_json& json) {
    try {
      return j::from_json(json);
    } catch (const j::EvalError& e) {
      throw ChatTemplateError(e.kind(), 1, 1, std::string("the ") + what + ": " + e.what());
    }
  };
  globals["range"] = native("range", range_fn);
  globals["namespace"] = native("namespace", [](const j::Args& a, const j::Kwargs& k) {
    return j::Value::new_namespace(kwargs_dict(a, k, "namespace"), "Namespace");
  });
  globals["dict"] = native("dict", [](const j::Args& a, const j::Kwargs& k) {
    return j::Value::dict(kwargs_dict(a, k, "dict"));
  });
  globals["raise_exception"] =
      native("raise_exception", [](const j::Args& a, const j::Kwargs&) -> j::Value {
        throw j::EvalError(j::ErrorKind::kRaised, a.empty() ? std::string() : j::to_str(a[0]));
      });
  auto clock = impl_->clock;
  globals["strftime_now"] = native("strftime_now", [clock](const j::Args& a, const j::Kwargs&) {
    if (a.size() != 1 || !a[0].is_string()) runtime("strftime_now(format) takes one string");
    std::tm tm = clock();
    // HF calls datetime.now().strftime(format): a naive datetime, so %z and %Z print nothing
    // (C's strftime would print the zone), and Python itself expands %f (microseconds).
    std::string format;
    const std::string& f = a[0].as_string();
    for (size_t i = 0; i < f.size(); ++i) {
      if (f[i] == '%' && i + 1 < f.size()) {
        char c = f[++i];
        if (c == 'f')
          throw j::EvalError(j::ErrorKind::kUnsupported, "strftime_now's %f (microseconds)");
        if (c != 'z' && c != 'Z') format += std::string("%") + c;
      } else {
        format += f[i];
      }
    }
    char buf[512];
    size_t n = std::strftime(buf, sizeof buf, format.c_str(), &tm);
    if (n == 0 && !a[0].as_string().empty())
      throw j::EvalError(j::ErrorKind::kUnsupported, "strftime_now format '" + a[0].as_string() +
                                                         "' (empty or over 511 bytes of output)");
    return j::Value::string(std::string(buf, n));
  });
  for (const char* name : {"cycler", "joiner", "lipsum"}) {
    std::string n = name;
    globals[name] = native(name, [n](const j::Args&, const j::Kwargs&) -> j::Value {
      throw j::EvalError(j::ErrorKind::kUnsupported, "the global '" + n + "()'");
    });
  }
  if (!inputs.extra.is_object())
    throw ChatTemplateError(j::ErrorKind::kRuntime, 1, 1,
                            "the extra template variables must be an object");
  for (auto it = inputs.extra.begin(); it != inputs.extra.end(); ++it)
    globals[it.key()] = input("extra variables", it.value());
  globals["messages"] = input("messages", inputs.messages);
  globals["tools"] = input("tools", inputs.tools);
  globals["documents"] = j::Value::none();
  globals["add_generation_prompt"] = j::Value::boolean(inputs.add_generation_prompt);
  if (inputs.bos_token) globals["bos_token"] = j::Value::string(*inputs.bos_token);
  if (inputs.eos_token) globals["eos_token"] = j::Value::string(*inputs.eos_token);
  try {
    return j::render(impl_->source, impl_->body, globals, impl_->limits);
  } catch (const ChatTemplateError&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw ChatTemplateError(j::ErrorKind::kLimit, 1, 1, "out of memory while rendering");
  } catch (const std::exception& e) {
    // Not expected: every failure the engine knows is a ChatTemplateError. Kept one so callers
    // need to handle one type.
    throw ChatTemplateError(j::ErrorKind::kRuntime, 1, 1,
                            std::string("internal error in the chat-template engine: ") + e.what());
  }
}

}  // namespace fabkit::trainer::serve
