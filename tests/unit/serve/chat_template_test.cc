// What the chat-template engine refuses, and how: unsupported constructs named with their
// line:column, malformed templates, templates that loop or recurse without end (stopped by the
// limits, never a hang or a stack overflow), and raise_exception's message surfaced. Rendering
// itself is compared with jinja2 in chat_template_parity_test.cc.
#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "trainer/serve/jinja/chat_template.h"

namespace fabkit::trainer::serve {
namespace {

using Kind = ChatTemplateErrorKind;

ChatTemplateInputs one_user_message() {
  ChatTemplateInputs in;
  in.messages = nlohmann::ordered_json::parse(R"([{"role": "user", "content": "hi"}])");
  return in;
}

// Compiles and renders; returns the error (the test fails if there is none).
ChatTemplateError error_of(const std::string& source, const ChatTemplateLimits* limits = nullptr) {
  try {
    ChatTemplate t(source);
    if (limits) t.set_limits(*limits);
    std::string out = t.render(one_user_message());
    ADD_FAILURE() << "rendered without error: " << out;
  } catch (const ChatTemplateError& e) {
    return e;
  }
  return ChatTemplateError(Kind::kSyntax, 0, 0, "no error");
}

void expect_error(const std::string& source, Kind kind, int line, int column,
                  const std::string& named) {
  SCOPED_TRACE(source);
  ChatTemplateError e = error_of(source);
  EXPECT_EQ(e.kind(), kind) << e.what();
  EXPECT_EQ(e.line(), line) << e.what();
  EXPECT_EQ(e.column(), column) << e.what();
  EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << e.what();
  EXPECT_NE(
      std::string(e.what()).find("line " + std::to_string(line) + ":" + std::to_string(column)),
      std::string::npos)
      << e.what();
}

TEST(ChatTemplateRefuses, UnsupportedTagsByName) {
  expect_error("hello\n  {% include 'other.jinja' %}", Kind::kUnsupported, 2, 6,
               "'{% include %}' is not supported");
  expect_error("{% import 'm.jinja' as m %}", Kind::kUnsupported, 1, 4, "'{% import %}'");
  expect_error("{% extends 'base' %}", Kind::kUnsupported, 1, 4, "'{% extends %}'");
  expect_error("{% block body %}x{% endblock %}", Kind::kUnsupported, 1, 4, "'{% block %}'");
  expect_error("{% filter upper %}x{% endfilter %}", Kind::kUnsupported, 1, 4, "'{% filter %}'");
  expect_error("{% call m() %}x{% endcall %}", Kind::kUnsupported, 1, 4, "'{% call %}'");
  expect_error("{% with a = 1 %}{{ a }}{% endwith %}", Kind::kUnsupported, 1, 4, "'{% with %}'");
  expect_error("ab{% raw %}{{ x }}{% endraw %}", Kind::kUnsupported, 1, 3, "'{% raw %}'");
  expect_error("{% for m in messages recursive %}{% endfor %}", Kind::kUnsupported, 1, 22,
               "recursive for loops");
  expect_error("{% generation %}x{% endgeneration %}", Kind::kUnsupported, 1, 4,
               "'{% generation %}'");
}

TEST(ChatTemplateRefuses, UnsupportedExpressionsByName) {
  expect_error("{{ messages[0].content | wordwrap(10) }}", Kind::kUnsupported, 1, 26,
               "the 'wordwrap' filter is not supported");
  expect_error("{{ x | no_such_filter }}", Kind::kUnsupported, 1, 8,
               "no filter named 'no_such_filter'");
  expect_error("{% if x is filter %}{% endif %}", Kind::kUnsupported, 1, 12, "the 'filter' test");
  expect_error("{{ f(*args) }}", Kind::kUnsupported, 1, 6, "'*args'");
  expect_error("{{ messages[0:1, 2] }}", Kind::kUnsupported, 1, 12,
               "a slice inside a subscript tuple");
  // Found at render time, still named with their position.
  expect_error("{{ '%s!' % 'x' }}", Kind::kUnsupported, 1, 10, "printf-style string formatting");
  expect_error("\n{{ messages.append(1) }}", Kind::kUnsupported, 2, 19, "'.append()'");
  expect_error("{{ 'abc'.zfill(5) }}", Kind::kUnsupported, 1, 15, "the string method 'zfill()'");
  expect_error("{{ 'ա' | upper }}", Kind::kUnsupported, 1, 10, "U+0561");
  expect_error("{{ cycler(1, 2) }}", Kind::kUnsupported, 1, 10, "'cycler()'");
  expect_error("{{ messages | map('upper') }}", Kind::kUnsupported, 1, 15, "printing a generator");
  expect_error("{{ {'a': 1}.items() }}", Kind::kUnsupported, 1, 18, "printing a dict_items view");
  expect_error("{{ {'a': 1}.keys() == ['a'] }}", Kind::kUnsupported, 1, 4, "comparing a dict view");
  expect_error("{% for m in messages %}{{ loop }}{% endfor %}", Kind::kUnsupported, 1, 27,
               "printing the loop object");
  expect_error("{% macro m() %}{{ varargs }}{% endmacro %}{{ m() }}", Kind::kUnsupported, 1, 19,
               "'varargs' inside a macro");
  // A namespace inside a namespace could refer to itself: a reference cycle that would leak.
  expect_error("{% set ns = namespace() %}{% set ns.me = [ns] %}", Kind::kUnsupported, 1, 27,
               "storing a namespace() object inside a namespace");
  expect_error(
      "{% set ns = namespace(f=none) %}{% for i in [1] %}{% macro m() %}x{% endmacro %}"
      "{% set ns.f = m %}{% endfor %}{{ ns.f() }}",
      Kind::kUnsupported, 1, 118, "after the loop iteration it was defined in");
}

// A real model's template that this engine refuses, by name and position, at load.
TEST(ChatTemplateRefuses, FunctionaryV31UsesSafe) {
  std::ifstream in(std::string(FABKIT_CHAT_TEMPLATE_TESTDATA) +
                   "/chat_templates_refused/functionary-medium-v3.1.jinja");
  std::stringstream ss;
  ss << in.rdbuf();
  ASSERT_FALSE(ss.str().empty());
  try {
    ChatTemplate t(ss.str());
    ADD_FAILURE() << "compiled";
  } catch (const ChatTemplateError& e) {
    EXPECT_EQ(e.kind(), Kind::kUnsupported);
    EXPECT_EQ(e.line(), 22);
    EXPECT_EQ(e.column(), 37);
    EXPECT_EQ(e.detail(), "the 'safe' filter (a Markup string) is not supported");
  }
}

TEST(ChatTemplateRefuses, MalformedTemplatesWithLineAndColumn) {
  // At the end of the template (its trailing newline dropped, as jinja2 does).
  expect_error("{% for m in messages %}\n{{ m.content }}\n", Kind::kSyntax, 2, 16,
               "expected 'else' or 'endfor'");
  expect_error("{% if true %}x", Kind::kSyntax, 1, 15, "expected 'elif' or 'else' or 'endif'");
  expect_error("a\nb {{ messages[0] ", Kind::kSyntax, 2, 3, "has no '}}'");
  expect_error("{{ 1 + }}", Kind::kSyntax, 1, 8, "where an expression was expected");
  expect_error("{{ 'unterminated }}", Kind::kSyntax, 1, 4, "unterminated string literal");
  expect_error("{{ (1, 2] }}", Kind::kSyntax, 1, 9, "unexpected ']', expected ')'");
  expect_error("x {% endfor %}", Kind::kSyntax, 1, 6, "unknown tag 'endfor'");
  expect_error("{% frobnicate %}", Kind::kSyntax, 1, 4, "unknown tag 'frobnicate'");
  expect_error("{% break %}", Kind::kSyntax, 1, 4, "'{% break %}' outside a loop");
  expect_error("{# never closed", Kind::kSyntax, 1, 1, "missing end of comment tag");
  expect_error("{{ messages[0]['role' }}", Kind::kSyntax, 1, 23, "unexpected '}', expected ']'");
}

TEST(ChatTemplateRefuses, RuntimeErrorsJinja2AlsoRaises) {
  expect_error("{{ nothing.attr }}", Kind::kRuntime, 1, 11, "'nothing' is undefined");
  expect_error("{{ 'a' + 1 }}", Kind::kRuntime, 1, 8, "unsupported operand type(s) for +");
  expect_error("{{ range(100001) | length }}", Kind::kRuntime, 1, 9, "MAX_RANGE");
  expect_error("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}", Kind::kRuntime, 1, 35,
               "takes not more than 1 argument");
}

TEST(ChatTemplateRaise, SurfacesTheTemplatesMessage) {
  ChatTemplateError e = error_of(
      "{% if messages[0]['role'] != 'system' %}\n"
      "  {{ raise_exception('Conversation must start with a system message') }}\n"
      "{% endif %}");
  EXPECT_EQ(e.kind(), Kind::kRaised);
  EXPECT_EQ(e.detail(), "Conversation must start with a system message");
  EXPECT_EQ(e.line(), 2);
  EXPECT_EQ(std::string(e.what()),
            "chat template line 2:21: the template refused the input: Conversation must start "
            "with a system message");
}

// A template that loops or recurses: stopped by a limit, quickly, with the reason.
TEST(ChatTemplateLimits, StopsTemplatesThatLoopOrRecurse) {
  auto start = std::chrono::steady_clock::now();
  ChatTemplateError e = error_of("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  EXPECT_EQ(e.kind(), Kind::kLimit) << e.what();
  EXPECT_NE(std::string(e.what()).find("macro calls nested deeper than 64"), std::string::npos)
      << e.what();

  e = error_of("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}");
  EXPECT_EQ(e.kind(), Kind::kLimit) << e.what();
  EXPECT_NE(std::string(e.what()).find("loop iterations"), std::string::npos) << e.what();

  e = error_of("{% for i in range(100000) %}{{ 'x' * 100000 }}{% endfor %}");
  EXPECT_EQ(e.kind(), Kind::kLimit) << e.what();
  EXPECT_NE(std::string(e.what()).find("the output passed"), std::string::npos) << e.what();

  // A list nested inside itself 100,000 times, then printed: refused, not a stack overflow.
  e = error_of(
      "{% set ns = namespace(x=[]) %}{% for i in range(100000) %}{% set ns.x = [ns.x] %}"
      "{% endfor %}{{ ns.x }}");
  EXPECT_EQ(e.kind(), Kind::kLimit) << e.what();
  EXPECT_NE(std::string(e.what()).find("nested deeper than"), std::string::npos) << e.what();

  // Brackets nested past the parser's bound.
  e = error_of("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}");
  EXPECT_EQ(e.kind(), Kind::kLimit) << e.what();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));

