"""The API's routes; everything they share comes from ``app.state.ragcite``."""

from __future__ import annotations

import asyncio
import time
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import JSONResponse, Response
from starlette.routing import Route

from sphinx_ragcite import __version__
from sphinx_ragcite.contracts import MAX_K, MAX_PASSAGE_ID, MAX_QUESTION, Answer
from sphinx_ragcite.questions.log import LogUnavailable
from sphinx_ragcite.server import answering
from sphinx_ragcite.server.answering import AskFailure, EventStreamResponse, Job
from sphinx_ragcite.server.guards import DOCS_PATH
from sphinx_ragcite.server.openapi import docs
from sphinx_ragcite.server.passages import PassageNotFound, find_passage
from sphinx_ragcite.server.responses import error
from sphinx_ragcite.server.schemas import (
    SCOPE_TEXT,
    AskRequest,
    ErrorResponse,
    FeedbackRequest,
    FeedbackResponse,
    Health,
    Passage,
    SearchResponse,
    SiteInfo,
)
from sphinx_ragcite.server.sites import ScopeError
from sphinx_ragcite.server.state import State

if TYPE_CHECKING:
    from collections.abc import Callable

ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorResponse, "description": "invalid request"},
    429: {"model": ErrorResponse, "description": "rate limit exceeded"},
    503: {"model": ErrorResponse, "description": "generation queue full"},
}
METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]
#: Seconds a vote waits for the question log's writer before a 503.
FEEDBACK_TIMEOUT = 10.0


def current(request: Request) -> State:
    state: State = request.app.state.ragcite
    return state


Loaded = Annotated[State, Depends(current)]
SITE_QUERY = Query(
    None,
    max_length=SCOPE_TEXT,
    description="with several sites served: this one (a --site NAME); "
    "'*' or none: all of them",
)
PASSAGE_PATH = Path(
    max_length=MAX_PASSAGE_ID, description="chC-secS-pP, e.g. ch3-sec2-p4"
)
VERSION_QUERY = Query(
    None,
    max_length=SCOPE_TEXT,
    description="only the sites whose conf.py version or release is this",
)
router = APIRouter(prefix="/api")


