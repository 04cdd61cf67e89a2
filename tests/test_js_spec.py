"""js/spec.js is what tools/write_js_spec.py writes now: the constants and
the script order the browser engine shares with Python are never copied by
hand, so a change on the Python side that is not carried over fails here."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

from sphinx_ragcite.answer import spec
from sphinx_ragcite.answer.engine import AnswerEngine
from sphinx_ragcite.extension import assets
from sphinx_ragcite.extension.js_spec import SPEC_JS, render, spec_values, to_js
from sphinx_ragcite.retrieval.searchable import SearchRequest

from helpers.repo import REPO


def test_spec_js_is_what_the_tool_writes() -> None:
    written = (REPO / "js" / SPEC_JS).read_text("utf-8")
    assert written == render(), "js/spec.js is stale: run python tools/write_js_spec.py"


def test_the_tool_says_when_the_file_is_stale(tmp_path) -> None:
    tool = REPO / "tools" / "write_js_spec.py"
    fresh = subprocess.run(
        [sys.executable, str(tool), "--check"], capture_output=True, text=True
    )
    assert fresh.returncode == 0, fresh.stdout
    stale = tmp_path / SPEC_JS
    stale.write_text(render().replace('"store"', '"stale"'), "utf-8")
    check = [sys.executable, str(tool), "--check", "--path", str(stale)]
    refused = subprocess.run(check, capture_output=True, text=True)
    assert refused.returncode == 1
    assert "is stale: run python tools/write_js_spec.py" in refused.stdout
    subprocess.run([sys.executable, str(tool), "--path", str(stale)], check=True)
    assert stale.read_text("utf-8") == render()


def test_the_script_order_is_the_builds() -> None:
    scripts = spec_values()["SCRIPTS"]
    assert scripts["page"] == [n.removesuffix(".js") for n in assets.WIDGET_SCRIPTS]
    assert scripts["page"][:2] == ["lib", "spec"], (
        "the registry and the spec load first"
    )
    worker = scripts["worker"]
    # store.js reads files.js when it loads, and search.js when it searches
    assert worker.index("files") < worker.index("search") < worker.index("store")
    assert scripts["search"][-1] == "store", "the page's keyword search needs it"


# -- the JS takes the shared values from spec.js, never a copy -------------------

JS = REPO / "js"


def shared_values() -> dict[str, Any]:
    """``answer.spec``'s values as ``spec.js`` holds them, by name."""
    return {name: to_js(getattr(spec, name)) for name in spec.__all__}


#: Names of spec.js that a script uses for something else.
OTHER_MEANINGS = {
    ("quotes.js", "BRACKET"): "a footnote bracket's CSS selector",
    ("citations.js", "MARKER"): "the [1] markers the widget turns into links",
}


def hand_copies(text: str, file: str = "") -> list[str]:
    """What in a JS file's *text* copies a value of ``answer.spec`` by hand:
    a spec name given a literal, a pattern's source or a longer string as a
    string literal, or a word list's first three words in a row."""
    found = []
    literal = r"\s*=\s*(?:-?\d|[\"'`\[{]|/(?![/*])|new (?:Set|RegExp)\(\s*[\"'/\[])"
    for name, value in shared_values().items():
        definition = rf"\b(?:const|let|var)\s+{name}\b{literal}"
        if (file, name) not in OTHER_MEANINGS and re.search(definition, text):
            found.append(f"{name} given a literal")
        if isinstance(value, dict) and set(value) == {"source", "flags"}:
            value = value["source"]
        if isinstance(value, str) and len(value) >= 12 and json.dumps(value) in text:
            found.append(f"{name}'s text")
        if isinstance(value, list) and len(value) >= 3:
            words = value[:3]
            if all(isinstance(w, str) for w in words) and (
                ", ".join(json.dumps(w) for w in words) in text
                or json.dumps(" ".join(words))[:-1] in text
            ):
                found.append(f"{name}'s words")
    return found


def test_the_js_copies_no_shared_value() -> None:
    """Every shipped script reads the shared values from ``spec.js``."""
    copies = {
        path.name: found
        for path in sorted(JS.glob("*.js"))
        if path.name != SPEC_JS
        and (found := hand_copies(path.read_text("utf-8"), path.name))
    }
    assert copies == {}


def test_a_hand_copy_is_found() -> None:
    """The check above can fail: each kind of copy the JS once held is seen."""
    values = shared_values()
    assert hand_copies("const MAX_K = 20;") == ["MAX_K given a literal"]
    assert hand_copies('  const USER_SELECTION = "user-selection";') == [
        "USER_SELECTION given a literal",
        "USER_SELECTION's text",
    ]
    assert "PASSAGE_ID given a literal" in hand_copies("const PASSAGE_ID = /^ch$/;")
    source = values["BOUNDARY"]["source"]
    assert hand_copies(f"const B = {json.dumps(source)};") == ["BOUNDARY's text"]
    assert hand_copies('const S = ["a", "an", "and", "are"];') == ["STOPWORDS's words"]
    filler = '  "what which who whom whose when where why how do does did should " +'
    assert hand_copies(filler) == ["FILLER_WORDS's words"]
    assert hand_copies("const S = new Set(['x']);") == []
    assert hand_copies("const STRICT_KINDS = new Set(['who']);") == [
        "STRICT_KINDS given a literal"
    ]
    assert hand_copies("const MARKER = /x/;", "citations.js") == []
    assert hand_copies("const MAX_K = spec.MAX_K;") == []


def test_the_python_engine_answers_with_the_spec_defaults() -> None:
    """What the JS engine takes from spec.js is what the Python engine uses
    (the rest of its defaults are checked by the parity test)."""
    assert AnswerEngine.k == spec.DEFAULT_K
    assert AnswerEngine.fusion == "linear"
    assert SearchRequest("q").depth == spec.DEPTH
    assert render().count("source:") == sum(
        isinstance(getattr(spec, n), re.Pattern) for n in spec.__all__
    ) + len(spec.QUESTION_KINDS)
