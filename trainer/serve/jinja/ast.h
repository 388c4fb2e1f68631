// The parsed template: statements and expressions, each with its source offset so render errors
// name the line and column of the construct.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "trainer/serve/jinja/value.h"

namespace fabkit::trainer::serve::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,    // literal
    kName,       // name
    kList,       // args
    kTuple,      // args
    kDict,       // args: key, value, key, value, ...
    kGetAttr,    // args[0].name
    kGetItem,    // args[0][args[1]]
    kSlice,      // args[0][args[1]:args[2]:args[3]] (null parts are absent)
    kCall,       // args[0](args[1:], kwargs)
    kFilter,     // args[0] | name(args[1:], kwargs)
    kTest,       // args[0] is [not] name(args[1:])
    kUnary,      // op args[0]: "-", "+", "not"
    kBinary,     // args[0] op args[1]: + - * / // % ** ~ and or
    kCompare,    // args[0] ops[0] args[1] ops[1] args[2] ...
    kCondition,  // args[1] if args[0] else args[2] (args[2] may be null)
  };
  Kind kind;
  size_t offset;
  Value literal;
  std::string name;  // name, attribute, filter, test, or operator
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;  // kCompare
  bool negated = false;          // kTest: "is not"
};

struct Stmt;
using Body = std::vector<std::unique_ptr<Stmt>>;

struct MacroDef {
  std::string name;
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults;  // aligned with params; null where none
  Body body;
};

struct Stmt {
  enum class Kind { kText, kOutput, kIf, kFor, kSet, kSetBlock, kMacro, kBreak, kContinue };
  Kind kind;
  size_t offset;
  std::string text;  // kText
  ExprPtr expr;      // kOutput, kSet value, kFor iterable
  // kIf: conditions[i] guards bodies[i]; a trailing extra body is the else branch.
  std::vector<ExprPtr> conditions;
  std::vector<Body> bodies;
  // kFor / kSet targets: names, or (kSet only) namespace.attribute in target_attr.
  std::vector<std::string> targets;
  std::string target_attr;
  ExprPtr filter;                   // kFor: {% for x in xs if cond %}
  Body body, else_body;             // kFor, kSetBlock (body)
  std::shared_ptr<MacroDef> macro;  // kMacro
};

}  // namespace fabkit::trainer::serve::jinja
