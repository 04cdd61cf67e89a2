"""The docs' screenshots show what this build does (issue 42): each is made
by tools/docs_screenshots.py, which records what it pictures, and each
pictured answer of the example book is what the engine answers today."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from helpers.repo import REPO

DOCS = REPO / "docs"
RECORD = DOCS / "_static" / "screenshots" / "shots.json"
FIGURE = re.compile(
    r"```\{figure\} [./]*_static/screenshots/([\w.-]+\.png)\n((?::[^\n]*\n)*)"
)


def figures() -> list[tuple[Path, str, str]]:
    """(document, screenshot, alt text) of every screenshot the docs show."""
    found = []
    for doc in sorted(DOCS.rglob("*.md")):
        for match in FIGURE.finditer(doc.read_text("utf-8")):
            alt = re.search(r"^:alt: (.*)$", match.group(2), re.M)
            found.append((doc, match.group(1), alt.group(1) if alt else ""))
    return found


def shots() -> dict:
    assert RECORD.is_file(), "run tools/docs_screenshots.py"
    return json.loads(RECORD.read_text("utf-8"))["shots"]


def test_every_screenshot_the_docs_show_is_made_by_the_script() -> None:
    shown = {name for _, name, _ in figures()}
    assert shown, "no figures found"
    made = shots()
    assert sorted(shown - set(made)) == []
    for name in shown:
        assert (RECORD.parent / name).is_file(), name


def test_no_figure_claims_another_question_or_confidence_than_its_screenshot() -> None:
    made = shots()
    for doc, name, alt in figures():
        pictured = made[name].get("pictured") or {}
        asked = set(re.findall(r'"([^"]{8,}\?)"', alt))
        if pictured.get("question"):
            assert asked <= {pictured["question"]}, (doc.name, name, alt)
        claimed = set(re.findall(r"(\d+)\s?%", alt))
        if pictured.get("kind") != "answer" or pictured.get("confidence") is None:
            continue
        # a figure that gives a percentage gives the answer's (a source's
        # own may stand beside it)
        if claimed:
            assert str(pictured["confidence"]) in claimed, (doc.name, name, alt)


@pytest.mark.slow
def test_pictured_answers_are_what_this_build_answers(example_site: Path) -> None:
    from sphinx_ragcite.answer.engine import AnswerEngine
    from sphinx_ragcite.retrieval.site import Site

    engine = AnswerEngine(Site.load(example_site))
    checked = 0
    for name, shot in shots().items():
        pictured = shot.get("pictured") or {}
        if (
            shot.get("book") != "example_book"
            or pictured.get("kind") != "answer"
            or pictured.get("selection")
            or pictured.get("generator") != "extractive"
        ):
            continue
        now = engine.answer(pictured["question"]).model_dump(mode="json")
        assert now["outcome"] == pictured["outcome"], name
        assert round(now["confidence"] * 100) == pictured["confidence"], name
        cited = [c["passage_id"] for c in now["citations"]]
        assert cited == pictured["cited"], name
        checked += 1
    assert checked >= 3, "too few pictured answers to check"
