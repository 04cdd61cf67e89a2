"""The JS twin of what the two engines share, written from Python.

The browser engine must count, cut and score as the Python engine does, so
every number, word list and pattern they share has one home on the Python
side. ``tools/write_js_spec.py`` writes ``js/spec.js`` from it, as Sphinx
writes ``language_data.js`` from its search language; ``tests/test_js_spec.py``
fails when the written file differs from what the tool writes now. The
load order of the widget's and the worker's scripts travels the same way.
"""

from __future__ import annotations

import json
from typing import Any

from sphinx_ragcite.extension import assets

#: The file, in ``js/`` and in the built site's ``_static/ragcite/``.
SPEC_JS = "spec.js"

HEADER = """\
// @ts-check
// Written by tools/write_js_spec.py from sphinx_ragcite: do not edit.
// Change the Python side (answer/spec.py, extension/assets.py), then run
// `python tools/write_js_spec.py`; tests/test_js_spec.py fails when stale.
"""


#: How every script finds the registry (``js/lib.js``).
LIB = 'typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib'


def _modules(names: tuple[str, ...]) -> list[str]:
    return [name.removesuffix(".js") for name in names]


def spec_values() -> dict[str, Any]:
    """Everything ``spec.js`` provides, by name."""
    return {
        # module names (file names without ".js"), in load order
        "SCRIPTS": {
            "page": _modules(assets.WIDGET_SCRIPTS),
            "search": _modules(assets.STATIC_MODE_SCRIPTS),
            "worker": _modules(assets.WORKER_SCRIPTS),
        },
    }


def render() -> str:
    """The text of ``js/spec.js``."""
    body = json.dumps(spec_values(), indent=2, ensure_ascii=False)
    body = body.replace("\n", "\n  ")
    return (
        HEADER
        + "(function () {\n"
        + '  "use strict";\n\n'
        + f"  const lib = {LIB};\n"
        + f"  const api = /** @type {{const}} */ ({body});\n\n"
        + '  lib.provide("spec", api);\n'
        + '  if (typeof module === "object") module.exports = api;\n'
        + "})();\n"
    )
