"""Approximate dense search (``formats/dense_index.py``, ``js/dense_index.js``).

Its exact part must be :class:`DenseVectors`' to the bit (probing every
cluster is exact search), its files deterministic and checked, and the
browser's search the server's: same rows, same scores, same shards.
"""

from __future__ import annotations

import hashlib
import json
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from sphinx_ragcite.errors import SiteIndexError
from sphinx_ragcite.formats.dense_index import (
    CAP,
    ApproxDense,
    build_dense_index,
    parameters,
    read_dense_root,
    read_dense_shard,
)
from sphinx_ragcite.formats.embeddings import quantize
from sphinx_ragcite.formats.manifest import read_manifest
from sphinx_ragcite.retrieval.dense import DenseVectors

from helpers.repo import REPO


def book_vectors(
    rows: int, dim: int = 64, topics: int = 20, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Unit vectors around a few topics, stored as a build stores them."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(topics, dim))
    x = centres[rng.integers(topics, size=rows)] + rng.normal(size=(rows, dim))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return quantize(x.astype(np.float32))


def unit_queries(count: int, dim: int, seed: int = 1) -> np.ndarray:
    q = np.random.default_rng(seed).normal(size=(count, dim))
    return (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def book() -> tuple[np.ndarray, np.ndarray]:
    return book_vectors(900)


def test_probing_every_cluster_is_exact_search(book):
    codes, scales = book
    root, shards = build_dense_index(codes, scales, m=8, cluster_rows=30, probe=1000)
    approx, exact = ApproxDense(root, shards.__getitem__), DenseVectors(codes, scales)
    keep = np.arange(len(codes)) % 3 != 0
    for q in unit_queries(20, codes.shape[1]):
        for mask in (None, keep):
            rows, scores = approx.top(q, 10, mask)
            want_rows, want_scores = exact.top(q, 10, mask)
            assert rows.tolist() == want_rows.tolist()
            assert scores.dtype == np.float64
            assert scores.astype(np.float32).tobytes() == want_scores.tobytes()


def test_probed_rows_are_exact_and_the_rest_keep_their_adc_score(book):
    codes, scales = book
    root, shards = build_dense_index(codes, scales, m=8, cluster_rows=30, probe=3)
    approx, exact = ApproxDense(root, shards.__getitem__), DenseVectors(codes, scales)
    everything = np.arange(len(codes))
    for q in unit_queries(10, codes.shape[1]):
        probed = approx.probed(q)
        assert len(probed) == 3
        inside = np.isin(approx.root.cluster, probed)
        scores = approx.scores(q, everything)
        want = exact.scores(q, everything[inside])
        assert scores[inside].astype(np.float32).tobytes() == want.tobytes()
        assert np.array_equal(scores[~inside], approx.adc(q)[~inside])
        # the walk: the best ADC row's cluster first
        assert probed[0] == approx.root.cluster[np.argmax(approx.adc(q))]
        rows, top = approx.top(q, 25)
        assert np.array_equal(top, scores[rows])
        assert rows.tolist() == np.lexsort((everything, -scores))[:25].tolist()


def test_adc_score_is_the_product_with_the_codes_centroids(book):
    codes, scales = book
    root, shards = build_dense_index(codes, scales, m=16, centroids=32, cluster_rows=50)
    approx = ApproxDense(root, shards.__getitem__)
    r = approx.root
    step = r.dim // r.m
    decoded = np.concatenate(
        [r.codebook[j][r.codes[j]] for j in range(r.m)], axis=1
    ).astype(np.float64)
    q = unit_queries(1, r.dim)[0]
    assert np.allclose(approx.adc(q), decoded @ q.astype(np.float64), atol=1e-9)
    assert step * r.m == r.dim
    assert r.centroids == 32
    # the codes are the centroids nearest each row (a quantiser, not noise)
    vectors = DenseVectors(codes, scales).rows(np.arange(len(codes)))
    err = np.linalg.norm(vectors - decoded, axis=1)
    assert float(np.median(err)) < 0.7


def test_same_vectors_same_bytes_and_named_by_digest(book):
    codes, scales = book
    first = build_dense_index(codes, scales, m=8, cluster_rows=30, probe=4)
    assert build_dense_index(codes, scales, m=8, cluster_rows=30, probe=4) == first
    root, shards = first
    for name, data in shards.items():
        assert name == f"dense/{hashlib.sha256(data).hexdigest()[:16]}.bin"
    listed = read_dense_root(root).clusters
    assert sorted(name for _, name in listed) == sorted(shards)


def test_clusters_are_balanced(book):
    codes, scales = book
    root, _ = build_dense_index(codes, scales, m=8, cluster_rows=40, probe=4)
    counts = [count for count, _ in read_dense_root(root).clusters]
    assert sum(counts) == len(codes)
    assert len(counts) >= len(codes) // 40
    assert max(counts) <= np.ceil(CAP * len(codes) / len(counts)) + 1


@pytest.mark.parametrize("rows", [0, 1, 3, 40])
def test_small_books(rows):
    codes, scales = book_vectors(max(rows, 1), dim=32)
    codes, scales = codes[:rows], scales[:rows]
    root, shards = build_dense_index(codes, scales, m=4, cluster_rows=8, probe=2)
    approx = ApproxDense(root, shards.__getitem__)
    q = unit_queries(1, 32)[0]
    got, _ = approx.top(q, 10)
    want, _ = DenseVectors(codes, scales).top(q, 10) if rows else (np.array([]), 0)
    assert len(got) == min(rows, 10)
    if rows <= 16:  # two clusters of eight cover the book: exact
        assert got.tolist() == want.tolist()


def test_parameters_spend_fewer_root_bytes_a_row_as_books_grow():
    """A bigger book gets no more code bits a row (its root grows slower
    than the book), never fewer rows a question; a build without parameters
    uses the rule's."""
    sizes = (10, 140, 1_336, 3_738, 10_000, 20_000, 51_266, 200_000)
    chosen = [parameters(n) for n in sizes]
    bits = [p.m * np.log2(p.centroids) for p in chosen]
    fetched = [p.cluster_rows * p.probe for p in chosen]
    for p in chosen:
        assert 384 % p.m == 0
        assert 1 <= p.centroids <= 256
    assert bits == sorted(bits, reverse=True)
    assert fetched == sorted(fetched)
    codes, scales = book_vectors(1_336, dim=384)
    root = read_dense_root(build_dense_index(codes, scales)[0])
    want = parameters(1_336)
    assert (root.m, root.centroids, root.probe) == (want.m, want.centroids, want.probe)


# -- damaged files ----------------------------------------------------------------


def rewrite_head(root: bytes, change) -> bytes:
    """*root* with its JSON head changed by *change* (the arrays kept)."""
    size = struct.unpack_from("<I", root, 8)[0]
    head = json.loads(root[12 : 12 + size])
    change(head)
    text = json.dumps(head).encode()
    text += b" " * (-(12 + len(text)) % 4)
    return root[:8] + struct.pack("<I", len(text)) + text + root[12 + size :]


@pytest.fixture(scope="module")
def built(book):
    codes, scales = book
    return build_dense_index(codes[:200], scales[:200], m=8, cluster_rows=20, probe=2)


def swap_counts(head):
    head["clusters"][0][0] += 1
    head["clusters"][1][0] -= 1


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda r: r[:-1], "bytes where its head implies"),
        (lambda r: b"XXXX" + r[4:], "not a sphinx-ragcite dense index"),
        (lambda r: r[:4] + struct.pack("<I", 9) + r[8:], "has format 9"),
        (lambda r: r[:12] + b"[" + r[13:], "head cannot be read"),
        (lambda r: r[:-1] + b"\xff", "names a centroid"),
        (lambda r: rewrite_head(r, swap_counts), "cluster sizes do not match"),
        (lambda r: rewrite_head(r, lambda h: h.update(m=7)), "impossible sizes"),
        (
            lambda r: rewrite_head(
                r, lambda h: h["clusters"][0].__setitem__(1, "../x.bin")
            ),
            "outside dense/",
        ),
    ],
)
def test_a_damaged_root_is_refused(built, damage, said):
    root, shards = built
    with pytest.raises(SiteIndexError, match=said) as error:
        ApproxDense(damage(root), shards.__getitem__)
    assert "Rebuild" in str(error.value)


