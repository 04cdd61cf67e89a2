"""BM25 weights -> one file the browser searches without a server.

The file is ``_ragcite/search.js``: one JSON object behind a fixed prefix,
``globalThis.ragcite_static_index=<JSON>;``. Over HTTP the widget fetches it,
strips the prefix and parses JSON; from disk (``file://``, where fetch is
blocked) it loads it as a script. Either way it is data, never code to run.

The JSON (``format_version`` 1)::

    {"format_version": 1,
     "tokenizer": {... the book's text.spec_for(language) ...},
     "weight_scale": 100,           # weights are round(bm25_weight * scale)
     "terms": ["bloom", ...],       # sorted; terms[i] owns postings[i]
     "postings": [[doc, w, doc_delta, w, ...], ...],   # doc ids delta-encoded
     "pages": ["water.html", ...],     # page URLs, each stored once
     "headings": ["3. Water", ...],    # chapter and section titles, once each
     "passages": [[passage_id, page, chapter, section, snippet], ...]}

``page``, ``chapter`` and ``section`` index ``pages`` and ``headings``; a
passage's URL is ``pages[page] + "#" + passage_id``.

A query's score for a passage is the sum of its terms' weights, exactly the
bm25s score up to the rounding of the weights.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import numpy as np

from sphinx_ragcite.formats.files import dumps
from sphinx_ragcite.text import SPEC

if TYPE_CHECKING:
    from collections.abc import Sequence

    import bm25s

    from sphinx_ragcite.contracts import PassageRecord as Record

FORMAT_VERSION = 1
FILE_NAME = "search.js"
PREFIX = b"globalThis.ragcite_static_index="
SUFFIX = b";\n"
#: Two decimals of BM25 weight: rankings match bm25s on the example book's QA
#: set (benchmarks/index_build.py), one digit less per posting than 1000.
WEIGHT_SCALE = 100


def _interned(values: Sequence[str]) -> tuple[list[str], dict[str, int]]:
    table = list(dict.fromkeys(values))
    return table, {value: i for i, value in enumerate(table)}


def static_index(
    retriever: bm25s.BM25,
    records: Sequence[Record],
    tokenizer: dict[str, Any] = SPEC,
) -> dict[str, Any]:
    scores = retriever.scores
    indptr = np.asarray(scores["indptr"])
    indices = np.asarray(scores["indices"])
    weights = np.rint(np.asarray(scores["data"]) * WEIGHT_SCALE).astype(np.int64)
    terms: list[str] = []
    postings: list[list[int]] = []
    for term, column in sorted(retriever.vocab_dict.items()):
        if not term or column + 1 >= len(indptr):  # bm25s's empty token
            continue
        start, end = int(indptr[column]), int(indptr[column + 1])
        if start == end:
            continue
        docs = indices[start:end].astype(np.int64)
        order = np.argsort(docs, kind="stable")
        docs, ws = docs[order], weights[start:end][order]
        deltas = np.diff(docs, prepend=0)
        flat = np.empty(2 * len(docs), dtype=np.int64)
        flat[0::2], flat[1::2] = deltas, ws
        terms.append(term)
        postings.append(flat.tolist())
    pages, page_of = _interned([r["url"].split("#", 1)[0] for r in records])
    headings, heading_of = _interned(
        [h for r in records for h in (r["chapter"], r["section"])]
    )
    return {
        "format_version": FORMAT_VERSION,
        "tokenizer": tokenizer,
        "weight_scale": WEIGHT_SCALE,
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


def search_static(
    index: dict[str, Any], tokens: Sequence[str], k: int = 10
) -> list[int]:
    """Reference implementation of the browser's search (used in parity tests)."""
    lookup = {term: i for i, term in enumerate(index["terms"])}
    totals: dict[int, int] = {}
    for token in tokens:
        i = lookup.get(token)
        if i is None:
            continue
        flat, doc = index["postings"][i], 0
        for j in range(0, len(flat), 2):
            doc += flat[j]
            totals[doc] = totals.get(doc, 0) + flat[j + 1]
    ranked = sorted(totals.items(), key=lambda item: (-item[1], item[0]))
    return [doc for doc, _ in ranked[:k]]
