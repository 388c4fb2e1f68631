#!/usr/bin/env python3
"""Generates random templates from the constructs chat templates use (expressions, filters,
tests, methods, statements, whitespace control) and renders each with jinja2 and HF's settings
(chat_template_reference.make_environment), for chat_template_random_test.cc: the engine must
render what jinja2 renders, fail where it fails, or refuse by name.

Usage: chat_template_random.py SEED COUNT OUT.json
"""
import copy
import datetime
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chat_template_reference import make_environment  # noqa: E402

ATOMS = [
    "messages", "messages[0]", "messages[-1].content", "messages[1]['role']", "'abc'",
    "' Pad \\n'", "1", "2.5", "none", "true", "[1, 2, 3]", "{'a': 1, 'b': [2]}", "tools",
    "undefined_x", "'é✓ß'", "0", "-3", "''", "(1, 'x')", "'a,b,,c'", "['b', 'a']", "10", "0.1",
    "'Hello World'", "[]", "{}", "messages[0].content", "tools[0]", "'  '", "messages[2].tool_calls",
    "'tab\\there'", "\"dq 'sq'\"", "'\\\\'", "'\\u00e9\\x41\\101'", "'a' 'b'", "1_000",
    "1e3", "messages|last", "loop", "ns",
]
OPS = [
    "{a} + {b}", "{a} ~ {b}", "{a} * {b}", "{a} // {b}", "{a} % {b}", "{a} / {b}", "{a} == {b}",
    "{a} != {b}", "{a} < {b}", "{a} in {b}", "{a} not in {b}", "{a} and {b}", "{a} or {b}",
    "not {a}", "{a} if {b} else {c}", "{a} if {b}", "{a}[{b}]", "{a}[1:]", "{a}[::-1]",
    "{a}[:-1]", "{a}|length", "{a}|tojson", "{a}|trim", "{a}|string", "{a}|list", "{a}|first",
    "{a}|last", "{a}|join(', ')", "{a}|upper", "{a}|lower", "{a}|default('d')", "{a} is defined",
    "{a} is string", "{a} is none", "{a} is mapping", "{a} is iterable", "{a}.strip()",
    "{a}.split()", "{a}.split(',')", "{a}|reverse|list", "{a}|items|list", "{a}.items()|list",
    "{a}.keys()|list", "{a}|map(attribute='role')|list",
    "{a}|selectattr('role', 'equalto', 'user')|list", "{a}|indent(2)", "{a}|title",
    "{a}|capitalize", "{a}|int", "{a}|abs", "{a}.get('role')", "{a}.startswith('a')", "{a}|sum",
    "{a}|min", "{a}|max", "{a}|unique|list", "{a}|tojson(indent=2)", "({a}, {b})", "[{a}, {b}]",
    "dict(k={a})", "{a}|count", "{a}|select|list", "{a}|reject|list", "{a}.title()",
    "{a}.replace('a', 'X')", "{a}|float", "-({a})", "{a} ** 2", "{a}.content", "{a}.role",
    "{a}['content']", "{a}|wordcount", "{a}.lstrip('P ')", "{a}.endswith(('c', 'd'))",
    "{a}.find('b')", "{a}.rstrip()", "{a}|replace(' ', '_')", "range({a})|list",
    "{a} is divisibleby 2", "{a} is sameas none", "{a}|map('string')|list", "{a}|dictsort",
    "{a}|sort", "{a}|sort(reverse=true)", "{a}|sort(attribute='role')|map(attribute='role')|list",
    "{a}|dictsort(by='value')",
]
STATEMENTS = [
    "{{ E }}", "{{- E -}}", "{{ E }}\n", " {{ E }} ", "{% if E %}X{% elif E %}Y{% else %}Z{% endif %}",
    "{% for x in E %}{{ x }}|{{ loop.index }}{% else %}empty{% endfor %}", "{% set v = E %}[{{ v }}]",
    "{%- if E -%}\n  A\n{%- endif %}\n", "  {% if E %}\n  B\n  {% endif %}\n", "{# c #}\n",
    "  {# c2 #}  \nT\n",
    "{% for k in E %}{% if loop.first %}F{% endif %}{{ k }}{% if not loop.last %},{% endif %}{% endfor %}\n",
    "{% set ns = namespace(n=0) %}{% for x in E %}{% set ns.n = ns.n + 1 %}{% endfor %}{{ ns.n }}",
    "{%+ if E %}\n  P\n{% endif %}", "\n\t{%- for x in E -%}\n  <{{ x }}>\n{% endfor -%}\n",
    "{% macro mm(a, b=E) %}({{ a }}{{ b }}){% endmacro %}{{ mm(E) }}",
    "{% for x in E if x %}{% if loop.index > 2 %}{% break %}{% endif %}{{ x }};{% endfor %}",
    "{%- if E +%}\r\n  R\r\n{%+ endif -%}", "\u00a0 {%- if E %}U{% endif -%} \u3000\n",
    "{#- c -#}\n  {{ E }}\n", "\t{% if E %}\n\t{% for x in E %}{{ x }}{% continue %}{% endfor %}\n{% endif %}",
    "{% set a, b = E, E %}{{ a }}/{{ b }}", "{% set blk %}\n  {{ E }}\n{% endset %}[{{ blk }}]",
    "{{ E }}{% for x in [E, E] %}{{ loop.cycle('a', 'b') }}{{ loop.revindex }}{{ loop.previtem }}{% endfor %}",
]
MESSAGES = [
    {"role": "system", "content": "Sys"},
    {"role": "user", "content": "Hi ab"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call12345", "type": "function", "function": {"name": "f", "arguments": {"x": 2}}}]},
    {"role": "tool", "tool_call_id": "call12345", "content": " Yo \n"},
    {"role": "user", "content": "é?"},
]
TOOLS = [{"type": "function", "function": {"name": "f", "description": "F ✓", "parameters": {
    "type": "object", "properties": {"x": {"type": "number", "default": 1.5}}}}}]


def expression(rng, depth):
    if depth <= 0 or rng.random() < 0.3:
        return rng.choice(ATOMS)
    op = rng.choice(OPS)
    return op.format(a=expression(rng, depth - 1), b=expression(rng, depth - 1),
                     c=expression(rng, depth - 1))


def template(rng):
    parts = []
    for _ in range(rng.randint(1, 4)):
        s = rng.choice(STATEMENTS)
        while "E" in s:
            s = s.replace("E", expression(rng, rng.randint(0, 3)), 1)
        parts.append(s)
        if rng.random() < 0.4:
            parts.append(rng.choice(["text ", "\n", "  \n", " x\n  ", "\t", "\r\n  ", "\u2028 ",
                                     " \x0b\n", "é\n   "]))
    return "".join(parts)


def main():
    seed, count, out_path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    rng = random.Random(seed)
    env = make_environment(datetime.datetime(2026, 12, 6, 9, 30))
    cases = []
    for _ in range(count):
        case = {"template": template(rng), "with_tools": rng.random() < 0.5,
                "add_generation_prompt": rng.random() < 0.5}
        try:
            rendered = env.from_string(case["template"]).render(
                messages=copy.deepcopy(MESSAGES), tools=copy.deepcopy(TOOLS) if case["with_tools"] else None,
                documents=None, add_generation_prompt=case["add_generation_prompt"],
                bos_token="<s>", eos_token="</s>")
            case["output"] = rendered
        except Exception as e:  # noqa: BLE001 - any jinja2 failure: the engine must fail too
            case["error"] = type(e).__name__ + ": " + str(e)
        cases.append(case)
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump({"messages": MESSAGES, "tools": TOOLS, "cases": cases}, f, ensure_ascii=False)


if __name__ == "__main__":
    import warnings
    warnings.simplefilter("ignore")  # Python's SyntaxWarning on jinja2's code for `1[0]`
    main()
