// The expression grammar (see parser_base.h).
#include "trainer/serve/jinja/builtins.h"
#include "trainer/serve/jinja/parser_base.h"

namespace fabkit::trainer::serve::jinja {

ExprPtr ParserBase::make(Expr::Kind kind, size_t offset) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->offset = offset;
  return e;
}

bool ParserBase::tuple_end(const std::set<std::string>& extra_ends) const {
  if (cur().type == T::kVarEnd || cur().type == T::kBlockEnd || cur().type == T::kEof) return true;
  if (is_op(")")) return true;
  return cur().type == T::kName && extra_ends.count(cur().value) > 0;
}

// jinja2's parse_tuple: an expression, or a comma-separated tuple of them.
ExprPtr ParserBase::parse_tuple(bool no_condexpr, bool explicit_parens,
                                const std::set<std::string>& extra_ends) {
  size_t offset = cur().offset;
  std::vector<ExprPtr> items;
  bool is_tuple = false;
  while (true) {
    if (!items.empty()) expect_op(",");
    if (tuple_end(extra_ends)) break;
    items.push_back(parse_expression(no_condexpr));
    if (is_op(",")) {
      is_tuple = true;
    } else {
      break;
    }
  }
  if (!is_tuple) {
    if (!items.empty()) return std::move(items[0]);
    if (!explicit_parens)
      fail(cur().offset, "expected an expression, got '" + describe(cur()) + "'");
  }
  auto e = make(Expr::Kind::kTuple, offset);
  e->args = std::move(items);
  return e;
}

ExprPtr ParserBase::parse_expression(bool no_condexpr) {
  Depth depth(this, cur().offset);
  if (no_condexpr) return parse_or();
  ExprPtr e = parse_or();
  while (is_name("if")) {
    size_t offset = cur().offset;
    advance();
    auto c = make(Expr::Kind::kCondition, offset);
    c->args.push_back(parse_or());
    c->args.push_back(std::move(e));
    if (is_name("else")) {
      advance();
      c->args.push_back(parse_expression(false));
    } else {
      c->args.push_back(nullptr);
    }
    e = std::move(c);
  }
  return e;
}

ExprPtr ParserBase::binary(const std::string& op, ExprPtr left, ExprPtr right, size_t offset) {
  auto e = make(Expr::Kind::kBinary, offset);
  e->name = op;
  e->args.push_back(std::move(left));
  e->args.push_back(std::move(right));
  return e;
}

ExprPtr ParserBase::parse_or() {
  ExprPtr left = parse_and();
  while (is_name("or")) {
    size_t offset = cur().offset;
    advance();
    left = binary("or", std::move(left), parse_and(), offset);
  }
  return left;
}

ExprPtr ParserBase::parse_and() {
  ExprPtr left = parse_not();
  while (is_name("and")) {
    size_t offset = cur().offset;
    advance();
    left = binary("and", std::move(left), parse_not(), offset);
  }
  return left;
}

ExprPtr ParserBase::parse_not() {
  if (is_name("not")) {
    Depth depth(this, cur().offset);
    auto e = make(Expr::Kind::kUnary, cur().offset);
    advance();
    e->name = "not";
    e->args.push_back(parse_not());
    return e;
  }
  return parse_compare();
}

ExprPtr ParserBase::parse_compare() {
  size_t offset = cur().offset;
  ExprPtr first = parse_math1();
  std::vector<std::string> ops;
  std::vector<ExprPtr> operands;
  while (true) {
    std::string op;
    if (cur().type == T::kOp &&
        (cur().value == "==" || cur().value == "!=" || cur().value == "<" || cur().value == "<=" ||
         cur().value == ">" || cur().value == ">=")) {
      op = cur().value;
      advance();
    } else if (is_name("in")) {
      op = "in";
      advance();
    } else if (is_name("not") && peek().type == T::kName && peek().value == "in") {
      op = "not in";
      advance();
      advance();
    } else {
      break;
    }
    ops.push_back(op);
    operands.push_back(parse_math1());
  }
  if (ops.empty()) return first;
  auto e = make(Expr::Kind::kCompare, offset);
  e->args.push_back(std::move(first));
  for (auto& o : operands) e->args.push_back(std::move(o));
  e->ops = std::move(ops);
  return e;
}

ExprPtr ParserBase::parse_math1() {
  ExprPtr left = parse_concat();
  while (is_op("+") || is_op("-")) {
    std::string op = cur().value;
    size_t offset = cur().offset;
    advance();
    left = binary(op, std::move(left), parse_concat(), offset);
  }
  return left;
}

ExprPtr ParserBase::parse_concat() {
  ExprPtr left = parse_math2();
  while (is_op("~")) {
    size_t offset = cur().offset;
    advance();
    left = binary("~", std::move(left), parse_math2(), offset);
  }
  return left;
}

