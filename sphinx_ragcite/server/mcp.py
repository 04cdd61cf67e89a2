"""The MCP door: the book's tools and resources for coding assistants.

``ragcite mcp BUILD_DIR`` serves it over stdio; ``ragcite serve`` mounts the
same server at ``/mcp`` (streamable HTTP) behind the API's guards. Its tools
call what the HTTP API calls: ``ask`` runs :func:`answering.answer`, the one
path of ``POST /api/ask``, so the same input gives the same answer JSON.

Both doors answer both protocol eras the SDK serves: the ``initialize``
handshake (2025-11-25 and older) and 2026-07-28's stateless requests, each
carrying its version in ``_meta`` (stdio: the first request decides; HTTP:
the ``MCP-Protocol-Version`` header of each POST). The catalog is cacheable
(:data:`CACHE_HINTS`).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.caching import CacheHint
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import (
    ResourceNotFoundError,
    ToolError,
    UnexpectedToolError,
)
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, ToolAnnotations
from pydantic import BaseModel, Field, ValidationError
from starlette.routing import Route

from sphinx_ragcite import __version__
from sphinx_ragcite.contracts import (
    DEFAULT_K,
    MAX_PASSAGE_ID,
    MAX_QUESTION,
    MAX_SELECTION,
    Answer,
    CitationStyle,
    ExportFormat,
    GeneratorName,
    ServedRecord,
)
from sphinx_ragcite.errors import RagciteError
from sphinx_ragcite.retrieval.searchable import Filters
from sphinx_ragcite.server import answering
from sphinx_ragcite.server.guards import MCP_PATH
from sphinx_ragcite.server.passages import (
    PassageNotFound,
    citing_site,
    find_passage,
    references,
    too_long,
)
from sphinx_ragcite.server.responses import jsonrpc_error
from sphinx_ragcite.server.schemas import (
    AskFilters,
    AskRequest,
    Chapters,
    Count,
    Docnames,
    PassageIdText,
    Question,
    ScopeText,
    SearchResponse,
    Selection,
    problem,
    problem_text,
)
from sphinx_ragcite.server.sites import ScopeError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from contextlib import AbstractAsyncContextManager

    from mcp.server.caching import CacheableMethod
    from mcp.server.mcpserver.context import Context
    from pydantic import AnyUrl
    from starlette.types import ASGIApp, Receive, Scope, Send

    from sphinx_ragcite.server.settings import ServerSettings
    from sphinx_ragcite.server.sites import ServedSite
    from sphinx_ragcite.server.state import SiteScope, State

logger = logging.getLogger("sphinx_ragcite.server")

NAME = "sphinx-ragcite"
#: Passage IDs one ``cite`` call takes.
MAX_CITE = 50
PASSAGE_URI = "ragcite://passage/{passage_id}"
TOC_URI = "ragcite://toc"
#: Characters of a resource URI or tool name read before it is refused.
MAX_NAME = 200
#: How long a 2026-07-28 client may reuse the catalog (``ttlMs``). The tools,
#: their schemas, the resource list and templates, and ``server/discover``
#: change only with a new sphinx-ragcite, which takes a restart; an hour bounds
#: how long a client keeps an upgraded server's old list.
CATALOG_TTL_MS = 60 * 60 * 1000
#: ``public``: every caller gets the same catalog (no per-user tools). A
#: passage (``resources/read``) keeps the SDK's 0 ms, ``private``: a rebuilt
#: book behind a restarted server may change its text at any time.
CACHE_HINTS: dict[CacheableMethod, CacheHint] = {
    method: CacheHint(ttl_ms=CATALOG_TTL_MS, scope="public")
    for method in (
        "server/discover",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
    )
}

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
READ_ONLY = ToolAnnotations(readOnlyHint=True, openWorldHint=False)
SEARCH = (
    "Rank the book's passages for a query (BM25 + dense retrieval, fused). Each "
    "hit has its passage ID, URL (page#ID), heading path, snippet, text and "
    "scores. Hits are candidates, not evidence: read or cite them by ID. " + CITATIONS
)
ASK = (
    "Answer a question from the book. Returns the answer JSON; `outcome` says "
    "what it holds. `answer`: `answer` with [n] markers, `citations` (n, "
    "passage_id, url, quote, scores), `confidence`, `grounded` true; every "
    "sentence was checked against the passage it cites and every citation is "
    "a retrieved passage. `passages`: no answer could be stated; `passages` "
    "lists up to three passages that may hold it (url, `quote`: the best "
    "sentence, `confidence`): say the book may answer it there, do not state "
    "it as the answer. `not_found`: the book does not seem to cover it (closest "
    "pages in `metadata.see_also`), say so. Pass `selection` (text the user "
    "selected) to explain it. " + CITATIONS
)
GET_PASSAGE = (
    "One passage by its ID (e.g. ch3-sec2-p4): its text, URL, chapter, section "
    "and heading path. An ID from an older build whose text moved gets an "
    "error naming its new ID and URL."
)
CITE = (
    "References for passage IDs (of one site): in a citation style (plain, "
    "apa, ieee, acm, chicago) or as a BibTeX, RIS or CSL-JSON export."
)

# The tools' arguments: the field types of ``POST /api/ask`` (schemas.py).
QuestionArgument = Annotated[
    Question, Field(description=f"1 to {MAX_QUESTION} characters")
]
SiteArgument = Annotated[
    ScopeText | None,
    Field(
        description="several sites served: this one by name ('*': all, the "
        "default); answers, hits and passages then name their site and version"
    ),
]
VersionArgument = Annotated[
    ScopeText | None,
    Field(description="several sites served: only the sites of this version"),
]
DocnamesArgument = Annotated[
    Docnames | None, Field(description="only these documents (and below)")
]
ChaptersArgument = Annotated[
    Chapters | None, Field(description="only these chapter numbers (chC)")
]
PassageIdArgument = Annotated[
    PassageIdText, Field(description=f"chC-secS-pP, at most {MAX_PASSAGE_ID}")
]


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
    #: with several sites: its name (URLs then start with ``NAME/``)
    site: str | None = None
    chapters: list[TocChapter]


class SiteTocs(BaseModel):
    """``ragcite://toc`` when several sites are served: one per site."""

    sites: list[Toc]


