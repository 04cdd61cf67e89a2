"""The MCP door: the book's tools and resources for coding assistants.

``ragcite mcp BUILD_DIR`` serves it over stdio; ``ragcite serve`` mounts the
same server at ``/mcp`` (streamable HTTP) behind the API's guards. Its tools
call what the HTTP API calls: ``ask`` runs :func:`answering.answer`, the one
path of ``POST /api/ask``, so the same input gives the same answer JSON.
"""

from __future__ import annotations

import asyncio
import logging
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field, ValidationError

from sphinx_ragcite import __version__
from sphinx_ragcite.contracts import (
    DEFAULT_K,
    MAX_K,
    MAX_QUESTION,
    MAX_SELECTION,
    Answer,
    CitationStyle,
    ExportFormat,
    GeneratorName,
    PassageRecord,
    parse_passage_id,
)
from sphinx_ragcite.errors import RagciteError
from sphinx_ragcite.retrieval.site import Filters
from sphinx_ragcite.retrieval.sites import ScopeError
from sphinx_ragcite.server import answering
from sphinx_ragcite.server.guards import MCP_PATH
from sphinx_ragcite.server.schemas import (
    SCOPE_TEXT,
    AskFilters,
    AskRequest,
    SearchResponse,
)

if TYPE_CHECKING:
    from collections.abc import Callable
    from contextlib import AbstractAsyncContextManager

    from sphinx_ragcite.server.settings import ServerSettings
    from sphinx_ragcite.server.state import State

logger = logging.getLogger("sphinx_ragcite.server")

NAME = "sphinx-ragcite"
#: Passage IDs one ``cite`` call takes.
MAX_CITE = 50
PASSAGE_URI = "ragcite://passage/{passage_id}"
TOC_URI = "ragcite://toc"

CITATIONS = (
    "A citation names a passage of the book by its ID (chC-secS-pP: chapter, "
    "section, paragraph) and links to that paragraph (url = page + #ID). Only "
    "the cited passage IDs are evidence for a statement; retrieved but uncited "
    "passages are not."
)
INSTRUCTIONS = (
    "This server answers from one book, offline. Use `search` to find "
    "passages, `ask` for an answer whose every sentence is verified against "
    "the passage it cites, `get_passage` to read a passage, `cite` to turn "
    f"passage IDs into references. {CITATIONS} When you use the book, cite "
    "the passage URL so the reader can check it."
)

#: ``ask``/``search`` when ``ragcite serve --site NAME=...`` serves several sites.
SITE = Field(
    max_length=SCOPE_TEXT,
    description="several sites served: ask this one by name ('*': all, the "
    "default); answers and hits then name their site and version",
)
VERSION = Field(
    max_length=SCOPE_TEXT,
    description="several sites served: only the sites of this version",
)


class CiteResult(BaseModel):
    """References for passage IDs, as text in one style or one export format."""

    format: str = Field(description="the style (plain, apa...) or the export format")
    text: str = Field(description="the references, ready to paste")
    passage_ids: list[str]


class TocPassage(BaseModel):
    passage_id: str
    url: str
    snippet: str


class TocSection(BaseModel):
    section: str
    heading_path: list[str]
    passages: list[TocPassage]


class TocChapter(BaseModel):
    chapter: str
    docname: str
    url: str
    sections: list[TocSection]


class Toc(BaseModel):
    """The book's table of contents, in reading order, down to passage IDs."""

    project: str
    version: str
    chapters: list[TocChapter]


