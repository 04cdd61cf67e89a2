"""Questions of the same meaning -> one group (``ragcite report``'s missing topics).

Three simple clusterings of unit vectors (the shipped sentence encoder's),
compared on a labelled set by ``benchmarks/question_groups.py``:

- ``agglomerative``: average linkage, merging while the two closest groups'
  mean cosine similarity is at least a threshold (the report's choice);
- ``leader``: in the order given (most asked first), a question joins the
  first group whose leader is at least *threshold* similar, else leads one;
- ``kmeans``: spherical k-means (k-means++ start, fixed seed) for a given k.

Purity and the adjusted Rand index score a labelling against the truth.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Sequence

METHODS = ("agglomerative", "leader", "kmeans")
#: benchmarks/question_groups.py: ARI 0.52, purity 0.79 on 120 questions of 15
#: topics (0.2 scores ARI 0.55 but mixes topics: purity 0.72); leader 0.50,
#: k-means with the true k 0.47
DEFAULT_METHOD = "agglomerative"
DEFAULT_THRESHOLD = 0.3


def cluster(
    vectors: np.ndarray,
    *,
    method: str = DEFAULT_METHOD,
    threshold: float = DEFAULT_THRESHOLD,
    k: int | None = None,
) -> np.ndarray:
    """A group number per row of *vectors* (unit rows), numbered from 0."""
    if len(vectors) == 0:
        return np.zeros(0, dtype=np.int64)
    if method == "agglomerative":
        return agglomerative(vectors, threshold)
    if method == "leader":
        return leader(vectors, threshold)
    if method == "kmeans":
        return kmeans(vectors, k or max(1, round(len(vectors) ** 0.5)))
    raise ValueError(f"unknown clustering {method!r}; choose from {METHODS}")


def agglomerative(vectors: np.ndarray, threshold: float) -> np.ndarray:
    """Average-linkage clusters whose mean pairwise cosine is >= *threshold*.

    Lance-Williams updates on one similarity matrix, each row remembering
    its closest partner: a merge rescans only the rows that pointed at the
    merged pair (an average never exceeds the larger of its parts), so
    2,000 questions take well under a second.
    """
    n = len(vectors)
    sim = (vectors @ vectors.T).astype(np.float64)
    np.fill_diagonal(sim, -np.inf)
    size = np.ones(n)
    members: list[list[int]] = [[i] for i in range(n)]
    active = np.ones(n, dtype=bool)
    best = sim.argmax(axis=1)
    best_sim = sim[np.arange(n), best]
    while True:
        i = int(np.argmax(np.where(active, best_sim, -np.inf)))
        if not active[i] or best_sim[i] < threshold:
            break
        j = int(best[i])
        merged = (size[i] * sim[i] + size[j] * sim[j]) / (size[i] + size[j])
        sim[i], sim[:, i] = merged, merged
        sim[i, i] = -np.inf
        sim[j], sim[:, j] = -np.inf, -np.inf
        size[i] += size[j]
        members[i] += members[j]
        members[j] = []
        active[j] = False
        best_sim[j] = -np.inf
        stale = np.flatnonzero(active & ((best == i) | (best == j)))
        for row in {i, *stale.tolist()}:
            best[row] = int(sim[row].argmax())
            best_sim[row] = sim[row, best[row]]
    return _numbered(members, n)


def leader(vectors: np.ndarray, threshold: float) -> np.ndarray:
    """Leader clustering in row order (put the most asked question first)."""
    labels = np.empty(len(vectors), dtype=np.int64)
    leaders: list[np.ndarray] = []
    for row, vector in enumerate(vectors):
        if leaders:
            sims = np.asarray(leaders) @ vector
            found = int(sims.argmax())
            if sims[found] >= threshold:
                labels[row] = found
                continue
        labels[row] = len(leaders)
        leaders.append(vector)
    return labels


def kmeans(
    vectors: np.ndarray, k: int, *, seed: int = 0, rounds: int = 30
) -> np.ndarray:
    """Spherical k-means with a k-means++ start (deterministic for a seed)."""
    n = len(vectors)
    k = min(k, n)
    rng = np.random.default_rng(seed)
    centres = [vectors[rng.integers(n)]]
    for _ in range(1, k):
        distance = 1 - np.max(vectors @ np.asarray(centres).T, axis=1)
        distance = np.clip(distance, 0, None) ** 2
        total = distance.sum()
        pick = rng.choice(n, p=distance / total) if total > 0 else rng.integers(n)
        centres.append(vectors[pick])
    means = np.asarray(centres)
    labels = np.full(n, -1)
    for _ in range(rounds):
        new = (vectors @ means.T).argmax(axis=1)
        if np.array_equal(new, labels):
            break
        labels = new
        for c in range(k):
            rows = vectors[labels == c]
            if len(rows):
                mean = rows.sum(axis=0)
                means[c] = mean / max(float(np.linalg.norm(mean)), 1e-12)
    return _numbered([np.flatnonzero(labels == c).tolist() for c in range(k)], n)


def _numbered(members: Sequence[list[int]], n: int) -> np.ndarray:
    """Groups renumbered by their first row, so equal clusterings compare equal."""
    labels = np.empty(n, dtype=np.int64)
    groups = sorted((sorted(m) for m in members if m), key=lambda m: m[0])
    for number, rows in enumerate(groups):
        labels[rows] = number
    return labels


def purity(labels: Sequence[int], truth: Sequence[str]) -> float:
    """Share of items in their group's most common true topic."""
    counts: dict[int, dict[str, int]] = {}
    for label, topic in zip(labels, truth, strict=True):
        counts.setdefault(int(label), {}).setdefault(topic, 0)
        counts[int(label)][topic] += 1
    return sum(max(c.values()) for c in counts.values()) / max(len(truth), 1)


def adjusted_rand(labels: Sequence[int], truth: Sequence[str]) -> float:
    """Hubert and Arabie's adjusted Rand index (1: the same partition)."""
    pairs: dict[tuple[int, str], int] = {}
    rows: dict[int, int] = {}
    cols: dict[str, int] = {}
    for label, topic in zip(labels, truth, strict=True):
        pairs[int(label), topic] = pairs.get((int(label), topic), 0) + 1
        rows[int(label)] = rows.get(int(label), 0) + 1
        cols[topic] = cols.get(topic, 0) + 1

    def comb(values: Sequence[int]) -> float:
        return sum(v * (v - 1) / 2 for v in values)

    n = len(truth)
    index = comb(list(pairs.values()))
    a, b = comb(list(rows.values())), comb(list(cols.values()))
    expected = a * b / (n * (n - 1) / 2) if n > 1 else 0.0
    top = (a + b) / 2
    return 1.0 if top == expected else (index - expected) / (top - expected)