class BookServer(MCPServer[Any]):
    """The SDK's server with the API's rules for what a client sends.

    Arguments are validated by the field types of ``POST /api/ask``; a call
    they refuse, or with an argument the tool does not take, gets the
    API's ``field: message`` (never pydantic's report), and nothing
    over-long is echoed back.

    No ``subscriptions/listen``: nothing it lists changes while it runs, so
    2026-07-28 discovery says ``listChanged: false``, and no stateless POST
    is held open for notifications that never come (the SDK's default bus).
    """

    def __init__(self) -> None:
        super().__init__(
            NAME,
            title="Ask the book",
            description="Search, ask and cite a Sphinx book with paragraph-level, "
            "verified citations.",
            instructions=INSTRUCTIONS,
            version=__version__,
            log_level="WARNING",
            warn_on_duplicate_tools=False,
            cache_hints=CACHE_HINTS,
            subscriptions=False,
        )
        #: tool name -> the arguments it takes
        self.arguments: dict[str, frozenset[str]] = {}

    def add(self, handler: Callable[..., Any], description: str) -> None:
        """*handler* as a read-only tool of its own name."""
        name = handler.__name__
        self.add_tool(
            handler, name=name, description=description, annotations=READ_ONLY
        )
        self.arguments[name] = frozenset(inspect.signature(handler).parameters)

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        context: Context[Any, Any] | None = None,
    ) -> Any:
        taken = self.arguments.get(name)
        if taken is None:
            raise ToolError(f"Unknown tool: {_shown(name)}")  # as the SDK says it
        if extra := sorted(set(arguments) - taken):
            raise ToolError(
                _refused(name, extra[0][:MAX_NAME], "Extra inputs are not permitted")
            )
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise
        except ToolError as error:
            cause = error.__cause__
            if not isinstance(cause, ValidationError):
                raise
            field, message = problem(
                cause.errors(include_url=False, include_input=False)
            )
            raise ToolError(_refused(name, field, message)) from cause

    async def read_resource(
        self, uri: AnyUrl | str, context: Context[Any, Any] | None = None
    ) -> Any:
        text = str(uri)
        passage_id = text.removeprefix(PASSAGE_URI.partition("{")[0])
        if passage_id != text and (why := too_long(passage_id)):
            raise MCPError(INVALID_PARAMS, f"passage_id: {why}")  # no URI echoed
        if len(text) > MAX_NAME + MAX_PASSAGE_ID:
            limit = MAX_NAME + MAX_PASSAGE_ID
            raise MCPError(INVALID_PARAMS, f"uri: must be at most {limit} characters")
        return await super().read_resource(uri, context)

    async def get_prompt(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        context: Context[Any, Any] | None = None,
    ) -> Any:
        """An unknown prompt is the caller's mistake, not a crash to log."""
        if name not in {prompt.name for prompt in await self.list_prompts()}:
            raise MCPError(INVALID_PARAMS, f"Unknown prompt: {_shown(name)}")
        return await super().get_prompt(name, arguments, context)


def _shown(name: str) -> str:
    """*name* as an error shows it: cut at :data:`MAX_NAME` characters."""
    return name if len(name) <= MAX_NAME else f"{name[:MAX_NAME]}..."


