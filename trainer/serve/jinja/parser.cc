#include "trainer/serve/jinja/parser.h"

#include <set>

#include "trainer/serve/jinja/builtins.h"
#include "trainer/serve/jinja/error.h"
#include "trainer/serve/jinja/parser_base.h"

namespace fabkit::trainer::serve::jinja {

namespace {

// Tags jinja2 knows that this engine refuses, by name.
const std::set<std::string> kUnsupportedTags = {
    "include",    "import", "from",      "extends", "block",      "call",  "filter",       "with",
    "autoescape", "trans",  "pluralize", "do",      "generation", "print", "endgeneration"};

class Parser : public ParserBase {
 public:
  using ParserBase::ParserBase;

  Body run() {
    Body body = subparse({});
    if (cur().type != T::kEof) fail(cur().offset, "unexpected '" + describe(cur()) + "'");
    return body;
  }

 private:
  Body subparse(const std::set<std::string>& ends) {
    Body body;
    while (true) {
      const Token& t = cur();
      if (t.type == T::kEof) {
        if (!ends.empty()) {
          std::string expected;
          for (const auto& e : ends) expected += (expected.empty() ? "'" : " or '") + e + "'";
          fail(t.offset, "unexpected end of template, expected " + expected +
                             " to close the block opened earlier");
        }
        return body;
      }
      if (t.type == T::kText) {
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::kText;
        s->offset = t.offset;
        s->text = t.value;
        body.push_back(std::move(s));
        advance();
      } else if (t.type == T::kVarBegin) {
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::kOutput;
        s->offset = t.offset;
        advance();
        s->expr = parse_tuple(false, false);
        if (cur().type != T::kVarEnd)
          fail(cur().offset, "expected '}}', got '" + describe(cur()) + "'");
        advance();
        body.push_back(std::move(s));
      } else if (t.type == T::kBlockBegin) {
        size_t begin = t.offset;
        advance();
        if (cur().type != T::kName) fail(cur().offset, "expected a tag name after '{%'");
        if (ends.count(cur().value)) return body;
        body.push_back(statement(begin));
      } else {
        fail(t.offset, "unexpected '" + describe(t) + "'");
      }
    }
  }

  std::unique_ptr<Stmt> statement(size_t begin) {
    Depth depth(this, begin);
    const std::string tag = cur().value;
    size_t offset = cur().offset;
    if (tag == "if") return parse_if(begin);
    if (tag == "for") return parse_for(begin);
    if (tag == "set") return parse_set(begin);
    if (tag == "macro") return parse_macro(begin);
    if (tag == "break" || tag == "continue") {
      if (loop_depth_ == 0) fail(offset, "'{% " + tag + " %}' outside a loop");
      advance();
      expect_block_end(tag);
      auto s = std::make_unique<Stmt>();
      s->kind = tag == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue;
      s->offset = begin;
      return s;
    }
    if (kUnsupportedTags.count(tag))
      fail(offset, "'{% " + tag + " %}' is not supported", ErrorKind::kUnsupported);
    fail(offset, "unknown tag '" + tag + "' (or a closing tag without its opening one)");
  }

  std::unique_ptr<Stmt> parse_if(size_t begin) {
    auto s = std::make_unique<Stmt>();
    s->kind = Stmt::Kind::kIf;
    s->offset = begin;
    advance();  // if
    while (true) {
      s->conditions.push_back(parse_tuple(true, false));
      expect_block_end("if");
      s->bodies.push_back(subparse({"elif", "else", "endif"}));
      std::string next = cur().value;
      advance();
      if (next == "elif") continue;
      if (next == "else") {
        expect_block_end("else");
        s->bodies.push_back(subparse({"endif"}));
        advance();
      }
      expect_block_end("endif");
      return s;
    }
  }

