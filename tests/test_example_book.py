"""The example book: builds clean, and its QA set matches its passages."""

from __future__ import annotations

import json

import pytest

from helpers.anchors import check_anchors
from helpers.builds import Builds, read_passages
from helpers.repo import EXAMPLE_BOOK


@pytest.mark.slow
@pytest.mark.parametrize("builder", ["html", "dirhtml"])
def test_example_book_builds_without_warnings(builds: Builds, builder: str) -> None:
    built = builds.app(EXAMPLE_BOOK, builder)  # in this process, fresh
    assert built.warnings == ""
    records = check_anchors(built.outdir)
    formats = {r["docname"].split("/")[0] for r in records}
    assert {"index", "beans", "calculations", "brewing"} <= formats


def test_qa_set_points_at_real_passages(builds: Builds) -> None:
    built = builds.app(EXAMPLE_BOOK, "html")
    passages = {r["passage_id"]: r["text"].lower() for r in read_passages(built.outdir)}
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
