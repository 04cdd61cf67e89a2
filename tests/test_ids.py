"""Passage ID grammar and the book's reading order."""

from __future__ import annotations

import pytest

from sphinx_ragcite.extension.passages.ids import (
    PASSAGE_ID,
    parse_passage_id,
    passage_id,
    reading_order,
)


def test_id_grammar_round_trips() -> None:
    pid = passage_id(12, 0, 3)
    assert pid == "ch12-sec0-p3"
    assert PASSAGE_ID.match(pid)
    assert parse_passage_id(pid) == (12, 0, 3)


@pytest.mark.parametrize(
    "value", ["ch1-sec2", "ch-sec1-p1", "ch1-sec2-p3 ", "CH1-SEC2-P3", "ch1-sec2-p3#x"]
)
def test_malformed_ids_do_not_parse(value: str) -> None:
    assert parse_passage_id(value) is None


def test_reading_order_is_depth_first_then_orphans_by_name() -> None:
    includes = {
        "index": ["a", "part/index", "c"],
        "part/index": ["part/x", "part/y"],
        "part/x": ["c"],  # reached again later: first visit wins
    }
    docs = ["index", "a", "c", "part/index", "part/x", "part/y", "zeta", "beta"]
    order = reading_order("index", includes, docs)
    assert sorted(order, key=order.__getitem__) == [
        "index",
        "a",
        "part/index",
        "part/x",
        "c",
        "part/y",
        "beta",
        "zeta",
    ]


def test_reading_order_ignores_missing_documents_and_cycles() -> None:
    includes = {"index": ["gone", "a"], "a": ["index"]}
    assert reading_order("index", includes, ["index", "a"]) == {"index": 0, "a": 1}
