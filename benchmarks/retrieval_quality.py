"""Does hybrid retrieval find the right passage more often than BM25 or dense?

Why: hybrid search costs a sentence encoder at build and query time; it is only
worth it if fusing the two rankings beats each of them. This benchmark builds
the example book and scores every retrieval mode on ``example_book/qa.jsonl``
with ``sphinx_ragcite.evaluate.evaluate_retrieval`` (the code behind
``ragcite eval``): BM25, dense, hybrid with reciprocal rank fusion (the
default) and hybrid with linear (min-max normalised) score fusion. It reports
recall@1/5/10, MRR@10, nDCG@10 and ms per query, and checks that hybrid
recall@5 is at least the better of BM25's and dense's.

Run from the repository root (about 20 seconds)::

    .venv/bin/python benchmarks/retrieval_quality.py
    .venv/bin/python benchmarks/retrieval_quality.py --site path/to/html --qa my.jsonl

Results go to ``benchmarks/results/retrieval_quality.json`` unless ``--out``.
The script exits 0 even when the check fails; the JSON records the outcome.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _report import table

HERE = Path(__file__).resolve().parent
EXAMPLE_BOOK = HERE.parent / "example_book"
DEFAULT_OUT = HERE / "results" / "retrieval_quality.json"
METRICS = ("recall@1", "recall@5", "recall@10", "mrr@10", "ndcg@10")
#: Other processes on the machine skew every timing: recorded with the results.
LOADAVG = os.getloadavg() if hasattr(os, "getloadavg") else None


def build_example(dest: Path) -> Path:
    """A fresh HTML build of example_book; returns its output directory."""
    out = dest / "html"
    cmd = [sys.executable, "-m", "sphinx", "-q", "-b", "html"]
    cmd += ["-d", str(dest / "doctrees"), str(EXAMPLE_BOOK), str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr}")
    return out


def evaluate(site_dir: Path, qa: Path) -> dict[str, dict[str, Any]]:
    from sphinx_ragcite.evaluate import evaluate_retrieval, load_qa
    from sphinx_ragcite.retrieval.site import Site

    site = Site.load(site_dir)
    questions = load_qa(qa)
    site.embedder  # noqa: B018  load the model before timing ms/query
    rrf = evaluate_retrieval(site, questions, ("bm25", "dense", "hybrid"))
    linear = evaluate_retrieval(site, questions, ("hybrid",), fusion="linear")
    return {
        "bm25": rrf["bm25"],
        "dense": rrf["dense"],
        "hybrid (rrf)": rrf["hybrid"],
        "hybrid (linear)": linear["hybrid"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--site", type=Path, help="an existing build to score (default: build one)"
    )
    parser.add_argument(
        "--qa", type=Path, default=EXAMPLE_BOOK / "qa.jsonl", help="QA JSON Lines"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON output")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="ragcite-quality-") as tmp:
        site_dir = args.site or build_example(Path(tmp))
        results = evaluate(site_dir, args.qa)
        passages = json.loads(
            (site_dir / "_ragcite" / "manifest.json").read_text("utf-8")
        )["counts"]["passages"]

    questions = next(iter(results.values()))["questions"]
    print(f"Retrieval quality, {questions} answerable questions, {passages} passages")
    print(
        table(
            ["mode", *METRICS, "ms/query"],
            [
                [
                    mode,
                    *(f"{r[m]:.3f}" for m in METRICS),
                    f"{r['ms_per_query']:.1f}",
                ]
                for mode, r in results.items()
            ],
        )
    )
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

    payload = {
        "benchmark": "retrieval_quality",
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "loadavg_at_start": LOADAVG,
        "loadavg_at_end": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "qa": str(args.qa),
        "passages": passages,
        "results": results,
        "hybrid_recall5_at_least_best_single": checks,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=2) + "\n", "utf-8")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
