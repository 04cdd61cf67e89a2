"""Passage vectors kept as their int8 codes, searched with exact float32 rankings.

The float32 matrix cost 1,536 bytes a passage (4 x the codes the index
stores) and its product ~25 ms at 200k passages. Here the codes stay int8
(384 + 4 bytes a passage) and a search is two passes:

1. every row's score with the query rounded to int8, as an exact integer
   product (:mod:`~sphinx_ragcite.retrieval.int8_product`);
2. the rows that could still be in the top *k* rescored exactly in float32.

The rounding moves a row's score by at most ``|query - rounded| * |row|``
(Cauchy-Schwarz), so every row within twice that of the *k*-th best first
pass score is rescored: the top *k* by float32 score is found exactly, not
approximately. A row's float32 vector is what the float32 matrix held
(``code * scale``), and its score is computed the same way whichever other
rows are rescored with it, so a row scores the same in every search.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from sphinx_ragcite.errors import SiteIndexError
from sphinx_ragcite.formats.embeddings import read_vectors
from sphinx_ragcite.formats.files import REBUILD
from sphinx_ragcite.retrieval.int8_product import QUERY_LIMIT, Int8Product

#: Rows dequantised at a time when a pass needs many (load, full score lists).
_CHUNK = 8192
#: Added to the rounding bound: float32 rounding of both passes, with room.
_SLACK = 1e-5


class DenseVectors:
    """int8 codes and a float32 scale per row: ``vectors[row]`` as float32."""

    def __init__(self, codes: np.ndarray, scales: np.ndarray) -> None:
        """*codes*: int8 [rows, dim]; *scales*: float32 [rows], finite."""
        # Stored as code + 128 (uint8), the form the integer product takes.
        self._codes = (codes.view(np.uint8) ^ np.uint8(0x80)).reshape(codes.shape)
        self._scales = np.ascontiguousarray(scales, dtype=np.float32)
        longest, finite = 0.0, True
        for start in range(0, len(self._scales), _CHUNK):
            part = codes[start : start + _CHUNK].astype(np.float32)
            scale = self._scales[start : start + _CHUNK]
            with np.errstate(over="ignore", invalid="ignore"):
                # code * scale overflows (or is NaN) exactly where this does:
                peaks = np.abs(part).max(axis=1, initial=0.0) * scale
                norms = np.sqrt((part * part).sum(axis=1)) * np.abs(scale)
            finite &= bool(np.isfinite(peaks).all())
            longest = max(longest, float(norms.max(initial=0.0)))
        #: False if a vector holds a non-number (the reader refuses it)
        self.finite = finite
        #: the longest row: bounds how far int8 rounding moves a score
        self._longest = longest * (1 + 1e-6) if finite else np.inf

    @classmethod
    def read(
        cls, codes: bytes, scales: bytes, rows: int, dim: int, where: str
    ) -> DenseVectors:
        """The vectors of ``embeddings.npy`` and ``embedding_scales.npy``;
        refused if one holds a non-number."""
        vectors = cls(*read_vectors(codes, scales, rows, dim, where))
        if not vectors.finite:
            raise SiteIndexError(f"{where}: the embeddings hold non-numbers. {REBUILD}")
        return vectors

    @property
    def shape(self) -> tuple[int, int]:
        rows, dim = self._codes.shape
        return int(rows), int(dim)

    @property
    def nbytes(self) -> int:
        return int(self._codes.nbytes + self._scales.nbytes)

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, row: int, /) -> np.ndarray:
        return self.rows(np.array([row]))[0]

    def __array__(
        self, dtype: str | None = None, copy: bool | None = None
    ) -> np.ndarray:
        """The whole float32 matrix (tests, tools; never a search)."""
        matrix = self.rows(np.arange(len(self)))
        return matrix if dtype is None else matrix.astype(dtype)

    def rows(self, rows: np.ndarray) -> np.ndarray:
        """float32 [len(rows), dim]: exactly ``code * scale``, as stored."""
        codes = self._codes[rows].astype(np.int16) - 128
        return codes.astype(np.float32) * self._scales[rows, None]

    def scores(self, query: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Exact float32 scores of *rows*, each the same in any batch.

        A row-wise sum (numpy's pairwise summation over one row), not a BLAS
        product, whose blocking would depend on which rows come along.
        """
        rows = np.asarray(rows, dtype=np.int64)
        out = np.empty(len(rows), dtype=np.float32)
        q = _query(query, self.shape[1])
        for i in range(0, len(rows), _CHUNK):
            part = rows[i : i + _CHUNK]
            np.sum(
                self.rows(part) * q, axis=1, dtype=np.float32, out=out[i : i + _CHUNK]
            )
        return out

    @cached_property
    def _product(self) -> Int8Product:
        return Int8Product(self.shape[1])

    def top(
        self, query: np.ndarray, k: int, keep: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Rows of the *k* best scores (ties by row) and their exact scores.

        *keep*: a boolean mask of the rows that may be returned.
        """
        q = _query(query, self.shape[1])
        allowed = len(self) if keep is None else int(np.count_nonzero(keep))
        if k <= 0 or allowed == 0:
            empty = np.empty(0, dtype=np.int64)
            return empty, np.empty(0, dtype=np.float32)
        if allowed <= k:
            candidates = np.arange(len(self)) if keep is None else np.flatnonzero(keep)
        else:
            peak = float(np.abs(q).max())
            step = peak / QUERY_LIMIT if peak > 0 else 1.0
            rounded = np.rint(q / step).clip(-QUERY_LIMIT, QUERY_LIMIT)
            residual = q - rounded.astype(np.float32) * np.float32(step)
            margin = 2 * float(np.linalg.norm(residual)) * self._longest + _SLACK
            first = self._product(self._codes, rounded.astype(np.int8))
            approx = first.astype(np.float32)
            approx *= self._scales
            approx *= np.float32(step)
            if keep is not None:
                approx[~keep] = -np.inf
            kth = float(np.partition(approx, len(approx) - k)[len(approx) - k])
            candidates = np.flatnonzero(approx >= kth - margin)
        exact = self.scores(q, candidates)
        order = np.lexsort((candidates, -exact))[:k]
        return candidates[order], exact[order]


def _query(query: np.ndarray, dim: int) -> np.ndarray:
    q = np.asarray(query, dtype=np.float32).reshape(-1)
    if q.shape != (dim,) or not np.isfinite(q).all():
        raise ValueError(f"a query vector must be {dim} finite numbers")
    return q
