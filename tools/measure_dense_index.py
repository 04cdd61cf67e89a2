"""Chooses the dense index's parameters by measurement (issue 46, item 2).

For each book, each ``m`` (subspaces), ``centroids`` (per subspace),
``cluster_rows`` (rows a shard holds, on average) and ``probe`` (shards a
question reads): recall@10 and @50 of :class:`ApproxDense` against exact
search (:class:`DenseVectors`), the root's bytes as a static host serves
them (gzip level 6) in total and per passage, the gzip bytes of the shards
a question fetches (mean, p90) and how many, and the build time.

Questions are real ones, embedded with the site's own encoder on one
thread: SQuAD questions for the big books (their ``src/questions.jsonl``),
the flask, jinja and click dev sets for flask.

    python tools/measure_dense_index.py                   # grid on every book
    python tools/measure_dense_index.py --books flask --grid rule

``--grid rule`` measures only :func:`dense_index.parameters` (through
``ApproxDense.top`` itself, which the grid's shortcut must agree with).
Writes ``benchmarks/results/dense_index_46.json`` (``--out``); books whose
site is not built are skipped, saying so.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import os
import random
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

from benchmarks._harness import RESULTS, SITES, envelope, table, write_result
from sphinx_ragcite.encoder import Embedder, model_files
from sphinx_ragcite.formats.dense_index import (
    ApproxDense,
    build_dense_index,
    parameters,
)
from sphinx_ragcite.formats.manifest import read_manifest
from sphinx_ragcite.retrieval.dense import DenseVectors

QA = Path(__file__).resolve().parents[1] / "benchmarks"
#: book -> the question files its queries come from
BOOKS: dict[str, list[Path]] = {
    "flask": [QA / "qa/flask.jsonl", QA / "qa/jinja.jsonl", QA / "click_qa.jsonl"],
    "big_book400": [SITES / "big_book400/src/questions.jsonl"],
    "big_book5000": [SITES / "big_book5000/src/questions.jsonl"],
}
QUESTIONS = 400
#: Issue 46's budgets for the dense part: root gzip bytes, shard gzip bytes
#: per question (p90), recall@10; by book size (rows up to the key).
TARGETS = {
    5_000: {"root": 250_000, "per_question": 60_000, "recall10": 0.98},
    60_000: {"root": 1_200_000, "per_question": 150_000, "recall10": 0.97},
}
#: The configurations measured, by book size (rows up to the key): the
#: root's bytes a row (``m``, ``centroids``) against the rows fetched
#: (``cluster_rows`` x ``probe``).
GRIDS: dict[int, dict[str, list[int]]] = {
    5_000: {
        "m": [48, 64, 96],
        "centroids": [16, 32, 64],
        "cluster_rows": [4, 6, 8, 12],
        "probe": [8, 10, 12, 14, 16, 20, 24, 32],
    },
    60_000: {
        "m": [16, 24, 32],
        "centroids": [16, 32, 64],
        "cluster_rows": [8, 12, 16, 24],
        "probe": [8, 12, 16, 20, 24, 32, 48, 64],
    },
}


def targets(rows: int) -> dict[str, float]:
    return next(t for most, t in sorted(TARGETS.items()) if rows <= most)


def load_book(name: str, questions: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """int8 codes, float32 scales and query vectors [questions, dim]."""
    folder = SITES / name / "html" / "_ragcite"
    manifest = read_manifest(folder)
    codes = np.load(folder / manifest.files["embeddings"])
    scales = np.load(folder / manifest.files["embedding_scales"])
    texts: list[str] = []
    for path in BOOKS[name]:
        with path.open(encoding="utf-8") as f:
            texts += [json.loads(line)["question"] for line in f if line.strip()]
    if len(texts) > questions:
        texts = random.Random(0).sample(texts, questions)
    assert manifest.embedding is not None
    embedder = Embedder(
        model_files(None), max_tokens=manifest.embedding.max_tokens, threads=1
    )
    queries = embedder.embed(texts, kind="query").astype(np.float32)
    return codes, scales, queries


def ranked(scores: np.ndarray, k: int) -> np.ndarray:
    """Rows of the *k* best scores, ties by row (as ``top`` ranks)."""
    kth = np.partition(scores, len(scores) - k)[len(scores) - k]
    rows = np.flatnonzero(scores >= kth)
    return rows[np.lexsort((rows, -scores[rows]))[:k]]


def evaluate(
    codes: np.ndarray,
    scales: np.ndarray,
    queries: np.ndarray,
    exact: list[np.ndarray],
    config: dict[str, int],
    probes: list[int],
) -> list[dict[str, Any]]:
    """One built index, measured at every probe in *probes*.

    Each question's scores follow ``ApproxDense``'s steps: its ADC scores
    and cluster walk from the index, exact scores (``exact``) in the first
    *probe* clusters of the walk.
    """
    started = time.perf_counter()
    root, shards = build_dense_index(codes, scales, probe=max(probes), **config)
    built = time.perf_counter() - started
    index = ApproxDense(root, shards.__getitem__)
    n = len(codes)
    gz = [len(gzip.compress(shards[name], 6)) for _, name in index.root.clusters]
    members = index._members
    results: dict[int, dict[str, list[float]]] = {
        p: {"r10": [], "r50": [], "bytes": [], "requests": []} for p in probes
    }
    for q, truth in zip(queries, exact, strict=True):
        adc = index.adc(q)
        order = np.lexsort((np.arange(n), -adc))
        found, first = np.unique(index.root.cluster[order], return_index=True)
        walk = found[np.argsort(first, kind="stable")]
        best10, best50 = (
            set(ranked(truth, 10).tolist()),
            set(ranked(truth, 50).tolist()),
        )
        for p in probes:
            probed = walk[:p]
            scores = adc.copy()
            for c in probed:
                scores[members[c]] = truth[members[c]]
            top = ranked(scores, 50)
            results[p]["r10"].append(len(best10 & set(top[:10].tolist())) / 10)
            results[p]["r50"].append(len(best50 & set(top.tolist())) / 50)
            results[p]["bytes"].append(sum(gz[c] for c in probed))
            results[p]["requests"].append(len(probed))
    root_gz = len(gzip.compress(root, 6))
    sizes = [c for c, _ in index.root.clusters]
    return [
        {
            **config,
            "probe": p,
            "recall10": round(float(np.mean(r["r10"])), 4),
            "recall50": round(float(np.mean(r["r50"])), 4),
            "root_bytes": len(root),
            "root_gzip": root_gz,
            "root_gzip_per_passage": round(root_gz / n, 2),
            "shard_gzip_mean": round(float(np.mean(r["bytes"]))),
            "shard_gzip_p90": round(float(np.percentile(r["bytes"], 90))),
            "requests_mean": round(float(np.mean(r["requests"])), 2),
            "clusters": len(sizes),
            "largest_cluster": max(sizes),
            "build_s": round(built, 2),
        }
        for p, r in results.items()
    ]


def check_rule(
    codes: np.ndarray, scales: np.ndarray, queries: np.ndarray, exact: list[np.ndarray]
) -> dict[str, Any]:
    """``parameters(n)`` through ``ApproxDense.top`` itself."""
    chosen = parameters(len(codes))
    config = {
        "m": chosen.m,
        "centroids": chosen.centroids,
        "cluster_rows": chosen.cluster_rows,
    }
    row = evaluate(codes, scales, queries, exact, config, [chosen.probe])[0]
    root, shards = build_dense_index(codes, scales)
    index = ApproxDense(root, shards.__getitem__)
    r10 = []
    started = time.perf_counter()
    for q, truth in zip(queries, exact, strict=True):
        rows, _ = index.top(q, 10)
        r10.append(len(set(rows.tolist()) & set(ranked(truth, 10).tolist())) / 10)
    row["top_ms_python"] = round(
        1000 * (time.perf_counter() - started) / len(queries), 2
    )
    # the shortcut of evaluate() must measure what top() returns
    assert round(float(np.mean(r10)), 4) == row["recall10"], (np.mean(r10), row)
    goal = targets(len(codes))
    row["met"] = {
        "root": row["root_gzip"] <= goal["root"],
        "per_question": row["shard_gzip_p90"] <= goal["per_question"],
        "recall10": row["recall10"] >= goal["recall10"],
    }
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--books", nargs="+", default=list(BOOKS))
    parser.add_argument("--grid", choices=["size", "rule"], default="size")
    parser.add_argument("--questions", type=int, default=QUESTIONS)
    parser.add_argument("--out", type=Path, default=RESULTS / "dense_index_46.json")
    args = parser.parse_args(argv)
    previous = json.loads(args.out.read_text()) if args.out.exists() else {}
    books: dict[str, Any] = dict(previous.get("books", {}))
    for name in args.books:
        if not (SITES / name / "html" / "_ragcite" / "manifest.json").exists():
            print(f"{name}: not built, skipped")
            continue
        codes, scales, queries = load_book(name, args.questions)
        vectors = DenseVectors(codes, scales)
        everything = np.arange(len(codes))
        exact = [vectors.scores(q, everything).astype(np.float64) for q in queries]
        entry: dict[str, Any] = {
            "passages": len(codes),
            "questions": len(queries),
            "question_files": [str(p.relative_to(QA.parent)) for p in BOOKS[name]],
            "targets": targets(len(codes)),
        }
        if args.grid == "size":
            grid = next(g for most, g in sorted(GRIDS.items()) if len(codes) <= most)
            builds = [grid["m"], grid["centroids"], grid["cluster_rows"]]
            rows = []
            for m, centroids, cluster_rows in itertools.product(*builds):
                config = {"m": m, "centroids": centroids, "cluster_rows": cluster_rows}
                rows += evaluate(codes, scales, queries, exact, config, grid["probe"])
                print(name, config, f"{rows[-1]['build_s']} s", flush=True)
            entry["grid"] = rows
        else:
            entry["grid"] = books.get(name, {}).get("grid", [])
        entry["rule"] = check_rule(codes, scales, queries, exact)
        books[name] = entry
    head = [
        "book",
        "rows",
        "m",
        "cent",
        "rows/shard",
        "probe",
        "root gz",
        "B/psg",
        "shard gz mean",
        "p90",
        "req",
        "r@10",
        "r@50",
        "build s",
        "met",
    ]
    body = []
    for name, entry in books.items():
        r = entry["rule"]
        body.append(
            [
                name,
                str(entry["passages"]),
                str(r["m"]),
                str(r["centroids"]),
                str(r["cluster_rows"]),
                str(r["probe"]),
                str(r["root_gzip"]),
                str(r["root_gzip_per_passage"]),
                str(r["shard_gzip_mean"]),
                str(r["shard_gzip_p90"]),
                str(r["requests_mean"]),
                str(r["recall10"]),
                str(r["recall50"]),
                str(r["build_s"]),
                " ".join(k for k, ok in r["met"].items() if not ok) or "all",
            ]
        )
    print(table(head, body))
    write_result(args.out, {**envelope("dense_index_46"), "books": books})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
