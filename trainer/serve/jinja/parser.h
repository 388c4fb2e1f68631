// Parses the token stream into statements and expressions with jinja2's grammar and operator
// precedence (jinja2/parser.py), refusing with the construct named what this engine does not
// implement: template inheritance and inclusion, {% call %}, {% filter %}, {% with %}, recursive
// loops, unknown filters and tests.
#pragma once

#include <string>
#include <vector>

#include "trainer/serve/jinja/ast.h"
#include "trainer/serve/jinja/lexer.h"

namespace fabkit::trainer::serve::jinja {

// Bounds the parser's recursion (nested brackets, nested blocks) so a hostile template cannot
// overflow the stack.
constexpr int kMaxNesting = 100;

Body parse(const std::string& normalized_source, const std::vector<Token>& tokens);

}  // namespace fabkit::trainer::serve::jinja
