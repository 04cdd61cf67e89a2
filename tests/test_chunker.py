"""Doctree -> passages: what is chunked, what is skipped, and how IDs number."""

from __future__ import annotations

import re

import pytest

from sphinx_ragcite.contracts import make_snippet
from sphinx_ragcite.extension.passages.ids import parse_passage_id

from helpers.builds import Built, read_passages

ID = re.compile(r"^ch[0-9]+-sec[0-9]+-p[0-9]+$")


@pytest.fixture
def basic(app_built: Built) -> dict:
    """The marker's build (once per session for each configuration)."""
    assert app_built.warnings == ""
    return {r["passage_id"]: r for r in read_passages(app_built.outdir)}


@pytest.mark.sphinx("html", testroot="basic", freshenv=True)
def test_ids_follow_reading_order(basic: dict) -> None:
    chapters = {r["docname"]: r["passage_id"].split("-")[0] for r in basic.values()}
    assert chapters == {
        "index": "ch0",
        "first": "ch1",
        "part/index": "ch2",
        "part/inner": "ch3",  # nested toctree: right after its parent
        # ch4 is "empty": numbered, but it has no passage
        "aorphan": "ch5",  # orphans last, sorted by docname
        "nosections": "ch6",
        "zorphan": "ch7",
    }
    assert all(ID.match(pid) for pid in basic)
    assert list(basic) == sorted(basic, key=parse_passage_id)


@pytest.mark.sphinx("html", testroot="basic", freshenv=True)
def test_sections_number_in_document_order(basic: dict) -> None:
    sections = {
        pid.split("-p")[0]: (r["section"], r["heading_path"])
        for pid, r in basic.items()
        if r["docname"] == "first"
    }
    assert sections == {
        "ch1-sec0": ("1. First Chapter", ["First Chapter"]),
        "ch1-sec1": ("1.1. Alpha", ["First Chapter", "Alpha"]),
        "ch1-sec2": ("1.2. Beta", ["First Chapter", "Beta"]),
        "ch1-sec3": ("1.2.1. Gamma", ["First Chapter", "Beta", "Gamma"]),
        "ch1-sec4": ("1.3. Repeated", ["First Chapter", "Repeated"]),
        "ch1-sec5": ("1.4. Repeated", ["First Chapter", "Repeated"]),
        "ch1-sec6": (
            "1.5. Ünïcödé Überschrift — 日本語",
            ["First Chapter", "Ünïcödé Überschrift — 日本語"],
        ),
    }
    assert basic["ch1-sec0-p1"]["chapter"] == "1. First Chapter"


@pytest.mark.sphinx("html", testroot="basic", freshenv=True)
def test_skipped_content_never_reaches_a_passage(basic: dict) -> None:
    text = "\n".join(r["text"] for r in basic.values())
    assert "comment must not" not in text
    assert "raw html" not in text
    assert "printer note" not in text
    assert "ragcite-ignore" not in text
    assert "Inner Chapter" not in basic["ch0-sec0-p1"]["text"]  # toctree entries


@pytest.mark.sphinx("html", testroot="basic", freshenv=True)
def test_blocks_and_references(basic: dict) -> None:
    alpha = basic["ch1-sec1-p1"]["text"]
    # implicit :ref: and :doc: show the titles the reader sees
    assert alpha.startswith("Alpha paragraph one. It mentions Beta and Part Two.")
    assert "An admonition is one block" in alpha
    assert '    return "code blocks are passages too"' in alpha  # code keeps indent
    assert "ratio | 16" in alpha  # table rows keep their cells together


@pytest.mark.sphinx("html", testroot="basic", freshenv=True)
def test_documents_without_sections_and_empty_documents(basic: dict) -> None:
    nosec = [r for r in basic.values() if r["docname"] == "nosections"]
    assert [r["passage_id"] for r in nosec] == ["ch6-sec0-p1"]
    assert nosec[0]["chapter"] == "nosections"
    assert not [r for r in basic.values() if r["docname"] == "empty"]


@pytest.mark.sphinx("html", testroot="basic", freshenv=True)
def test_record_fields(basic: dict) -> None:
    for record in basic.values():
        assert set(record) >= {
            "passage_id",
            "docname",
            "url",
            "chapter",
            "section",
            "heading_path",
            "text",
            "snippet",
            "char_start",
            "char_end",
            "content_hash",
        }
        assert record["text"].split()[:3] == record["snippet"].split()[:3]
        assert record["char_end"] - record["char_start"] == len(record["text"])
        assert re.fullmatch(r"[0-9a-f]{16}", record["content_hash"])
        snippet = record["snippet"]
        assert len(snippet) <= 200
        assert len(snippet) >= 50 or snippet == " ".join(record["text"].split())


@pytest.mark.sphinx(
    "html", testroot="basic", freshenv=True, confoverrides={"ragcite_passage_words": 20}
)
def test_small_passages_split_but_never_cross_sections(basic: dict) -> None:
    # 9 + 12 words do not fit in 20: the second paragraph starts a passage
    assert [pid for pid in basic if pid.startswith("ch1-sec0-")] == [
        "ch1-sec0-p1",
        "ch1-sec0-p2",
    ]
    assert basic["ch1-sec0-p2"]["text"].startswith("Second paragraph")
    # paragraph + note (17 words), then code + table (17 words)
    alpha = [basic[pid]["text"] for pid in basic if pid.startswith("ch1-sec1-")]
    assert len(alpha) == 2
    assert alpha[1].startswith("def alpha():")
    assert all(len(text.split()) <= 20 for text in alpha)
    # a block longer than the limit stays whole: its anchor needs an element
    long = basic["ch3-sec1-p1"]["text"]
    assert len(long.split()) > 600
    assert "ch3-sec1-p2" not in basic


@pytest.mark.sphinx(
    "html",
    testroot="basic",
    freshenv=True,
    confoverrides={"ragcite_exclude": ["part/*", "zorphan"]},
)
def test_excluded_documents_keep_the_numbering(basic: dict) -> None:
    docs = {r["docname"] for r in basic.values()}
    assert docs == {"index", "first", "aorphan", "nosections"}
    assert "ch5-sec0-p1" in basic  # aorphan keeps its chapter number


@pytest.mark.sphinx("html", testroot="myst", freshenv=True)
def test_myst_and_notebooks(app_built: Built) -> None:
    assert app_built.warnings == ""
    records = {r["passage_id"]: r for r in read_passages(app_built.outdir)}
    assert records["ch0-sec0-p1"]["text"] == "A MyST Markdown root page with a link."
    assert records["ch0-sec1-p1"]["text"] == "Setting | Default\nwords | 120"
    guide = records["ch1-sec1-p1"]["text"]
    assert guide == (
        "Warning\nA MyST admonition with bold text.\n\na bulleted item\nanother item"
    )
    assert "alert" not in guide  # raw HTML is skipped
    assert "hostile" not in guide
    cells = records["ch2-sec1-p1"]["text"]
    for expected in (
        "ratio = 250 / 15",
        "ratio 16.7",
        "33.333333333333336",
        "<Table plain view>",
    ):
        assert expected in cells
    assert "html only view" not in cells  # the plain-text view of a bundle only


def test_snippet_cuts_at_a_word_boundary() -> None:
    text = "word " * 100
    snippet = make_snippet(text)
    assert len(snippet) <= 200
    assert snippet.endswith("word")
    assert make_snippet("x" * 300) == "x" * 200  # no boundary: hard cut
    assert make_snippet("  short\n text ") == "short text"