async def blocking(state: State, function: Callable[..., Any], *args: Any) -> Any:
    """Run *function* in the one executor every blocking call shares."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(state.executor, partial(function, *args))


@router.get(
    "/health",
    response_model=Health,
    responses={
        503: {
            "model": Health,
            "description": "the Qdrant the passages are in cannot answer (reason)",
        }
    },
    tags=["service"],
)
async def health(state: Loaded) -> Any:
    """Index and model loaded, and how full the model's queue is; a 503 while
    the Qdrant the passages are in cannot answer (looked at every few seconds).
    ``service`` and ``sites`` tell the widget this is ragcite serving its site."""
    sites = state.sites
    store = state.store
    problem = await asyncio.to_thread(store.problem) if store is not None else None
    body = Health(
        status="error" if problem else "ok",
        reason=problem,
        version=__version__,
        index_loaded=problem is None,
        index_version=sites.version,
        passages=sites.passages,
        model_loaded=state.llm is not None,
        model=state.llm.name if state.llm else None,
        generator=state.settings.generator if state.llm else "extractive",
        queue_depth=state.slots.depth,
        queue_size=state.slots.size,
        sites=[SiteInfo(**m.info()) for m in sites] if sites.several else None,
        feedback=state.questions is not None,
    )
    if problem:
        return JSONResponse(body.model_dump(mode="json"), status_code=503)
    return body


@router.get(
    "/search",
    response_model=SearchResponse,
    responses={k: v for k, v in ERRORS.items() if k != 503},
    tags=["answers"],
)
async def search(
    state: Loaded,
    q: str = Query(..., min_length=1, max_length=MAX_QUESTION),
    k: int = Query(10, ge=1, le=MAX_K),
    site: str | None = SITE_QUERY,
    version: str | None = VERSION_QUERY,
) -> Any:
    """Passages ranked for *q* by hybrid retrieval, like ``ragcite search``."""
    query = q.strip()
    if not query:
        return error(400, "invalid_request", "q: must not be empty", field="q")
    try:
        scope = state.scope(site, version)
    except ScopeError as wrong:
        return error(400, "invalid_request", str(wrong), field=wrong.field)
    hits = await blocking(state, scope.searcher.search, query, k)
    return {"hits": [h.as_json() for h in hits]}


@router.get(
    "/passages/{passage_id}",
    response_model=Passage,
    responses={404: {"model": ErrorResponse}},
    tags=["answers"],
)
async def passage(
    state: Loaded,
    passage_id: str = PASSAGE_PATH,
    site: str | None = SITE_QUERY,
    version: str | None = VERSION_QUERY,
) -> Any:
    """One passage record; a 404 names where a vanished ID's text went.

    With several sites an ID is looked up in the sites asked (``site``,
    ``version``); one found in more than one of them needs ``site``.
    """
    try:
        return find_passage(state, passage_id, site, version)
    except ScopeError as wrong:
        return error(400, "invalid_request", str(wrong), field=wrong.field)
    except PassageNotFound as missing:
        return error(404, "not_found", str(missing))


@router.post("/ask", response_model=Answer, responses=ERRORS, tags=["answers"])
async def ask(body: AskRequest, request: Request, state: Loaded) -> Any:
    """The answer JSON. Its `outcome` says what it holds: `answer` (a cited,
    grounded answer), `passages` (no answer stated: `passages` lists up to three
    passages that may hold it, each with its best sentence) or `not_found` (the
    book does not seem to cover it: `metadata.see_also` lists the closest pages).
    """
    try:
        answer = await answering.answer(state, body, request.receive)
    except AskFailure as failure:
        return failed(failure)
    if answer is None:  # the reader left; nobody reads this
        return Response(status_code=204)
    return answer


@router.post(
    "/ask/stream",
    responses={
        **ERRORS,
        200: {
            "content": {"text/event-stream": {}},
            "description": "events: retrieval, token..., final (the answer "
            "JSON, with its `outcome`)",
        },
    },
    tags=["answers"],
)
async def ask_stream(body: AskRequest, state: Loaded) -> Any:
    """The answer as server-sent events: retrieval, token..., final."""
    try:
        options = answering.prepare(state, body)
        scope = answering.scope_of(state, body)
    except AskFailure as failure:
        return failed(failure)
    started = time.perf_counter()
    uses_llm = options["generator"] == "llm"
    if uses_llm and not state.slots.try_acquire():
        return busy()
    job = Job(state, body.question, options, holds_slot=uses_llm, engine=scope.engine)
    logged = partial(
        answering.logged,
        state,
        scope,
        selection=options["selection"],
        started=started,
        door="stream",
    )
    return EventStreamResponse(job, body.style, logged)


@router.post(
    "/feedback",
    response_model=FeedbackResponse,
    responses={
        400: ERRORS[400],
        404: {
            "model": ErrorResponse,
            "description": "no such answer (`not_found`), or this server keeps "
            "no question log (`feedback_off`)",
        },
        429: ERRORS[429],
        503: {
            "model": ErrorResponse,
            "description": "the question log cannot store it (`log_unavailable`)",
        },
    },
    tags=["answers"],
)
async def feedback(body: FeedbackRequest, state: Loaded) -> Any:
    """A reader's vote on an answer: was it helpful, and if not, why (optional).

    Needs a server started with `--questions-log` (`/api/health` says
    `"feedback": true`); `answer_id` is the answer's. A second vote on the
    same answer replaces the first.
    """
    log = state.questions
    if log is None:
        return error(
            404,
            "feedback_off",
            "This server keeps no question log, so it takes no feedback.",
        )
    try:
        known = await asyncio.wait_for(
            asyncio.wrap_future(log.vote(body.answer_id, body.helpful, body.reason)),
            FEEDBACK_TIMEOUT,
        )
    except (LogUnavailable, asyncio.TimeoutError):
        return error(
            503,
            "log_unavailable",
            "The feedback could not be stored now; try again later.",
            headers={"Retry-After": 30},
        )
    if not known:
        return error(
            404, "not_found", "No answer has this answer_id.", field="answer_id"
        )
    return FeedbackResponse(
        answer_id=body.answer_id, helpful=body.helpful, reason=body.reason
    )


router.add_api_route(DOCS_PATH.removeprefix("/api"), docs, include_in_schema=False)
# HEAD answers wherever GET does (uvicorn drops the body); not in the spec
for _path, _endpoint in (
    ("/health", health),
    ("/search", search),
    ("/passages/{passage_id}", passage),
    (DOCS_PATH.removeprefix("/api"), docs),
):
    router.add_api_route(_path, _endpoint, methods=["HEAD"], include_in_schema=False)


@router.api_route("/{rest:path}", methods=METHODS, include_in_schema=False)
async def unknown(rest: str, request: Request) -> JSONResponse:
    """404 for no such endpoint; 405 with ``Allow`` for a wrong method."""
    path = f"/api/{rest}"
    allowed: set[str] = set()
    for route in router.routes:
        if (
            isinstance(route, Route)
            and route.endpoint is not unknown
            and route.methods
            and route.path_regex.match(path)
        ):
            allowed |= route.methods
    if not allowed:
        return error(404, "not_found", f"No API endpoint {path}.")
    methods = ", ".join(sorted(allowed))
    return error(
        405,
        "method_not_allowed",
        f"{request.method} is not allowed on {path}; use {methods}.",
        headers={"Allow": methods},
    )


def failed(failure: AskFailure) -> JSONResponse:
    return error(
        failure.status,
        failure.code,
        failure.message,
        field=failure.field,
        headers=failure.headers,
    )


def busy() -> JSONResponse:
    return error(
        503,
        "busy",
        "The answer model is busy; retry shortly or ask for an extractive answer.",
        headers={"Retry-After": 2},
    )
