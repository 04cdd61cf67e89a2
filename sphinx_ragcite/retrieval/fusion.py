"""Two rankings (BM25, dense) -> one: the only place hybrid results are fused.

Every backend (the in-memory site, Qdrant, several sites asked as one) hands
its candidates here as :class:`Candidates`; :func:`fuse` ranks them and
:func:`merge` joins the candidates of several sites first, so a search ranks
the same way whichever backend holds the passages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sphinx_ragcite.contracts import Fusion, SearchMode

#: Cormack et al.'s constant; ranks below ~k matter little.
RRF_K = 60
#: Weight of BM25 in linear fusion (dense gets the rest): an even mix, the
#: alternative RRF was measured against (docs/explanation/retrieval.md).
LINEAR_ALPHA = 0.5


class _Key(Protocol):
    """A candidate's key (a passage ID, or a site and ID): hashable, ordered."""

    def __hash__(self) -> int: ...
    def __lt__(self, other: Any, /) -> bool: ...


K = TypeVar("K", bound=_Key)


@dataclass
class Candidates(Generic[K]):
    """One search's candidates: each ranking best first, ties by key, and the
    score of every candidate on each side it was scored on.

    ``lexical`` holds only keys with a positive BM25 score. In hybrid search
    ``bm25`` and ``dense`` score every key of either ranking (a key one side
    did not rank gets that side's exact score, or 0 for BM25).
    """

    lexical: list[K] = field(default_factory=list)
    semantic: list[K] = field(default_factory=list)
    bm25: dict[K, float] = field(default_factory=dict)
    dense: dict[K, float] = field(default_factory=dict)


def fuse(
    candidates: Candidates[K], k: int, mode: SearchMode, fusion: Fusion
) -> list[tuple[K, float]]:
    """The *k* best keys and their scores; ties go to the smaller key."""
    if mode == "bm25":
        return [(key, candidates.bm25[key]) for key in candidates.lexical[:k]]
    if mode == "dense":
        return [(key, candidates.dense[key]) for key in candidates.semantic[:k]]
    fused = (
        rrf((candidates.lexical, candidates.semantic))
        if fusion == "rrf"
        else linear(candidates)
    )
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:k]


def rrf(rankings: Sequence[Sequence[K]]) -> dict[K, float]:
    """Reciprocal rank fusion: each ranking adds ``1 / (RRF_K + rank)``."""
    fused: dict[K, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            fused[key] = fused.get(key, 0.0) + 1.0 / (RRF_K + rank)
    return fused


def linear(candidates: Candidates[K], alpha: float = LINEAR_ALPHA) -> dict[K, float]:
    """Each side's scores min-max normalised over the candidates, then mixed.

    Scores are float32, as the in-memory index holds them, so every backend
    computes the same mix to the bit.
    """
    keys = sorted(set(candidates.lexical) | set(candidates.semantic))
    if not keys:
        return {}

    def normalised(scores: dict[K, float]) -> np.ndarray:
        values = np.array([scores.get(key, 0.0) for key in keys], dtype=np.float32)
        low, high = float(values.min()), float(values.max())
        return (values - low) / (high - low) if high > low else np.zeros_like(values)

    mixed = alpha * normalised(candidates.bm25) + (1 - alpha) * normalised(
        candidates.dense
    )
    return {key: float(v) for key, v in zip(keys, mixed, strict=True)}


def merge(parts: Sequence[Candidates[K]], depth: int) -> Candidates[tuple[int, K]]:
    """Several sites' candidates as one set, keyed ``(site index, key)``.

    Each ranking is merged by score (ties by key) and cut at *depth*, as one
    site cuts its own: scores of one model (dense) or one formula (BM25) are
    ranked together, and a site that did not rank a key still scored it.
    """
    merged: Candidates[tuple[int, K]] = Candidates()
    for at, part in enumerate(parts):
        merged.bm25.update(((at, key), score) for key, score in part.bm25.items())
        merged.dense.update(((at, key), score) for key, score in part.dense.items())

    def ranking(side: str, scores: dict[tuple[int, K], float]) -> list[tuple[int, K]]:
        keys = [(at, key) for at, p in enumerate(parts) for key in getattr(p, side)]
        return sorted(keys, key=lambda key: (-scores[key], key))[:depth]

    merged.lexical = ranking("lexical", merged.bm25)
    merged.semantic = ranking("semantic", merged.dense)
    return merged