ExprPtr ParserBase::parse_math2() {
  ExprPtr left = parse_pow();
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    std::string op = cur().value;
    size_t offset = cur().offset;
    advance();
    left = binary(op, std::move(left), parse_pow(), offset);
  }
  return left;
}

ExprPtr ParserBase::parse_pow() {
  ExprPtr left = parse_unary(true);
  while (is_op("**")) {
    size_t offset = cur().offset;
    advance();
    left = binary("**", std::move(left), parse_unary(true), offset);
  }
  return left;
}

ExprPtr ParserBase::parse_unary(bool with_filter) {
  Depth depth(this, cur().offset);
  ExprPtr node;
  if (is_op("-") || is_op("+")) {
    node = make(Expr::Kind::kUnary, cur().offset);
    node->name = cur().value;
    advance();
    node->args.push_back(parse_unary(false));
  } else {
    node = parse_primary();
  }
  node = parse_postfix(std::move(node));
  if (with_filter) node = parse_filter_expr(std::move(node));
  return node;
}

ExprPtr ParserBase::parse_primary() {
  const Token& t = cur();
  size_t offset = t.offset;
  if (t.type == T::kName) {
    const std::string& n = t.value;
    auto e = make(Expr::Kind::kLiteral, offset);
    if (n == "true" || n == "True") {
      e->literal = Value::boolean(true);
    } else if (n == "false" || n == "False") {
      e->literal = Value::boolean(false);
    } else if (n == "none" || n == "None") {
      e->literal = Value::none();
    } else {
      e->kind = Expr::Kind::kName;
      e->name = n;
    }
    advance();
    return e;
  }
  if (t.type == T::kString) {
    std::string s;
    while (cur().type == T::kString) {  // adjacent literals concatenate, as in Python
      s += cur().value;
      advance();
    }
    auto e = make(Expr::Kind::kLiteral, offset);
    e->literal = Value::string(std::move(s));
    return e;
  }
  if (t.type == T::kInt || t.type == T::kFloat) {
    auto e = make(Expr::Kind::kLiteral, offset);
    e->literal = t.type == T::kInt ? Value::integer(t.int_value) : Value::number(t.float_value);
    advance();
    return e;
  }
  if (is_op("(")) {
    advance();
    ExprPtr e = parse_tuple(false, true);
    expect_op(")");
    return e;
  }
  if (is_op("[")) {
    auto e = make(Expr::Kind::kList, offset);
    advance();
    while (!is_op("]")) {
      if (!e->args.empty()) expect_op(",");
      if (is_op("]")) break;
      e->args.push_back(parse_expression(false));
    }
    advance();
    return e;
  }
  if (is_op("{")) {
    auto e = make(Expr::Kind::kDict, offset);
    advance();
    while (!is_op("}")) {
      if (!e->args.empty()) expect_op(",");
      if (is_op("}")) break;
      e->args.push_back(parse_expression(false));
      expect_op(":");
      e->args.push_back(parse_expression(false));
    }
    advance();
    return e;
  }
  fail(offset, "unexpected '" + describe(t) + "' where an expression was expected");
}

