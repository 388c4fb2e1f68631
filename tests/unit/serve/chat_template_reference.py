#!/usr/bin/env python3
"""Renders every chat-template fixture with Python's jinja2 the way Hugging Face's
apply_chat_template does, for fabkit's parity test (chat_template_parity_test.cc).

HF's settings, written out here from transformers' documented behaviour (no code copied):
jinja2's ImmutableSandboxedEnvironment with trim_blocks=True, lstrip_blocks=True and the
loopcontrols extension; a tojson filter that is json.dumps(ensure_ascii=False, indent=...) without
HTML escaping; the globals raise_exception(message) (raises TemplateError) and strftime_now(fmt);
the variables messages, tools (None when absent), documents (None), add_generation_prompt, the
tokenizer's special tokens and extra template arguments.

Usage: chat_template_reference.py CASES.json TEMPLATE_DIR OUT.json
"""
import copy
import datetime
import json
import os
import sys

import jinja2
from jinja2.exceptions import TemplateError
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


class RaisedByTemplate(TemplateError):
    """What raise_exception() raises, told apart from jinja2's own errors."""


def make_environment(now):
    def raise_exception(message):
        raise RaisedByTemplate(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(fmt):
        return now.strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def main():
    cases_path, template_dir, out_path = sys.argv[1:4]
    with open(cases_path, encoding="utf-8") as f:
        cases = json.load(f)
    env = make_environment(datetime.datetime(*cases["now"]))
    results = {}
    for name, tokens in sorted(cases["templates"].items()):
        with open(os.path.join(template_dir, name + ".jinja"), encoding="utf-8", newline="") as f:
            template = env.from_string(f.read())
        rendered = []
        for conv in cases["conversations"]:
            for agp in (False, True):
                kwargs = dict(tokens)
                kwargs.update(conv.get("extra", {}))
                try:
                    # A fresh copy each time: jinja2's indent filter on a list extends it in place.
                    out = template.render(messages=copy.deepcopy(conv["messages"]),
                                          tools=copy.deepcopy(conv.get("tools")),
                                          documents=None, add_generation_prompt=agp, **kwargs)
                    rendered.append({"output": out})
                except RaisedByTemplate as e:
                    rendered.append({"error": "raise_exception", "message": e.message})
                except Exception as e:  # jinja2's own failure: the engine must fail too
                    rendered.append({"error": type(e).__name__, "message": str(e)})
        results[name] = rendered
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump({"jinja2_version": jinja2.__version__, "results": results}, f,
                  ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
