"""One answer at a time on the shared executor: events out, cancellation in.

``/api/ask``, ``/api/ask/stream`` and the MCP ``ask`` tool run the same
:class:`Job`; ``/api/ask`` and MCP ``ask`` share :func:`answer` too (request
-> options -> cache -> job -> style), so one input gives one answer JSON. The model's
slot is given back when the work really stops, never before, so the queue
depth counts what is running. The deadline (``--timeout``) expires the
job's :class:`Cancel`: generation stops and the answer falls back to the
extractive one; a reader who leaves abandons it: everything stops at once.
With a question log, every answer given is queued for it (:func:`logged`)
and carries its ``answer_id``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from starlette.responses import Response

from sphinx_ragcite.answer.llm import Cancel
from sphinx_ragcite.contracts import Answer
from sphinx_ragcite.questions.log import asked, new_answer_id
from sphinx_ragcite.retrieval.searchable import Filters
from sphinx_ragcite.server.schemas import error_body
from sphinx_ragcite.server.sites import ScopeError

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Mapping

    from starlette.types import Receive, Scope, Send

    from sphinx_ragcite.answer.engine import AnswerEngine, Event
    from sphinx_ragcite.questions.log import Door
    from sphinx_ragcite.server.schemas import AskRequest
    from sphinx_ragcite.server.state import SiteScope, State

logger = logging.getLogger("sphinx_ragcite.server")

#: Seconds past the deadline before a job that will not stop is given up
#: (a 504): time to answer extractively once generation has been stopped.
GRACE = 5.0


class Job:
    """``engine.stream`` in a worker thread; *holds_slot* if it took a model slot."""

    def __init__(
        self,
        state: State,
        question: str,
        options: dict[str, Any],
        *,
        holds_slot: bool,
        engine: AnswerEngine | None = None,
    ) -> None:
        self.state = state
        #: the engine of the sites asked (default: the first site's)
        self.engine = engine or state.engine
        self.cancel = Cancel()
        self._holds_slot = holds_slot
        self._queue: asyncio.Queue[tuple[str, Any] | None] = asyncio.Queue()
        self._loop = asyncio.get_running_loop()
        timeout = state.settings.request_timeout
        self._deadline = self._loop.call_later(
            timeout, self.cancel.expire, f"timed out after {timeout:g} s"
        )
        state.jobs.add(self.cancel)
        try:
            state.executor.submit(self._work, question, options)
        except RuntimeError:  # the executor is shut down: the server is stopping
            self._done()
            raise

    def _work(self, question: str, options: dict[str, Any]) -> None:
        events = self.engine.stream(question, cancel=self.cancel, **options)
        try:
            for event in events:
                if self.cancel.abandoned:
                    break
                self._put(_sse(event))
        except Exception:
            logger.exception("answering failed")
            self._put(("error", error_body("internal_error", "The answer failed.")))
        finally:
            events.close()
            self._done()
            self._put(None)

    def _done(self) -> None:
        if self._holds_slot:
            self._holds_slot = False
            self.state.slots.release()
        self.state.jobs.discard(self.cancel)
        self._call(self._deadline.cancel)

    def _put(self, item: tuple[str, Any] | None) -> None:
        self._call(self._queue.put_nowait, item)

    def _call(self, function: Callable[..., object], *args: Any) -> None:
        with suppress(RuntimeError):  # a closed loop: nobody is waiting
            self._loop.call_soon_threadsafe(function, *args)

    def watch(self, receive: Receive) -> asyncio.Future[None]:
        """Abandon the job the moment the reader disconnects."""
        watcher = asyncio.ensure_future(_disconnected(receive))
        watcher.add_done_callback(
            lambda task: None if task.cancelled() else self.cancel.abandon()
        )
        return watcher

    async def events(self) -> AsyncIterator[tuple[str, Any]]:
        """``(name, data)`` of each event until the job ends."""
        while (item := await self._queue.get()) is not None:
            yield item

    async def result(self, receive: Receive | None) -> Any:
        """The final Answer, an error body, or None if the reader left.

        *receive* is the HTTP connection to watch for a disconnect; without
        one (MCP), cancelling the awaiting task abandons the job. Raises
        ``asyncio.TimeoutError`` if the job does not end by the deadline plus
        :data:`GRACE`.
        """
        watcher = self.watch(receive) if receive is not None else None
        try:
            return await asyncio.wait_for(
                self._last(), self.state.settings.request_timeout + GRACE
            )
        except asyncio.TimeoutError:
            self.cancel.abandon("gave up")
            raise
        except asyncio.CancelledError:  # the server dropped the request
            self.cancel.abandon()
            raise
        finally:
            if watcher is not None:
                watcher.cancel()

    async def _last(self) -> Any:
        async for name, data in self.events():
            if name in ("final", "error"):
                return data
        return None


class AskFailure(Exception):
    """Why a request got no answer: what ``/api/ask`` sends as its error."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        field: str | None = None,
        headers: Mapping[str, object] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.headers = dict(headers or {})


