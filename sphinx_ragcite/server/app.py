"""The ASGI app: the built site(s) at ``/`` or ``/NAME/``, the API under ``/api/``.

``create_app(settings, llm=None)`` builds it; the lifespan loads the index and
the model once into a frozen :class:`State` on ``app.state.ragcite``. The
routes are in ``routes.py``, the middleware with its guards in ``guards.py``,
answers run as jobs on one executor (``answering.py``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from contextlib import AsyncExitStack, asynccontextmanager
from html import escape
from pathlib import PurePosixPath
from typing import TYPE_CHECKING
from urllib.parse import quote

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import HTMLResponse, PlainTextResponse, RedirectResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.staticfiles import StaticFiles

from sphinx_ragcite import __version__
from sphinx_ragcite.formats.manifest import INDEX_DIR
from sphinx_ragcite.server.guards import ApiGuard, SecurityHeaders
from sphinx_ragcite.server.openapi import install_openapi
from sphinx_ragcite.server.pages import page_response, sites_llms_txt
from sphinx_ragcite.server.responses import install_error_handlers
from sphinx_ragcite.server.routes import router
from sphinx_ragcite.server.settings import ENV_SETTINGS, ServerSettings
from sphinx_ragcite.server.state import State, load_llm, load_state

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable
    from pathlib import Path

    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.types import Scope

    from sphinx_ragcite.answer.llm import Generator
    from sphinx_ragcite.server.mcp import HttpMount

#: Headers an MCP client in a browser sends and reads (CORS).
MCP_HEADERS = ["Mcp-Session-Id", "Mcp-Protocol-Version"]
#: ... and those a 2026-07-28 client also sends: the method, the tool's name.
MCP_REQUEST_HEADERS = [*MCP_HEADERS, "Mcp-Method", "Mcp-Name"]
#: ``_ragcite/NAME.<16 hex>.EXT`` and ``_ragcite/bm25.<16 hex>/FILE``: the
#: name says the bytes, so they never change (formats/manifest.py)
HASHED = re.compile(rf"^{INDEX_DIR}/[^/]+\.[0-9a-f]{{16}}(\.[^/]+|/[^/]+)$")
IMMUTABLE = "public, max-age=31536000, immutable"
#: pages, _static/ and the fixed-name aliases: revalidated on every use
REVALIDATE = "no-cache"

__all__ = ["State", "app_from_env", "create_app", "load_llm", "load_state"]


def create_app(
    settings: ServerSettings,
    llm: Generator | None = None,
    state: State | None = None,
) -> FastAPI:
    """The app; *llm* (e.g. a test double) or a preloaded *state* skip loading."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        loaded = state if state is not None else await _load(settings, llm)
        app.state.ragcite = loaded
        try:
            async with AsyncExitStack() as stack:
                if mcp is not None:
                    await stack.enter_async_context(mcp.running())
                yield
        finally:
            loaded.close()

    app = FastAPI(
        title="sphinx-ragcite answer API",
        version=__version__,
        summary="Grounded answers whose citations deep-link to their paragraphs.",
        openapi_url="/api/openapi.json",
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
    )
    install_openapi(app)
    install_error_handlers(app)
    # the last added runs first: headers outermost, then CORS, then limits
    app.add_middleware(ApiGuard)
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(settings.cors_origins),
            allow_methods=["GET", "POST"],
            allow_headers=["Content-Type", *MCP_REQUEST_HEADERS],
            expose_headers=MCP_HEADERS,
        )
    app.add_middleware(SecurityHeaders)
    app.include_router(router)
    mcp = _mcp_mount(settings, lambda: app.state.ragcite)
    if mcp is not None:
        app.router.routes.append(mcp.route)
    mount_sites(app, settings)
    return app


