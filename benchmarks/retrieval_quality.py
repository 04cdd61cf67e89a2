"""Does hybrid retrieval find the right passage more often than BM25 or dense?

Why: hybrid search costs a sentence encoder at build and query time; it is only
worth it if fusing the two rankings beats each of them. This benchmark builds
the example book and scores every retrieval mode on ``example_book/qa.jsonl``
with ``sphinx_ragcite.evaluate.evaluate_retrieval`` (the code behind
``ragcite eval``): BM25, dense, hybrid with reciprocal rank fusion (the
default) and hybrid with linear (min-max normalised) score fusion. It reports
recall@1/5/10, MRR@10, nDCG@10 and ms per query, and checks that hybrid
recall@5 is at least the better of BM25's and dense's.

Run from the repository root (about 20 seconds; the example book's build is
reused while it and the package's build side are unchanged)::

    .venv/bin/python benchmarks/retrieval_quality.py
    .venv/bin/python benchmarks/retrieval_quality.py --site path/to/html --qa my.jsonl

Results go to ``benchmarks/results/retrieval_quality.json`` unless ``--out``.
The script exits 0 even when the check fails; the JSON records the outcome.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from benchmarks._harness import (
    EXAMPLE_QA,
    RESULTS,
    envelope,
    example_site,
    read_manifest,
    table,
    write_result,
)

DEFAULT_OUT = RESULTS / "retrieval_quality.json"
METRICS = ("recall@1", "recall@5", "recall@10", "mrr@10", "ndcg@10")
MODES = ("bm25", "dense", "hybrid")
FUSIONS = ("rrf", "linear")


def by_fusion(site: Any, questions: list[Any]) -> dict[str, dict[str, Any]]:
    """``evaluate_retrieval`` of every mode, with each fusion."""
    from sphinx_ragcite.evaluate import evaluate_retrieval

    site.embedder  # noqa: B018  load the model before timing ms/query
    return {
        fusion: evaluate_retrieval(site, questions, MODES, fusion=fusion)
        for fusion in FUSIONS
    }


def mode_rows(results: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """BM25 and dense (no fusion), then hybrid with each fusion."""
    rows = {"bm25": results["rrf"]["bm25"], "dense": results["rrf"]["dense"]}
    return rows | {f"hybrid ({f})": results[f]["hybrid"] for f in FUSIONS}


def rows_table(rows: dict[str, dict[str, Any]]) -> str:
    return table(
        ["mode", *METRICS, "ms/query"],
        [
            [mode, *(f"{r[m]:.3f}" for m in METRICS), f"{r['ms_per_query']:.1f}"]
            for mode, r in rows.items()
        ],
    )


def evaluate(site_dir: Path, qa: Path) -> dict[str, dict[str, Any]]:
    from sphinx_ragcite.evaluate import load_qa
    from sphinx_ragcite.retrieval.site import Site

    return mode_rows(by_fusion(Site.load(site_dir), load_qa(qa)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--site", type=Path, help="a build to score (default: the example book)"
    )
    parser.add_argument("--qa", type=Path, default=EXAMPLE_QA, help="QA JSON Lines")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON output")
    args = parser.parse_args(argv)

    site_dir = example_site(args.site)
    results = evaluate(site_dir, args.qa)
    passages = read_manifest(site_dir)["counts"]["passages"]

    questions = next(iter(results.values()))["questions"]
    print(f"Retrieval quality, {questions} answerable questions, {passages} passages")
    print(rows_table(results))
    best_single = max(results["bm25"]["recall@5"], results["dense"]["recall@5"])
    checks = {
        fusion: results[f"hybrid ({fusion})"]["recall@5"] >= best_single
        for fusion in ("rrf", "linear")
    }
    for fusion, ok in checks.items():
        print(
            f"hybrid ({fusion}) recall@5 >= max(bm25, dense) recall@5 "
            f"({results[f'hybrid ({fusion})']['recall@5']:.3f} vs "
            f"{best_single:.3f}): {'yes' if ok else 'NO'}"
        )

    payload = envelope(
        "retrieval_quality",
        qa=str(args.qa),
        passages=passages,
        results=results,
        hybrid_recall5_at_least_best_single=checks,
    )
    write_result(args.out, payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
