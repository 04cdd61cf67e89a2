"""What stands between a request and the answer: headers, limits, the cache.

The middleware sits with the guards it uses. State here is per process: with
N replicas each enforces its own limits, which is what a stateless server
behind a load balancer can promise.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from sphinx_ragcite.server.responses import error, jsonrpc_error

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, MutableMapping

    from starlette.types import ASGIApp, Message, Receive, Scope, Send

logger = logging.getLogger("sphinx_ragcite.server")

API_CSP = "default-src 'none'; frame-ancestors 'none'"
#: The API docs page is one HTML file with an inline style sheet, no script.
DOCS_CSP = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'"
#: The widget is same-origin script and CSS; themes need inline styles/scripts.
SITE_CSP = (
    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
    "script-src 'self' 'unsafe-inline'; connect-src 'self'; font-src 'self' data:; "
    "object-src 'none'; base-uri 'self'; frame-ancestors 'self'"
)
DOCS_PATH = "/api/docs"
#: The MCP server over streamable HTTP (``server/mcp.py``).
MCP_PATH = "/mcp"
#: JSON-RPC error code (server-defined range) of a rate-limited ``/mcp`` call.
RATE_LIMITED = -32029


def is_api(path: str) -> bool:
    """``/api/...`` and ``/mcp``: the same limits, headers and CORS."""
    return path.startswith("/api/") or path == MCP_PATH


class RateLimiter:
    """Token bucket per client: *rate* requests per minute, bursts up to *rate*."""

    def __init__(self, rate: int, *, clock: Any = time.monotonic) -> None:
        self.rate = rate
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def check(self, client: str) -> float:
        """0 if the request may pass, else seconds until it may."""
        if self.rate <= 0:
            return 0.0
        now = self.clock()
        per_second = self.rate / 60.0
        with self._lock:
            tokens, last = self._buckets.get(client, (float(self.rate), now))
            tokens = min(float(self.rate), tokens + (now - last) * per_second)
            if tokens >= 1.0:
                self._buckets[client] = (tokens - 1.0, now)
                if len(self._buckets) > 100_000:  # forget idle clients
                    self._buckets.clear()
                return 0.0
            self._buckets[client] = (tokens, now)
            return (1.0 - tokens) / per_second


class GenerationSlots:
    """A bounded queue for the model: one runs, the rest wait, more get 503."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._depth = 0
        self._lock = threading.Lock()

    @property
    def depth(self) -> int:
        return self._depth

    def try_acquire(self) -> bool:
        with self._lock:
            if self._depth >= self.size:
                return False
            self._depth += 1
            return True

    def release(self) -> None:
        with self._lock:
            self._depth = max(0, self._depth - 1)


class AnswerCache:
    """LRU of recent answers keyed by question, mode, selection and index."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...]) -> Any:
        with self._lock:
            if key not in self._items:
                return None
            self._items.move_to_end(key)
            return self._items[key]

    def put(self, key: tuple[Any, ...], value: Any) -> None:
        if self.size <= 0:
            return
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)


class SecurityHeaders:
    """Outermost middleware: security headers on every response, crashes too.

    Starlette answers an unhandled exception outside every user middleware,
    so its 500 would carry none of these headers; this one answers it
    itself, inside them.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        api = is_api(path)
        csp = DOCS_CSP if path == DOCS_PATH else API_CSP if api else SITE_CSP
        started = False

        async def send_with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = list(message.get("headers", []))
                headers.append((b"x-content-type-options", b"nosniff"))
                headers.append((b"referrer-policy", b"same-origin"))
                headers.append((b"content-security-policy", csp.encode()))
                if api:
                    headers.append((b"cache-control", b"no-store"))
                else:
                    headers.append((b"x-frame-options", b"SAMEORIGIN"))
                message["headers"] = headers
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        except Exception:
            logger.exception("unexpected error on %s", path)
            if started:  # too late for a status: the connection just ends
                raise
            response = error(500, "internal_error", "The server failed; see its log.")
            await response(scope, receive, send_with_headers)


class ApiGuard:
    """Rate limit and body size for the API, before any route runs.

    Sits inside the CORS middleware, so a 429 carries CORS headers the page
    can read, and a preflight (answered by CORS) spends no tokens.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._hinted = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        state = getattr(scope["app"].state, "ragcite", None) if "app" in scope else None
        if (
            scope["type"] != "http"
            or not is_api(scope["path"])
            or state is None
            or scope["method"] == "OPTIONS"
        ):
            await self.app(scope, receive, send)
            return
        client = (scope.get("client") or ("unknown", 0))[0]
        if not self._hinted and not state.settings.forwarded_allow_ips:
            self._hint(scope, client)
        mcp = scope["path"] == MCP_PATH
        wait = state.limiter.check(client)
        if wait:
            message = "Too many requests; slow down."
            headers = {"Retry-After": max(1, round(wait))}
            response = (
                jsonrpc_error(429, message, code=RATE_LIMITED, headers=headers)
                if mcp
                else error(429, "rate_limited", message, headers=headers)
            )
            await response(scope, receive, send)
            return
        if scope["method"] in ("POST", "PUT", "PATCH"):
            limit = state.settings.max_body_bytes
            body = await _read_body(receive, limit)
            if body is None:
                message = f"The request body is larger than {limit} bytes."
                response = (
                    jsonrpc_error(413, message)  # the MCP client shows it
                    if mcp
                    else error(400, "body_too_large", message)
                )
                await response(scope, receive, send)
                return
            receive = _replay(body, receive)
        await self.app(scope, receive, send)

    def _hint(self, scope: Scope, client: str) -> None:
        """Say once that X-Forwarded-For is ignored: behind a proxy that is
        not named, every reader shares the proxy's rate limit."""
        if any(k == b"x-forwarded-for" for k, _ in scope.get("headers", ())):
            self._hinted = True
            logger.warning(
                "a request from %s carries X-Forwarded-For, which is not "
                "believed: the rate limit counts %s itself. If that is your "
                "reverse proxy, start the server with --forwarded-allow-ips %s",
                client,
                client,
                client,
            )


async def _read_body(receive: Receive, limit: int) -> bytes | None:
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


def _replay(
    body: bytes, receive: Receive
) -> Callable[[], Awaitable[MutableMapping[str, Any]]]:
    """The body once, then the live connection: its disconnect must get through."""
    sent = False

    async def replay() -> MutableMapping[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
