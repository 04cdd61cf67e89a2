"""Which clustering groups unanswered questions by topic best (``ragcite report``).

The report groups the questions the book could not answer by meaning, with
the shipped sentence encoder (all-MiniLM-L6-v2, int8) and one of the simple
clusterings of ``sphinx_ragcite.questions.groups``. This measures each on a
labelled set, ``qa/question_topics.jsonl``: 120 reader-style questions on 15
topics of the shared corpora (requests, click, packaging), 8 phrasings each,
with near topics side by side (proxies / SSL / timeouts, options / prompts /
groups) and two topics none of the books covers (async requests, GraphQL).
Written for this benchmark from the corpora's tables of contents; no text
copied.

Measured (2 cores, MiniLM int8): average linkage at 0.3 gives ARI 0.524 and
purity 0.79 (28 groups for 15 topics), the same for every order; the best
ARI, 0.551 at 0.2, mixes topics (purity 0.72); leader clustering at 0.3
reaches ARI 0.498 +- 0.037 depending on the order; k-means even with the
true k reaches 0.474 (purity 0.65). The report uses average linkage at 0.3:
an author would rather see one topic in two groups than two topics in one.

For each method and threshold (k for k-means): purity (share of questions in
their group's main topic), adjusted Rand index (1: the true partition; 0:
chance) and the number of groups. k-means is given the true k (an oracle the
report does not have) and the square root of n. Each run is repeated on
five orders of the questions (seeded shuffles): a log's order is arbitrary
and leader clustering and k-means depend on it; the figures are means, with
the spread of the adjusted Rand index.

Run from the repository root::

    .venv/bin/python benchmarks/question_groups.py

Writes ``benchmarks/results/question_groups.json``.
"""

from __future__ import annotations

import json
import random
import statistics
import time

from benchmarks._harness import BENCHMARKS, RESULTS, envelope, table, write_result
from sphinx_ragcite.encoder import Embedder, model_files
from sphinx_ragcite.questions.groups import (
    DEFAULT_METHOD,
    DEFAULT_THRESHOLD,
    adjusted_rand,
    cluster,
    purity,
)

LABELLED = BENCHMARKS / "qa" / "question_topics.jsonl"
ORDERS = 5
THRESHOLDS = (0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6)


def main() -> None:
    rows = [json.loads(line) for line in LABELLED.read_text("utf-8").splitlines()]
    questions = [r["question"] for r in rows]
    truth = [r["topic"] for r in rows]
    topics = len(set(truth))
    embedder = Embedder(model_files(None))
    start = time.perf_counter()
    vectors = embedder.embed(questions, kind="query")
    embed_s = time.perf_counter() - start
    runs = []
    for method in ("agglomerative", "leader"):
        for threshold in THRESHOLDS:
            runs.append(_run(method, vectors, truth, threshold=threshold))
    for k in sorted({topics, round(len(rows) ** 0.5)}):
        runs.append(_run("kmeans", vectors, truth, k=k))
    best = max(runs, key=lambda r: r["adjusted_rand"])
    print(
        table(
            ["method", "threshold / k", "groups", "purity", "ARI", "ARI sd", "ms"],
            [
                [
                    r["method"],
                    str(r["threshold"] if r["k"] is None else f"k={r['k']}"),
                    f"{r['groups']:.1f}",
                    f"{r['purity']:.3f}",
                    f"{r['adjusted_rand']:.3f}",
                    f"{r['adjusted_rand_sd']:.3f}",
                    f"{r['ms']:.1f}",
                ]
                for r in runs
            ],
        )
    )
    print(
        f"\n{len(rows)} questions on {topics} topics, embedded in {embed_s:.2f} s; "
        f"best: {best['method']} {best['threshold'] or best['k']} "
        f"(ARI {best['adjusted_rand']:.3f}); the report uses {DEFAULT_METHOD} "
        f"{DEFAULT_THRESHOLD}"
    )
    write_result(
        RESULTS / "question_groups.json",
        {
            **envelope(
                "question_groups",
                labelled_set=str(LABELLED.relative_to(BENCHMARKS.parent)),
                questions=len(rows),
                topics=topics,
                encoder=embedder.model_id,
                embed_seconds=round(embed_s, 3),
            ),
            "report_uses": {"method": DEFAULT_METHOD, "threshold": DEFAULT_THRESHOLD},
            "best": best,
            "runs": runs,
        },
    )


def _run(method, vectors, truth, *, threshold=None, k=None):  # type: ignore[no-untyped-def]
    scores, purities, groups, times = [], [], [], []
    for seed in range(ORDERS):
        order = list(range(len(truth)))
        random.Random(seed).shuffle(order)
        start = time.perf_counter()
        if method == "kmeans":
            labels = cluster(vectors[order], method=method, k=k)
        else:
            labels = cluster(vectors[order], method=method, threshold=threshold)
        times.append(1000 * (time.perf_counter() - start))
        shuffled = [truth[i] for i in order]
        scores.append(adjusted_rand(labels, shuffled))
        purities.append(purity(labels, shuffled))
        groups.append(int(labels.max()) + 1)
    return {
        "method": method,
        "threshold": threshold,
        "k": k,
        "groups": round(statistics.fmean(groups), 1),
        "purity": round(statistics.fmean(purities), 4),
        "adjusted_rand": round(statistics.fmean(scores), 4),
        "adjusted_rand_sd": round(statistics.pstdev(scores), 4),
        "ms": round(statistics.median(times), 2),
    }


if __name__ == "__main__":
    main()