ExprPtr ParserBase::parse_postfix(ExprPtr node) {
  while (true) {
    if (is_op(".") || is_op("[")) {
      node = parse_subscript(std::move(node));
    } else if (is_op("(")) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

ExprPtr ParserBase::parse_filter_expr(ExprPtr node) {
  while (true) {
    if (is_op("|")) {
      node = parse_filter(std::move(node));
    } else if (is_name("is")) {
      node = parse_test(std::move(node));
    } else if (is_op("(")) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

ExprPtr ParserBase::parse_subscript(ExprPtr node) {
  size_t offset = cur().offset;
  if (is_op(".")) {
    advance();
    if (cur().type == T::kName) {
      auto e = make(Expr::Kind::kGetAttr, offset);
      e->name = cur().value;
      advance();
      e->args.push_back(std::move(node));
      return e;
    }
    if (cur().type == T::kInt) {
      auto e = make(Expr::Kind::kGetItem, offset);
      e->args.push_back(std::move(node));
      auto idx = make(Expr::Kind::kLiteral, cur().offset);
      idx->literal = Value::integer(cur().int_value);
      advance();
      e->args.push_back(std::move(idx));
      return e;
    }
    fail(cur().offset, "expected an attribute name after '.', got '" + describe(cur()) + "'");
  }
  advance();  // [
  int raw_slices = 0;
  std::vector<ExprPtr> subs;
  while (!is_op("]")) {
    if (!subs.empty()) expect_op(",");
    if (is_op("]")) break;
    bool is_slice = false;
    subs.push_back(parse_subscribed(&is_slice));
    raw_slices += is_slice ? 1 : 0;
  }
  advance();  // ]
  if (subs.empty()) fail(offset, "expected a subscript inside '[]'");
  if (subs.size() > 1) {
    if (raw_slices > 0)
      fail(offset, "a slice inside a subscript tuple ('x[a:b, c]')", ErrorKind::kUnsupported);
    auto tuple = make(Expr::Kind::kTuple, offset);
    tuple->args = std::move(subs);
    subs.clear();
    subs.push_back(std::move(tuple));
  }
  ExprPtr sub = std::move(subs[0]);
  if (raw_slices == 1) {  // not a complete slice expression such as x[y[1:]]
    sub->args.insert(sub->args.begin(), std::move(node));
    return sub;
  }
  auto e = make(Expr::Kind::kGetItem, offset);
  e->args.push_back(std::move(node));
  e->args.push_back(std::move(sub));
  return e;
}

// One subscript: an expression, or a slice start:stop:step with optional parts. A slice comes
// back as kSlice with args [start, stop, step] (nulls where absent).
ExprPtr ParserBase::parse_subscribed(bool* is_slice) {
  size_t offset = cur().offset;
  ExprPtr start;
  if (!is_op(":")) {
    start = parse_expression(false);
    if (!is_op(":")) return start;
  }
  *is_slice = true;
  auto e = make(Expr::Kind::kSlice, offset);
  advance();  // :
  ExprPtr stop, step;
  if (!is_op("]") && !is_op(",") && !is_op(":")) stop = parse_expression(false);
  if (is_op(":")) {
    advance();
    if (!is_op("]") && !is_op(",")) step = parse_expression(false);
  }
  e->args.push_back(std::move(start));
  e->args.push_back(std::move(stop));
  e->args.push_back(std::move(step));
  return e;
}

void ParserBase::parse_call_args(Expr* e) {
  expect_op("(");
  bool first = true;
  while (!is_op(")")) {
    if (!first) expect_op(",");
    first = false;
    if (is_op(")")) break;
    if (is_op("*") || is_op("**"))
      fail(cur().offset, "'*args' and '**kwargs' in calls are not supported",
           ErrorKind::kUnsupported);
    if (cur().type == T::kName && peek().type == T::kOp && peek().value == "=") {
      std::string key = cur().value;
      advance();
      advance();
      e->kwargs.emplace_back(key, parse_expression(false));
    } else {
      if (!e->kwargs.empty()) fail(cur().offset, "a positional argument after keyword arguments");
      e->args.push_back(parse_expression(false));
    }
  }
  advance();  // )
}

ExprPtr ParserBase::parse_call(ExprPtr node) {
  auto e = make(Expr::Kind::kCall, cur().offset);
  e->args.push_back(std::move(node));
  parse_call_args(e.get());
  return e;
}

std::string ParserBase::dotted_name() {
  std::string n = expect_name("a name");
  while (is_op(".")) {
    advance();
    n += "." + expect_name("a name");
  }
  return n;
}

ExprPtr ParserBase::parse_filter(ExprPtr node) {
  while (is_op("|")) {
    advance();
    size_t offset = cur().offset;
    auto e = make(Expr::Kind::kFilter, offset);
    e->name = dotted_name();
    std::string why;
    if (!filter_supported(e->name, &why)) fail(offset, why, ErrorKind::kUnsupported);
    e->args.push_back(std::move(node));
    if (is_op("(")) parse_call_args(e.get());
    node = std::move(e);
  }
  return node;
}

ExprPtr ParserBase::parse_test(ExprPtr node) {
  advance();  // is
  bool negated = false;
  if (is_name("not")) {
    negated = true;
    advance();
  }
  size_t offset = cur().offset;
  auto e = make(Expr::Kind::kTest, offset);
  e->name = dotted_name();
  e->negated = negated;
  std::string why;
  if (!test_supported(e->name, &why)) fail(offset, why, ErrorKind::kUnsupported);
  e->args.push_back(std::move(node));
  if (is_op("(")) {
    parse_call_args(e.get());
  } else if ((cur().type == T::kName || cur().type == T::kString || cur().type == T::kInt ||
              cur().type == T::kFloat || is_op("(") || is_op("[") || is_op("{")) &&
             !(cur().type == T::kName &&
               (cur().value == "else" || cur().value == "or" || cur().value == "and"))) {
    if (is_name("is")) fail(cur().offset, "you cannot chain multiple tests with 'is'");
    ExprPtr arg = parse_primary();
    e->args.push_back(parse_postfix(std::move(arg)));
  }
  return e;
}

}  // namespace fabkit::trainer::serve::jinja
