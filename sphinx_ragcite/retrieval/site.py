"""A built site's ``_ragcite/`` -> ranked passages (BM25, dense, or both fused).

Needs no Sphinx: the server, the CLI and tests load a site with :meth:`Site.load`.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from sphinx_ragcite.contracts import Hit
from sphinx_ragcite.encoder import DEFAULT_MODEL_ID, Embedder, ModelFiles, model_files
from sphinx_ragcite.errors import SiteIndexError
from sphinx_ragcite.formats.bm25 import read_bm25
from sphinx_ragcite.formats.browser import BROWSER_ENGINE, MODEL, TOKENIZER
from sphinx_ragcite.formats.dense_index import ApproxDense
from sphinx_ragcite.formats.files import (
    MAX_FILE_BYTES,
    REBUILD,
    index_path,
    read_index_file,
    read_plain_file,
)
from sphinx_ragcite.formats.manifest import index_dir, read_manifest
from sphinx_ragcite.formats.moved import read_moved
from sphinx_ragcite.formats.sentence_vectors import MAPPED, read_sentence_matrix
from sphinx_ragcite.retrieval.dense import DenseVectors
from sphinx_ragcite.retrieval.fusion import Candidates
from sphinx_ragcite.retrieval.passage_store import PassageStore
from sphinx_ragcite.retrieval.searchable import FusedSearch
from sphinx_ragcite.text import ENGLISH, Tokenizer, tokenizer

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import bm25s

    from sphinx_ragcite.contracts import Manifest, PassageRecord
    from sphinx_ragcite.formats.sentence_vectors import SentenceMatrix
    from sphinx_ragcite.retrieval.searchable import Filters, Ranked, SearchRequest

logger = logging.getLogger(__name__)

#: Roles of files the browser alone reads (31 MB of static index at 50k
#: passages; the answer engine's model and runtime, ~38 MB).
BROWSER_ONLY = frozenset({"static", "search_root", "llms", *BROWSER_ENGINE})


def read_site_files(directory: Path, manifest: Manifest) -> dict[str, bytes]:
    """Every file the server reads whole, each checked against its size and digest.

    Large files the server maps instead (:data:`MAPPED`) are checked as mapped.
    """
    data: dict[str, bytes] = {}
    for role, name in sorted(manifest.files.items()):
        if role in BROWSER_ONLY or role in MAPPED:
            continue
        data[role] = read_index_file(directory, name, manifest.bytes[role])
        if hashlib.sha256(data[role]).hexdigest() != manifest.sha256[role]:
            raise SiteIndexError(
                f"{directory / name} is corrupt: its checksum does not match the "
                f"manifest. {REBUILD}"
            )
    return data


def read_tokenizer(manifest: Manifest, where: str) -> Tokenizer:
    """The tokenizer the index was built with (queries must be cut the same way)."""
    try:
        return tokenizer(manifest.tokenizer or None)
    except ValueError as error:
        raise SiteIndexError(
            f"{where}/manifest.json: {error}; this sphinx-ragcite cannot tokenize "
            f"queries as the index was built. {REBUILD}"
        ) from None


def load_embedder(
    manifest: Manifest, model_dir: str | None, directory: Path | None = None
) -> Embedder:
    """The model a site's passages were embedded with.

    A BM25-only index still gets one (``--embedding-model`` or the default):
    answers are verified sentence by sentence with it. An encoder whose
    files ship in ``_ragcite/`` (the multilingual one, cut to the book's
    vocabulary) is loaded from *directory*, checked against the manifest:
    questions must be cut into the pieces the browser cuts them into.
    """
    embedding = manifest.embedding
    if embedding is None:
        return Embedder(model_files(model_dir))
    if embedding.shipped:
        if directory is None:
            raise SiteIndexError(
                f"This index was embedded with {embedding.model!r}, whose files "
                "ship in the built site's _ragcite/: pass the built site "
                "(--site) to search it."
            )
        files = shipped_model_files(directory, manifest)
    elif model_dir is None and embedding.model != DEFAULT_MODEL_ID:
        raise SiteIndexError(
            f"This index was embedded with model {embedding.model!r}: pass its "
            "folder (--embedding-model) to search it."
        )
    else:
        files = model_files(model_dir)
    embedder = Embedder(files, max_tokens=embedding.max_tokens)
    if embedder.dim != embedding.dim:
        raise SiteIndexError(
            f"This index holds {embedding.dim}-dimensional vectors; the model "
            f"gives {embedder.dim}. Pass the model it was built with "
            "(--embedding-model), or rebuild the site."
        )
    return embedder


def shipped_model_files(directory: Path, manifest: Manifest) -> ModelFiles:
    """The encoder files in ``_ragcite/``, each checked against its digest."""
    embedding = manifest.embedding
    assert embedding is not None
    paths = []
    for role in (MODEL, TOKENIZER):
        name = manifest.files.get(role)
        if name is None:
            raise SiteIndexError(
                f"{directory}/manifest.json names no {role} file, but its "
                f"vectors come from one shipped with the site. {REBUILD}"
            )
        path = directory / name
        data = read_index_file(directory, name, manifest.bytes[role])
        if hashlib.sha256(data).hexdigest() != manifest.sha256[role]:
            raise SiteIndexError(
                f"{path} is corrupt: its checksum does not match the manifest. "
                f"{REBUILD}"
            )
        paths.append(path)
    return ModelFiles(
        paths[0],
        paths[1],
        embedding.model,
        embedding.query_prefix,
        embedding.passage_prefix,
    )


def read_approximate(
    directory: Path, root: bytes, count: int, where: str
) -> ApproxDense:
    """The approximate dense search of ``dense`` (its shards read on demand,
    each checked against the digest in its name)."""

    def shard(name: str) -> bytes:
        return read_plain_file(index_path(directory, name), MAX_FILE_BYTES)

    approximate = ApproxDense(root, shard, f"{where}/dense")
    if len(approximate) != count:
        raise SiteIndexError(
            f"{where}: the dense index holds {len(approximate)} passages, the "
            f"manifest says {count}. {REBUILD}"
        )
    return approximate


def lucene_idf(df: np.ndarray | float, n: int) -> np.ndarray | float:
    """bm25s's (and Qdrant's IDF modifier's) idf of a term in *df* of *n* passages."""
    return np.log1p((n - df + 0.5) / (df + 0.5))


