"""The static index in pieces: a small root, then only the shards a query needs.

The whole static index (:mod:`~sphinx_ragcite.formats.static`) grows with the
book: ~31 MB at 50,000 passages, all of it downloaded before the first
result. Here it is cut as Pagefind cuts its index: by term, so a query fetches
the shards of its own terms, and by passage, so a result list fetches the
display fields of the passages it shows. Every shard is named by its digest
(``search/<sha256[:16]>.json``): the browser's HTTP cache keeps it for later
questions and visits, and a rebuild that leaves it alone keeps its name.

The root, ``search-root.<hash>.json`` (role ``search_root``)::

    {"format_version": 3,
     "tokenizer": {...}, "bm25": {"method": "lucene", "k1": 1.5, "b": 0.75},
     "rows": 140,
     "lengths": [58, 41, ...],           # tokens of each passage, as indexed
     "terms": [["bloom", "search/<h>.json"], ...],  # first term of each shard
     "passages": [[32, "search/<h>.json"], ...]}    # rows, consecutive from 0

A term shard holds the terms from its first one up to the next shard's,
``{"terms": [...], "postings": [[doc, tf, doc_delta, tf, ...], ...]}``
exactly as the whole index holds them, so the scores stay bm25s's to the bit
(:func:`~sphinx_ragcite.formats.static.term_weights`). The lengths stay in
the root: a term's weight in a passage needs that passage's length, and a
common term's postings reach passages all over the book.

A passage shard holds its rows' display fields and, when the browser engine
ships, the answer shards (:mod:`~sphinx_ragcite.formats.shards`) of exactly
those rows::

    {"pages": [...], "headings": [...], "docnames": [...], "titles": [...],
     "rows": [[passage_id, page, chapter, section, snippet, docname,
               [title, ...]], ...],
     "shards": [[rows, "shards/<h>.bin"], ...]}

The root and the shards are JSON; nothing here is code, so nothing here can
be loaded from ``file://``, where fetch is blocked: a page opened from disk
reads the whole index (``search.js``) instead, from the local disk.
"""

from __future__ import annotations

import hashlib
import json
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from sphinx_ragcite.formats.bm25 import PARAMS
from sphinx_ragcite.formats.files import dumps
from sphinx_ragcite.formats.static import METHOD, term_postings, term_weights
from sphinx_ragcite.text import SPEC

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from sphinx_ragcite.contracts import PassageRecord as Record

FORMAT_VERSION = 3
ROOT_NAME = "search-root.json"
FOLDER = "search"
HASH_CHARS = 16
#: A term shard is cut once its JSON reaches this many bytes (a term whose
#: postings are longer has a shard of its own), and a passage shard holds at
#: least this many rows (whole answer shards are kept together). Measured
#: with benchmarks/search_shard_sizes.py on the example book and books of
#: 3,738 and 51,266 passages, 200 questions each, gzip as served: a keyword
#: question's terms' shards and its ten results' passage shards cost 10.9,
#: 17.5 and 35.4 KB (12.2 requests) at 3 KB and 16 rows, against 21.6, 35.0
#: and 52.7 KB at 12 KB; smaller term shards grow the root (the 50,000-
#: passage book's: 109 KB at 3 KB and 16 rows, 91 KB at 32 rows, of which the
#: passages' lengths are 53 KB), and 16 rows cost 4 KB less a question than 32.
TERM_SHARD_BYTES = 3_000
PASSAGE_SHARD_ROWS = 16


def shard_name(data: bytes) -> str:
    return f"{FOLDER}/{hashlib.sha256(data).hexdigest()[:HASH_CHARS]}.json"


@dataclass(frozen=True)
class SearchShards:
    """The root's bytes and every shard (name relative to ``_ragcite/``)."""

    root: bytes
    files: dict[str, bytes] = field(default_factory=dict)


def _term_shards(
    terms: list[str], postings: list[list[int]], target: int
) -> list[tuple[str, bytes]]:
    """(first term, shard bytes) of each term shard, in term order."""
    out: list[tuple[str, bytes]] = []
    start, size = 0, 0
    for i in range(len(terms) + 1):
        if i == len(terms) or (size >= target and i > start):
            if i > start:
                shard = {"terms": terms[start:i], "postings": postings[start:i]}
                out.append((terms[start], dumps(shard).encode("utf-8")))
            start, size = i, 0
        if i < len(terms):
            # the JSON of one term and its postings, near enough
            size += len(terms[i]) + 4 + sum(len(str(v)) + 1 for v in postings[i])
    return out


def _passage_groups(
    rows: int, answer_shards: Sequence[tuple[int, str]] | None, least: int
) -> list[tuple[int, int, list[tuple[int, str]]]]:
    """(first row, rows, answer shards) of each passage shard."""
    units = list(answer_shards) if answer_shards else []
    if not units:
        units = [(min(least, rows - s), "") for s in range(0, rows, least)]
    groups: list[tuple[int, int, list[tuple[int, str]]]] = []
    start, count, held = 0, 0, []
    for n, name in units:
        held.append((n, name))
        count += n
        if count >= least:
            groups.append((start, count, held))
            start, count, held = start + count, 0, []
    if count:
        groups.append((start, count, held))
    return groups


