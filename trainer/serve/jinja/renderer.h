// Executes a parsed template. Scoping follows jinja2: a for loop's body gets a fresh scope each
// iteration (so {% set %} inside it does not leak out, which is why templates use namespace()),
// {% if %} does not open a scope, a macro sees its arguments and the scope it was defined in.
// Work is bounded (RenderLimits) so a template that loops or recurses stops with an error.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>

#include "trainer/serve/jinja/ast.h"
#include "trainer/serve/jinja/value.h"

namespace fabkit::trainer::serve::jinja {

struct RenderLimits {
  size_t max_output_bytes = 8u << 20;     // everything rendered, macro output included
  int64_t max_loop_iterations = 1000000;  // all loops of one render together
  int max_call_depth = 64;                // nested macro calls (a macro calling itself)
};

// The deepest render recursion (statement bodies and expressions, across macro calls).
constexpr int kMaxRenderNesting = 400;

struct Frame {
  std::unordered_map<std::string, Value> vars;
  std::shared_ptr<Frame> parent;
};

// Renders body; globals are the render variables and builtins (looked up last). Throws
// TemplateError with the line:column of the statement or expression that failed.
std::string render(const std::string& normalized_source, const Body& body,
                   const std::unordered_map<std::string, Value>& globals,
                   const RenderLimits& limits);

}  // namespace fabkit::trainer::serve::jinja
