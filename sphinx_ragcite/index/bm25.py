"""Passages -> a bm25s index, weights computed eagerly so a query only adds."""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import bm25s

from sphinx_ragcite.index.tokenize import tokenize

# bm25s sets its own logger to DEBUG when imported. Once any package adds a
# root handler (accessible-pygments, which furo and pydata-sphinx-theme pull
# in, calls logging.basicConfig() on import), its debug lines would reach the
# build's stderr; Sphinx reports problems itself.
logging.getLogger("bm25s").setLevel(logging.WARNING)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sphinx_ragcite.passages.records import Record

#: Lucene's variant with its usual parameters.
PARAMS = {"method": "lucene", "k1": 1.5, "b": 0.75}
BM25_FILES = (
    "params.index.json",
    "vocab.index.json",
    "data.csc.index.npy",
    "indices.csc.index.npy",
    "indptr.csc.index.npy",
)


def indexed_text(record: Record) -> str:
    """Headings count too: a section titled "Descaling" is about descaling."""
    return " ".join(record["heading_path"]) + "\n" + record["text"]


def build_bm25(records: Sequence[Record]) -> bm25s.BM25:
    corpus = [tokenize(indexed_text(r)) for r in records]
    terms = sorted({t for doc in corpus for t in doc})
    vocab = {term: i for i, term in enumerate(terms)}
    ids = [[vocab[t] for t in doc] for doc in corpus]
    # int16 postings halve the index of a book under 32,768 passages.
    int_dtype = "int16" if len(records) < 2**15 else "int32"
    retriever = bm25s.BM25(**PARAMS, int_dtype=int_dtype)
    retriever.index((ids, vocab), show_progress=False)
    return retriever


def bm25_files(retriever: bm25s.BM25) -> dict[str, bytes]:
    """bm25s's own on-disk format, as bytes (the caller writes them atomically)."""
    with tempfile.TemporaryDirectory() as tmp:
        retriever.save(tmp, show_progress=False)
        return {name: (Path(tmp) / name).read_bytes() for name in BM25_FILES}
