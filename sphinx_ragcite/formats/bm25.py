"""Passages -> a bm25s index, weights computed eagerly so a query only adds."""

from __future__ import annotations

import json
import logging
import tempfile
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import bm25s
import numpy as np

from sphinx_ragcite.errors import SiteIndexError
from sphinx_ragcite.formats.embeddings import read_npy
from sphinx_ragcite.formats.files import REBUILD
from sphinx_ragcite.text import ENGLISH

# bm25s sets its own logger to DEBUG when imported. Once any package adds a
# root handler (accessible-pygments, which furo and pydata-sphinx-theme pull
# in, calls logging.basicConfig() on import), its debug lines would reach the
# build's stderr; Sphinx reports problems itself.
logging.getLogger("bm25s").setLevel(logging.WARNING)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sphinx_ragcite.contracts import PassageRecord as Record
    from sphinx_ragcite.text import Tokenizer

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


def tokenized(
    records: Sequence[Record], tokenizer: Tokenizer = ENGLISH
) -> list[list[str]]:
    """Each passage's BM25 tokens, in row order (the static index counts them too)."""
    return [tokenizer.tokenize(indexed_text(r)) for r in records]


def build_bm25(
    records: Sequence[Record],
    tokenizer: Tokenizer = ENGLISH,
    corpus: Sequence[Sequence[str]] | None = None,
) -> bm25s.BM25:
    """The index of *records*; *corpus*: their :func:`tokenized` tokens, if cut."""
    if corpus is None:
        corpus = tokenized(records, tokenizer)
    terms = sorted({t for doc in corpus for t in doc})
    # bm25s cannot index an empty vocabulary (a book with no passage or no word)
    vocab = {term: i for i, term in enumerate(terms)} or {"": 0}
    ids = [[vocab[t] for t in doc] for doc in corpus]
    # int16 postings halve the index of a book under 32,768 passages.
    int_dtype = "int16" if len(records) < 2**15 else "int32"
    retriever = bm25s.BM25(**PARAMS, int_dtype=int_dtype)
    if records:
        retriever.index((ids, vocab), show_progress=False)
        return retriever
    # no passage: bm25s averages an empty list, which numpy warns of in the
    # author's build output; the empty index it writes is right
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        retriever.index((ids, vocab), show_progress=False)
    return retriever


def bm25_files(retriever: bm25s.BM25) -> dict[str, bytes]:
    """bm25s's own on-disk format, as bytes (the caller writes them atomically)."""
    with tempfile.TemporaryDirectory() as tmp:
        retriever.save(tmp, show_progress=False)
        return {name: (Path(tmp) / name).read_bytes() for name in BM25_FILES}


def read_bm25(data: dict[str, bytes], passages: int, where: str) -> bm25s.BM25:
    """The index from the bytes already read and checked (``bm25.*`` roles).

    Built the way ``bm25s.BM25.load`` builds it, but from memory: the files
    were read once, inside the index folder, and every array is checked
    against the vocabulary and the passage count before it is trusted.
    """
    where = f"{where}/bm25"
    try:
        params: dict[str, Any] = json.loads(data["bm25.params"])
        vocab: dict[str, int] = json.loads(data["bm25.vocab"])
    except (ValueError, UnicodeDecodeError) as error:
        raise SiteIndexError(f"{where} cannot be read ({error}). {REBUILD}") from None
    if not isinstance(params, dict) or not isinstance(vocab, dict):
        raise SiteIndexError(f"{where}: parameters or vocabulary damaged. {REBUILD}")
    if params.get("num_docs") != passages or params.get("method") != PARAMS["method"]:
        raise SiteIndexError(
            f"{where} does not index the {passages} passages of this site "
            f"(num_docs {params.get('num_docs')!r}, method "
            f"{params.get('method')!r}). {REBUILD}"
        )
    ints = ("int16", "int32", "int64")
    indptr = read_npy(data["bm25.indptr"], (-1,), ints, f"{where}/indptr")
    indices = read_npy(data["bm25.indices"], (-1,), ints, f"{where}/indices")
    scores = read_npy(data["bm25.data"], (-1,), ("float32", "float64"), where)
    ids = set(vocab.values())
    terms = [i for t, i in vocab.items() if t]  # bm25s may add an empty token
    if (
        not all(isinstance(t, str) and type(i) is int for t, i in vocab.items())
        or not 1 <= len(indptr) <= len(vocab) + 1
        or len(indices) != len(scores)
        or indptr[0] != 0
        or indptr[-1] != len(indices)
        or bool((np.diff(indptr) < 0).any())
        or (terms and not 0 <= min(terms) <= max(terms) < len(indptr) - 1)
        or (
            len(indices)
            and not 0 <= int(indices.min()) <= int(indices.max()) < passages
        )
    ):
        raise SiteIndexError(f"{where}: the arrays do not fit together. {REBUILD}")
    try:
        retriever = bm25s.BM25(
            k1=float(params["k1"]),
            b=float(params["b"]),
            delta=float(params.get("delta", 0.5)),
            method=str(params["method"]),
            idf_method=params.get("idf_method"),
            dtype=str(params.get("dtype", "float32")),
            int_dtype=str(params.get("int_dtype", "int32")),
        )
    except (KeyError, TypeError, ValueError) as error:
        raise SiteIndexError(
            f"{where}: parameters damaged ({error}). {REBUILD}"
        ) from None
    retriever.vocab_dict = vocab
    retriever.unique_token_ids_set = ids
    retriever.scores = {
        "data": scores,
        "indices": indices,
        "indptr": indptr,
        "num_docs": passages,
    }
    retriever.nonoccurrence_array = None
    return retriever
