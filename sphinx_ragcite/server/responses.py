"""Every error the API sends is ``{"error": {"code", "message", "field"}}``;
``/mcp`` refuses with a JSON-RPC error instead (:func:`jsonrpc_error`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from sphinx_ragcite.server.schemas import error_body, problem, problem_text

if TYPE_CHECKING:
    from collections.abc import Mapping

    from fastapi import FastAPI, Request


def error(
    status: int,
    code: str,
    message: str,
    *,
    field: str | None = None,
    headers: Mapping[str, object] | None = None,
) -> JSONResponse:
    return JSONResponse(
        error_body(code, message, field),
        status,
        headers={k: str(v) for k, v in (headers or {}).items()},
    )


#: JSON-RPC's code for a request that is not a valid one.
INVALID_REQUEST = -32600


def jsonrpc_error(
    status: int,
    message: str,
    *,
    code: int = INVALID_REQUEST,
    headers: Mapping[str, object] | None = None,
) -> JSONResponse:
    """A refusal on ``/mcp``: a JSON-RPC error an MCP client reads and shows.

    Sent before the request was read, so its ``id`` is null; the SDK's
    client gives it the id of the request it sent.
    """
    return JSONResponse(
        {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}},
        status,
        headers={k: str(v) for k, v in (headers or {}).items()},
    )


async def invalid_request(request: Request, exc: Exception) -> JSONResponse:
    """A 400 that names the field (never FastAPI's 422)."""
    assert isinstance(exc, RequestValidationError)
    errors = exc.errors()
    field, message = problem(errors, skip=("body", "query", "path"))
    kind = errors[0].get("type", "") if errors else ""
    code = "invalid_request"
    if kind == "json_invalid":
        code, field = "invalid_json", None
        message = "The body is not valid JSON."
    elif kind in ("model_attributes_type", "dict_type") and not field:
        code = "invalid_body"
        message = "The body must be a JSON object (Content-Type: application/json)."
    return error(400, code, problem_text(field, message), field=field)


async def http_error(request: Request, exc: Exception) -> JSONResponse:
    """Starlette's own errors (405 keeps its ``Allow``) in our error body."""
    assert isinstance(exc, StarletteHTTPException)
    return error(exc.status_code, "http_error", str(exc.detail), headers=exc.headers)


def install_error_handlers(app: FastAPI) -> None:
    """Crashes are not handled here: SecurityHeaders answers them (guards.py)."""
    app.add_exception_handler(RequestValidationError, invalid_request)
    app.add_exception_handler(StarletteHTTPException, http_error)