def _refused(tool: str, field: str | None, message: str) -> str:
    """As the SDK words a tool's error, with the API's ``field: message``."""
    return f"Error executing tool {tool}: {problem_text(field, message)}"


def build_server(current: Callable[[], State]) -> MCPServer[Any]:
    """The MCP server over the state *current* returns (loaded by the caller)."""
    server = BookServer()
    _add_answer_tools(server, current)
    _add_passage_tools(server, current)
    _add_resources(server, current)
    return server


def _add_answer_tools(server: BookServer, current: Callable[[], State]) -> None:
    """``search`` and ``ask``: what ``/api/search`` and ``/api/ask`` answer."""

    async def search(
        query: QuestionArgument,
        k: Annotated[Count, Field(description="hits wanted")] = 10,
        docnames: DocnamesArgument = None,
        chapters: ChaptersArgument = None,
        site: SiteArgument = None,
        version: VersionArgument = None,
    ) -> SearchResponse:
        state = current()
        searcher = _scope(state, site, version).searcher
        filters = _filters(docnames, chapters)
        search = partial(searcher.search, filters=filters)
        hits = await _blocking(state, search, query, k)
        return SearchResponse.model_validate({"hits": [h.as_json() for h in hits]})

    async def ask(
        question: QuestionArgument,
        selection: Annotated[
            Selection | None,
            Field(description=f"selected text to explain, at most {MAX_SELECTION}"),
        ] = None,
        style: Annotated[
            CitationStyle | None, Field(description="citation style of the sources")
        ] = None,
        k: Annotated[Count, Field(description="passages")] = DEFAULT_K,
        docnames: DocnamesArgument = None,
        chapters: ChaptersArgument = None,
        generator: Annotated[
            GeneratorName | None, Field(description="default: the server's")
        ] = None,
        site: SiteArgument = None,
        version: VersionArgument = None,
    ) -> Answer:
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
            raise ToolError(problem_text(*problem(error.errors()))) from None
        try:
            answer = await answering.answer(current(), body, door="mcp")
        except answering.AskFailure as failure:
            raise ToolError(failure.message) from None
        if answer is None:  # only when the caller went away
            raise ToolError("The answer was abandoned.")
        return answer

    server.add(search, SEARCH)
    server.add(ask, ASK)


def _add_passage_tools(server: BookServer, current: Callable[[], State]) -> None:
    """``get_passage`` and ``cite``: passages by ID, as ``/api/passages``."""

    async def get_passage(
        passage_id: PassageIdArgument,
        site: SiteArgument = None,
        version: VersionArgument = None,
    ) -> ServedRecord:
        try:
            return find_passage(current(), passage_id, site, version)
        except (ScopeError, PassageNotFound) as error:
            raise ToolError(str(error)) from None

    async def cite(
        passage_ids: Annotated[
            list[PassageIdArgument], Field(min_length=1, max_length=MAX_CITE)
        ],
        style: Annotated[
            CitationStyle | None, Field(description="default: the book's")
        ] = None,
        export: Annotated[
            ExportFormat | None, Field(description="a reference file instead")
        ] = None,
        site: SiteArgument = None,
        version: VersionArgument = None,
    ) -> CiteResult:
        state = current()
        try:
            return await _blocking(
                state, _cite, state, passage_ids, style, export, site, version
            )
        except RagciteError as error:
            raise ToolError(str(error)) from None

    server.add(get_passage, GET_PASSAGE)
    server.add(cite, CITE)


def _add_resources(server: BookServer, current: Callable[[], State]) -> None:
    @server.resource(
        PASSAGE_URI,
        name="passage",
        title="A passage of the book",
        description="The plain text of one passage, addressed by its ID.",
        mime_type="text/plain",
    )
    def passage_resource(passage_id: str) -> str:
        try:
            return find_passage(current(), passage_id)["text"]
        except (ScopeError, PassageNotFound) as error:  # -32602, not -32603
            raise ResourceNotFoundError(str(error)) from None

    @server.resource(
        TOC_URI,
        name="toc",
        title="Table of contents",
        description="Chapters, sections and passage IDs in reading order (JSON); "
        "with several sites, {'sites': [...]}, one per site.",
        mime_type="application/json",
    )
    def toc_resource() -> str:
        sites = current().sites
        if not sites.several:
            return table_of_contents(sites.members[0]).model_dump_json(
                exclude_none=True
            )
        tocs = SiteTocs(sites=[table_of_contents(member) for member in sites])
        return tocs.model_dump_json(exclude_none=True)


def _scope(state: State, site: str | None, version: str | None) -> SiteScope:
    try:
        return state.scope(site, version)
    except ScopeError as wrong:
        raise ToolError(str(wrong)) from None


