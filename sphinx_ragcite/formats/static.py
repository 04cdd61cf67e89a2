"""BM25 postings -> one file the browser searches without a server.

The file is ``_ragcite/search.js``: one JSON object behind a fixed prefix,
``globalThis.ragcite_static_index=<JSON>;``. Over HTTP the widget fetches it,
strips the prefix and parses JSON; from disk (``file://``, where fetch is
blocked) it loads it as a script. Either way it is data, never code to run.

The JSON (``format_version`` 2)::

    {"format_version": 2,
     "tokenizer": {... the book's text.spec_for(language) ...},
     "bm25": {"k1": 1.5, "b": 0.75, "method": "lucene"},
     "lengths": [58, 41, ...],      # tokens of each passage as indexed
     "terms": ["bloom", ...],       # sorted; terms[i] owns postings[i]
     "postings": [[doc, tf, doc_delta, tf, ...], ...],  # doc ids delta-encoded
     "pages": ["water.html", ...],     # page URLs, each stored once
     "headings": ["3. Water", ...],    # chapter and section titles, once each
     "passages": [[passage_id, page, chapter, section, snippet], ...]}

``page``, ``chapter`` and ``section`` index ``pages`` and ``headings``; a
passage's URL is ``pages[page] + "#" + passage_id``.

A term's weight in a passage is computed from its count there (``tf``), the
passage's length and the term's document frequency exactly as bm25s computes
it (:func:`weights`: float64 arithmetic, rounded to float32), and a query's
score is the float32 sum of its tokens' weights in query order, as bm25s adds
them: the browser's BM25 scores are bm25s's to the bit, so the answer engine
running in the browser retrieves what the server retrieves. Counts and
lengths also take fewer bytes than weights rounded to two decimals (format 1).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from itertools import pairwise
from typing import TYPE_CHECKING, Any

import numpy as np

from sphinx_ragcite.formats.bm25 import PARAMS
from sphinx_ragcite.formats.files import dumps
from sphinx_ragcite.text import SPEC

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sphinx_ragcite.contracts import PassageRecord as Record

FORMAT_VERSION = 2
FILE_NAME = "search.js"
PREFIX = b"globalThis.ragcite_static_index="
SUFFIX = b";\n"
#: The BM25 variant :func:`weights` follows (bm25s's ``lucene`` method): what
#: this module computes, so it is checked against the index's, not taken from it.
METHOD = "lucene"


def _interned(values: Sequence[str]) -> tuple[list[str], dict[str, int]]:
    table = list(dict.fromkeys(values))
    return table, {value: i for i, value in enumerate(table)}


def term_postings(
    corpus: Sequence[Sequence[str]],
) -> tuple[list[str], list[list[int]]]:
    """The sorted terms of *corpus* and each one's flat postings, ``[doc, tf,
    doc_delta, tf, ...]`` (the whole index and its shards hold the same)."""
    found: dict[str, list[int]] = {}
    for doc, tokens in enumerate(corpus):
        for term, tf in sorted(Counter(tokens).items()):
            if term:
                found.setdefault(term, []).extend((doc, tf))
    terms = sorted(found)
    postings = []
    for term in terms:
        flat = found[term]
        docs = flat[0::2]
        flat[0::2] = [docs[0], *(b - a for a, b in pairwise(docs))]
        postings.append(flat)
    return terms, postings


def static_index(
    records: Sequence[Record],
    corpus: Sequence[Sequence[str]],
    tokenizer: dict[str, Any] = SPEC,
    params: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The static index of *records*, whose BM25 tokens are *corpus* (in step:
    ``formats.bm25.tokenized``); *params* are the BM25 index's k1 and b."""
    if len(records) != len(corpus):
        raise ValueError("one token list per record is needed")
    bm25 = {**PARAMS, **(params or {})}
    if bm25["method"] != METHOD:
        raise ValueError(f"the static index follows BM25 {METHOD!r} only")
    terms, postings = term_postings(corpus)
    pages, page_of = _interned([r["url"].split("#", 1)[0] for r in records])
    headings, heading_of = _interned(
        [h for r in records for h in (r["chapter"], r["section"])]
    )
    return {
        "format_version": FORMAT_VERSION,
        "tokenizer": tokenizer,
        "bm25": {"method": METHOD, "k1": bm25["k1"], "b": bm25["b"]},
        "lengths": [len(tokens) for tokens in corpus],
        "terms": terms,
        "postings": postings,
        "pages": pages,
        "headings": headings,
        "passages": [
            [
                r["passage_id"],
                page_of[r["url"].split("#", 1)[0]],
                heading_of[r["chapter"]],
                heading_of[r["section"]],
                r["snippet"],
            ]
            for r in records
        ],
    }


