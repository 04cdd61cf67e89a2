"""The OpenAPI spec as the API behaves, and a docs page made from it.

The page is one HTML file with its style inline and no script: Swagger UI
would come from a CDN, which the API's CSP blocks and an offline server
cannot reach.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse

_TIMEOUT = {
    "description": "the answer took longer than --timeout and could not be stopped",
    "content": {
        "application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}
    },
}
_STYLE = """
body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;
padding:0 1rem;color:#1f2328}
h1{margin-bottom:0}h2{margin-top:2.5rem;border-bottom:1px solid #d0d7de}
h3{font-size:1rem;margin:1.2rem 0 .3rem}
code{background:#f6f8fa;padding:.1em .3em;border-radius:4px}
table{border-collapse:collapse;width:100%}
th,td{border:1px solid #d0d7de;padding:.3rem .5rem;text-align:left;
vertical-align:top}
.method{font-weight:700;color:#0a3069}
"""


def install_openapi(app: FastAPI) -> None:
    """``app.openapi()`` as the API behaves: 400s (never FastAPI's 422), 504s."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = _patched(FastAPI.openapi(app))
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _patched(schema: dict[str, Any]) -> dict[str, Any]:
    for path in schema.get("paths", {}).values():
        for operation in path.values():
            operation.get("responses", {}).pop("422", None)
    for path in ("/api/ask", "/api/ask/stream"):
        schema["paths"][path]["post"]["responses"]["504"] = _TIMEOUT
    components = schema.get("components", {}).get("schemas", {})
    components.pop("HTTPValidationError", None)
    components.pop("ValidationError", None)
    return schema


async def docs(request: Request) -> HTMLResponse:
    """The API reference, made from the spec with nothing to download."""
    return HTMLResponse(docs_page(request.app.openapi()))


def docs_page(spec: dict[str, Any]) -> str:
    info = spec.get("info", {})
    out = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width,initial-scale=1'>",
        f"<title>{escape(info.get('title', 'API'))}</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>{escape(info.get('title', 'API'))}</h1>",
        f"<p>Version {escape(str(info.get('version', '')))}. "
        f"{escape(info.get('summary', ''))} The machine-readable spec: "
        "<a href='openapi.json'><code>/api/openapi.json</code></a>.</p>",
    ]
    for path, methods in spec.get("paths", {}).items():
        for method, operation in methods.items():
            out += _operation(method, path, operation)
    schemas = spec.get("components", {}).get("schemas", {})
    if schemas:
        out.append("<h2>Schemas</h2>")
    for name, schema in schemas.items():
        out += _schema(name, schema)
    out.append("</body></html>")
    return "\n".join(out)


def _operation(method: str, path: str, operation: dict[str, Any]) -> list[str]:
    out = [
        f"<h2 id='{escape(method + path)}'><span class='method'>"
        f"{escape(method.upper())}</span> <code>{escape(path)}</code></h2>"
    ]
    for key in ("summary", "description"):
        if operation.get(key):
            out.append(f"<p>{escape(operation[key])}</p>")
    parameters = operation.get("parameters", [])
    if parameters:
        out.append("<h3>Parameters</h3><table>")
        out.append("<tr><th>name</th><th>in</th><th>type</th><th>required</th></tr>")
        for p in parameters:
            out.append(
                f"<tr><td><code>{escape(p['name'])}</code></td>"
                f"<td>{escape(p.get('in', ''))}</td>"
                f"<td>{_type(p.get('schema', {}))}</td>"
                f"<td>{'yes' if p.get('required') else 'no'}</td></tr>"
            )
        out.append("</table>")
    body = operation.get("requestBody", {}).get("content", {})
    for media, content in body.items():
        out.append(
            f"<h3>Request body</h3><p><code>{escape(media)}</code>: "
            f"{_type(content.get('schema', {}))}</p>"
        )
    out.append("<h3>Responses</h3><table>")
    out.append("<tr><th>status</th><th>meaning</th><th>body</th></tr>")
    for status, response in operation.get("responses", {}).items():
        bodies = [
            f"<code>{escape(media)}</code> {_type(content.get('schema', {}))}"
            for media, content in response.get("content", {}).items()
        ]
        out.append(
            f"<tr><td>{escape(status)}</td>"
            f"<td>{escape(response.get('description', ''))}</td>"
            f"<td>{'<br>'.join(bodies)}</td></tr>"
        )
    out.append("</table>")
    return out


def _schema(name: str, schema: dict[str, Any]) -> list[str]:
    out = [f"<h3 id='schema-{escape(name)}'>{escape(name)}</h3>"]
    if schema.get("description"):
        out.append(f"<p>{escape(schema['description'])}</p>")
    properties = schema.get("properties", {})
    if not properties:
        out.append(f"<p>{_type(schema)}</p>")
        return out
    required = set(schema.get("required", []))
    out.append("<table><tr><th>field</th><th>type</th><th>required</th></tr>")
    for field, spec in properties.items():
        note = spec.get("description", "")
        out.append(
            f"<tr><td><code>{escape(field)}</code></td>"
            f"<td>{_type(spec)}{' — ' + escape(note) if note else ''}</td>"
            f"<td>{'yes' if field in required else 'no'}</td></tr>"
        )
    out.append("</table>")
    return out


def _type(schema: dict[str, Any]) -> str:
    """A schema in a few words: ``string (1-2000 characters)``, links to models."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f"<a href='#schema-{escape(name)}'>{escape(name)}</a>"
    if "anyOf" in schema:
        text = " or ".join(_type(s) for s in schema["anyOf"])
    elif "enum" in schema:
        text = " | ".join(
            f"<code>{escape(json.dumps(v))}</code>" for v in schema["enum"]
        )
    elif "const" in schema:
        text = f"<code>{escape(json.dumps(schema['const']))}</code>"
    elif schema.get("type") == "array":
        text = f"list of {_type(schema.get('items', {}))}"
    else:
        text = escape(str(schema.get("type", "any")))
    limits = []
    for low, high, unit in (
        ("minLength", "maxLength", " characters"),
        ("minimum", "maximum", ""),
        ("minItems", "maxItems", " items"),
    ):
        if low in schema and high in schema:
            limits.append(f"{_num(schema[low])}-{_num(schema[high])}{unit}")
        elif low in schema:
            limits.append(f"at least {_num(schema[low])}{unit}")
        elif high in schema:
            limits.append(f"at most {_num(schema[high])}{unit}")
    if "default" in schema:
        limits.append(f"default {escape(json.dumps(schema['default']))}")
    return text + (f" ({', '.join(limits)})" if limits else "")


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)