def test_a_damaged_shard_is_refused(built):
    root, shards = built
    parsed = read_dense_root(root)
    (_, first), (_, second) = parsed.clusters[:2]
    rows0 = np.flatnonzero(parsed.cluster == 0)
    with pytest.raises(SiteIndexError, match="do not match the digest"):
        read_dense_shard(shards[first][:-1] + b"\x01", first, rows0, parsed.dim)
    # a shard's bytes under its own name, but another cluster's rows
    with pytest.raises(SiteIndexError, match=r"differ from the root's|other rows"):
        read_dense_shard(shards[second], second, rows0, parsed.dim)
    # a search that probes a damaged shard says so
    damaged = dict(shards)
    for name in damaged:
        damaged[name] = damaged[name][:-1]
    approx = ApproxDense(root, damaged.__getitem__)
    with pytest.raises(SiteIndexError, match="digest"):
        approx.top(unit_queries(1, parsed.dim)[0], 5)


# -- the browser's search is the server's ---------------------------------------

RUNNER = r"""
const fs = require("fs");
const path = require("path");
const [dir, js] = process.argv.slice(1);
const { createApproxDense } = require(path.join(js, "dense_index.js"));
const fixture = JSON.parse(fs.readFileSync(path.join(dir, "fixture.json"), "utf8"));
const fetched = [];
const fetchShard = async (name) => {
  fetched.push(name);
  return new Uint8Array(fs.readFileSync(path.join(dir, name)));
};
(async () => {
  const root = new Uint8Array(fs.readFileSync(path.join(dir, "root.bin")));
  const dense = createApproxDense(root, fetchShard);
  const out = [];
  for (const values of fixture.queries) {
    const q = Float32Array.from(values);
    const { rows, scores } = await dense.search(q, fixture.k, fixture.extra);
    out.push({ rows, scores: [...scores], names: dense.shardNames(q) });
  }
  const result = { out, fetched: new Set(fetched).size };
  fs.writeFileSync(path.join(dir, "out.json"), JSON.stringify(result));
})().catch((e) => { console.error(e); process.exit(1); });
"""