async def _blocking(state: State, function: Callable[..., Any], *args: Any) -> Any:
    """Search and embedding block: they run on the executor every request shares."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(state.executor, partial(function, *args))


def _filters(docnames: list[str] | None, chapters: list[int] | None) -> Filters | None:
    if not docnames and not chapters:
        return None
    return Filters(tuple(docnames or ()), tuple(chapters or ()))


def _cite(
    state: State,
    passage_ids: list[str],
    style: str | None,
    export: str | None,
    site: str | None,
    version: str | None,
) -> CiteResult:
    from sphinx_ragcite.cite.records import CitationSettings
    from sphinx_ragcite.cite.reference_files import export as export_file
    from sphinx_ragcite.cite.styles import check_style, format_reference

    ids = list(dict.fromkeys(passage_ids))
    member = citing_site(state, ids, site, version)
    found = references(state, member, ids)
    if export:
        return CiteResult(
            format=export, text=export_file(found, export), passage_ids=ids
        )
    settings = CitationSettings.from_manifest(member.site.manifest)
    chosen = check_style(style or settings.style)
    lines = [
        f"[{n}] {format_reference(reference, chosen, settings)}"
        for n, reference in enumerate(found, start=1)
    ]
    return CiteResult(format=chosen, text="\n".join(lines) + "\n", passage_ids=ids)


def table_of_contents(member: ServedSite) -> Toc:
    """*member*'s chapters, sections and passages, with the URLs served."""
    chapters: dict[str, TocChapter] = {}
    for record in _served(member):
        chapter = chapters.get(record["docname"])
        if chapter is None:
            chapter = chapters[record["docname"]] = TocChapter(
                chapter=record["chapter"],
                docname=record["docname"],
                url=record["url"].partition("#")[0],
                sections=[],
            )
        heading_path = list(record["heading_path"])
        if not chapter.sections or chapter.sections[-1].heading_path != heading_path:
            chapter.sections.append(
                TocSection(
                    section=record["section"],
                    heading_path=heading_path,
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
    manifest = member.site.manifest
    return Toc(
        project=manifest.project,
        version=manifest.release or manifest.version,
        site=member.name or None,
        chapters=list(chapters.values()),
    )


def _served(member: ServedSite) -> Iterable[ServedRecord]:
    return (member.annotate(record) for record in member.site.passages)


LOOPBACK = ("127.0.0.1", "localhost", "::1")
SCHEMES = ("http", "https")


class PostOnly:
    """``/mcp`` takes POST only: stateless, it has no stream to offer a GET
    (the SDK's would stay open, sending nothing) nor a session to DELETE.
    Anything else is a 405 at once, as the transport's spec allows."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] == "POST":
            await self.app(scope, receive, send)
            return
        message = (
            f"{scope['method']} is not allowed on {MCP_PATH}; send JSON-RPC by POST."
        )
        response = jsonrpc_error(405, message, headers={"Allow": "POST"})
        await response(scope, receive, send)


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
            # DNS rebinding: a page elsewhere must not reach a local server;
            # a page of this machine may, on any port or none (80, 443)
            hosts = ["127.0.0.1", "localhost", "[::1]"]
            ports = [f"{host}:*" for host in hosts]
            security = TransportSecuritySettings(
                enable_dns_rebinding_protection=True,
                allowed_hosts=[*ports, *hosts],
                allowed_origins=[
                    *(f"{scheme}://{host}" for scheme in SCHEMES for host in ports),
                    *(f"{scheme}://{host}" for scheme in SCHEMES for host in hosts),
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
        route = app.routes[0]
        assert isinstance(route, Route)
        self.route = Route(self.PATH, endpoint=PostOnly(route.app))

    def running(self) -> AbstractAsyncContextManager[None]:
        return self.server.session_manager.run()


def run_stdio(settings: ServerSettings, log_level: str = "warning") -> int:
    """``ragcite mcp``: load everything, then speak MCP on stdin/stdout.

    The sites are read as ``ragcite serve`` reads them (one BUILD_DIR or
    ``--site NAME=BUILD_DIR``, in memory or from ``--qdrant``). Standard
    output carries the protocol and nothing else: logs go to standard
    error, and anything printed while loading (a model's banner) is sent
    there too.
    """
    import contextlib
    import sys

    import anyio

    from sphinx_ragcite.server.state import load_state

    settings.check_folders()
    logging.basicConfig(
        level=log_level.upper(),
        format="%(levelname)s: %(name)s: %(message)s",
        stream=sys.stderr,
    )
    with contextlib.redirect_stdout(sys.stderr):
        state = load_state(settings)
        server = build_server(lambda: state)
    for member in state.sites:
        logger.info(
            "MCP on stdio for %s%s (%d passages; version %s)",
            member.site.where,
            f" as site {member.name}" if member.name else "",
            len(member.site.passages),
            member.version or "not set",
        )
    try:
        anyio.run(server.run_stdio_async)
    finally:
        state.close()
    return 0
