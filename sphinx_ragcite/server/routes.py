"""The API's routes; everything they share comes from ``app.state.ragcite``."""

from __future__ import annotations

import asyncio
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse, Response
from starlette.routing import Route

from sphinx_ragcite import __version__
from sphinx_ragcite.contracts import MAX_K, MAX_QUESTION, Answer
from sphinx_ragcite.server import answering
from sphinx_ragcite.server.answering import AskFailure, EventStreamResponse, Job
from sphinx_ragcite.server.guards import DOCS_PATH
from sphinx_ragcite.server.openapi import docs
from sphinx_ragcite.server.responses import error
from sphinx_ragcite.server.schemas import (
    AskRequest,
    ErrorResponse,
    Health,
    Passage,
    SearchResponse,
)
from sphinx_ragcite.server.state import State

if TYPE_CHECKING:
    from collections.abc import Callable

ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorResponse, "description": "invalid request"},
    429: {"model": ErrorResponse, "description": "rate limit exceeded"},
    503: {"model": ErrorResponse, "description": "generation queue full"},
}
METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]


def current(request: Request) -> State:
    state: State = request.app.state.ragcite
    return state


Loaded = Annotated[State, Depends(current)]
router = APIRouter(prefix="/api")


async def blocking(state: State, function: Callable[..., Any], *args: Any) -> Any:
    """Run *function* in the one executor every blocking call shares."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(state.executor, partial(function, *args))


@router.get("/health", response_model=Health, tags=["service"])
async def health(state: Loaded) -> Health:
    """Index and model loaded, and how full the model's queue is."""
    return Health(
        status="ok",
        version=__version__,
        index_loaded=True,
        index_version=state.site.version,
        passages=len(state.site.passages),
        model_loaded=state.llm is not None,
        model=state.llm.name if state.llm else None,
        generator=state.settings.generator if state.llm else "extractive",
        queue_depth=state.slots.depth,
        queue_size=state.slots.size,
    )


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
) -> Any:
    """Passages ranked for *q* by hybrid retrieval, like ``ragcite search``."""
    query = q.strip()
    if not query:
        return error(400, "invalid_request", "q: must not be empty", field="q")
    hits = await blocking(state, state.site.search, query, k)
    return {"hits": [h.as_json() for h in hits]}


@router.get(
    "/passages/{passage_id}",
    response_model=Passage,
    responses={404: {"model": ErrorResponse}},
    tags=["answers"],
)
async def passage(state: Loaded, passage_id: str) -> Any:
    """One passage record; a 404 names where a vanished ID's text went."""
    record = state.site.passage(passage_id)
    if record is None:
        hint = state.site.moved_hint(passage_id)
        message = f"No passage {passage_id!r} in this index"
        return error(404, "not_found", f"{message}: {hint}." if hint else f"{message}.")
    return record


@router.post("/ask", response_model=Answer, responses=ERRORS, tags=["answers"])
async def ask(body: AskRequest, request: Request, state: Loaded) -> Any:
    """A grounded, cited answer (the answer JSON)."""
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
            "description": "events: retrieval, token..., final (the answer)",
        },
    },
    tags=["answers"],
)
async def ask_stream(body: AskRequest, state: Loaded) -> Any:
    """The answer as server-sent events: retrieval, token..., final."""
    try:
        options = answering.prepare(state, body)
    except AskFailure as failure:
        return failed(failure)
    uses_llm = options["generator"] == "llm"
    if uses_llm and not state.slots.try_acquire():
        return busy()
    return EventStreamResponse(
        Job(state, body.question, options, holds_slot=uses_llm), body.style
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
