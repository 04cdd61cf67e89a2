"""A small reference manual -> passages that read as the rendered page does.

The ``reference`` root has Sphinx's ``confval`` (with ``:type:`` and
``:default:``), ``option``, ``envvar``, autodoc of a small module
(``:param:``/``:type:``/``:returns:``/``:raises:``), a glossary, a definition
list, a field list and an option list. Its passages are compared with
``tests/golden/reference_passages.txt``; regenerate it after an intended change
with ``RAGCITE_UPDATE_GOLDENS=1 pytest tests/test_reference_manual.py`` and
review the diff.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from sphinx_ragcite.text import split_sentences, tokenize

from helpers.builds import Built, read_passages

GOLDEN = Path(__file__).parent / "golden" / "reference_passages.txt"
UPDATE = os.environ.get("RAGCITE_UPDATE_GOLDENS") == "1"
#: A field name run into its value, as the text read before (``Typestr``).
GLUED = re.compile(r"Type[a-z]|Default[A-Z0-9'\"]|Parameters[a-z]|Returns[a-z]")


@pytest.fixture
def reference(app_built: Built) -> dict[str, str]:
    """The marker's build (once per session for each configuration)."""
    assert app_built.warnings == ""
    return {r["passage_id"]: r["text"] for r in read_passages(app_built.outdir)}


def _golden(passages: dict[str, str]) -> str:
    return "".join(f"[{pid}]\n{text}\n\n" for pid, text in passages.items())


@pytest.mark.slow
@pytest.mark.sphinx("html", testroot="reference", freshenv=True)
def test_passages_match_the_golden(reference: dict[str, str]) -> None:
    text = _golden(reference)
    if UPDATE:
        GOLDEN.write_text(text, "utf-8")
    assert GOLDEN.exists(), f"{GOLDEN} is missing: run with RAGCITE_UPDATE_GOLDENS=1"
    assert text == GOLDEN.read_text("utf-8"), "passages differ from their golden"


@pytest.mark.sphinx("html", testroot="reference", freshenv=True)
def test_answers_are_words_of_their_own(reference: dict[str, str]) -> None:
    """ "What is the default of project?" finds "default" and the value."""
    assert not [t for t in reference.values() if GLUED.search(t)]
    project = next(t for t in reference.values() if t.startswith("project\n"))
    sentences = [s.text for s in split_sentences(project)]
    assert "Type: str" in sentences
    assert "Default: 'Project name not set'" in sentences  # quotable on its own
    assert {"default", "project", "name", "set"} <= set(tokenize(project))
    brew = next(t for t in reference.values() if t.startswith("refmod.brew("))
    assert "Returns: the grams of water to pour" in brew.split("\n")
    assert "Raises: ValueError – if the dose is not positive" in brew.split("\n")
    options = next(t for t in reference.values() if "Print nothing" in t)
    assert "-o DIR, --output=DIR  Write the results to DIR." in options.split("\n")


@pytest.mark.slow
@pytest.mark.sphinx(
    "html",
    testroot="reference",
    freshenv=True,
    confoverrides={"ragcite_passage_words": 20},
)
def test_a_signature_keeps_its_description(reference: dict[str, str]) -> None:
    """Even when passages are small, a signature never stands alone."""
    starts = {
        "project": "Type: str",
        "-o <dir>, --output <dir>": "Write the results to dir.",
        "BREW_HOME": "Where brew keeps its recipes.",
        "refmod.brew(dose, ratio=16.0)": "Brew one cup.",
        "class refmod.Grinder(setting=12)": "A burr grinder.",
        "grind(grams)": "Grind some beans.",
    }
    for signature, description in starts.items():
        assert any(
            t.startswith(f"{signature}\n\n{description}") for t in reference.values()
        ), signature