def _mcp_mount(
    settings: ServerSettings, current: Callable[[], State]
) -> HttpMount | None:
    """``/mcp``, the MCP server over streamable HTTP, if the SDK is installed."""
    try:
        from sphinx_ragcite.server.mcp import HttpMount
    except ImportError as error:
        logging.getLogger("sphinx_ragcite.server").info(
            "no /mcp: the MCP SDK is not installed (%s)", error
        )
        return None
    return HttpMount(settings, current)


def mount_sites(app: FastAPI, settings: ServerSettings) -> None:
    """The one site at ``/``, or each of several at ``/NAME/`` with a list at ``/``."""
    specs = settings.site_specs()
    if settings.build_dir is not None:
        app.mount("/", SiteFiles(directory=settings.build_dir, html=True), name="site")
        return
    listing = site_list(specs)
    app.add_api_route(
        "/",
        lambda: HTMLResponse(listing),
        methods=["GET", "HEAD"],
        include_in_schema=False,
    )
    index = sites_llms_txt(specs)
    if index is not None:
        app.add_api_route(
            "/llms.txt",
            lambda: PlainTextResponse(index),
            methods=["GET", "HEAD"],
            include_in_schema=False,
        )
    for name, folder in specs:
        # /NAME -> NAME/ here, not by the router's redirect, which names the
        # host the Host header says
        app.add_route(f"/{name}", _to_folder, ["GET", "HEAD"], include_in_schema=False)
        app.mount(f"/{name}", SiteFiles(directory=folder, html=True), name=name)


def site_list(specs: tuple[tuple[str, Path], ...]) -> str:
    """The page at ``/`` when several sites are served: a link to each."""
    items = "".join(
        f'<li><a href="{escape(name)}/">{escape(name)}</a></li>' for name, _ in specs
    )
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        "<title>Sites</title></head><body><h1>Sites</h1>"
        f"<ul>{items}</ul></body></html>"
    )


async def _load(settings: ServerSettings, llm: Generator | None) -> State:
    return await asyncio.to_thread(load_state, settings, llm)


class SiteFiles(StaticFiles):
    """The built site, without its dot-files (``.doctrees/``, ``.buildinfo``).

    Pages with a Markdown twin carry llms.txt v2 ``Link`` headers and answer
    ``Accept: text/markdown`` with the twin (``pages.py``).

    Content-addressed index files are cached for a year; the rest (pages,
    ``_static/``, the fixed-name aliases ``search.js``, ``moved.js``,
    ``manifest.json``) is revalidated on every use (ETag, Last-Modified).
    """

    async def get_response(self, path: str, scope: Scope) -> Response:
        if any(part.startswith(".") for part in PurePosixPath(path).parts):
            raise StarletteHTTPException(404)
        # a page with a Markdown twin: llms.txt v2 headers, Accept: text/markdown
        response = await page_response(self, path, scope)
        if response is None:
            response = await super().get_response(path, scope)
        if isinstance(response, RedirectResponse):  # a folder: /a/sub -> sub/
            response = _folder_redirect(scope)
        hashed = response.status_code in (200, 304) and HASHED.match(
            path.replace(os.sep, "/")
        )
        response.headers["Cache-Control"] = IMMUTABLE if hashed else REVALIDATE
        return response


async def _to_folder(request: Request) -> Response:
    return _folder_redirect(request.scope)


def _folder_redirect(scope: Scope) -> RedirectResponse:
    """``/a/sub?q`` -> ``./sub/?q``: relative, so it stays on the host asked
    (an absolute one names the host the Host header says)."""
    segment = str(scope["path"]).rsplit("/", 1)[-1]
    query = bytes(scope.get("query_string", b"")).decode("latin-1")
    return RedirectResponse(f"./{quote(segment)}/" + (f"?{query}" if query else ""))


def app_from_env() -> FastAPI:
    """Factory for ``uvicorn --factory`` with several worker processes."""
    settings = ServerSettings.model_validate_json(os.environ[ENV_SETTINGS])
    return create_app(settings)
