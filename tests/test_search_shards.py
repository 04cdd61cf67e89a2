"""The static index in pieces (``formats/search_shards.py``): what each piece
holds, how it is cut, and that a damaged piece is refused."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from sphinx_ragcite.formats.search_shards import (
    FORMAT_VERSION,
    ShardedIndex,
    search_shards,
)
from sphinx_ragcite.formats.static import search_static, static_index

from helpers.builds import read_manifest


def _records(n: int) -> list[dict[str, Any]]:
    return [
        {
            "passage_id": f"ch{1 + i // 10}-sec1-p{1 + i % 10}",
            "url": f"page{i // 10}.html#ch{1 + i // 10}-sec1-p{1 + i % 10}",
            "chapter": f"Chapter {i // 10}",
            "section": "Section",
            "snippet": f"snippet {i}",
            "docname": f"page{i // 10}",
            "heading_path": [f"Chapter {i // 10}", "Section"],
        }
        for i in range(n)
    ]


def _corpus(n: int) -> list[list[str]]:
    # "common" in every passage, "rare<i>" in one, "pair<i//2>" in two
    return [["common", f"rare{i}", f"pair{i // 2}", "common"] for i in range(n)]


def test_shards_are_named_by_digest_and_cut_by_size() -> None:
    records, corpus = _records(300), _corpus(300)
    built = search_shards(records, corpus, term_bytes=400, passage_rows=16)  # type: ignore[arg-type]
    root = json.loads(built.root)
    assert root["format_version"] == FORMAT_VERSION
    assert root["rows"] == 300
    assert len(root["lengths"]) == 300
    for name, data in built.files.items():
        assert name == f"search/{hashlib.sha256(data).hexdigest()[:16]}.json"
    firsts = [first for first, _ in root["terms"]]
    assert firsts == sorted(firsts)
    assert len(firsts) > 10
    # a term whose postings pass the size is alone in its shard
    (common,) = [n for first, n in root["terms"] if first == "common"]
    assert json.loads(built.files[common])["terms"] == ["common"]
    assert [n for n, _ in root["passages"]] == [16] * 18 + [12]


def test_passage_shards_hold_whole_answer_shards() -> None:
    records, corpus = _records(30), _corpus(30)
    answers = [(4, f"shards/{i:016x}.bin") for i in range(7)] + [(2, "shards/last.bin")]
    built = search_shards(records, corpus, answer_shards=answers, passage_rows=10)  # type: ignore[arg-type]
    root = json.loads(built.root)
    assert [n for n, _ in root["passages"]] == [12, 12, 6]
    held = [json.loads(built.files[name])["shards"] for _, name in root["passages"]]
    assert [tuple(s) for group in held for s in group] == answers
    with pytest.raises(ValueError, match="do not cover"):
        search_shards(records, corpus, answer_shards=answers[:-1])  # type: ignore[arg-type]


def test_the_sharded_index_searches_as_the_whole_one() -> None:
    records, corpus = _records(300), _corpus(300)
    built = search_shards(records, corpus, term_bytes=400)  # type: ignore[arg-type]
    whole = static_index(records, corpus)  # type: ignore[arg-type]
    sharded = ShardedIndex(built.root, built.files.__getitem__)
    for tokens in (
        ["common"],
        ["rare7", "pair3"],
        ["pair3", "common", "pair3"],
        ["zz"],
    ):
        assert sharded.search(tokens, 10) == search_static(whole, tokens, 10)
    sharded = ShardedIndex(built.root, built.files.__getitem__)
    sharded.search(["rare7"])
    assert len(sharded.loaded) == 1, "one term, one shard"
    assert sharded.passage(123)["passage_id"] == records[123]["passage_id"]


def test_a_damaged_shard_is_refused() -> None:
    records, corpus = _records(40), _corpus(40)
    built = search_shards(records, corpus, term_bytes=200)  # type: ignore[arg-type]
    damaged = {
        name: data.replace(b"rare", b"raRe") for name, data in built.files.items()
    }
    sharded = ShardedIndex(built.root, damaged.__getitem__)
    with pytest.raises(ValueError, match="digest"):
        sharded.search(["rare3"])
    with pytest.raises(ValueError, match="sharded static index"):
        ShardedIndex(b'{"format_version": 2}', damaged.__getitem__)


def test_the_build_ships_the_root_and_its_shards(example_site: Path) -> None:
    manifest = read_manifest(example_site)
    folder = example_site / "_ragcite"
    root = json.loads((folder / manifest["files"]["search_root"]).read_bytes())
    listing = json.loads((folder / manifest["files"]["shards"]).read_bytes())
    # the passage shards name every answer shard, in row order
    named = []
    for _, name in root["passages"]:
        named += json.loads((folder / name).read_bytes())["shards"]
    assert named == listing["shards"]
    assert root["rows"] == manifest["counts"]["passages"]