def _passage_shard(
    records: Sequence[Record], answer_shards: list[tuple[int, str]]
) -> bytes:
    tables: dict[str, dict[str, int]] = {
        k: {} for k in ("pages", "headings", "docnames", "titles")
    }

    def at(table: str, value: str) -> int:
        return tables[table].setdefault(value, len(tables[table]))

    rows = [
        [
            r["passage_id"],
            at("pages", r["url"].split("#", 1)[0]),
            at("headings", r["chapter"]),
            at("headings", r["section"]),
            r["snippet"],
            at("docnames", r["docname"]),
            [at("titles", t) for t in r["heading_path"]],
        ]
        for r in records
    ]
    shard: dict[str, Any] = {k: list(v) for k, v in tables.items()}
    shard["rows"] = rows
    if any(name for _, name in answer_shards):
        shard["shards"] = [[n, name] for n, name in answer_shards]
    return dumps(shard).encode("utf-8")


def search_shards(
    records: Sequence[Record],
    corpus: Sequence[Sequence[str]],
    tokenizer: dict[str, Any] = SPEC,
    params: dict[str, Any] | None = None,
    *,
    answer_shards: Sequence[tuple[int, str]] | None = None,
    term_bytes: int = TERM_SHARD_BYTES,
    passage_rows: int = PASSAGE_SHARD_ROWS,
) -> SearchShards:
    """The sharded static index of *records*, whose BM25 tokens are *corpus*.

    *answer_shards*: ``(rows, name)`` of the browser engine's shards, in row
    order, when it ships (each passage shard then names its rows' own).
    """
    if len(records) != len(corpus):
        raise ValueError("one token list per record is needed")
    bm25 = {**PARAMS, **(params or {})}
    if bm25["method"] != METHOD:
        raise ValueError(f"the static index follows BM25 {METHOD!r} only")
    if answer_shards and sum(n for n, _ in answer_shards) != len(records):
        raise ValueError("the answer shards do not cover the passages")
    files: dict[str, bytes] = {}
    terms, postings = term_postings(corpus)
    term_table = []
    for first, data in _term_shards(terms, postings, term_bytes):
        name = shard_name(data)
        files[name] = data
        term_table.append([first, name])
    passage_table = []
    for start, count, held in _passage_groups(
        len(records), answer_shards, passage_rows
    ):
        data = _passage_shard(records[start : start + count], held)
        name = shard_name(data)
        files[name] = data
        passage_table.append([count, name])
    root = {
        "format_version": FORMAT_VERSION,
        "tokenizer": tokenizer,
        "bm25": {"method": METHOD, "k1": bm25["k1"], "b": bm25["b"]},
        "rows": len(records),
        "lengths": [len(tokens) for tokens in corpus],
        "terms": term_table,
        "passages": passage_table,
    }
    return SearchShards(dumps(root).encode("utf-8"), files)


# -- reading (the server's parity reference; the browser's twin is js/search.js)


class ShardedIndex:
    """Searches a sharded static index as the browser does, shard by shard.

    *load* returns a shard's bytes by name; every name loaded is recorded in
    :attr:`loaded` (what a browser would have fetched).
    """

    def __init__(self, root: bytes, load: Callable[[str], bytes]) -> None:
        self.root: dict[str, Any] = json.loads(root)
        if self.root.get("format_version") != FORMAT_VERSION:
            raise ValueError("not a sharded static index root")
        self._load = load
        self._shards: dict[str, Any] = {}
        self.loaded: list[str] = []
        lengths = self.root["lengths"]
        self._average = sum(lengths) / len(lengths) if lengths else 0.0
        self._firsts = [first for first, _ in self.root["terms"]]
        starts = np.cumsum([0] + [n for n, _ in self.root["passages"]])
        self._starts = starts.tolist()

    def _shard(self, name: str) -> Any:
        if name not in self._shards:
            data = self._load(name)
            if hashlib.sha256(data).hexdigest()[:HASH_CHARS] not in name:
                raise ValueError(f"{name} does not match the digest in its name")
            self._shards[name] = json.loads(data)
            self.loaded.append(name)
        return self._shards[name]

    def postings(self, term: str) -> list[int] | None:
        at = bisect_right(self._firsts, term) - 1
        if at < 0:
            return None
        shard = self._shard(self.root["terms"][at][1])
        terms = shard["terms"]
        i = bisect_right(terms, term) - 1
        return shard["postings"][i] if i >= 0 and terms[i] == term else None

    def bm25_scores(self, tokens: Sequence[str]) -> dict[int, float]:
        """As :func:`static.bm25_scores`: float32 sums in token order."""
        bm25 = self.root["bm25"]
        totals: dict[int, np.float32] = {}
        for token in tokens:
            flat = self.postings(token)
            if flat is None:
                continue
            docs, ws = term_weights(
                flat,
                self.root["lengths"],
                self._average,
                float(bm25["k1"]),
                float(bm25["b"]),
            )
            for doc, w in zip(docs, ws, strict=True):
                totals[doc] = totals.get(doc, np.float32(0)) + w
        return {doc: float(score) for doc, score in totals.items()}

    def search(self, tokens: Sequence[str], k: int = 10) -> list[int]:
        scores = self.bm25_scores(tokens)
        ranked = sorted(scores.items(), key=lambda i: (-i[1], i[0]))
        return [doc for doc, _ in ranked[:k]]

    def passage(self, row: int) -> dict[str, Any]:
        """A row's display fields, as the browser rebuilds them."""
        at = bisect_right(self._starts, row) - 1
        if not 0 <= row < self.root["rows"]:
            raise IndexError(row)
        shard = self._shard(self.root["passages"][at][1])
        pid, page, chapter, section, snippet, doc, path = shard["rows"][
            row - self._starts[at]
        ]
        return {
            "passage_id": pid,
            "url": f"{shard['pages'][page]}#{pid}",
            "chapter": shard["headings"][chapter],
            "section": shard["headings"][section],
            "snippet": snippet,
            "docname": shard["docnames"][doc],
            "heading_path": [shard["titles"][t] for t in path],
        }
