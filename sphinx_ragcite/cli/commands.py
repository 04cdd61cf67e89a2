"""What each ``ragcite`` command does, once its arguments are parsed."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sphinx_ragcite.cli import tables
from sphinx_ragcite.cli.parser import build_parser
from sphinx_ragcite.contracts import MAX_PASSAGE_ID, MAX_QUESTION
from sphinx_ragcite.errors import RagciteError

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

    from pydantic import ValidationError

    from sphinx_ragcite.answer.llm import Generator
    from sphinx_ragcite.contracts import GeneratorName
    from sphinx_ragcite.retrieval.searchable import SearchableSite

EXIT_OK, EXIT_NO_ANSWER, EXIT_USAGE = 0, 1, 2


def make_llm(args: argparse.Namespace) -> Generator:
    """The generator the options ask for (llama.cpp in process by default)."""
    from sphinx_ragcite.answer.llm import make_generator

    llm = make_generator("llm", model=args.model, llm_url=args.llm_url)
    assert llm is not None
    return llm


def _serve(args: argparse.Namespace) -> int:
    try:
        from sphinx_ragcite.server.run import serve
        from sphinx_ragcite.server.settings import ServerSettings
    except ImportError as error:
        raise RagciteError(
            f"the server needs its extra ({error.name} is missing): "
            "pip install 'sphinx-ragcite[serve]'"
        ) from None
    from pydantic import ValidationError

    from sphinx_ragcite.server.sites import parse_site_spec

    sites = [parse_site_spec(spec) for spec in args.sites]
    try:
        settings = ServerSettings(
            build_dir=Path(args.build_dir).resolve() if args.build_dir else None,
            sites=tuple((name, path.resolve()) for name, path in sites),
            host=args.host,
            port=args.port,
            generator=generator_of(args),
            model=args.model,
            llm_url=args.llm_url,
            embedding_model=args.embedding_model,
            workers=args.workers,
            queue_size=args.queue_size,
            cors_origins=tuple(args.cors_origin),
            rate_limit=args.rate_limit,
            forwarded_allow_ips=_proxies(args.forwarded_allow_ips),
            request_timeout=args.timeout,
            qdrant=args.qdrant,
            qdrant_collection=args.collection,
            questions_log=(
                Path(args.questions_log).resolve() if args.questions_log else None
            ),
            questions_log_days=args.questions_log_days,
            log_selections=args.log_selections,
        )
    except ValidationError as error:
        raise RagciteError(f"invalid server options: {_problems(error)}") from None
    return serve(settings, args.log_level)


def _proxies(option: str | None) -> tuple[str, ...]:
    """``--forwarded-allow-ips``, else uvicorn's ``FORWARDED_ALLOW_IPS``,
    else none (uvicorn itself would trust loopback: see the reverse-proxy how-to)."""
    import os

    text = option if option is not None else os.environ.get("FORWARDED_ALLOW_IPS")
    return tuple(item.strip() for item in (text or "").split(",") if item.strip())


def _mcp(args: argparse.Namespace) -> int:
    try:
        from sphinx_ragcite.server.mcp import run_stdio
        from sphinx_ragcite.server.settings import ServerSettings
    except ImportError as error:
        raise RagciteError(
            f"the MCP server needs the serve extra ({error.name} is missing): "
            "pip install 'sphinx-ragcite[serve]'"
        ) from None
    from pydantic import ValidationError

    from sphinx_ragcite.server.sites import parse_site_spec

    sites = [parse_site_spec(spec) for spec in args.sites]
    try:
        settings = ServerSettings(
            build_dir=Path(args.build_dir).resolve() if args.build_dir else None,
            sites=tuple((name, path.resolve()) for name, path in sites),
            generator=generator_of(args),
            model=args.model,
            llm_url=args.llm_url,
            embedding_model=args.embedding_model,
            request_timeout=args.timeout,
            rate_limit=0,
            qdrant=args.qdrant,
            qdrant_collection=args.collection,
        )
    except ValidationError as error:
        raise RagciteError(f"invalid options: {_problems(error)}") from None
    return run_stdio(settings, args.log_level)


def _problems(error: ValidationError) -> str:
    """Each problem as ``option: message``; one about the options together
    (BUILD_DIR or --site) has no option to name."""
    return "; ".join(
        f"{where}: {message}" if where else message
        for e in error.errors()
        for where, message in [
            (".".join(map(str, e["loc"])), e["msg"].removeprefix("Value error, "))
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "serve":
            return _serve(args)
        if args.command == "mcp":
            return _mcp(args)
        if args.command == "push":
            return _push(args)
        if args.command == "report":
            return _report(args)
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


def generator_of(args: argparse.Namespace) -> GeneratorName:
    """Extractive unless a model is asked for (--generator llm, --model, --llm-url)."""
    if args.generator in ("extractive", "llm"):
        return args.generator  # type: ignore[no-any-return]
    return "llm" if args.model or args.llm_url else "extractive"


def _load(args: argparse.Namespace) -> SearchableSite:
    from sphinx_ragcite.retrieval.site import Site

    if getattr(args, "qdrant", None):
        from sphinx_ragcite.retrieval.qdrant import QdrantSite

        return QdrantSite.for_build(
            args.qdrant, args.site, args.collection, model_dir=args.embedding_model
        )
    return Site.load(args.site, model_dir=args.embedding_model)


def _push(args: argparse.Namespace) -> int:
    from sphinx_ragcite.retrieval.qdrant import connect, push
    from sphinx_ragcite.retrieval.site import Site

    site = Site.load(args.build_dir)
    client = connect(args.qdrant, create=True)
    try:
        result = push(
            client,
            site,
            args.collection,
            name=args.site_name,
            version=args.site_version,
        )
    finally:
        client.close()
    print(
        f"pushed {result.upserted} passages of {result.site} "
        f"{result.version!r} to collection {result.collection} at {args.qdrant}; "
        f"removed {result.removed} that are gone"
    )
    return EXIT_OK


def _report(args: argparse.Namespace) -> int:
    from sphinx_ragcite.questions.cli import report

    return report(args.logs, args.html, args.json, since=args.since, site=args.site)


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
    sys.stdout.write(tables.hits(hits))
    return EXIT_OK


def _ask(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from sphinx_ragcite.answer.engine import AnswerEngine
    from sphinx_ragcite.cite.records import Book, CitationSettings
    from sphinx_ragcite.cite.styles import check_style
    from sphinx_ragcite.cli.output import Options, outcome_of, render
    from sphinx_ragcite.cli.terminal import Spinner, wants_color

    question = args.question.strip()
    if not 1 <= len(question) <= MAX_QUESTION:
        raise RagciteError(
            f"the question must be 1 to {MAX_QUESTION} characters, got {len(question)}"
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
        generator = generator_of(args)
        llm = make_llm(args) if generator == "llm" else None
        engine = AnswerEngine(site, llm=llm, k=args.k)
        spinner.update("Searching the book…")
        answer = None
        for event in engine.stream(
            question,
            mode="selection" if selection else "book",
            selection=selection,
            generator=generator,
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
    return EXIT_OK if outcome_of(answer) == "answer" else EXIT_NO_ANSWER


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
    from sphinx_ragcite.cite.records import Book, CitationSettings, lookup
    from sphinx_ragcite.cite.reference_files import export
    from sphinx_ragcite.cite.styles import check_style, format_reference

    for passage_id in args.passage_ids:
        if len(passage_id) > MAX_PASSAGE_ID:  # as the server refuses it
            raise RagciteError(
                f"passage ID {passage_id[:20]!r}...: must be at most "
                f"{MAX_PASSAGE_ID} characters"
            )
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
    from sphinx_ragcite.retrieval.site import Site

    questions = load_qa(args.qa)
    site = Site.load(args.site, model_dir=args.embedding_model)
    if args.answers:
        return _eval_answers(args, site, questions)
    modes = args.mode or (["bm25", "dense", "hybrid"] if site.has_dense else ["bm25"])
    results = evaluate_retrieval(site, questions, modes, fusion=args.fusion)
    if args.json:
        print(json.dumps(results, indent=2, sort_keys=True))
        return EXIT_OK
    sys.stdout.write(tables.retrieval(results, len(site.passages), CUTOFFS))
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
    sys.stdout.write(tables.answers(results))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
