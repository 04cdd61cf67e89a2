"""The JS twin of what the two engines share, written from Python.

The browser engine must count, cut and score as the Python engine does, so
every number, word list and pattern they share has one home on the Python
side, :mod:`sphinx_ragcite.answer.spec` (its ``__all__``).
``tools/write_js_spec.py`` writes ``js/spec.js`` from it, as Sphinx writes
``language_data.js`` from its search language; ``tests/test_js_spec.py``
fails when the written file differs from what the tool writes now. The load
order of the widget's and the worker's scripts travels the same way.

A pattern becomes ``{source, flags}``: its Python source, verbatim, which
``pyRegExp`` (``js/sentences.js``) gives Python's meaning, and ``"i"`` for
``re.IGNORECASE``. Sets become sorted lists, tuples lists.
"""

from __future__ import annotations

import ast
import inspect
import json
import re
from typing import Any

import sphinx_ragcite.answer.spec as spec
from sphinx_ragcite.extension import assets

#: The file, in ``js/`` and in the built site's ``_static/ragcite/``.
SPEC_JS = "spec.js"

HEADER = """\
// @ts-check
// Written by tools/write_js_spec.py from sphinx_ragcite: do not edit.
// Change the Python side (answer/spec.py, extension/assets.py), then run
// `python tools/write_js_spec.py`; tests/test_js_spec.py fails when stale.
//
// Read it as `const spec = lib.need("spec");`, then take names from `spec`
// (destructuring the call itself sends tsc round a circle when the module
// provides one of them); compile a pattern with `pyPattern` (sentences.js).
"""


#: How every script finds the registry (``js/lib.js``).
LIB = 'typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib'


def _modules(names: tuple[str, ...]) -> list[str]:
    return [name.removesuffix(".js") for name in names]


def spec_values() -> dict[str, Any]:
    """Everything ``spec.js`` provides, by name: the script lists, then
    ``answer.spec``'s values in the order of its ``__all__``."""
    return {
        # module names (file names without ".js"), in load order
        "SCRIPTS": {
            "page": _modules(assets.WIDGET_SCRIPTS),
            "search": _modules(assets.STATIC_MODE_SCRIPTS),
            "worker": _modules(assets.WORKER_SCRIPTS),
        },
        **{name: to_js(getattr(spec, name)) for name in spec.__all__},
    }


#: The flags a pattern may carry, and the JS flag of each.
_FLAGS = {re.IGNORECASE: "i", re.UNICODE: ""}


def to_js(value: Any) -> Any:
    """A Python value as the JSON the JS reads (patterns as source and flags)."""
    if isinstance(value, re.Pattern):
        flags = value.flags
        unknown = flags & ~(re.IGNORECASE | re.UNICODE)
        if unknown or not isinstance(value.pattern, str):
            raise ValueError(f"{value.pattern!r}: only re.IGNORECASE reaches the JS")
        js = "".join(f for flag, f in _FLAGS.items() if flags & flag)
        return {"source": value.pattern, "flags": js}
    if isinstance(value, (set, frozenset)):
        return sorted(to_js(v) for v in value)
    if isinstance(value, (list, tuple)):
        return [to_js(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_js(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"{type(value).__name__} has no JS form: {value!r}")


def sections() -> dict[str, str]:
    """The first name of each group of ``answer.spec.__all__`` -> the group's
    comment there (``-- answer units and their signals (answer/units.py)``)."""
    source = inspect.getsource(spec)
    tree = ast.parse(source)
    (listing,) = (
        node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
    )
    assert isinstance(listing, ast.List)
    lines = source.splitlines()
    out: dict[str, str] = {}
    for item in listing.elts:
        assert isinstance(item, ast.Constant)
        before = lines[item.lineno - 2].strip()
        if before.startswith("# --"):
            out[str(item.value)] = before.removeprefix("# ").rstrip("- ")
    return out


#: Columns a line of ``spec.js`` fills before it wraps.
WIDTH = 100
_KEY = re.compile(r"^[A-Za-z_$][\w$]*$")


def _scalar(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    # JSON allows these raw in a string; older JS parsers did not
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _key(name: str) -> str:
    return name if _KEY.match(name) else _scalar(name)


def _inline(value: Any) -> str:
    """*value* on one line."""
    if isinstance(value, dict):
        inner = ", ".join(f"{_key(k)}: {_inline(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    if isinstance(value, list):
        return "[" + ", ".join(_inline(v) for v in value) + "]"
    return _scalar(value)


def _format(value: Any, indent: int, used: int) -> str:
    """*value* at *indent* columns, *used* of its first line already taken:
    on one line if it fits, else short items packed, else one per line."""
    one = _inline(value)
    if used + len(one) <= WIDTH or not isinstance(value, (dict, list)):
        return one
    pad = " " * (indent + 2)
    if isinstance(value, dict):
        rows = [
            f"{pad}{_key(k)}: {_format(v, indent + 2, indent + 4 + len(_key(k)))},"
            for k, v in value.items()
        ]
        return "{\n" + "\n".join(rows) + "\n" + " " * indent + "}"
    items = [_inline(v) for v in value]
    if all(len(item) <= 40 for item in items):
        rows, line = [], ""
        for item in items:
            if line and len(pad) + len(line) + len(item) + 2 > WIDTH:
                rows.append(pad + line.rstrip())
                line = ""
            line += item + ", "
        rows.append(pad + line.rstrip())
    else:
        rows = [f"{pad}{_format(v, indent + 2, indent + 2)}," for v in value]
    return "[\n" + "\n".join(rows) + "\n" + " " * indent + "]"


def render() -> str:
    """The text of ``js/spec.js``."""
    heads = {"SCRIPTS": "-- the scripts, by module name, in load order"}
    heads |= sections()
    rows: list[str] = []
    for name, value in spec_values().items():
        if name in heads:
            rows.append(("\n" if rows else "") + f"    // {heads[name]}")
        rows.append(f"    {name}: {_format(value, 4, 6 + len(name))},")
    body = "\n".join(rows)
    return (
        HEADER
        + "(function () {\n"
        + '  "use strict";\n\n'
        + f"  const lib = {LIB};\n"
        + "  const api = /** @type {const} */ ({\n"
        + body
        + "\n  });\n\n"
        + '  lib.provide("spec", api);\n'
        + '  if (typeof module === "object") module.exports = api;\n'
        + "})();\n"
    )
