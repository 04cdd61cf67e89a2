"""The example book: builds clean, and its QA set matches its passages."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import EXAMPLE_BOOK, build, read_passages
from test_anchors import check_anchors


@pytest.fixture(scope="module")
def book(tmp_path_factory):  # type: ignore[no-untyped-def]
    srcdir = tmp_path_factory.mktemp("book") / "src"
    shutil.copytree(EXAMPLE_BOOK, srcdir, ignore=shutil.ignore_patterns("_build"))
    return srcdir


@pytest.mark.parametrize("builder", ["html", "dirhtml"])
def test_example_book_builds_without_warnings(make_app, book, builder):  # type: ignore[no-untyped-def]
    app = build(make_app, builder, book, freshenv=True)
    assert app.warning.getvalue() == ""
    records = check_anchors(app.outdir)
    formats = {r["docname"].split("/")[0] for r in records}
    assert {"index", "beans", "calculations", "brewing"} <= formats


def test_qa_set_points_at_real_passages(make_app, book):  # type: ignore[no-untyped-def]
    app = build(make_app, "html", book, freshenv=True)
    passages = {r["passage_id"]: r["text"].lower() for r in read_passages(app.outdir)}
    lines = (EXAMPLE_BOOK / "qa.jsonl").read_text("utf-8").splitlines()
    qa = [json.loads(line) for line in lines]
    answerable = [q for q in qa if q["answer"] is not None]
    assert len(answerable) >= 60
    assert len(qa) - len(answerable) >= 20
    assert len({q["question"] for q in qa}) == len(qa)
    for q in answerable:
        assert q["passage_ids"], q
        assert all(pid in passages for pid in q["passage_ids"]), q
        assert any(q["answer"].lower() in passages[p] for p in q["passage_ids"]), q
    for q in qa:
        if q["answer"] is None:
            assert q["passage_ids"] == []