  std::vector<std::string> assign_targets(bool allow_namespace, std::string* attr) {
    std::vector<std::string> names;
    bool parens = is_op("(");
    if (parens) advance();
    names.push_back(expect_name("a variable name"));
    if (allow_namespace && is_op(".")) {
      advance();
      *attr = expect_name("an attribute name");
      return names;
    }
    while (is_op(",")) {
      advance();
      if (cur().type != T::kName) break;  // trailing comma
      names.push_back(expect_name("a variable name"));
    }
    if (parens) expect_op(")");
    return names;
  }

  std::unique_ptr<Stmt> parse_for(size_t begin) {
    auto s = std::make_unique<Stmt>();
    s->kind = Stmt::Kind::kFor;
    s->offset = begin;
    advance();  // for
    std::string attr;
    s->targets = assign_targets(false, &attr);
    if (!is_name("in"))
      fail(cur().offset, "expected 'in' in the for tag, got '" + describe(cur()) + "'");
    advance();
    s->expr = parse_tuple(true, false, {"recursive", "if"});
    if (is_name("if")) {
      advance();
      s->filter = parse_expression(false);  // jinja2 allows "a if b" here
    }
    if (is_name("recursive"))
      fail(cur().offset, "recursive for loops ('{% for ... recursive %}') are not supported",
           ErrorKind::kUnsupported);
    expect_block_end("for");
    ++loop_depth_;
    s->body = subparse({"endfor", "else"});
    --loop_depth_;
    if (cur().value == "else") {
      advance();
      expect_block_end("else");
      s->else_body = subparse({"endfor"});
    }
    advance();  // endfor
    expect_block_end("endfor");
    return s;
  }

  std::unique_ptr<Stmt> parse_set(size_t begin) {
    auto s = std::make_unique<Stmt>();
    s->offset = begin;
    advance();  // set
    s->targets = assign_targets(true, &s->target_attr);
    if (is_op("=")) {
      advance();
      s->kind = Stmt::Kind::kSet;
      s->expr = parse_tuple(false, false);
      expect_block_end("set");
      return s;
    }
    if (is_op("|"))
      fail(cur().offset, "filters on a block '{% set %}' are not supported",
           ErrorKind::kUnsupported);
    if (s->targets.size() != 1 || !s->target_attr.empty())
      fail(cur().offset, "a block '{% set %}' assigns one plain name");
    s->kind = Stmt::Kind::kSetBlock;
    expect_block_end("set");
    int saved = loop_depth_;
    s->body = subparse({"endset"});
    loop_depth_ = saved;
    advance();
    expect_block_end("endset");
    return s;
  }

  std::unique_ptr<Stmt> parse_macro(size_t begin) {
    auto s = std::make_unique<Stmt>();
    s->kind = Stmt::Kind::kMacro;
    s->offset = begin;
    advance();  // macro
    auto m = std::make_shared<MacroDef>();
    m->name = expect_name("a macro name");
    expect_op("(");
    while (!is_op(")")) {
      if (!m->params.empty()) expect_op(",");
      if (is_op(")")) break;
      if (is_op("*") || is_op("**"))
        fail(cur().offset, "'*args' and '**kwargs' macro parameters are not supported",
             ErrorKind::kUnsupported);
      m->params.push_back(expect_name("a parameter name"));
      if (is_op("=")) {
        advance();
        m->defaults.push_back(parse_expression(false));
      } else {
        m->defaults.push_back(nullptr);
      }
    }
    advance();  // )
    expect_block_end("macro");
    int saved = loop_depth_;
    loop_depth_ = 0;  // break/continue do not cross a macro
    m->body = subparse({"endmacro"});
    loop_depth_ = saved;
    advance();
    expect_block_end("endmacro");
    s->macro = std::move(m);
    return s;
  }

  int loop_depth_ = 0;
};

}  // namespace

Body parse(const std::string& normalized_source, const std::vector<Token>& tokens) {
  return Parser(normalized_source, tokens).run();
}

}  // namespace fabkit::trainer::serve::jinja
