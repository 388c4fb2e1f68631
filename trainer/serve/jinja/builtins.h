// jinja2's operators, attribute and item lookup, string/dict/list methods, filters and tests with
// Python's semantics, over Value. HF's environment overrides one filter: tojson is json.dumps with
// ensure_ascii=False and no HTML escaping (transformers' chat template code).
#pragma once

#include <string>

#include "trainer/serve/jinja/value.h"

namespace fabkit::trainer::serve::jinja {

// Whether the parser accepts a filter or test name; *why names the refusal otherwise.
bool filter_supported(const std::string& name, std::string* why);
bool test_supported(const std::string& name, std::string* why);

Value apply_filter(const std::string& name, const Value& value, const Args& args,
                   const Kwargs& kwargs);
bool apply_test(const std::string& name, const Value& value, const Args& args);

// jinja2's environment.getattr / getitem (the sandboxed ones): attribute first for obj.name,
// item first for obj[key]; a missing one is undefined, a lookup on undefined is an error.
Value get_attr(const Value& obj, const std::string& name);
Value get_item(const Value& obj, const Value& key);
Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step);

// Arithmetic, concatenation and containment with Python's rules ("+", "-", "*", "/", "//", "%",
// "**", "~"; "in").
Value binary_op(const std::string& op, const Value& a, const Value& b);
Value unary_op(const std::string& op, const Value& a);
bool contains(const Value& container, const Value& item);

// Python's str methods that the builtins share with the filters.
std::string py_strip(const std::string& s, const Value& chars, bool left, bool right);

// The keyword or positional argument `index`/`name` of a builtin call, or `fallback`.
const Value* find_arg(const Args& args, const Kwargs& kwargs, size_t index, const char* name);

}  // namespace fabkit::trainer::serve::jinja
