"""The widget on Chinese and Japanese books in Chromium: answered, cited, quote marked.

Screenshots go to /tmp/ragcite-shots/quote-zh_CN.png and quote-ja.png.
"""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING

import pytest

from test_widget import (  # the browser fixtures and helpers of the widget tests
    SHOTS,
    answer_server,
    ask,
    browser,
    marked_quote,
    page,
    squeezed,
    wait_highlighted,
)

from conftest import ROOTS, read_passages, sphinx_build

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["browser", "page"]  # pytest fixtures, imported to be found

QUESTIONS = {
    "zh_CN": ("回放缓冲区的作用是什么？", "sec2-p1"),
    "ja": ("ケトルの水垢はどうやって落としますか？", "sec3-p1"),
}


@pytest.fixture(scope="module")
def books(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = {}
    for language in QUESTIONS:
        root = tmp_path_factory.mktemp(f"widget-{language}")
        shutil.copytree(ROOTS / "test-languages" / language, root / "src")
        sphinx_build(root / "src", root / "html", "-d", str(root / "doctrees"))
        out[language] = root / "html"
    return out


@pytest.mark.parametrize("language", list(QUESTIONS))
def test_cjk_answer_marks_the_quoted_characters(page, books, language) -> None:  # type: ignore[no-untyped-def]
    question, suffix = QUESTIONS[language]
    with answer_server(books[language], generator="extractive") as server:
        page.goto(f"{server}/index.html")
        answer = ask(page, question)
        assert answer["outcome"] in ("answer", "passages"), answer
        cited = answer["citations"] or answer.get("passages", [])
        target = answer["citations"][0] if answer["citations"] else None
        assert target is not None, answer
        assert target["passage_id"].endswith(suffix), cited
        spans = target["quote_spans"]
        assert spans, target
        page.click('a[data-ragcite-n="1"]')
        wait_highlighted(page, target["passage_id"])
        marked = marked_quote(page)
        assert marked["api"] == "highlight"
        passage = next(
            p
            for p in read_passages(books[language])
            if p["passage_id"] == target["passage_id"]
        )
        # exact: the marked characters are the quoted ones, nothing more
        assert [squeezed(part) for part in marked["parts"]] == [
            squeezed(passage["text"][a:b]) for a, b in spans
        ]
        assert "".join(squeezed(p) for p in marked["parts"]) == squeezed(
            target["quote"].replace(" … ", "")
        )
        page.wait_for_timeout(300)
        page.screenshot(path=str(SHOTS / f"quote-{language}.png"))