def static_file(index: dict[str, Any]) -> bytes:
    return PREFIX + dumps(index).encode("utf-8") + SUFFIX


def read_static(data: bytes) -> dict[str, Any]:
    """The JSON inside a static index file."""
    if not (data.startswith(PREFIX) and data.endswith(SUFFIX)):
        raise ValueError("not a sphinx-ragcite static index file")
    return json.loads(data[len(PREFIX) : -len(SUFFIX)])  # type: ignore[no-any-return]


def static_passage(index: dict[str, Any], doc: int) -> dict[str, str]:
    """The display fields of passage *doc*, as the browser rebuilds them."""
    pid, page, chapter, section, snippet = index["passages"][doc]
    headings = index["headings"]
    return {
        "passage_id": pid,
        "url": f"{index['pages'][page]}#{pid}",
        "chapter": headings[chapter],
        "section": headings[section],
        "snippet": snippet,
    }


def weights(index: dict[str, Any], term: int) -> tuple[list[int], np.ndarray]:
    """The passages holding ``terms[term]`` and its float32 BM25 weight in each."""
    lengths = index["lengths"]
    bm25 = index["bm25"]
    return term_weights(
        index["postings"][term],
        lengths,
        sum(lengths) / len(lengths),
        float(bm25["k1"]),
        float(bm25["b"]),
    )


def term_weights(
    flat: Sequence[int],
    lengths: Sequence[int],
    average: float,
    k1: float,
    b: float,
) -> tuple[list[int], np.ndarray]:
    """A postings list's passages and the term's float32 BM25 weight in each.

    bm25s's lucene weight: ``idf * tf / (k1 * (1 - b + b * length / average)
    + tf)`` with ``idf = log(1 + (n - df + 0.5) / (df + 0.5))`` rounded to
    float32, computed in float64 and rounded to float32 (``js/search.js``
    computes the same, operation for operation).
    """
    n = len(lengths)
    docs = np.cumsum(flat[0::2]).tolist()
    df = len(docs)
    idf = float(np.float32(math.log(1 + (n - df + 0.5) / (df + 0.5))))
    out = np.empty(df, dtype=np.float32)
    for i, (doc, tf) in enumerate(zip(docs, flat[1::2], strict=True)):
        out[i] = idf * (tf / (k1 * ((1 - b) + b * lengths[doc] / average) + tf))
    return docs, out


def bm25_scores(index: dict[str, Any], tokens: Sequence[str]) -> dict[int, float]:
    """Each passage's score for *tokens*: float32 sums in token order, as
    bm25s adds them (a repeated token counts each time)."""
    lookup = {term: i for i, term in enumerate(index["terms"])}
    totals: dict[int, np.float32] = {}
    for token in tokens:
        i = lookup.get(token)
        if i is None:
            continue
        docs, ws = weights(index, i)
        for doc, w in zip(docs, ws, strict=True):
            totals[doc] = totals.get(doc, np.float32(0)) + w
    return {doc: float(score) for doc, score in totals.items()}


def search_static(
    index: dict[str, Any], tokens: Sequence[str], k: int = 10
) -> list[int]:
    """Reference implementation of the browser's search (used in parity tests)."""
    ranked = sorted(bm25_scores(index, tokens).items(), key=lambda i: (-i[1], i[0]))
    return [doc for doc, _ in ranked[:k]]
