"""What every backend of a site offers, and the one ``search`` they share.

A backend (the in-memory :class:`~sphinx_ragcite.retrieval.site.Site`,
``QdrantSite``, several sites asked as one) only finds and scores
candidates and turns ranked keys into hits; :class:`FusedSearch` does the
rest, through :mod:`~sphinx_ragcite.retrieval.fusion`, so all of them rank
alike.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from sphinx_ragcite.retrieval.fusion import fuse

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    import numpy as np

    from sphinx_ragcite.contracts import (
        Fusion,
        Hit,
        Manifest,
        PassageRecord,
        SearchMode,
    )
    from sphinx_ragcite.encoder import Embedder
    from sphinx_ragcite.retrieval.fusion import Candidates


#: How many of each ranking hybrid search fuses, unless a search says.
DEPTH = 50


@dataclass(frozen=True)
class Filters:
    """Restrict a search to some documents (glob-free prefixes) or chapters."""

    docnames: tuple[str, ...] = ()
    chapters: tuple[int, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.docnames or self.chapters)


@dataclass(frozen=True, eq=False)
class SearchRequest:
    """One search: the options of ``site.search(query, k, **options)``."""

    query: str
    k: int = 10
    mode: SearchMode = "hybrid"
    #: None: the site's own (:attr:`FusedSearch.default_fusion`)
    fusion: Fusion | None = None
    filters: Filters | None = None
    #: how many of each ranking hybrid search fuses
    depth: int = DEPTH
    #: the query's embedding, when the caller has it already
    query_vector: np.ndarray | None = None

    @property
    def wanted(self) -> int:
        """How many of each ranking the backend must find."""
        return self.depth if self.mode == "hybrid" else self.k


class Ranked(NamedTuple):
    """A fused key with its score and its score on each side searched."""

    key: Any
    score: float
    bm25: float | None
    dense: float | None


class RowRecords(Protocol):
    """The passage records by row (a list is one)."""

    def __len__(self) -> int: ...
    def __getitem__(self, row: int, /) -> PassageRecord: ...
    def __iter__(self) -> Iterator[PassageRecord]: ...


class SentenceRows(Protocol):
    """A passage's build-time sentence vectors by row (``SentenceMatrix``)."""

    def of(self, row: int) -> np.ndarray | None: ...


class RowVectors(Protocol):
    """A passage's dense vector by row (a numpy matrix is one)."""

    def __getitem__(self, row: int, /) -> np.ndarray: ...


class SearchableSite(Protocol):
    """What the answer engine, the server and ``cite`` use of a loaded site."""

    manifest: Manifest
    model_dir: str | None

    @property
    def passages(self) -> RowRecords: ...
    @property
    def vectors(self) -> RowVectors | None: ...
    @property
    def sentences(self) -> SentenceRows | None: ...
    @property
    def version(self) -> str: ...
    @property
    def has_dense(self) -> bool: ...
    @property
    def dense_search(self) -> bool: ...
    @property
    def embedder(self) -> Embedder: ...
    @property
    def where(self) -> str: ...

    def passage(self, passage_id: str) -> PassageRecord | None: ...
    def moved_hint(self, passage_id: str) -> str: ...
    def idf(self, term: str) -> float: ...
    def search(self, query: str, k: int = 10, **options: Any) -> list[Hit]: ...
    def candidates(self, request: SearchRequest) -> Candidates[Any]: ...
    def hits(
        self, ranked: Sequence[Ranked], candidates: Candidates[Any]
    ) -> list[Hit]: ...


class FusedSearch:
    """``search`` for a backend that implements ``candidates`` and ``hits``."""

    @property
    def has_dense(self) -> bool:
        raise NotImplementedError

    @property
    def dense_search(self) -> bool:
        """Dense vectors rank passages in hybrid search (see EmbeddingInfo)."""
        return self.has_dense

    @property
    def default_fusion(self) -> Fusion:
        """How a results list fuses its two rankings when the caller does not
        say: RRF, kept for its recall over the top ten (measured with the
        English encoder), but linear fusion, as answers fuse, for a book
        embedded with multilingual-e5-small: on the Japanese dev set it was
        trained on, recall@1/5/10 .804/.980/.985 against RRF's .770/.966/.980
        (the Chinese sets, never trained on: .907 -> .960 and .838 -> .919
        at 5)."""
        manifest = getattr(self, "manifest", None)
        embedding = manifest.embedding if manifest is not None else None
        if embedding is not None and embedding.encoder == "multilingual":
            return "linear"
        return "rrf"

    def candidates(self, request: SearchRequest) -> Candidates[Any]:
        raise NotImplementedError

    def hits(self, ranked: Sequence[Ranked], candidates: Candidates[Any]) -> list[Hit]:
        raise NotImplementedError

    def search(self, query: str, k: int = 10, **options: Any) -> list[Hit]:
        """Top *k* passages (options: :class:`SearchRequest`'s fields).

        Hybrid search fuses the top ``depth`` of each ranking; a site without
        dense vectors, or whose vectors do not rank passages (an English
        encoder on a CJK book), answers it with BM25 alone.
        """
        request = SearchRequest(query, k, **options)
        if request.fusion is None:
            request = replace(request, fusion=self.default_fusion)
        if request.mode == "hybrid" and not self.dense_search:
            request = replace(request, mode="bm25")
        candidates = self.candidates(request)
        ranked = [
            Ranked(
                key,
                score,
                None if request.mode == "dense" else candidates.bm25.get(key, 0.0),
                None if request.mode == "bm25" else candidates.dense[key],
            )
            for key, score in fuse(
                candidates, k, request.mode, request.fusion or self.default_fusion
            )
        ]
        return self.hits(ranked, candidates)