def moved_hint(moved: dict[str, str], passage_id: str) -> str:
    """Where an ID of an earlier build went (``moved.js``), as a clause."""
    found = sorted(
        (old.partition("#")[0], url)
        for old, url in moved.items()
        if old.partition("#")[2] == passage_id
    )
    if len(found) == 1:
        url = found[0][1]
        return f"its text is now {url.rpartition('#')[2]} ({url})"
    return "; ".join(
        f"its text on {page or 'the root page'} is now {url.rpartition('#')[2]} ({url})"
        for page, url in found
    )


@dataclass
class Site(FusedSearch):
    """The loaded index of one built site; read-only and safe to share."""

    root: Path
    manifest: Manifest
    passages: PassageStore
    bm25: bm25s.BM25
    vectors: DenseVectors | None
    model_dir: str | None = None
    #: links of earlier builds (page#ID) -> URL of their text now (``moved.js``)
    moved: dict[str, str] = field(default_factory=dict, repr=False)
    #: each passage's sentence vectors, embedded at build time (or None)
    sentences: SentenceMatrix | None = field(default=None, repr=False)
    #: cuts queries as the index's passages were cut (the manifest's spec)
    tokenizer: Tokenizer = field(default=ENGLISH, repr=False)
    #: a big book's approximate dense search, which the browser computes
    #: too (``formats/dense_index.py``); None: exact search over ``vectors``
    approximate: ApproxDense | None = field(default=None, repr=False)
    #: passage ID -> row
    _rows: Mapping[str, int] = field(default_factory=dict, repr=False)

    @classmethod
    def load(cls, path: str | Path, *, model_dir: str | None = None) -> Site:
        """Load ``_ragcite/`` under *path* (or *path* itself), trusting nothing.

        Every file must be what the manifest says (name inside the folder,
        size, digest) and every record and array the shape it implies, so a
        damaged index fails here with one message, not on the first question.
        """
        directory = index_dir(Path(path))
        manifest = read_manifest(directory)
        data = read_site_files(directory, manifest)
        where = str(directory)
        passages = PassageStore.read(data["passages"], f"{where}/passages")
        count = manifest.counts.passages
        if len(passages) != count:
            raise SiteIndexError(
                f"{where} is inconsistent: {len(passages)} passages, the manifest "
                f"says {count}. {REBUILD}"
            )
        retriever = read_bm25(data, count, where)
        tok = read_tokenizer(manifest, where)
        vectors = sentences = None
        if manifest.embedding is not None:
            vectors = DenseVectors.read(
                data["embeddings"],
                data["embedding_scales"],
                count,
                manifest.embedding.dim,
                where,
            )
            sentences = read_sentence_matrix(
                directory, manifest, data, count, manifest.embedding.dim, where
            )
        moved = read_moved(data["moved"], f"{where}/moved") if "moved" in data else {}
        site = cls(directory, manifest, passages, retriever, vectors, model_dir)
        if vectors is not None and "dense" in data:
            site.approximate = read_approximate(directory, data["dense"], count, where)
        site.moved = moved
        site.sentences = sentences
        site.tokenizer = tok
        site._rows = passages.rows
        return site

    @property
    def version(self) -> str:
        """Changes whenever the indexed passages change (for caches)."""
        return self.manifest.sha256["passages"][:16]

    @property
    def where(self) -> str:
        """Where the passages come from, for log lines."""
        return str(self.root)

    def passage(self, passage_id: str) -> PassageRecord | None:
        row = self._rows.get(passage_id)
        return None if row is None else self.passages[row]

    def moved_hint(self, passage_id: str) -> str:
        """Where an ID of an earlier build went, as a clause for error messages."""
        if passage_id in self._rows:
            return ""
        return moved_hint(self.moved, passage_id)

    @cached_property
    def embedder(self) -> Embedder:
        """The model the passages were embedded with, loaded on first use."""
        return load_embedder(self.manifest, self.model_dir, self.root)

    @cached_property
    def _idf(self) -> dict[str, float]:
        """Lucene's idf of every indexed term (answers weigh rare words more)."""
        indptr = np.asarray(self.bm25.scores["indptr"], dtype=np.int64)
        values = np.asarray(lucene_idf(np.diff(indptr), len(self.passages)))
        return {
            term: float(values[i])
            for term, i in self.bm25.vocab_dict.items()
            if term and i < len(values)
        }

    def idf(self, term: str) -> float:
        """A term's idf; a term no passage has weighs as the rarest would."""
        return self._idf.get(term, float(np.log1p(len(self.passages) + 0.5)))

    @property
    def has_dense(self) -> bool:
        return self.vectors is not None

    @property
    def dense_search(self) -> bool:
        embedding = self.manifest.embedding
        return self.has_dense and embedding is not None and embedding.search

    # -- scoring ---------------------------------------------------------

    def bm25_scores(self, query: str) -> np.ndarray:
        vocab = self.bm25.vocab_dict
        ids = [vocab[t] for t in self.tokenizer.tokenize(query) if t in vocab]
        if not ids:
            return np.zeros(len(self.passages), dtype=np.float32)
        return np.asarray(self.bm25.get_scores(ids), dtype=np.float32)

    def _dense(self) -> DenseVectors:
        if self.vectors is None:
            raise SiteIndexError(
                "This index has no dense embeddings (built with "
                "ragcite_embeddings = False); use mode 'bm25'."
            )
        return self.vectors

    def _query_vector(self, query: str, query_vector: np.ndarray | None) -> np.ndarray:
        self._dense()
        if query_vector is None:
            return self.embedder.embed([query], kind="query")[0]
        return query_vector

    def dense_scores(
        self, query: str, query_vector: np.ndarray | None = None
    ) -> np.ndarray:
        """Every passage's dense score (tools; a search rescores only its top)."""
        vector = self._query_vector(query, query_vector)
        return self._dense().scores(vector, np.arange(len(self.passages)))

    def mask(self, filters: Filters | None) -> np.ndarray | None:
        """Rows the filters keep, from the per-row arrays (no record is parsed)."""
        if not filters:
            return None
        store = self.passages
        keep = np.ones(len(store), dtype=bool)
        if filters.docnames:
            documents = [
                i
                for i, docname in enumerate(store.docnames)
                if any(
                    docname == d or docname.startswith(d.rstrip("/") + "/")
                    for d in filters.docnames
                )
            ]
            keep &= np.isin(store.document_of, documents)
        if filters.chapters:
            keep &= np.isin(store.chapter_of, list(filters.chapters))
        return keep

    def candidates(self, request: SearchRequest) -> Candidates[int]:
        """Each ranking's top rows; in hybrid search every one scored on both
        sides (the mask drops filtered rows before anything is ranked)."""
        keep = self.mask(request.filters)
        found: Candidates[int] = Candidates()
        if request.mode != "dense":
            bm25 = self.bm25_scores(request.query)
            found.lexical = _top(bm25, request.wanted, keep, positive=True)
        if request.mode != "bm25":
            vector = self._query_vector(request.query, request.query_vector)
            vectors = self._dense()
            # a big book searches as its readers' browsers do (dense_index.py)
            search = self.approximate or vectors
            rows, exact = search.top(vector, request.wanted, keep)
            found.semantic = rows.tolist()
            found.dense = dict(zip(found.semantic, exact.tolist(), strict=True))
            # every row the linear mix sees needs its dense score
            others = [r for r in found.lexical if r not in found.dense]
            scores = search.scores(vector, np.array(others, dtype=np.int64))
            found.dense.update(zip(others, scores.tolist(), strict=True))
        if request.mode != "dense":
            found.bm25 = {r: float(bm25[r]) for r in {*found.lexical, *found.semantic}}
        return found

    def hits(self, ranked: Sequence[Ranked], candidates: Candidates[int]) -> list[Hit]:
        return [
            Hit(self.passages[r.key], r.key, r.score, r.bm25, r.dense) for r in ranked
        ]


def _top(
    scores: np.ndarray, k: int, keep: np.ndarray | None, *, positive: bool = False
) -> list[int]:
    """Rows of the *k* best scores, best first, ties by row (deterministic)."""
    wanted = scores > 0 if positive else None
    if keep is not None:
        wanted = keep if wanted is None else wanted & keep
    candidates = np.arange(len(scores)) if wanted is None else np.flatnonzero(wanted)
    if len(candidates) > k:
        values = scores[candidates]
        # argpartition keeps an arbitrary few of the scores tied at the cut:
        # keep them all, so the lowest rows win as the sort below says.
        kth = values[np.argpartition(-values, k - 1)[:k]].min()
        candidates = candidates[values >= kth]
    order = np.lexsort((candidates, -scores[candidates]))[:k]
    return [int(r) for r in candidates[order]]