def run_parity(node: str, tmp_path: Path, codes, scales, queries, **options) -> int:
    """Python's and Node's searches of one index; returns the rows compared."""
    root, shards = build_dense_index(codes, scales, **options)
    (tmp_path / "dense").mkdir()
    (tmp_path / "root.bin").write_bytes(root)
    for name, data in shards.items():
        (tmp_path / name).write_bytes(data)
    extra = list(range(0, len(codes), 7))
    fixture = {"queries": queries.tolist(), "k": 50, "extra": extra}
    (tmp_path / "fixture.json").write_text(json.dumps(fixture))
    subprocess.run(
        [node, "-e", RUNNER, str(tmp_path), str(REPO / "js")],
        check=True,
        timeout=300,
    )
    got = json.loads((tmp_path / "out.json").read_text())["out"]
    approx = ApproxDense(root, shards.__getitem__)
    compared = 0
    for q, js in zip(queries, got, strict=True):
        rows, scores = approx.top(q, 50)
        assert js["rows"] == rows.tolist()
        assert js["names"] == approx.shard_names(q)
        want = dict(zip(rows.tolist(), scores.tolist(), strict=True))
        want.update(zip(extra, approx.scores(q, np.array(extra)).tolist(), strict=True))
        assert dict(js["scores"]) == want  # floats compared exactly
        compared += len(want)
    return compared


@pytest.mark.node
def test_node_searches_the_example_book_as_python(node, example_site, tmp_path):
    """Real passage vectors and real question vectors, a few shards probed."""
    from sphinx_ragcite.retrieval.site import Site

    directory = example_site / "_ragcite"
    files = read_manifest(directory).files
    codes = np.load(directory / files["embeddings"])
    scales = np.load(directory / files["embedding_scales"])
    questions = [
        "How long should espresso extract?",
        "What grind size for a French press?",
        "Why does my coffee taste sour?",
        "How do I store beans?",
    ]
    embedded = Site.load(example_site).embedder.embed(questions, kind="query")
    queries = np.concatenate([embedded, unit_queries(20, codes.shape[1])])
    compared = run_parity(
        node, tmp_path, codes, scales, queries, m=24, cluster_rows=16, probe=3
    )
    assert compared > 24 * 50


@pytest.mark.node
def test_node_searches_a_larger_book_as_python(node, tmp_path):
    """3,000 rows, the default parameters: deeper walks, uint8 codes of
    every centroid."""
    codes, scales = book_vectors(3000, dim=384, topics=60)
    run_parity(node, tmp_path, codes, scales, unit_queries(30, 384))
