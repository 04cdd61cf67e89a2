"""``dense.<hash>.bin`` + ``dense/*.bin``: dense search without every vector.

Exact dense search needs every passage vector (388 bytes a passage), which
a reader's browser would download before its first answer. Here the browser
loads a small root up front and fetches a few shards of exact vectors per
question:

* the root holds every row's product-quantised code (``m`` bytes: one of
  ``centroids`` centroids per ``dim / m`` dimensions) and its cluster.
  Fewer than 256 centroids where the rule says so: 256 would cost a 393 KB
  float32 codebook, more than a 4,000-passage book's whole root may;
* the rows are partitioned by spherical k-means into clusters of about
  ``cluster_rows`` rows, and each cluster is one shard holding its rows'
  int8 codes and scales, exactly as ``embeddings.npy`` stores them.

A search (:class:`ApproxDense`, and ``js/dense_index.js`` to the bit):

1. ``T[j][c]``: the query's product with centroid ``c`` of subspace ``j``,
   its float64 products summed in order;
2. a row's approximate (ADC) score: ``sum_j T[j][code[r][j]]``, in order;
3. the rows by ADC score (best first, ties by row) are walked until their
   clusters number ``probe``;
4. each row of those clusters gets its exact score, bit for bit
   :meth:`DenseVectors.scores`; every other row keeps its ADC score;
5. the *k* best scores, ties by row.

The probed clusters depend on the query alone, so a row scores the same in
every call for one query (lexical candidates included).

The root, little-endian::

    b"RCDI" | u32 format version | u32 H | H bytes of JSON, space-padded so
    that 12 + H is a multiple of 4 | float32 codebook[m, centroids, dim / m]
    | uint16 or uint32 cluster[rows] | uint8 codes[m, rows] (subspace-major)

with the JSON ``{"format_version": 1, "rows": N, "dim": d, "m": m,
"centroids": 256, "probe": p, "cluster_bytes": 2, "clusters": [[rows,
"dense/<hash>.bin"], ...]}``. A shard::

    b"RCDS" | u32 format version | u32 S | u32 dim | uint32 rows[S]
    (ascending) | float32 scales[S] | int8 codes[S * dim]

named by the first 16 hex digits of its SHA-256. Building is deterministic:
the same vectors and parameters give the same bytes (k-means from a fixed
seed; on another CPU, BLAS may break a distance tie otherwise).
:func:`parameters` gives the sizes measured best for a book's size.
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from sphinx_ragcite.errors import SiteIndexError
from sphinx_ragcite.formats.files import REBUILD, dumps

if TYPE_CHECKING:
    from collections.abc import Callable

FORMAT_VERSION = 1
ROOT_MAGIC = b"RCDI"
SHARD_MAGIC = b"RCDS"
FOLDER = "dense"
#: Hex digits of a shard's SHA-256 in its name (as every index file).
HASH_CHARS = 16
_SHARD_NAME = re.compile(rf"{FOLDER}/[0-9a-f]{{{HASH_CHARS}}}\.bin")
#: No cluster holds more than this many times the mean (balanced k-means).
CAP = 1.5
#: Rows a k-means is trained on, per centroid, at most (a seeded sample)...
_TRAIN_PER_CENTROID = 64
#: ... but never fewer than this many (a codebook of 16 centroids needs more).
_TRAIN_LEAST = 16384
_PQ_ITERATIONS = 20
_CLUSTER_ITERATIONS = 12
#: Nearest clusters a row may be balanced into before the full search.
_CHOICES = 8
#: Clusters cut by one k-means at most (more: grouped first, see _clusters).
_GROUP = 64
_CHUNK = 4096


@dataclass(frozen=True)
class Parameters:
    m: int
    centroids: int
    cluster_rows: int
    probe: int


def parameters(n_rows: int) -> Parameters:
    """The index parameters for a book of *n_rows* passages.

    Chosen by ``tools/measure_dense_index.py`` (results in
    ``benchmarks/results/dense_index_46.json``: 320-500 real questions a
    book, bytes as gzip level 6) within issue 46's budgets for the dense
    part: a root of at most 250 KB at 4,000 passages and 1.2 MB at 50,000,
    and at most 60 KB of shards a question at 4,000 and 150 KB at 50,000
    (p90; linear in between). Recall@10 against exact search is what those
    bytes buy; it falls with the root's bytes a row::

        passages          m  centroids rows probe  root   shards p90  recall@10
        1,336 (flask)    96      32      6   16   135 KB    47 KB      .985
        3,738 (big 400)  96      16      4   24   242 KB    48 KB      .983
        3,738 (chosen)   64      16      4   32   175 KB    57 KB      .975
        10,000           48      16      4   32   340 KB    65 KB      .916
        20,000           32      32      8   24   531 KB    98 KB      .893
        51,266 (big 5k)  24      64     12   24   1.16 MB  146 KB      .841

    (10,000 and 20,000: the first passages of the 51,266-passage book.)
    Up to 5,000 passages every target is met; beyond, recall misses its
    .97-.98: the bytes a root may spend on a row do not rank the best rows
    high enough for a few shards to hold them. Recall for bytes, measured
    on the 51,266-passage book: m=96, centroids=16, cluster_rows=4,
    probe=64 reaches .976 (129 KB a question) with a 3.0 MB root; m=64 the
    same way .929 with 2.1 MB.
    """
    if n_rows <= 2_000:
        return Parameters(m=96, centroids=32, cluster_rows=6, probe=16)
    if n_rows <= 5_000:
        # m=96 reached .983 with a 242 KB root, which put the first answer of
        # the 3,738-passage book at ~455 KB (target 400): m=64, probe 32 gives
        # .975-.977 with 175 KB (browser_answers_46.json)
        return Parameters(m=64, centroids=16, cluster_rows=4, probe=32)
    if n_rows <= 12_000:
        return Parameters(m=48, centroids=16, cluster_rows=4, probe=32)
    if n_rows <= 30_000:
        return Parameters(m=32, centroids=32, cluster_rows=8, probe=24)
    return Parameters(m=24, centroids=64, cluster_rows=12, probe=24)


# -- building -----------------------------------------------------------------


def _vectors(codes: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """float32 ``code * scale``, as :meth:`DenseVectors.rows` gives them."""
    return codes.astype(np.float32) * np.asarray(scales, dtype=np.float32)[:, None]


def _sample(n: int, most: int, rng: np.random.Generator) -> np.ndarray:
    if n <= most:
        return np.arange(n)
    return np.sort(rng.choice(n, most, replace=False))


def _nearest(x: np.ndarray, centres: np.ndarray, spherical: bool) -> np.ndarray:
    """Each row's nearest centre (largest product, or least distance)."""
    out = np.empty(len(x), dtype=np.int64)
    half = None if spherical else 0.5 * (centres * centres).sum(axis=1)
    for i in range(0, len(x), _CHUNK):
        near = x[i : i + _CHUNK] @ centres.T
        if half is not None:
            near -= half
        out[i : i + _CHUNK] = near.argmax(axis=1)
    return out


