"""How well does retrieval find the right passage in real documentation?

Why: ``retrieval_quality.py`` scores the example book, which was written
together with its questions. This benchmark scores a third-party site instead:
Click's documentation (``../shared/corpora/click-docs``, see ``_corpora.py``),
built with the extension, its own theme and extensions (autodoc API pages
included), against ``benchmarks/click_qa.jsonl``: questions a Click user
would ask, in their own words, each with gold passage IDs and a short answer
that occurs verbatim in one of them (two questions the docs cannot answer are
left out of the metrics). It runs ``sphinx_ragcite.evaluate.evaluate_retrieval``
(the code behind ``ragcite eval``) for bm25, dense and hybrid, once with
reciprocal rank fusion and once with linear fusion (bm25 and dense do not
depend on the fusion), and lists the questions hybrid (rrf) misses in its
top 5. It then runs the extractive answer engine on the same questions
(``evaluate_answers``, the code behind ``ragcite eval --answers``): a held-out
check of the abstention and support thresholds, which were calibrated on the
example book.

Run from the repository root (a clean build of click-docs takes about a
minute on 2 cores; the evaluation a few seconds)::

    .venv/bin/python benchmarks/corpora_retrieval.py
    .venv/bin/python benchmarks/corpora_retrieval.py --site path/to/click/html

``--site`` reuses a build (it must be of the same click-docs, or the gold IDs
will not match). Results go to ``benchmarks/results/corpora_retrieval.json``
unless ``--out``. Exit code 2 when the corpus or its dependencies are missing.
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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import _corpora  # noqa: E402
from _report import table  # noqa: E402

CORPUS = "click-docs"
DEFAULT_QA = HERE / "click_qa.jsonl"
DEFAULT_OUT = HERE / "results" / "corpora_retrieval.json"
MODES = ("bm25", "dense", "hybrid")
FUSIONS = ("rrf", "linear")
METRICS = ("recall@1", "recall@5", "recall@10", "mrr@10", "ndcg@10")
LOADAVG = os.getloadavg() if hasattr(os, "getloadavg") else None


def build_corpus(dest: Path) -> tuple[Path, float]:
    """A clean HTML build of click-docs with the extension: (outdir, seconds)."""
    srcdir = _corpora.prepare_corpus(CORPUS, dest, with_ragcite=True)
    out = dest / "html"
    cmd = [sys.executable, "-m", "sphinx", "-q", "-b", "html", "-N"]
    cmd += ["-d", str(dest / "doctrees"), str(srcdir), str(out)]
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=srcdir.parent, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr}")
    return out, time.perf_counter() - started


def evaluate(site_dir: Path, qa: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Metrics per fusion and mode, and the questions hybrid (rrf) misses."""
    from sphinx_ragcite.evaluate import evaluate_retrieval, load_qa, relevant_rows
    from sphinx_ragcite.retrieval.site import Site

    site = Site.load(site_dir)
    questions = load_qa(qa)
    site.embedder  # noqa: B018  load the model before timing ms/query
    results = {
        fusion: evaluate_retrieval(site, questions, MODES, fusion=fusion)
        for fusion in FUSIONS
    }
    misses = []
    for question in questions:
        if not question.answerable:
            continue
        relevant = relevant_rows(site, question)
        hits = site.search(question.question, 10, mode="hybrid", fusion="rrf")
        ranks = [i for i, hit in enumerate(hits, start=1) if hit.row in relevant]
        if not ranks or ranks[0] > 5:
            misses.append(
                {
                    "question": question.question,
                    "gold": list(question.passage_ids),
                    "rank": ranks[0] if ranks else None,
                    "top3": [hit.passage_id for hit in hits[:3]],
                }
            )
    return results, misses


def evaluate_extractive_answers(site_dir: Path, qa: Path) -> dict[str, Any]:
    """The extractive answer engine on the same questions: a held-out check of
    the thresholds calibrated on the example book."""
    from sphinx_ragcite.answer.engine import AnswerEngine
    from sphinx_ragcite.evaluate import evaluate_answers, load_qa
    from sphinx_ragcite.retrieval.site import Site

    engine = AnswerEngine(Site.load(site_dir))
    return evaluate_answers(engine, load_qa(qa), "extractive")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--site", type=Path, help="an existing click-docs build (default: build one)"
    )
    parser.add_argument("--qa", type=Path, default=DEFAULT_QA, help="QA JSON Lines")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON output")
    args = parser.parse_args(argv)

    if args.site is None:
        if _corpora.corpus_path(CORPUS) is None:
            print(f"{CORPUS} not found: set {_corpora.ENV_VAR}", file=sys.stderr)
            return 2
        missing = _corpora.missing_deps(CORPUS)
        if missing:
            print(
                f'{CORPUS} needs {missing}: pip install -e ".[corpora]"',
                file=sys.stderr,
            )
            return 2

    build_seconds = None
    with tempfile.TemporaryDirectory(prefix="ragcite-corpora-retrieval-") as tmp:
        site_dir = args.site
        if site_dir is None:
            site_dir, build_seconds = build_corpus(Path(tmp))
        manifest = json.loads(
            (site_dir / "_ragcite" / "manifest.json").read_text("utf-8")
        )
        results, misses = evaluate(site_dir, args.qa)
        answers = evaluate_extractive_answers(site_dir, args.qa)

    rows = {
        "bm25": results["rrf"]["bm25"],
        "dense": results["rrf"]["dense"],
        "hybrid (rrf)": results["rrf"]["hybrid"],
        "hybrid (linear)": results["linear"]["hybrid"],
    }
    questions = rows["bm25"]["questions"]
    passages = manifest["counts"]["passages"]
    print(
        f"Retrieval on {CORPUS}: {questions} answerable questions, {passages} passages"
    )
    print(
        table(
            ["mode", *METRICS, "ms/query"],
            [
                [
                    mode,
                    *(f"{r[m]:.3f}" for m in METRICS),
                    f"{r['ms_per_query']:.1f}",
                ]
                for mode, r in rows.items()
            ],
        )
    )
    print(f"\nhybrid (rrf) misses the gold passage in its top 5 for {len(misses)}:")
    for miss in misses:
        rank = miss["rank"] or ">10"
        print(f"  rank {rank}: {miss['question']}")

    answer_metrics = (
        "grounded_rate",
        "answered_with_supporting_citation",
        "citation_precision",
        "citation_validity",
        "latency_p50_ms",
    )
    print(f"\nExtractive answers on the same {questions} questions:")
    print(
        table(
            ["metric", "value"],
            [[m, f"{answers[m]:.3f}"] for m in answer_metrics],
        )
    )

    payload = {
        "benchmark": "corpora_retrieval",
        "corpus": CORPUS,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "loadavg_at_start": LOADAVG,
        "loadavg_at_end": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "qa": str(args.qa.relative_to(HERE.parent))
        if args.qa.resolve().is_relative_to(HERE.parent)
        else str(args.qa),
        "build_seconds": build_seconds,
        "passages": passages,
        "documents": manifest["counts"].get("documents"),
        "results": {"rrf": results["rrf"], "linear": results["linear"]},
        "table": rows,
        "hybrid_rrf_misses_at_5": misses,
        "answers_extractive": answers,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=2) + "\n", "utf-8")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