def build_server(current: Callable[[], State]) -> MCPServer[Any]:
    """The MCP server over the state *current* returns (loaded by the caller)."""
    server: MCPServer[Any] = MCPServer(
        NAME,
        title="Ask the book",
        description="Search, ask and cite a Sphinx book with paragraph-level, "
        "verified citations.",
        instructions=INSTRUCTIONS,
        version=__version__,
        log_level="WARNING",
        warn_on_duplicate_tools=False,
    )
    read_only = ToolAnnotations(readOnlyHint=True, openWorldHint=False)

    @server.tool(
        description="Rank the book's passages for a query (BM25 + dense "
        "retrieval, fused). Each hit has its passage ID, URL (page#ID), heading "
        "path, snippet, text and scores. Hits are candidates, not evidence: read "
        "or cite them by ID. " + CITATIONS,
        annotations=read_only,
    )
    async def search(
        query: Annotated[
            str, Field(min_length=1, max_length=MAX_QUESTION, description="query")
        ],
        k: Annotated[int, Field(ge=1, le=MAX_K, description="hits wanted")] = 10,
        docnames: Annotated[
            list[str] | None,
            Field(max_length=50, description="only these documents (and below)"),
        ] = None,
        chapters: Annotated[
            list[int] | None,
            Field(max_length=50, description="only these chapter numbers (chC)"),
        ] = None,
        site: Annotated[str | None, SITE] = None,
        version: Annotated[str | None, VERSION] = None,
    ) -> SearchResponse:
        state = current()
        text = query.strip()
        if not text:
            raise ToolError("query: must not be empty")
        filters = _filters(docnames, chapters)
        try:
            searcher = state.scope(site, version).searcher
        except ScopeError as wrong:
            raise ToolError(str(wrong)) from None
        hits = await _blocking(
            state, partial(searcher.search, filters=filters), text, k
        )
        return SearchResponse.model_validate({"hits": [h.as_json() for h in hits]})

    @server.tool(
        description="Answer a question from the book. Returns the answer JSON: "
        "`answer` with [n] markers, `citations` (n, passage_id, url, quote, "
        "scores), `confidence`, `grounded`. Every sentence was checked against "
        "the passage it cites and every citation is a retrieved passage; when "
        "`grounded` is false the book does not answer it, say so. Pass "
        "`selection` (text the user selected) to explain it. " + CITATIONS,
        annotations=read_only,
    )
    async def ask(
        question: Annotated[
            str,
            Field(min_length=1, description=f"1 to {MAX_QUESTION} characters"),
        ],
        selection: Annotated[
            str | None,
            Field(description=f"selected text to explain, at most {MAX_SELECTION}"),
        ] = None,
        style: Annotated[
            CitationStyle | None, Field(description="citation style of the sources")
        ] = None,
        k: Annotated[int, Field(ge=1, le=MAX_K, description="passages")] = DEFAULT_K,
        docnames: Annotated[list[str] | None, Field(max_length=50)] = None,
        chapters: Annotated[list[int] | None, Field(max_length=50)] = None,
        generator: Annotated[
            GeneratorName | None, Field(description="default: the server's")
        ] = None,
        site: Annotated[str | None, SITE] = None,
        version: Annotated[str | None, VERSION] = None,
    ) -> Answer:
        state = current()
        try:
            body = AskRequest(
                question=question,
                mode="selection" if selection is not None else "book",
                selection=selection,
                k=k,
                filters=(
                    AskFilters(docnames=docnames or [], chapters=chapters or [])
                    if docnames or chapters
                    else None
                ),
                style=style,
                generator=generator,
                site=site,
                version=version,
            )
        except ValidationError as error:
            raise ToolError(_invalid(error)) from None
        try:
            answer = await answering.answer(state, body)
        except answering.AskFailure as failure:
            raise ToolError(failure.message) from None
        if answer is None:  # only when the caller went away
            raise ToolError("The answer was abandoned.")
        return answer

    @server.tool(
        description="One passage by its ID (e.g. ch3-sec2-p4): its text, URL, "
        "chapter, section and heading path. An ID from an older build whose "
        "text moved gets an error naming its new ID and URL.",
        annotations=read_only,
    )
    async def get_passage(
        passage_id: Annotated[str, Field(max_length=100, description="chC-secS-pP")],
    ) -> PassageRecord:
        return _passage(current(), passage_id)

    @server.tool(
        description="References for passage IDs: in a citation style (plain, "
        "apa, ieee, acm, chicago) or as a BibTeX, RIS or CSL-JSON export.",
        annotations=read_only,
    )
    async def cite(
        passage_ids: Annotated[list[str], Field(min_length=1, max_length=MAX_CITE)],
        style: Annotated[
            CitationStyle | None, Field(description="default: the book's")
        ] = None,
        export: Annotated[
            ExportFormat | None, Field(description="a reference file instead")
        ] = None,
    ) -> CiteResult:
        state = current()
        try:
            return await _blocking(state, _cite, state, passage_ids, style, export)
        except RagciteError as error:
            raise ToolError(str(error)) from None

    @server.resource(
        PASSAGE_URI,
        name="passage",
        title="A passage of the book",
        description="The plain text of one passage, addressed by its ID.",
        mime_type="text/plain",
    )
    def passage_resource(passage_id: str) -> str:
        try:
            return _passage(current(), passage_id)["text"]
        except ToolError as error:
            raise ResourceError(str(error)) from None

    @server.resource(
        TOC_URI,
        name="toc",
        title="Table of contents",
        description="Chapters, sections and passage IDs in reading order (JSON).",
        mime_type="application/json",
    )
    def toc_resource() -> str:
        return table_of_contents(current()).model_dump_json()

    return server


