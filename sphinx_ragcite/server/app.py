"""The ASGI app: the built site at ``/``, the answer API under ``/api/``.

``create_app(settings, llm=None)`` builds it; the lifespan loads the index and
the model once into a frozen :class:`State`. The llama.cpp model is not
thread-safe: generations take a slot of :class:`GenerationSlots` (503 when the
queue is full) and the generator's own lock; retrieval and extractive answers
run beside them in the thread pool.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.staticfiles import StaticFiles

from sphinx_ragcite import __version__
from sphinx_ragcite.answer.engine import AnswerEngine
from sphinx_ragcite.retrieval import Filters, Site
from sphinx_ragcite.schemas import Answer
from sphinx_ragcite.server.guards import AnswerCache, GenerationSlots, RateLimiter
from sphinx_ragcite.server.schemas import (
    AskRequest,
    ErrorResponse,
    Health,
    Passage,
    SearchResponse,
    error_body,
)
from sphinx_ragcite.server.settings import ENV_SETTINGS, ServerSettings

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping

    from sphinx_ragcite.answer.engine import Event
    from sphinx_ragcite.answer.llm import Generator

logger = logging.getLogger("sphinx_ragcite.server")

API_CSP = "default-src 'none'; frame-ancestors 'none'"
#: The widget is same-origin script and CSS; themes need inline styles/scripts.
SITE_CSP = (
    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
    "script-src 'self' 'unsafe-inline'; connect-src 'self'; font-src 'self' data:; "
    "object-src 'none'; base-uri 'self'; frame-ancestors 'self'"
)
ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorResponse, "description": "invalid request"},
    429: {"model": ErrorResponse, "description": "rate limit exceeded"},
    503: {"model": ErrorResponse, "description": "generation queue full"},
}


@dataclass(frozen=True)
class State:
    settings: ServerSettings
    site: Site
    engine: AnswerEngine
    llm: Generator | None
    slots: GenerationSlots
    cache: AnswerCache
    limiter: RateLimiter
    executor: ThreadPoolExecutor


def load_llm(settings: ServerSettings) -> Generator | None:
    """The generator the settings ask for, or None for extractive answers."""
    from sphinx_ragcite.answer.llm import LlamaCppGenerator, OpenAIGenerator

    if settings.llm_url:
        return OpenAIGenerator(settings.llm_url, timeout=settings.request_timeout)
    if settings.generator == "llm":
        return LlamaCppGenerator(settings.model)
    return None


def load_state(settings: ServerSettings, llm: Generator | None = None) -> State:
    """Load index, embedder and model once; raises RagciteError with a fix."""
    started = time.perf_counter()
    site = Site.load(settings.build_dir, model_dir=settings.embedding_model)
    if site.has_dense:
        site.embedder.embed(["warm up"])
    loaded = time.perf_counter()
    logger.info(
        "loaded %d passages from %s in %.2f s",
        len(site.passages),
        site.root,
        loaded - started,
    )
    if llm is None:
        llm = load_llm(settings)
        if llm is not None:
            logger.info(
                "loaded generator %s in %.2f s", llm.name, time.perf_counter() - loaded
            )
    return State(
        settings=settings,
        site=site,
        engine=AnswerEngine(site, llm=llm),
        llm=llm,
        slots=GenerationSlots(settings.queue_size),
        cache=AnswerCache(settings.cache_size),
        limiter=RateLimiter(settings.rate_limit),
        executor=ThreadPoolExecutor(
            max_workers=settings.queue_size + 4, thread_name_prefix="ragcite"
        ),
    )


def _error(status: int, code: str, message: str, **extra: Any) -> JSONResponse:
    headers = {k: str(v) for k, v in extra.pop("headers", {}).items()}
    return JSONResponse(
        error_body(code, message, extra.get("field")), status, headers=headers
    )


class Guard:
    """Pure ASGI: rate limit and body limit for the API, security headers for all."""

    def __init__(self, app: Any, get_state: Callable[[], State | None]) -> None:
        self.app = app
        self.get_state = get_state

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        api = scope["path"].startswith("/api/")
        state = self.get_state()

        async def send_with_headers(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers.append((b"x-content-type-options", b"nosniff"))
                headers.append((b"referrer-policy", b"same-origin"))
                csp = API_CSP if api else SITE_CSP
                headers.append((b"content-security-policy", csp.encode()))
                if api:
                    headers.append((b"cache-control", b"no-store"))
                else:
                    headers.append((b"x-frame-options", b"SAMEORIGIN"))
                message["headers"] = headers
            await send(message)

        if api and state is not None:
            client = (scope.get("client") or ("unknown", 0))[0]
            wait = state.limiter.check(client)
            if wait:
                response = _error(
                    429,
                    "rate_limited",
                    "Too many requests; slow down.",
                    headers={"Retry-After": max(1, round(wait))},
                )
                await response(scope, receive, send_with_headers)
                return
            if scope["method"] in ("POST", "PUT", "PATCH"):
                body = await _read_body(receive, state.settings.max_body_bytes)
                if body is None:
                    limit = state.settings.max_body_bytes
                    response = _error(
                        400,
                        "body_too_large",
                        f"The request body is larger than {limit} bytes.",
                    )
                    await response(scope, receive, send_with_headers)
                    return
                receive = _replay(body)
        await self.app(scope, receive, send_with_headers)


async def _read_body(receive: Any, limit: int) -> bytes | None:
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            break
    return b"".join(chunks)


def _replay(body: bytes) -> Callable[[], Awaitable[dict[str, Any]]]:
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # then wait like a live connection would
        return {"type": "http.disconnect"}

    return receive


def create_app(
    settings: ServerSettings,
    llm: Generator | None = None,
    state: State | None = None,
) -> FastAPI:
    """The app; *llm* (e.g. a test double) or a preloaded *state* skip loading."""
    holder: dict[str, State] = {}

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        loaded = state
        if loaded is None:
            loaded = await run_in_threadpool(load_state, settings, llm)
        holder["state"] = loaded
        try:
            yield
        finally:
            holder["state"].executor.shutdown(wait=False, cancel_futures=True)

    app = FastAPI(
        title="sphinx-ragcite answer API",
        version=__version__,
        summary="Grounded answers whose citations deep-link to their paragraphs.",
        openapi_url="/api/openapi.json",
        docs_url="/api/docs",
        redoc_url=None,
        lifespan=lifespan,
    )

    def openapi() -> dict[str, Any]:
        """The spec as the API behaves: errors are 400s (never FastAPI's 422)."""
        if app.openapi_schema is None:
            schema = FastAPI.openapi(app)
            for path in schema.get("paths", {}).values():
                for operation in path.values():
                    operation.get("responses", {}).pop("422", None)
            for path in ("/api/ask", "/api/ask/stream"):
                responses = schema["paths"][path]["post"]["responses"]
                responses["504"] = {
                    "description": "the answer took longer than --timeout",
                    "content": {
                        "application/json": {
                            "schema": {"$ref": "#/components/schemas/ErrorResponse"}
                        }
                    },
                }
            schema.get("components", {}).get("schemas", {}).pop(
                "HTTPValidationError", None
            )
            schema.get("components", {}).get("schemas", {}).pop("ValidationError", None)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]

    def current() -> State:
        return holder["state"]

    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(settings.cors_origins),
            allow_methods=["GET", "POST"],
            allow_headers=["Content-Type"],
        )
    app.add_middleware(Guard, get_state=lambda: holder.get("state"))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        location = [str(p) for p in first.get("loc", ()) if p not in ("body", "query")]
        kind = first.get("type", "")
        message = str(first.get("msg", "invalid request")).removeprefix("Value error, ")
        field = ".".join(location) or None
        code = "invalid_request"
        if kind == "json_invalid":
            code, field = "invalid_json", None
            message = "The body is not valid JSON."
        elif kind in ("model_attributes_type", "dict_type") and not location:
            code = "invalid_body"
            message = "The body must be a JSON object (Content-Type: application/json)."
        return _error(
            400, code, f"{field}: {message}" if field else message, field=field
        )

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(exc.status_code, "http_error", str(exc.detail))

    @app.exception_handler(Exception)
    async def crashed(request: Request, exc: Exception) -> JSONResponse:
        logger.exception("unexpected error on %s", request.url.path)
        return _error(500, "internal_error", "The server failed; see its log.")

    @app.get("/api/health", response_model=Health, tags=["service"])
    async def health() -> Health:
        s = current()
        return Health(
            status="ok",
            version=__version__,
            index_loaded=True,
            index_version=s.site.version,
            passages=len(s.site.passages),
            model_loaded=s.llm is not None,
            model=s.llm.name if s.llm else None,
            generator=s.settings.generator if s.llm else "extractive",
            queue_depth=s.slots.depth,
            queue_size=s.slots.size,
        )

    @app.get(
        "/api/search",
        response_model=SearchResponse,
        responses={k: v for k, v in ERRORS.items() if k != 503},
        tags=["answers"],
    )
    async def search(
        q: str = Query(..., min_length=1, max_length=2000),
        k: int = Query(10, ge=1, le=20),
    ) -> Any:
        query = q.strip()
        if not query:
            return _error(400, "invalid_request", "q: must not be empty", field="q")
        hits = await run_in_threadpool(current().site.search, query, k)
        return {"hits": [h.as_json() for h in hits]}

    @app.get(
        "/api/passages/{passage_id}",
        response_model=Passage,
        responses={404: {"model": ErrorResponse}},
        tags=["answers"],
    )
    async def passage(passage_id: str) -> Any:
        site = current().site
        record = site.passage(passage_id)
        if record is None:
            hint = site.moved_hint(passage_id)
            message = f"No passage {passage_id!r} in this index"
            return _error(
                404, "not_found", f"{message}: {hint}." if hint else f"{message}."
            )
        return record

    def prepare(body: AskRequest) -> tuple[dict[str, Any], str]:
        s = current()
        if body.mode == "selection" and not body.selection:
            raise _Invalid("selection", "is required when mode is 'selection'")
        generator = body.generator or s.settings.generator
        if s.llm is None:
            generator = "extractive"
        filters = (
            Filters(tuple(body.filters.docnames), tuple(body.filters.chapters))
            if body.filters
            else None
        )
        options = {
            "mode": body.mode,
            "selection": body.selection if body.mode == "selection" else None,
            "k": body.k,
            "filters": filters,
            "generator": generator,
        }
        return options, generator

    def cache_key(body: AskRequest, generator: str) -> tuple[Any, ...]:
        selection = hashlib.sha256((body.selection or "").encode()).hexdigest()
        filters = body.filters.model_dump_json() if body.filters else ""
        return (
            body.question,
            body.mode,
            selection,
            current().site.version,
            generator,
            body.k,
            filters,
        )

    @app.post("/api/ask", response_model=Answer, responses=ERRORS, tags=["answers"])
    async def ask(body: AskRequest) -> Any:
        s = current()
        try:
            options, generator = prepare(body)
        except _Invalid as error:
            return _error(400, "invalid_request", str(error), field=error.field)
        key = cache_key(body, generator)
        cached = s.cache.get(key)
        if cached is not None:
            return cached
        uses_llm = generator == "llm"
        if uses_llm and not s.slots.try_acquire():
            return _busy(s)
        try:
            answer = await asyncio.wait_for(
                run_in_threadpool(s.engine.answer, body.question, **options),
                timeout=s.settings.request_timeout,
            )
        except asyncio.TimeoutError:
            return _error(504, "timeout", "The answer took too long; try again.")
        finally:
            if uses_llm:
                s.slots.release()
        if body.style:
            answer.metadata["style"] = body.style
        s.cache.put(key, answer)
        return answer

    @app.post(
        "/api/ask/stream",
        responses={
            **ERRORS,
            200: {
                "content": {"text/event-stream": {}},
                "description": "events: retrieval, token..., final (the answer)",
            },
        },
        tags=["answers"],
    )
    async def ask_stream(body: AskRequest) -> Any:
        s = current()
        try:
            options, generator = prepare(body)
        except _Invalid as error:
            return _error(400, "invalid_request", str(error), field=error.field)
        uses_llm = generator == "llm"
        if uses_llm and not s.slots.try_acquire():
            return _busy(s)
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, Any] | None] = asyncio.Queue()
        cancel = threading.Event()

        def work() -> None:
            try:
                events = s.engine.stream(body.question, **options)
                for event in events:
                    if cancel.is_set():
                        events.close()  # frees the model for the next reader
                        break
                    loop.call_soon_threadsafe(queue.put_nowait, _sse(event))
            except Exception:
                logger.exception("streaming answer failed")
                body_ = error_body("internal_error", "The answer failed.")
                loop.call_soon_threadsafe(queue.put_nowait, ("error", body_))
            finally:
                if uses_llm:
                    s.slots.release()
                loop.call_soon_threadsafe(queue.put_nowait, None)

        s.executor.submit(work)

        async def events() -> AsyncIterator[str]:
            try:
                while True:
                    item = await queue.get()
                    if item is None:
                        break
                    name, data = item
                    yield f"event: {name}\ndata: {json.dumps(data)}\n\n"
            finally:
                cancel.set()

        return StreamingResponse(
            events(),
            media_type="text/event-stream",
            headers={"X-Accel-Buffering": "no"},
        )

    @app.api_route(
        "/api/{rest:path}",
        methods=["GET", "POST", "PUT", "DELETE", "PATCH"],
        include_in_schema=False,
    )
    async def unknown(rest: str) -> JSONResponse:
        return _error(404, "not_found", f"No API endpoint /api/{rest}.")

    app.mount("/", StaticFiles(directory=settings.build_dir, html=True), name="site")
    return app


class _Invalid(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


def _busy(state: State) -> JSONResponse:
    return _error(
        503,
        "busy",
        "The answer model is busy; retry shortly or ask for an extractive answer.",
        headers={"Retry-After": 2},
    )


def _sse(event: Event) -> tuple[str, Any]:
    if event.kind == "final":
        return "final", event.data.model_dump(mode="json")
    if event.kind == "token":
        return "token", {"text": event.data}
    return event.kind, event.data


def app_from_env() -> FastAPI:
    """Factory for ``uvicorn --factory`` with several worker processes."""
    settings = ServerSettings.model_validate_json(os.environ[ENV_SETTINGS])
    return create_app(settings)