def _kmeans(
    x: np.ndarray, k: int, iterations: int, rng: np.random.Generator, spherical: bool
) -> np.ndarray:
    """*k* centres of the float32 rows *x* (Lloyd from seeded rows).

    A centre left with no row restarts at the row farthest from its own.
    """
    centres = x[np.sort(rng.choice(len(x), k, replace=False))].copy()
    for _ in range(iterations):
        labels = _nearest(x, centres, spherical)
        order = np.argsort(labels, kind="stable")
        counts = np.bincount(labels, minlength=k)
        used = np.flatnonzero(counts)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])[used]
        sums = np.add.reduceat(x[order], starts, axis=0)
        if spherical:
            norms = np.linalg.norm(sums, axis=1, keepdims=True)
            centres[used] = sums / np.where(norms > 0, norms, 1)
        else:
            centres[used] = sums / counts[used, None]
        empty = np.flatnonzero(counts == 0)
        if len(empty):
            if spherical:
                fit = (x * centres[labels]).sum(axis=1)
            else:
                fit = -((x - centres[labels]) ** 2).sum(axis=1)
            worst = np.lexsort((np.arange(len(x)), fit))[: len(empty)]
            centres[empty[: len(worst)]] = x[worst]
    return centres


def _train_pq(
    vectors: np.ndarray, m: int, centroids: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Codebook float32 [m, centroids, dim / m] and codes uint8 [m, rows]."""
    n, dim = vectors.shape
    step = dim // m
    most = max(_TRAIN_LEAST, centroids * _TRAIN_PER_CENTROID)
    train = vectors[_sample(n, most, rng)]
    book = np.empty((m, centroids, step), dtype=np.float32)
    codes = np.empty((m, n), dtype=np.uint8)
    for j in range(m):
        part = np.ascontiguousarray(train[:, j * step : (j + 1) * step])
        book[j] = _kmeans(part, centroids, _PQ_ITERATIONS, rng, spherical=False)
        whole = np.ascontiguousarray(vectors[:, j * step : (j + 1) * step])
        codes[j] = _nearest(whole, book[j], spherical=False)
    return book, codes


def _balanced(unit: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """Each unit row's cluster of *k*: spherical k-means, then the closest
    (row, centre) pairs first while the centre has room (``CAP`` x the mean)."""
    n = len(unit)
    if k == 1:
        return np.zeros(n, dtype=np.int64)
    train = unit[_sample(n, k * _TRAIN_PER_CENTROID, rng)]
    centres = _kmeans(train, k, _CLUSTER_ITERATIONS, rng, spherical=True)
    room = np.full(k, int(np.ceil(CAP * n / k)), dtype=np.int64)
    choices = min(_CHOICES, k)
    near = np.empty((n, choices), dtype=np.int64)
    near_sim = np.empty((n, choices), dtype=np.float32)
    for i in range(0, n, _CHUNK):
        sim = unit[i : i + _CHUNK] @ centres.T
        if choices < k:
            part = np.argpartition(-sim, choices - 1, axis=1)[:, :choices]
            part.sort(axis=1)
        else:
            part = np.broadcast_to(np.arange(k), sim.shape)
        picked = np.take_along_axis(sim, part, axis=1)
        ranks = np.argsort(-picked, axis=1, kind="stable")
        near[i : i + _CHUNK] = np.take_along_axis(part, ranks, axis=1)
        near_sim[i : i + _CHUNK] = np.take_along_axis(picked, ranks, axis=1)
    flat_rows = np.repeat(np.arange(n), choices)
    order = np.lexsort((near.ravel(), flat_rows, -near_sim.ravel()))
    label = np.full(n, -1, dtype=np.int64)
    for row, centre in zip(
        flat_rows[order].tolist(), near.ravel()[order].tolist(), strict=True
    ):
        if label[row] < 0 and room[centre] > 0:
            label[row] = centre
            room[centre] -= 1
    for row in np.flatnonzero(label < 0).tolist():
        sim = centres @ unit[row]
        sim[room <= 0] = -np.inf
        centre = int(np.argmax(sim))
        label[row] = centre
        room[centre] -= 1
    return label


def _clusters(
    vectors: np.ndarray, cluster_rows: int, rng: np.random.Generator
) -> np.ndarray:
    """Each row's cluster, of about *cluster_rows* rows; numbered by first row.

    Up to ``_GROUP`` clusters, one balanced k-means; beyond, the rows are
    first grouped by k-means into groups of about ``_GROUP`` clusters and
    each group is cut on its own (a k-means of 6,000 centres over 50,000
    rows would take minutes).
    """
    n = len(vectors)
    k = max(1, -(-n // cluster_rows))
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.where(norms > 0, norms, 1)
    if k <= _GROUP:
        label = _balanced(unit, k, rng)
    else:
        groups = -(-k // _GROUP)
        train = unit[_sample(n, groups * _TRAIN_PER_CENTROID, rng)]
        centres = _kmeans(train, groups, _CLUSTER_ITERATIONS, rng, spherical=True)
        group = _nearest(unit, centres, spherical=True)
        label = np.empty(n, dtype=np.int64)
        base = 0
        for g in range(groups):
            members = np.flatnonzero(group == g)
            if not len(members):
                continue
            fine = max(1, -(-len(members) // cluster_rows))
            label[members] = base + _balanced(unit[members], fine, rng)
            base += fine
    # renumbered by each cluster's first row: the same partition, the same ids
    used, first = np.unique(label, return_index=True)
    renumber = np.empty(int(label.max()) + 1, dtype=np.int64)
    renumber[used[np.argsort(first, kind="stable")]] = np.arange(len(used))
    return renumber[label]


def shard_bytes(rows: np.ndarray, codes: np.ndarray, scales: np.ndarray) -> bytes:
    """The shard of *rows* (ascending): their ids, scales and int8 codes."""
    head = struct.pack("<4sIII", SHARD_MAGIC, FORMAT_VERSION, len(rows), codes.shape[1])
    return b"".join(
        [
            head,
            np.asarray(rows, dtype="<u4").tobytes(),
            np.asarray(scales[rows], dtype="<f4").tobytes(),
            np.ascontiguousarray(codes[rows], dtype=np.int8).tobytes(),
        ]
    )


def shard_name(data: bytes) -> str:
    return f"{FOLDER}/{hashlib.sha256(data).hexdigest()[:HASH_CHARS]}.bin"


def build_dense_index(
    codes: np.ndarray,
    scales: np.ndarray,
    *,
    m: int | None = None,
    centroids: int | None = None,
    cluster_rows: int | None = None,
    probe: int | None = None,
    seed: int = 0,
) -> tuple[bytes, dict[str, bytes]]:
    """The root's bytes and every shard by name, from the stored vectors
    (int8 *codes* [rows, dim], float32 *scales* [rows]); parameters left
    out come from :func:`parameters`."""
    codes = np.asarray(codes, dtype=np.int8)
    scales = np.asarray(scales, dtype=np.float32)
    n, dim = codes.shape
    chosen = parameters(n)
    m = chosen.m if m is None else m
    centroids = chosen.centroids if centroids is None else centroids
    cluster_rows = chosen.cluster_rows if cluster_rows is None else cluster_rows
    probe = chosen.probe if probe is None else probe
    if m <= 0 or dim % m or not 1 <= centroids <= 256:
        raise ValueError(f"m must divide {dim} and centroids be 1-256")
    if cluster_rows <= 0 or probe <= 0 or scales.shape != (n,):
        raise ValueError("cluster_rows and probe must be positive, scales [rows]")
    rng = np.random.default_rng(seed)
    vectors = _vectors(codes, scales)
    centroids = min(centroids, max(n, 1))
    if n:
        book, pq = _train_pq(vectors, m, centroids, rng)
        label = _clusters(vectors, cluster_rows, rng)
    else:
        book = np.zeros((m, centroids, dim // m), dtype=np.float32)
        pq = np.zeros((m, 0), dtype=np.uint8)
        label = np.zeros(0, dtype=np.int64)
    shards: dict[str, bytes] = {}
    listed: list[list[Any]] = []
    n_clusters = int(label.max()) + 1 if n else 0
    order = np.argsort(label, kind="stable")
    bounds = np.searchsorted(label[order], np.arange(n_clusters + 1))
    for c in range(n_clusters):
        data = shard_bytes(order[bounds[c] : bounds[c + 1]], codes, scales)
        name = shard_name(data)
        shards[name] = data
        listed.append([int(bounds[c + 1] - bounds[c]), name])
    wide = n_clusters > 0xFFFF
    head = dumps(
        {
            "format_version": FORMAT_VERSION,
            "rows": int(n),
            "dim": int(dim),
            "m": int(m),
            "centroids": int(centroids),
            "probe": int(probe),
            "cluster_bytes": 4 if wide else 2,
            "clusters": listed,
        }
    ).encode("utf-8")
    head += b" " * (-(12 + len(head)) % 4)
    root = b"".join(
        [
            struct.pack("<4sII", ROOT_MAGIC, FORMAT_VERSION, len(head)),
            head,
            book.astype("<f4").tobytes(),
            label.astype("<u4" if wide else "<u2").tobytes(),
            pq.tobytes(),
        ]
    )
    return root, shards


# -- reading ------------------------------------------------------------------


@dataclass(frozen=True)
class DenseRoot:
    """A checked root: every array as the search reads it."""

    rows: int
    dim: int
    m: int
    centroids: int
    probe: int
    #: float32 [m, centroids, dim / m]
    codebook: np.ndarray
    #: uint8 [m, rows]
    codes: np.ndarray
    #: each row's cluster, int64 [rows]
    cluster: np.ndarray
    #: (rows, shard name) of each cluster
    clusters: tuple[tuple[int, str], ...]


def _damaged(where: str, what: str) -> SiteIndexError:
    return SiteIndexError(f"{where} is damaged: {what}. {REBUILD}")


def read_dense_root(data: bytes, where: str = "the dense index") -> DenseRoot:
    """The root in *data*, or :class:`SiteIndexError` saying what is wrong."""
    if len(data) < 12 or data[:4] != ROOT_MAGIC:
        raise _damaged(where, "it is not a sphinx-ragcite dense index")
    version, size = struct.unpack_from("<II", data, 4)
    if version != FORMAT_VERSION:
        raise SiteIndexError(
            f"{where} has format {version}; this version reads {FORMAT_VERSION}. "
            + REBUILD
        )
    try:
        head = json.loads(data[12 : 12 + size])
        n, dim, m = int(head["rows"]), int(head["dim"]), int(head["m"])
        centroids, probe = int(head["centroids"]), int(head["probe"])
        width = int(head["cluster_bytes"])
        clusters = tuple((int(c), str(name)) for c, name in head["clusters"])
    except (ValueError, KeyError, TypeError) as error:
        raise _damaged(where, f"its head cannot be read ({error})") from None
    if (
        min(n, dim, probe) < 0
        or m <= 0
        or dim % m
        or not 1 <= centroids <= 256
        or probe == 0
        or width not in (2, 4)
        or (12 + size) % 4
    ):
        raise _damaged(where, "its head gives impossible sizes")
    book_bytes = 4 * centroids * dim
    expected = 12 + size + book_bytes + width * n + m * n
    if len(data) != expected:
        raise _damaged(where, f"{len(data)} bytes where its head implies {expected}")
    at = 12 + size
    codebook = np.frombuffer(data, "<f4", centroids * dim, at)
    codebook = codebook.reshape(m, centroids, dim // m)
    at += book_bytes
    cluster = np.frombuffer(data, "<u4" if width == 4 else "<u2", n, at)
    codes = np.frombuffer(data, np.uint8, m * n, at + width * n).reshape(m, n)
    if not np.isfinite(codebook).all():
        raise _damaged(where, "its codebook holds non-numbers")
    if n and int(codes.max()) >= centroids:
        raise _damaged(where, "a code names a centroid it does not have")
    counts = [c for c, _ in clusters]
    if any(not _SHARD_NAME.fullmatch(name) for _, name in clusters):
        raise _damaged(where, "it names a shard outside dense/")
    if min(counts, default=1) < 1:
        raise _damaged(where, "it lists a cluster of no rows")
    if sum(counts) != n or (n and int(cluster.max()) >= len(clusters)):
        raise _damaged(where, "its clusters do not cover its rows")
    if np.bincount(cluster, minlength=len(clusters)).tolist() != counts:
        raise _damaged(where, "its cluster sizes do not match its rows")
    return DenseRoot(
        n, dim, m, centroids, probe, codebook, codes, cluster.astype(np.int64), clusters
    )


def read_dense_shard(
    data: bytes, name: str, rows: np.ndarray, dim: int, where: str = "a dense shard"
) -> tuple[np.ndarray, np.ndarray]:
    """int8 codes [S, dim] and float32 scales [S] of the shard *name*, which
    must hold exactly *rows* (ascending) and match its digest."""
    where = f"{where} ({name})"
    if shard_name(data) != name:
        raise _damaged(where, "its bytes do not match the digest in its name")
    count = len(rows)
    if len(data) < 16 or data[:4] != SHARD_MAGIC:
        raise _damaged(where, "it is not a dense shard")
    version, found, width = struct.unpack_from("<III", data, 4)
    if version != FORMAT_VERSION or found != count or width != dim:
        raise _damaged(where, "its format or sizes differ from the root's")
    if len(data) != 16 + count * (8 + dim):
        raise _damaged(where, "it is truncated or padded")
    held = np.frombuffer(data, "<u4", count, 16)
    if not np.array_equal(held, rows):
        raise _damaged(where, "it holds other rows than the root lists")
    scales = np.frombuffer(data, "<f4", count, 16 + 4 * count)
    codes = np.frombuffer(data, np.int8, count * dim, 16 + 8 * count)
    if not np.isfinite(scales).all():
        raise _damaged(where, "its scales hold non-numbers")
    return codes.reshape(count, dim), scales


# -- searching ----------------------------------------------------------------


class ApproxDense:
    """Dense search over a root and the shards a query probes.

    *shard* returns a shard's bytes by name; each shard is read (and
    checked) once.
    """

    def __init__(
        self,
        root: bytes,
        shard: Callable[[str], bytes],
        where: str = "the dense index",
    ) -> None:
        self.root = read_dense_root(root, where)
        self._fetch = shard
        self._where = where
        order = np.argsort(self.root.cluster, kind="stable")
        bounds = np.concatenate([[0], np.cumsum([c for c, _ in self.root.clusters])])
        #: each cluster's rows, ascending
        self._members = [
            order[bounds[c] : bounds[c + 1]] for c in range(len(bounds) - 1)
        ]
        self._book = self.root.codebook.astype(np.float64)
        self._parsed: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        #: the last query's scores: a search asks for its lexical rows' next
        self._last: tuple[bytes, np.ndarray] | None = None

    def __len__(self) -> int:
        return self.root.rows

    @property
    def shape(self) -> tuple[int, int]:
        return self.root.rows, self.root.dim

    def _query(self, query: np.ndarray) -> np.ndarray:
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        if q.shape != (self.root.dim,) or not np.isfinite(q).all():
            raise ValueError(f"a query vector must be {self.root.dim} finite numbers")
        return q

    def adc(self, query: np.ndarray) -> np.ndarray:
        """Every row's approximate score, float64 (steps 1-2)."""
        q = self._query(query)
        m, step = self.root.m, self.root.dim // self.root.m
        q64 = q.astype(np.float64).reshape(m, step)
        table = np.zeros((m, self.root.centroids), dtype=np.float64)
        for d in range(step):
            table += q64[:, d, None] * self._book[:, :, d]
        out = np.zeros(self.root.rows, dtype=np.float64)
        for j in range(m):
            out += table[j][self.root.codes[j]]
        return out

    def probed(self, query: np.ndarray, adc: np.ndarray | None = None) -> list[int]:
        """The clusters *query* probes, in the order found (step 3)."""
        scores = self.adc(query) if adc is None else adc
        n = self.root.rows
        if not n:
            return []
        order = np.lexsort((np.arange(n), -scores))
        walk = self.root.cluster[order]
        clusters, first = np.unique(walk, return_index=True)
        wanted = min(self.root.probe, len(clusters))
        return clusters[np.argsort(first, kind="stable")[:wanted]].tolist()

    def shard_names(self, query: np.ndarray) -> list[str]:
        """The shards a search for *query* reads (what a browser fetches)."""
        return [self.root.clusters[c][1] for c in self.probed(query)]

    def _shard(self, cluster: int) -> tuple[np.ndarray, np.ndarray]:
        parsed = self._parsed.get(cluster)
        if parsed is None:
            name = self.root.clusters[cluster][1]
            parsed = read_dense_shard(
                self._fetch(name),
                name,
                self._members[cluster],
                self.root.dim,
                self._where,
            )
            self._parsed[cluster] = parsed
        return parsed

    def vector(self, row: int) -> np.ndarray:
        """A row's exact vector (float32 ``code * scale``), from its shard."""
        cluster = int(self.root.cluster[row])
        codes, scales = self._shard(cluster)
        at = int(np.searchsorted(self._members[cluster], row))
        return _vectors(codes[at : at + 1], scales[at : at + 1])[0]

    def all_scores(self, query: np.ndarray) -> np.ndarray:
        """Every row's score, float64: exact in the probed clusters (steps 1-4).

        The array is shared with later calls for the same query: read only.
        """
        q = self._query(query)
        last = self._last
        if last is not None and last[0] == q.tobytes():
            return last[1]
        scores = self.adc(q)
        for cluster in self.probed(q, scores):
            codes, scales = self._shard(cluster)
            exact = np.sum(_vectors(codes, scales) * q, axis=1, dtype=np.float32)
            scores[self._members[cluster]] = exact
        scores.flags.writeable = False
        self._last = (q.tobytes(), scores)
        return scores

    def scores(self, query: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """The scores of *rows* (float64), each as :meth:`top` gives it."""
        return self.all_scores(query)[np.asarray(rows, dtype=np.int64)]

    def top(
        self, query: np.ndarray, k: int, keep: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Rows of the *k* best scores (ties by row) and their float64 scores,
        as :meth:`DenseVectors.top`; *keep* masks the rows that may be returned.
        """
        scores = self.all_scores(query)
        rows = np.arange(self.root.rows) if keep is None else np.flatnonzero(keep)
        if k <= 0 or not len(rows):
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
        found = scores[rows]
        if len(rows) > k:
            kth = np.partition(found, len(found) - k)[len(found) - k]
            rows, found = rows[found >= kth], found[found >= kth]
        order = np.lexsort((rows, -found))[:k]
        return rows[order], found[order]
