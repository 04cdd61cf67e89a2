"""BM25 weights -> one JSON file the browser searches without a server.

Format (``format_version`` 1)::

    {"format_version": 1,
     "tokenizer": {... index.tokenize.SPEC ...},
     "weight_scale": 1000,          # weights are round(bm25_weight * scale)
     "terms": ["bloom", ...],       # sorted; terms[i] owns postings[i]
     "postings": [[doc, w, doc_delta, w, ...], ...],   # doc ids delta-encoded
     "passages": [[passage_id, url, chapter, section, snippet], ...]}

A query's score for a passage is the sum of its terms' weights, exactly the
bm25s score up to the rounding of the weights.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from sphinx_ragcite.index.tokenize import SPEC

if TYPE_CHECKING:
    from collections.abc import Sequence

    import bm25s

    from sphinx_ragcite.passages.records import Record

FORMAT_VERSION = 1
WEIGHT_SCALE = 1000
FIELDS = ("passage_id", "url", "chapter", "section", "snippet")


def static_index(retriever: bm25s.BM25, records: Sequence[Record]) -> dict[str, Any]:
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
    return {
        "format_version": FORMAT_VERSION,
        "tokenizer": SPEC,
        "weight_scale": WEIGHT_SCALE,
        "terms": terms,
        "postings": postings,
        "passages": [[r[f] for f in FIELDS] for r in records],
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
