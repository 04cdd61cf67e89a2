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
minute on 2 cores, and is reused while click-docs and the package's build
side are unchanged; the evaluation a few seconds)::

    .venv/bin/python benchmarks/corpora_retrieval.py
    .venv/bin/python benchmarks/corpora_retrieval.py --site path/to/click/html

``--site`` takes another build (it must be of the same click-docs, or the gold
IDs will not match). Results go to ``benchmarks/results/corpora_retrieval.json``
unless ``--out``. Exit code 2 when the corpus or its dependencies are missing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from benchmarks._harness import (
    BENCHMARKS,
    REPO,
    RESULTS,
    checked_site,
    corpus_site,
    envelope,
    read_manifest,
    table,
    write_result,
)
from benchmarks.retrieval_quality import by_fusion, mode_rows, rows_table

CORPUS = "click-docs"
DEFAULT_QA = BENCHMARKS / "click_qa.jsonl"
DEFAULT_OUT = RESULTS / "corpora_retrieval.json"


def evaluate(site_dir: Path, qa: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Metrics per fusion and mode, and the questions hybrid (rrf) misses."""
    from sphinx_ragcite.evaluate import load_qa, relevant_rows
    from sphinx_ragcite.retrieval.site import Site

    site = Site.load(site_dir)
    questions = load_qa(qa)
    results = by_fusion(site, questions)
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

    build_seconds = None
    if args.site is not None:
        site_dir = checked_site(args.site)
    else:
        try:
            site_dir, build_seconds = corpus_site(CORPUS)
        except FileNotFoundError as error:
            print(error, file=sys.stderr)
            return 2
    manifest = read_manifest(site_dir)
    results, misses = evaluate(site_dir, args.qa)
    answers = evaluate_extractive_answers(site_dir, args.qa)

    rows = mode_rows(results)
    questions = rows["bm25"]["questions"]
    passages = manifest["counts"]["passages"]
    print(
        f"Retrieval on {CORPUS}: {questions} answerable questions, {passages} passages"
    )
    print(rows_table(rows))
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

    qa = args.qa.resolve()
    payload = envelope(
        "corpora_retrieval",
        corpus=CORPUS,
        qa=str(qa.relative_to(REPO) if qa.is_relative_to(REPO) else args.qa),
        build_seconds=build_seconds,
        passages=passages,
        documents=manifest["counts"].get("documents"),
        results={"rrf": results["rrf"], "linear": results["linear"]},
        table=rows,
        hybrid_rrf_misses_at_5=misses,
        answers_extractive=answers,
    )
    write_result(args.out, payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