async def answer(
    state: State,
    body: AskRequest,
    receive: Receive | None = None,
    *,
    door: Door = "api",
) -> Answer | None:
    """The answer JSON for a validated request, or None if the reader left.

    The one path of ``POST /api/ask`` and the MCP ``ask`` tool (*door*
    ``mcp``); raises :class:`AskFailure` for a request that cannot be answered.
    """
    started = time.perf_counter()
    options = prepare(state, body)
    scope = scope_of(state, body)
    key = cache_key(scope, body, options["generator"])
    cached = state.cache.get(key)
    if cached is None:
        uses_llm = options["generator"] == "llm"
        if uses_llm and not state.slots.try_acquire():
            raise AskFailure(
                503,
                "busy",
                "The answer model is busy; retry shortly or ask for an extractive "
                "answer.",
                headers={"Retry-After": 2},
            )
        job = Job(
            state, body.question, options, holds_slot=uses_llm, engine=scope.engine
        )
        try:
            result = await job.result(receive)
        except asyncio.TimeoutError:
            raise AskFailure(
                504, "timeout", "The answer took too long; try again."
            ) from None
        if result is None:  # the reader left; nobody reads this
            return None
        if not isinstance(result, Answer):
            detail = result.get("error", {}) if isinstance(result, dict) else {}
            raise AskFailure(
                500,
                str(detail.get("code", "internal_error")),
                str(detail.get("message", "The answer failed.")),
            )
        cached = result
        if not str(cached.metadata.get("fallback", "")).startswith("generation"):
            state.cache.put(key, cached)  # a failed generation may work next time
    return logged(
        state,
        scope,
        with_style(cached, body.style),
        selection=options["selection"],
        started=started,
        door=door,
    )


def logged(
    state: State,
    scope: SiteScope,
    answer: Answer,
    *,
    selection: str | None,
    started: float,
    door: Door,
) -> Answer:
    """*answer* with its ``answer_id``, queued for the question log (a copy:
    a cached answer is shared); *answer* itself when there is no log.

    *selection* is the text the engine was given, *started* the
    ``time.perf_counter()`` of the request.
    """
    log = state.questions
    if log is None:
        return answer
    answer_id = new_answer_id()
    one = scope.members[0] if len(scope.members) == 1 else None
    log.record(
        asked(
            answer,
            answer_id=answer_id,
            site=one.name if one else "",
            version=scope.engine.site_version or (one.version if one else ""),
            selection=selection,
            keep_selection=log.keep_selections,
            latency_ms=(time.perf_counter() - started) * 1000,
            door=door,
        )
    )
    return answer.model_copy(update={"answer_id": answer_id})


def prepare(state: State, body: AskRequest) -> dict[str, Any]:
    """The engine's options for a request; generator is what will really run."""
    if body.mode == "selection" and not body.selection:
        raise AskFailure(
            400,
            "invalid_request",
            "selection: is required when mode is 'selection'",
            field="selection",
        )
    generator = body.generator or state.settings.generator
    if state.llm is None:
        generator = "extractive"
    filters = (
        Filters(tuple(body.filters.docnames), tuple(body.filters.chapters))
        if body.filters
        else None
    )
    return {
        "mode": body.mode,
        "selection": body.selection if body.mode == "selection" else None,
        "k": body.k,
        "filters": filters,
        "generator": generator,
    }


def scope_of(state: State, body: AskRequest) -> SiteScope:
    """The sites a request asks (several served: ``site``, ``version``)."""
    try:
        return state.scope(body.site, body.version)
    except ScopeError as wrong:
        raise AskFailure(
            400, "invalid_request", str(wrong), field=wrong.field
        ) from None


def cache_key(scope: SiteScope, body: AskRequest, generator: str) -> tuple[Any, ...]:
    """Everything the answer depends on; the style is applied after the cache."""
    selection = hashlib.sha256((body.selection or "").encode()).hexdigest()
    filters = body.filters.model_dump_json() if body.filters else ""
    return (
        body.question,
        body.mode,
        selection,
        scope.names,
        scope.engine.site_version,
        scope.searcher.version,
        generator,
        body.k,
        filters,
    )


def with_style(answer: Answer, style: str | None) -> Answer:
    """A copy naming *style*: the cached answer is shared and never changed."""
    if style is None:
        return answer
    return answer.model_copy(update={"metadata": {**answer.metadata, "style": style}})


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


class EventStreamResponse(Response):
    """Server-sent events of a :class:`Job`; a disconnect abandons the job.

    Starlette's StreamingResponse notices a reader who left only when its
    next write fails, which may be many seconds away while the model reads
    its prompt; this one listens for the disconnect itself. *final* sees the
    final answer before it is sent (the question log, :func:`logged`).
    """

    media_type = "text/event-stream"

    def __init__(
        self,
        job: Job,
        style: str | None,
        final: Callable[[Answer], Answer] | None = None,
    ) -> None:
        # no super().__init__(): its empty body would set Content-Length: 0
        self.status_code = 200
        self.background = None
        self.init_headers({"X-Accel-Buffering": "no"})
        self.job = job
        self.style = style
        self.final = final

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        job = self.job
        watcher = job.watch(receive)
        finished = False
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": self.status_code,
                    "headers": self.raw_headers,
                }
            )
            async for name, data in job.events():
                if job.cancel.abandoned:
                    break
                if name == "final":
                    if self.final is not None:
                        data = self.final(data)
                    data = data.model_dump(mode="json")
                    if self.style:
                        data["metadata"]["style"] = self.style
                chunk = f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
                await send(
                    {"type": "http.response.body", "body": chunk, "more_body": True}
                )
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            finished = True
        except OSError:  # the reader left between two events (ASGI 2.4)
            pass
        finally:  # also when the server cancels us: the reader is gone
            watcher.cancel()
            if not finished:
                job.cancel.abandon()


def _sse(event: Event) -> tuple[str, Any]:
    if event.kind == "final":
        return "final", event.data
    if event.kind == "token":
        return "token", {"text": event.data}
    return event.kind, event.data
