# tests/ref/render-templates-jinja2.py — the Python side of tests/test-jinja.c's
# corpus test: reads render-templates.mjs's JSON (every corpus template x
# conversation, rendered by @huggingface/jinja) on stdin and adds, to each
# case, what Python's Jinja2 renders from the same variables, configured as
# transformers' apply_chat_template configures it: an immutable sandbox,
# trim_blocks and lstrip_blocks, loop controls, the {% generation %} tag,
# transformers' tojson (json.dumps with ensure_ascii=False, indent,
# separators, sort_keys), raise_exception and strftime_now (the clock fixed
# at 2023-11-14 22:13:20 UTC, as the other two sides fix it).
#   case += { "python": text } | { "python_error": "Kind: message", "python_raised": bool }
# python_raised: the template's own raise_exception (not a failure of Jinja).
#
# Usage: node tests/ref/render-templates.mjs | python3 tests/ref/render-templates-jinja2.py
import datetime
import json
import sys

from jinja2 import nodes
from jinja2.exceptions import TemplateError
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


class Raised(TemplateError):
    pass


def raise_exception(message):
    raise Raised(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(fmt):
    return datetime.datetime.fromtimestamp(1700000000, datetime.timezone.utc).strftime(fmt)


class Generation(Extension):
    """{% generation %}...{% endgeneration %}: its body, as transformers renders it when not tracking."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

    def _body(self, caller):
        return caller()


env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[Generation, loopcontrols])
env.filters["tojson"] = tojson
env.globals["raise_exception"] = raise_exception
env.globals["strftime_now"] = strftime_now

ref = json.load(sys.stdin)
for t in ref["templates"]:
    with open(t["path"], encoding="utf-8") as f:
        text = f.read()
    try:
        tmpl, compile_error = env.from_string(text), None
    except Exception as e:   # noqa: BLE001 (any failure is the answer)
        tmpl, compile_error = None, "%s: %s" % (type(e).__name__, e)
    for c in t["cases"]:
        if compile_error:
            c["python_error"], c["python_raised"] = compile_error, False
            continue
        try:
            c["python"] = tmpl.render(**c["vars"])
        except Exception as e:   # noqa: BLE001
            c["python_error"], c["python_raised"] = "%s: %s" % (type(e).__name__, e), isinstance(e, Raised)
json.dump(ref, sys.stdout, ensure_ascii=False)