  ChatTemplateLimits small;
  small.max_loop_iterations = 10;
  e = error_of("{% for i in range(11) %}{% endfor %}", &small);
  EXPECT_EQ(e.kind(), Kind::kLimit);
  small.max_loop_iterations = 11;
  ChatTemplate ok("{% for i in range(11) %}{{ i }}{% endfor %}");
  ok.set_limits(small);
  EXPECT_EQ(ok.render(one_user_message()), "012345678910");
}

// Blocks nested inside a macro that calls itself: stopped by the render nesting bound, on a
// thread with a 512 KiB stack (smaller than any server thread's), not by a stack overflow.
TEST(ChatTemplateLimits, DeepRecursionFitsASmallThreadStack) {
  std::string body = "{% macro f(n) %}";
  for (int i = 0; i < 60; ++i) body += "{% if true %}";
  body += "{{ f(((n + 1))) }}";
  for (int i = 0; i < 60; ++i) body += "{% endif %}";
  body += "{% endmacro %}{{ f(0) }}";
  struct Job {
    std::string source;
    std::string what;
    Kind kind = Kind::kSyntax;
    bool threw = false;
  } job;
  job.source = body;
  auto run = [](void* p) -> void* {
    Job* j = static_cast<Job*>(p);
    try {
      ChatTemplate t(j->source);
      t.render(one_user_message());
    } catch (const ChatTemplateError& e) {
      j->threw = true;
      j->kind = e.kind();
      j->what = e.what();
    }
    return nullptr;
  };
  pthread_attr_t attr;
  pthread_attr_init(&attr);
#if defined(__SANITIZE_ADDRESS__)
  const size_t stack_bytes = 4 << 20;  // AddressSanitizer's redzones make every frame larger
#else
  const size_t stack_bytes = 512 << 10;
#endif
  pthread_attr_setstacksize(&attr, stack_bytes);
  pthread_t th;
  ASSERT_EQ(pthread_create(&th, &attr, run, &job), 0);
  pthread_join(th, nullptr);
  pthread_attr_destroy(&attr);
  ASSERT_TRUE(job.threw);
  EXPECT_EQ(job.kind, Kind::kLimit) << job.what;
  EXPECT_NE(job.what.find("nested deeper than 400 levels in all"), std::string::npos) << job.what;
}

TEST(ChatTemplateClock, StrftimeNowUsesTheInjectedClock) {
  ChatTemplate t("{{ strftime_now('%d %b %Y') }}|{{ strftime_now('%A %H:%M') }}");
  t.set_clock([] {
    std::tm tm{};
    tm.tm_year = 2026 - 1900;
    tm.tm_mon = 11;
    tm.tm_mday = 6;
    tm.tm_hour = 9;
    tm.tm_min = 30;
    tm.tm_wday = 0;
    return tm;
  });
  EXPECT_EQ(t.render(one_user_message()), "06 Dec 2026|Sunday 09:30");
  // datetime.now() is naive in HF: no time zone in %z or %Z.
  ChatTemplate zone("[{{ strftime_now('%H%z%Z %%z') }}]");
  zone.set_clock([] {
    std::tm tm{};
    tm.tm_hour = 7;
    tm.tm_zone = "CET";
    tm.tm_gmtoff = 3600;
    return tm;
  });
  EXPECT_EQ(zone.render(one_user_message()), "[07 %z]");
}

// One compiled template rendered from many threads at once, as the server's request threads do.
TEST(ChatTemplateThreads, ConcurrentRendersOfOneTemplate) {
  ChatTemplate t(
      "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}"
      "{{ m.role }}:{{ m.content | trim }}|{% endfor %}{{ ns.n }}"
      "{{ messages | selectattr('role', 'equalto', 'user') | map(attribute='content') | join(',') "
      "}}");
  ChatTemplateInputs in;
  in.messages = nlohmann::ordered_json::parse(
      R"([{"role": "user", "content": " a "}, {"role": "assistant", "content": "b"},
          {"role": "user", "content": "c"}])");
  const std::string want = "user:a|assistant:b|user:c|3 a ,c";
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&] {
      for (int k = 0; k < 500; ++k)
        if (t.render(in) != want) ++wrong;
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(t.render(in), want);
}

TEST(ChatTemplateInputs, AbsentSpecialTokensAreUndefinedAndToolsNone) {
  ChatTemplate t(
      "[{{ bos_token is defined }}][{{ eos_token }}][{{ tools is none }}]"
      "[{{ documents is none }}][{{ add_generation_prompt }}][{{ extra_var }}]");
  ChatTemplateInputs in = one_user_message();
  in.eos_token = "</s>";
  in.extra["extra_var"] = 7;
  in.add_generation_prompt = true;
  EXPECT_EQ(t.render(in), "[False][</s>][True][True][True][7]");
}

}  // namespace
}  // namespace fabkit::trainer::serve