async def _blocking(state: State, function: Callable[..., Any], *args: Any) -> Any:
    """Search and embedding block: they run on the executor every request shares."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(state.executor, partial(function, *args))


def _filters(docnames: list[str] | None, chapters: list[int] | None) -> Filters | None:
    if not docnames and not chapters:
        return None
    return Filters(tuple(docnames or ()), tuple(chapters or ()))


def _invalid(error: ValidationError) -> str:
    """``field: message`` of the first problem, as ``/api/ask`` words it."""
    first = error.errors()[0]
    field = ".".join(str(p) for p in first.get("loc", ()))
    message = str(first.get("msg", "invalid")).removeprefix("Value error, ")
    return f"{field}: {message}" if field else message


def _passage(state: State, passage_id: str) -> PassageRecord:
    record = state.site.passage(passage_id)
    if record is not None:
        return record
    hint = state.site.moved_hint(passage_id)
    message = f"No passage {passage_id!r} in this index"
    if hint:
        raise ToolError(f"{message}: {hint}.")
    if parse_passage_id(passage_id) is None:
        raise ToolError(f"{message} (passage IDs look like ch3-sec2-p4).")
    raise ToolError(f"{message}.")


def _cite(
    state: State,
    passage_ids: list[str],
    style: str | None,
    export: str | None,
) -> CiteResult:
    from sphinx_ragcite.cite.records import Book, CitationSettings, lookup
    from sphinx_ragcite.cite.reference_files import export as export_file
    from sphinx_ragcite.cite.styles import check_style, format_reference

    site = state.site
    ids = list(dict.fromkeys(passage_ids))
    book = Book.from_manifest(site.manifest)
    references = lookup(site, ids, book)
    if export:
        return CiteResult(
            format=export, text=export_file(references, export), passage_ids=ids
        )
    settings = CitationSettings.from_manifest(site.manifest)
    chosen = check_style(style or settings.style)
    lines = [
        f"[{n}] {format_reference(reference, chosen, settings)}"
        for n, reference in enumerate(references, start=1)
    ]
    return CiteResult(format=chosen, text="\n".join(lines) + "\n", passage_ids=ids)


def table_of_contents(state: State) -> Toc:
    site = state.site
    chapters: dict[str, TocChapter] = {}
    for record in site.passages:
        chapter = chapters.get(record["docname"])
        if chapter is None:
            chapter = chapters[record["docname"]] = TocChapter(
                chapter=record["chapter"],
                docname=record["docname"],
                url=record["url"].partition("#")[0],
                sections=[],
            )
        if not chapter.sections or chapter.sections[-1].heading_path != list(
            record["heading_path"]
        ):
            chapter.sections.append(
                TocSection(
                    section=record["section"],
                    heading_path=list(record["heading_path"]),
                    passages=[],
                )
            )
        chapter.sections[-1].passages.append(
            TocPassage(
                passage_id=record["passage_id"],
                url=record["url"],
                snippet=record["snippet"],
            )
        )
    manifest = site.manifest
    return Toc(
        project=manifest.project,
        version=manifest.release or manifest.version,
        chapters=list(chapters.values()),
    )


LOOPBACK = ("127.0.0.1", "localhost", "::1")


class HttpMount:
    """The server as the ``/mcp`` route of ``ragcite serve`` (streamable HTTP).

    Stateless, with JSON responses: every request stands alone, so N replicas
    behind a load balancer serve it like the rest of the API. :meth:`running`
    belongs in the app's lifespan (a mounted app's own lifespan never runs).
    """

    PATH = MCP_PATH

    def __init__(self, settings: ServerSettings, current: Callable[[], State]) -> None:
        from mcp.server.transport_security import TransportSecuritySettings

        self.server = build_server(current)
        security = None
        if settings.host in LOOPBACK:
            # DNS rebinding: a page elsewhere must not reach a local server
            ports = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
            security = TransportSecuritySettings(
                enable_dns_rebinding_protection=True,
                allowed_hosts=[*ports, "127.0.0.1", "localhost", "[::1]"],
                allowed_origins=[
                    *(f"http://{host}" for host in ports),
                    *settings.cors_origins,
                ],
            )
        else:
            security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
        app = self.server.streamable_http_app(
            streamable_http_path=self.PATH,
            stateless_http=True,
            json_response=True,
            max_request_body_size=settings.max_body_bytes,
            transport_security=security,
            host=settings.host,
        )
        self.route = app.routes[0]

    def running(self) -> AbstractAsyncContextManager[None]:
        return self.server.session_manager.run()


def run_stdio(settings: ServerSettings, log_level: str = "warning") -> int:
    """``ragcite mcp``: load everything, then speak MCP on stdin/stdout.

    Standard output carries the protocol and nothing else: logs go to
    standard error, and anything printed while loading (a model's banner)
    is sent there too.
    """
    import contextlib
    import sys

    import anyio

    from sphinx_ragcite.server.state import load_state

    logging.basicConfig(
        level=log_level.upper(),
        format="%(levelname)s: %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if settings.build_dir is None or not settings.build_dir.is_dir():
        raise RagciteError(
            f"{settings.build_dir} is not a folder: pass the HTML output of "
            "`python -m sphinx -b html SRC OUT`."
        )
    with contextlib.redirect_stdout(sys.stderr):
        state = load_state(settings)
        server = build_server(lambda: state)
    logger.info(
        "MCP on stdio for %s (%d passages)",
        settings.build_dir,
        len(state.site.passages),
    )
    try:
        anyio.run(server.run_stdio_async)
    finally:
        state.close()
    return 0
