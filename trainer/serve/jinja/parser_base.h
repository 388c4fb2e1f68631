// The parser's token cursor and its expression grammar (jinja2/parser.py's parse_tuple down to
// parse_primary, with jinja2's operator precedence). Internal to parser.cc and
// parser_expressions.cc.
#pragma once

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "trainer/serve/jinja/ast.h"
#include "trainer/serve/jinja/error.h"
#include "trainer/serve/jinja/lexer.h"
#include "trainer/serve/jinja/parser.h"

namespace fabkit::trainer::serve::jinja {

class ParserBase {
 public:
  ParserBase(const std::string& src, const std::vector<Token>& tokens)
      : src_(src), tokens_(tokens) {}

 protected:
  using T = Token::Type;

  const Token& cur() const { return tokens_[pos_]; }
  const Token& peek(size_t n = 1) const { return tokens_[std::min(pos_ + n, tokens_.size() - 1)]; }
  void advance() {
    if (pos_ + 1 < tokens_.size()) ++pos_;
  }

  [[noreturn]] void fail(size_t offset, const std::string& message,
                         ErrorKind kind = ErrorKind::kSyntax) const {
    int line, column;
    line_column(src_, offset, &line, &column);
    throw TemplateError(kind, line, column, message);
  }

  static std::string describe(const Token& t) {
    switch (t.type) {
      case T::kText:
        return "text";
      case T::kVarBegin:
        return "{{";
      case T::kVarEnd:
        return "}}";
      case T::kBlockBegin:
        return "{%";
      case T::kBlockEnd:
        return "%}";
      case T::kEof:
        return "end of template";
      case T::kString:
        return "string literal";
      default:
        return t.value;
    }
  }

  bool is_op(const char* op) const { return cur().type == T::kOp && cur().value == op; }
  bool is_name(const char* name) const { return cur().type == T::kName && cur().value == name; }
  void expect_op(const char* op) {
    if (!is_op(op))
      fail(cur().offset, std::string("expected '") + op + "', got '" + describe(cur()) + "'");
    advance();
  }
  void expect_block_end(const std::string& tag) {
    if (cur().type != T::kBlockEnd)
      fail(cur().offset,
           "expected the end of the '{% " + tag + " %}' tag, got '" + describe(cur()) + "'");
    advance();
  }
  std::string expect_name(const std::string& what) {
    if (cur().type != T::kName)
      fail(cur().offset, "expected " + what + ", got '" + describe(cur()) + "'");
    std::string n = cur().value;
    advance();
    return n;
  }

  struct Depth {
    Depth(ParserBase* p, size_t offset) : p_(p) {
      if (++p_->depth_ > kMaxNesting)
        p_->fail(offset, "nesting deeper than " + std::to_string(kMaxNesting) + " levels",
                 ErrorKind::kLimit);
    }
    ~Depth() { --p_->depth_; }
    ParserBase* p_;
  };

  // Parses statements until a {% name %} with name in `ends`; leaves cur() at that name.

  ExprPtr make(Expr::Kind kind, size_t offset);
  bool tuple_end(const std::set<std::string>& extra_ends) const;
  ExprPtr parse_tuple(bool no_condexpr, bool explicit_parens,
                      const std::set<std::string>& extra_ends = {});
  ExprPtr parse_expression(bool no_condexpr);
  ExprPtr binary(const std::string& op, ExprPtr left, ExprPtr right, size_t offset);
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary(bool with_filter);
  ExprPtr parse_primary();
  ExprPtr parse_postfix(ExprPtr node);
  ExprPtr parse_filter_expr(ExprPtr node);
  ExprPtr parse_subscript(ExprPtr node);
  ExprPtr parse_subscribed(bool* is_slice);
  void parse_call_args(Expr* e);
  ExprPtr parse_call(ExprPtr node);
  std::string dotted_name();
  ExprPtr parse_filter(ExprPtr node);
  ExprPtr parse_test(ExprPtr node);

  const std::string& src_;
  const std::vector<Token>& tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace fabkit::trainer::serve::jinja
