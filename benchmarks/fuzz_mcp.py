"""Does any hostile MCP request, or any request to a server of several sites, fail?

Why: ``/mcp`` is a public door like ``/api/``, and a server of several sites
(``ragcite serve --site a=... --site b=...``) takes every request in a scope.
Whatever a client sends, the answer must be a 2xx/4xx or a JSON-RPC error
or tool error that says what is wrong, never a 5xx, never a crash hidden in
a 200, never the hostile input echoed back; and every URL any door returns
must resolve on the server that returned it. ``fuzz_api.py`` fuzzes ``/api/``
of one site; this is its sibling for the rest.

What it does: builds (or reuses) the example book and a version 2.0 of it
(``results/.sites/``, via ``_harness``), then starts two servers on
127.0.0.1 (generator ``extractive``, rate limit off): *one* serves the
example book at ``/``, *several* serves it as ``a`` with version 2.0 as
``b``. Against each it sends, by POST to ``/mcp`` (stateless JSON-RPC, one
request a POST):

1. protocol cases: invalid JSON and UTF-8, batches, wrong ``jsonrpc``,
   odd ids (objects, huge numbers), unknown methods, params of the wrong
   type, notifications;
2. tool cases, from each tool's own input schema (``tools/list``): every
   argument of every tool given each of ~25 hostile values (true for a
   number, "3", 3.0, -1, 10**30, 1e308, "", NUL, a lone UTF-16 surrogate,
   60,000 characters, 200-deep nesting, objects, lists of those), an
   argument the tool does not take, arguments that are not an object, a
   missing required one, unknown tools and a tool name of 60,000 characters,
   and the calls that should work (with several sites: each site, each
   version, ``*``, an ID found in both sites);
3. resource cases: the table of contents, passages by good, unknown,
   over-long, NUL and surrogate IDs, other schemes, URIs of 60,000
   characters, lists and templates;
4. HTTP cases: every other method (GET must be a 405 at once, not a stream
   left open), no ``Accept``, ``text/plain``, bodies of 400 KB and 1 MB (a
   413 with a JSON-RPC error), a foreign ``Origin`` (403) and ``Host``
   (421), an ``Origin`` of this machine without a port (allowed).

and, to *several* only, hand-written ``/api/`` requests in every scope
(``site``, ``version``, unknown and over-long ones, an ID in both sites)
plus schemathesis against its ``/api/openapi.json`` (as ``fuzz_api.py``
runs it, ``--max-examples`` per operation; ``--no-schemathesis`` skips it).

Counted as a failure (``server_errors``): an HTTP status >= 500 or no
response; a JSON-RPC ``-32603`` (internal error); a tool result that is the
SDK's word for a crash (``Error executing tool NAME`` with nothing after
it); a resource error ``Error reading resource``; a response holding 1,000
characters of an over-long value sent (``echoed``). Every URL in a
successful result (``url``/``URL`` fields, ``page.html#ID`` in cite text) is
fetched from the same server: it must be a 200 page holding that ``id``
(``urls_unresolved``). Server log tracebacks are counted too.

Run from the repository root (about two minutes; schemathesis is in the
``bench`` extra)::

    .venv/bin/python benchmarks/fuzz_mcp.py
    .venv/bin/python benchmarks/fuzz_mcp.py --no-schemathesis

Results go to ``benchmarks/results/fuzz_mcp.json`` unless ``--out``; it exits
1 when anything above failed.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from benchmarks import _corpora
from benchmarks._fuzz import fuzz_findings, request_once, run_schemathesis
from benchmarks._harness import (
    EXAMPLE_BOOK,
    RESULTS,
    Server,
    build_code_key,
    cached_build,
    envelope,
    example_site,
    table,
    tree_key,
    write_result,
)

DEFAULT_OUT = RESULTS / "fuzz_mcp.json"
HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
}
#: The filler of over-long values: a response holding ECHO of it echoed one.
FILL = "Q"
ECHO = FILL * 1000
LONG = FILL * 60_000  # well under the body limit (329,536 bytes), with its envelope
LONE = "\ud800"
QUESTION = "How long should the bloom take?"
HOSTILE: list[tuple[str, Any]] = [
    ("true", True),
    ("false", False),
    ("null", None),
    ("string of a number", "3"),
    ("float", 3.0),
    ("fraction", 2.5),
    ("negative", -1),
    ("zero", 0),
    ("10**30", 10**30),
    ("1e308", 1e308),
    ("empty string", ""),
    ("blank string", " \t\n"),
    ("NUL", "\u0000"),
    ("lone surrogate", LONE),
    ("text with a lone surrogate", f"bloom {LONE} crema"),
    ("RTL override", "\u202ebloom"),
    ("60,000 characters", LONG),
    ("nested 200 deep", json.loads("[" * 200 + "]" * 200)),
    ("object", {"a": 1}),
    ("empty list", []),
    ("list of true", [True]),
    ("list of strings of numbers", ["3"]),
    ("list of NUL", ["\u0000"]),
    ("list of surrogates", [LONE]),
    ("list of 60,000 characters", [LONG]),
    ("list of 1,000", list(range(1000))),
    ("traversal", "../../etc/passwd"),
]


@dataclass
class Case:
    """One request: *content* is sent as it is (None: no body)."""

    group: str
    name: str
    content: bytes | None
    method: str = "POST"
    path: str = "/mcp"
    headers: dict[str, str] = field(default_factory=lambda: dict(HEADERS))
    #: a JSON-RPC tools/call or resources/read whose results to follow
    tool: str | None = None


@dataclass
class Outcome:
    case: Case
    status: int
    text: str
    problem: str | None = None
    urls: list[str] = field(default_factory=list)


def rpc(method: str, params: Any = None, id_: Any = 1) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode()


def tool_call(name: str, arguments: Any) -> bytes:
    return rpc("tools/call", {"name": name, "arguments": arguments})


# -- the cases -------------------------------------------------------------------


def protocol_cases() -> list[Case]:
    raw = [
        ("not JSON", b"{not json"),
        ("empty body", b""),
        ("invalid UTF-8", b'{"jsonrpc": "2.0", "id": 1, "method": "\xff\xfe"}'),
        ("UTF-16", rpc("ping").decode().encode("utf-16")),
        ("JSON null", b"null"),
        ("JSON string", b'"ping"'),
        ("JSON number", b"1"),
        ("empty object", b"{}"),
        ("empty batch", b"[]"),
        ("batch of two pings", b"[" + rpc("ping") + b"," + rpc("ping", None, 2) + b"]"),
        ("batch of 2,000", b"[" + b",".join([rpc("ping")] * 2000) + b"]"),
        ("jsonrpc 1.0", b'{"jsonrpc": "1.0", "id": 1, "method": "ping"}'),
        ("no jsonrpc", b'{"id": 1, "method": "ping"}'),
        ("id an object", rpc("ping", None, {"a": 1})),
        ("id a list", rpc("ping", None, [1])),
        ("id true", rpc("ping", None, True)),
        ("id 10**30", rpc("ping", None, 10**30)),
        ("id 1e400", b'{"jsonrpc": "2.0", "id": 1e400, "method": "ping"}'),
        ("id NaN", b'{"jsonrpc": "2.0", "id": NaN, "method": "ping"}'),
        # JSON-RPC answers with the id it was sent: not filled with FILL
        ("id of 60,000 characters", rpc("ping", None, "I" * 60_000)),
        ("method unknown", rpc("nope/nope")),
        ("method a number", b'{"jsonrpc": "2.0", "id": 1, "method": 3}'),
        ("method of 60,000 characters", rpc(LONG)),
        ("params a list", rpc("tools/call", ["search"])),
        ("params a string", rpc("tools/list", "x")),
        ("nested 20,000 deep", b"[" * 20_000 + b"]" * 20_000),
        ("duplicate keys", b'{"jsonrpc": "2.0", "id": 1, "id": 2, "method": "ping"}'),
        ("notification", b'{"jsonrpc": "2.0", "method": "notifications/initialized"}'),
        ("a response", b'{"jsonrpc": "2.0", "id": 1, "result": {}}'),
        ("an error", b'{"jsonrpc": "2.0", "id": 1, "error": {"code": 1}}'),
        (
            "initialize",
            rpc(
                "initialize",
                {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "f", "version": "0"},
                },
            ),
        ),
        (
            "initialize, odd version",
            rpc(
                "initialize",
                {"protocolVersion": LONE, "capabilities": [], "clientInfo": None},
            ),
        ),
        ("tools/list", rpc("tools/list")),
        ("tools/list, cursor", rpc("tools/list", {"cursor": LONG})),
        ("prompts/list", rpc("prompts/list")),
        ("prompts/get", rpc("prompts/get", {"name": "x"})),
        (
            "completion",
            rpc(
                "completion/complete",
                {
                    "ref": {
                        "type": "ref/resource",
                        "uri": "ragcite://passage/{passage_id}",
                    },
                    "argument": {"name": "passage_id", "value": "ch"},
                },
            ),
        ),
        ("logging/setLevel", rpc("logging/setLevel", {"level": "debug"})),
        ("logging/setLevel bogus", rpc("logging/setLevel", {"level": LONE})),
    ]
    return [Case("protocol", name, content) for name, content in raw]


def tool_cases(tools: dict[str, dict[str, Any]], several: bool) -> list[Case]:
    """Every argument of every tool given each hostile value, and more."""
    base = {
        "search": {"query": "bloom"},
        "ask": {"question": QUESTION},
        "get_passage": {"passage_id": "ch6-sec4-p2"},
        "cite": {"passage_ids": ["ch6-sec4-p2"]},
    }
    if several:  # an ID is in both sites: name one
        base["get_passage"]["site"] = base["cite"]["site"] = "b"
    cases = []
    for name, schema in sorted(tools.items()):
        good = base.get(name, {})
        cases.append(Case("tool", f"{name}: valid", tool_call(name, good), tool=name))
        for argument in sorted(schema.get("properties", {})):
            for label, value in HOSTILE:
                body = tool_call(name, {**good, argument: value})
                cases.append(
                    Case("tool", f"{name}.{argument}: {label}", body, tool=name)
                )
        for label, arguments in (
            ("extra argument", {**good, "kk": 3}),
            ("extra argument of 60,000 characters", {**good, LONG: 3}),
            ("no arguments", {}),
            ("arguments a list", [good]),
            ("arguments a string", json.dumps(good)),
            ("arguments null", None),
        ):
            body = tool_call(name, arguments)
            cases.append(Case("tool", f"{name}: {label}", body, tool=name))
    for label, tool in (
        ("unknown tool", "nope"),
        ("tool name of 60,000 characters", LONG),
        ("tool name NUL", "\u0000"),
        ("tool name a surrogate", LONE),
    ):
        cases.append(Case("tool", label, tool_call(tool, {}), tool=tool))
    cases.append(Case("tool", "tool name a number", rpc("tools/call", {"name": 3})))
    cases += scoped_cases(several)
    return cases


def scoped_cases(several: bool) -> list[Case]:
    """The calls that should work, in each scope of the server."""
    scopes: list[dict[str, str]] = [{}]
    if several:
        scopes += [
            {"site": "a"},
            {"site": "b"},
            {"site": "*"},
            {"version": "1.0"},
            {"version": "2.0"},
            {"site": "a", "version": "2.0"},
            {"site": "c"},
            {"version": "9"},
        ]
    cases = []
    for scope in scopes:
        label = json.dumps(scope)
        calls = [
            ("search", {"query": "bloom", "k": 5, **scope}),
            ("ask", {"question": QUESTION, **scope}),
            (
                "ask",
                {
                    "question": "What does this mean?",
                    "selection": "the bloom lets carbon dioxide escape",
                    **scope,
                },
            ),
            ("get_passage", {"passage_id": "ch6-sec4-p2", **scope}),
            ("cite", {"passage_ids": ["ch6-sec4-p2", "ch0-sec0-p1"], **scope}),
            ("cite", {"passage_ids": ["ch6-sec4-p2"], "export": "csl-json", **scope}),
            ("cite", {"passage_ids": ["ch6-sec4-p2"], "export": "bibtex", **scope}),
            ("cite", {"passage_ids": ["x" * 100] * 50, **scope}),
            ("cite", {"passage_ids": ["ch0-sec0-p1"] * 51, **scope}),
        ]
        for name, arguments in calls:
            cases.append(
                Case("scoped", f"{name} {label}", tool_call(name, arguments), tool=name)
            )
    return cases


def resource_cases() -> list[Case]:
    uris: list[tuple[str, Any]] = [
        ("toc", "ragcite://toc"),
        ("passage", "ragcite://passage/ch6-sec4-p2"),
        ("passage unknown", "ragcite://passage/ch99-sec0-p1"),
        ("passage of 100 characters", "ragcite://passage/" + "x" * 100),
        ("passage of 60,000 characters", "ragcite://passage/" + LONG),
        ("passage NUL", "ragcite://passage/\u0000"),
        ("passage surrogate", f"ragcite://passage/{LONE}"),
        ("passage traversal", "ragcite://passage/../../etc/passwd"),
        ("passage empty", "ragcite://passage/"),
        ("other ragcite path", "ragcite://nope"),
        ("file scheme", "file:///etc/passwd"),
        ("http scheme", "http://169.254.169.254/latest/meta-data/"),
        ("URI of 60,000 characters", "ragcite://" + LONG),
        ("URI not a URI", "not a uri"),
        ("URI empty", ""),
        ("URI a number", 3),
        ("URI null", None),
    ]
    cases = [
        Case("resource", name, rpc("resources/read", {"uri": uri}), tool="resource")
        for name, uri in uris
    ]
    cases.append(Case("resource", "no uri", rpc("resources/read", {})))
    cases.append(Case("resource", "list", rpc("resources/list")))
    cases.append(Case("resource", "templates", rpc("resources/templates/list")))
    cases.append(
        Case(
            "resource",
            "subscribe",
            rpc("resources/subscribe", {"uri": "ragcite://toc"}),
        )
    )
    return cases


def http_cases() -> list[Case]:
    ping = rpc("ping")
    cases = [
        Case("http", f"{method} /mcp", None, method=method)
        for method in ("GET", "HEAD", "DELETE", "PUT", "PATCH", "OPTIONS")
    ]
    cases.append(
        Case(
            "http",
            "GET /mcp, event stream",
            None,
            method="GET",
            headers={"Accept": "text/event-stream"},
        )
    )
    cases += [
        Case(
            "http",
            "POST without Accept",
            ping,
            headers={"Content-Type": "application/json"},
        ),
        Case(
            "http",
            "POST as text/plain",
            ping,
            headers={**HEADERS, "Content-Type": "text/plain"},
        ),
        Case(
            "http",
            "POST without Content-Type",
            ping,
            headers={"Accept": HEADERS["Accept"]},
        ),
        Case("http", "POST of 400 KB", tool_call("search", {"query": FILL * 400_000})),
        Case("http", "POST of 1 MB", b'{"x": "' + FILL.encode() * 1_000_000 + b'"}'),
        Case(
            "http",
            "Origin foreign",
            ping,
            headers={**HEADERS, "Origin": "https://evil.example"},
        ),
        Case(
            "http",
            "Origin localhost without a port",
            ping,
            headers={**HEADERS, "Origin": "http://localhost"},
        ),
        Case("http", "Host foreign", ping, headers={**HEADERS, "Host": "evil.example"}),
        Case("http", "POST /mcp/", ping, path="/mcp/"),
        Case("http", "POST /mcp?x=1", ping, path="/mcp?x=1"),
    ]
    return cases


def api_cases() -> list[Case]:
    """``/api/`` of a server of several sites, in every scope."""
    gets = [
        "/api/health",
        "/api/search?q=bloom&site=a",
        "/api/search?q=bloom&site=b&version=2.0",
        "/api/search?q=bloom&version=1.0",
        "/api/search?q=bloom&site=%2A",
        "/api/search?q=bloom&site=c",
        "/api/search?q=bloom&site=" + "a" * 5000,
        "/api/search?q=bloom&site=%00",
        "/api/search?q=bloom&version=%ED%A0%80",
        "/api/passages/ch6-sec4-p2",
        "/api/passages/ch6-sec4-p2?site=a",
        "/api/passages/ch6-sec4-p2?version=2.0",
        "/api/passages/ch6-sec4-p2?site=a&version=2.0",
        "/api/passages/" + "x" * 101,
        "/api/passages/" + "x" * 5000,
        "/a/index.html",
        "/b/brewing/pour_over.html",
        "/a/_ragcite/manifest.json",
        "/a/.buildinfo",
        "/c/index.html",
        "/a/../b/index.html",
    ]
    cases = [
        Case("api", f"GET {p[:80]}", None, method="GET", path=p, tool="api")
        for p in gets
    ]
    bodies: list[dict[str, Any]] = [
        {"question": QUESTION, "site": "a"},
        {"question": QUESTION, "site": "b"},
        {"question": QUESTION, "version": "1.0"},
        {"question": QUESTION, "version": "2.0.1"},
        {"question": QUESTION, "site": "*"},
        {"question": QUESTION},
        {"question": QUESTION, "site": "c"},
        {"question": QUESTION, "site": 3},
        {"question": QUESTION, "site": LONE},
        {"question": QUESTION, "version": FILL * 5000},
        {"question": QUESTION, "site": "a", "k": True},
        {"question": QUESTION, "site": "a", "k": "3"},
        {"question": QUESTION, "filters": {"chapters": [True]}},
    ]
    for body in bodies:
        content = json.dumps(body).encode()
        label = json.dumps(body)[:80]
        for path in ("/api/ask", "/api/ask/stream"):
            cases.append(
                Case("api", f"POST {path} {label}", content, path=path, tool="api")
            )
    return cases


# -- sending and judging ---------------------------------------------------------

_PAGE_URL = re.compile(r"(?<![\w/.:-])((?:[\w.-]+/)*[\w.-]+\.html)#([\w-]+)")


def urls_in(value: Any) -> list[str]:
    """Relative page URLs in a result: ``url``/``URL`` fields, and
    ``page.html#ID`` in any text (cite's references, CSL-JSON, BibTeX)."""
    found: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key.lower() == "url" and isinstance(item, str):
                found.append(item)
            else:
                found += urls_in(item)
    elif isinstance(value, list):
        for item in value:
            found += urls_in(item)
    elif isinstance(value, str):
        if value.lstrip().startswith(("{", "[")):
            try:
                return urls_in(json.loads(value))
            except ValueError:
                pass
        found += [f"{page}#{anchor}" for page, anchor in _PAGE_URL.findall(value)]
    return [u for u in found if not re.match(r"^[a-z][a-z0-9+.-]*:", u)]


def sdk_echo(text: str) -> bool:
    """The SDK's "Method not found" carries the method sent as its ``data``
    (bounded by the body limit over HTTP): noted, not ours to change."""
    return '"code":-32601' in text and '"message":"Method not found"' in text


def judge(case: Case, status: int, text: str) -> tuple[str | None, list[str]]:
    """The failure this response is (None: none), and the URLs to check."""
    if status == 0:
        return "no response", []
    if status >= 500:
        return f"HTTP {status}", []
    if ECHO in text and not sdk_echo(text):
        return "echoed an over-long value", []
    if case.path.startswith("/api/ask/stream") and "event: error" in text:
        return "event: error in the stream", []
    try:
        reply = json.loads(text) if text else None
    except ValueError:
        return None, []
    if case.tool == "api" and isinstance(reply, dict):
        return None, urls_in(reply) if status == 200 else []
    if not isinstance(reply, dict):
        return None, []
    error = reply.get("error")
    if isinstance(error, dict):
        if error.get("code") == -32603:
            return f"internal error: {error.get('message')!r}", []
        if str(error.get("message", "")).startswith("Error reading resource"):
            return f"resource crash: {error.get('message')!r}", []
        return None, []
    result = reply.get("result")
    if not isinstance(result, dict):
        return None, []
    if result.get("isError"):
        message = result["content"][0]["text"] if result.get("content") else ""
        if re.fullmatch(r"Error executing tool [^:]*", message):
            return f"tool crash: {message!r}", []
        return None, []
    if case.tool == "resource":
        return None, urls_in([c.get("text", "") for c in result.get("contents", [])])
    return None, urls_in(result.get("structuredContent"))


def send(base: str, case: Case) -> Outcome:
    status, text = request_once(
        base,
        case.method,
        case.path,
        content=case.content,
        headers=case.headers,
        timeout=30,
    )
    problem, urls = judge(case, status, text)
    return Outcome(case, status, text, problem, urls)


class Pages:
    """Pages fetched once from one server, to see that URLs resolve there."""

    def __init__(self, base: str) -> None:
        self.client = httpx.Client(base_url=base, timeout=30)
        self.pages: dict[str, tuple[int, str]] = {}

    def __enter__(self) -> Pages:
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.close()

    def resolves(self, url: str) -> bool:
        page, _, anchor = url.partition("#")
        if page not in self.pages:
            response = self.client.get("/" + page.lstrip("/"))
            self.pages[page] = (response.status_code, response.text)
        status, body = self.pages[page]
        return status == 200 and (not anchor or f'id="{anchor}"' in body)


def tool_schemas(base: str) -> dict[str, dict[str, Any]]:
    reply = httpx.post(f"{base}/mcp", content=rpc("tools/list"), headers=HEADERS)
    reply.raise_for_status()
    return {t["name"]: t["inputSchema"] for t in reply.json()["result"]["tools"]}


def run_server(name: str, settings: dict[str, Any], log_dir: Path) -> dict[str, Any]:
    several = "sites" in settings
    with Server(settings, log_dir) as server:
        tools = tool_schemas(server.url)
        cases = protocol_cases() + tool_cases(tools, several) + resource_cases()
        cases += http_cases() + (api_cases() if several else [])
        started = time.perf_counter()
        outcomes = [send(server.url, case) for case in cases]
        seconds = time.perf_counter() - started
        urls = sorted({u for o in outcomes for u in o.urls})
        with Pages(server.url) as pages:
            unresolved = [u for u in urls if not pages.resolves(u)]
        tracebacks = server.tracebacks()
        log_tail = server.log_tail(60) if tracebacks else ""
        memory = server.memory_mib()
    return summarize(name, settings, outcomes, seconds, urls, unresolved) | {
        "server_tracebacks": tracebacks,
        "server_log_tail": log_tail,
        "server_memory_mib": memory,
    }


def summarize(
    name: str,
    settings: dict[str, Any],
    outcomes: list[Outcome],
    seconds: float,
    urls: list[str],
    unresolved: list[str],
) -> dict[str, Any]:
    by_group: dict[str, Counter[str]] = {}
    for o in outcomes:
        by_group.setdefault(o.case.group, Counter())[str(o.status)] += 1
    bad = [o for o in outcomes if o.problem]
    return {
        "server": name,
        "settings": {
            k: v for k, v in settings.items() if k not in ("build_dir", "sites")
        },
        "sites": [s[0] for s in settings.get("sites", [])] or None,
        "requests": len(outcomes),
        "seconds": round(seconds, 1),
        "statuses_by_group": {
            g: dict(sorted(c.items())) for g, c in sorted(by_group.items())
        },
        "http_5xx": sum(1 for o in outcomes if o.status >= 500),
        "no_response": sum(1 for o in outcomes if o.status == 0),
        "crashes_in_200": sum(
            1
            for o in bad
            if o.problem
            and o.problem.startswith(("tool crash", "internal", "resource crash"))
        ),
        "echoed": sum(1 for o in bad if o.problem == "echoed an over-long value"),
        "notes": [
            f"{o.case.name}: the SDK's 'Method not found' echoes the method"
            for o in outcomes
            if ECHO in o.text and sdk_echo(o.text)
        ],
        "urls_checked": len(urls),
        "urls_unresolved": unresolved,
        "server_errors": [
            {
                "group": o.case.group,
                "case": o.case.name,
                "method": o.case.method,
                "path": o.case.path,
                "status": o.status,
                "problem": o.problem,
                "request": (o.case.content or b"")[:300].decode(
                    "utf-8", "backslashreplace"
                ),
                "response": o.text[:300],
            }
            for o in bad
        ],
        "cases": [
            {"group": o.case.group, "case": o.case.name, "status": o.status}
            for o in outcomes
        ],
    }


# -- the sites -------------------------------------------------------------------


def version_two() -> Path:
    """The example book as version 2.0 (conf.py only): a second site."""

    def prepare(work: Path) -> Path:
        source = _corpora.prepare_example_book(work, with_ragcite=True)
        conf = source / "conf.py"
        lines = [
            line
            for line in conf.read_text("utf-8").splitlines()
            if not line.startswith(("version =", "release ="))
        ]
        conf.write_text("\n".join([*lines, 'version = "2.0"', 'release = "2.0.1"', ""]))
        return source

    key = build_code_key() + tree_key(EXAMPLE_BOOK) + "v2"
    return cached_build("example_book_v2", key, prepare)[0]


def schemathesis_several(url: str, work: Path, max_examples: int) -> dict[str, Any]:
    """fuzz_api.py's schemathesis run against the server of several sites."""
    fuzz = run_schemathesis(url, work, max_examples, 0, "not_a_server_error", 900)
    counts, bad = fuzz_findings(fuzz["entries"])
    return {
        "command": fuzz["command"],
        "exit_code": fuzz["exit_code"],
        "seconds": fuzz["seconds"],
        "requests": len(fuzz["entries"]),
        "statuses": dict(sorted(counts.items())),
        "http_5xx": len(bad),
        "server_errors": bad,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, help="an existing build to serve")
    parser.add_argument(
        "--max-examples", type=int, default=100, help="schemathesis, per operation"
    )
    parser.add_argument("--no-schemathesis", action="store_true")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON output")
    args = parser.parse_args(argv)

    one = example_site(args.site).resolve()
    two = version_two().resolve()
    common = {"generator": "extractive", "rate_limit": 0}
    servers = {
        "one": {"build_dir": str(one), **common},
        "several": {"sites": [["a", str(one)], ["b", str(two)]], **common},
    }
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="ragcite-fuzz-mcp-") as tmp:
        for name, settings in servers.items():
            print(f"server {name} ...", file=sys.stderr, flush=True)
            results[name] = run_server(name, settings, Path(tmp))
        if not args.no_schemathesis:
            print(
                "schemathesis against the server of several sites ...", file=sys.stderr
            )
            with Server(servers["several"], Path(tmp)) as server:
                results["several_schemathesis"] = schemathesis_several(
                    server.url, Path(tmp), args.max_examples
                )
                results["several_schemathesis"]["server_tracebacks"] = (
                    server.tracebacks()
                )
    return report(args.out, results)


def report(out: Path, results: dict[str, Any]) -> int:
    rows = []
    failures = 0
    for name in ("one", "several"):
        r = results[name]
        failed = (
            len(r["server_errors"]) + len(r["urls_unresolved"]) + r["server_tracebacks"]
        )
        failures += failed
        rows.append(
            [
                name,
                str(r["requests"]),
                str(r["http_5xx"] + r["no_response"]),
                str(r["crashes_in_200"]),
                str(r["echoed"]),
                f"{r['urls_checked'] - len(r['urls_unresolved'])}/{r['urls_checked']}",
                str(r["server_tracebacks"]),
            ]
        )
        print(f"\n{name}: statuses by group {r['statuses_by_group']}")
        for bad in r["server_errors"]:
            print(f"- [{bad['group']}] {bad['case']}: {bad['problem']}")
            print(f"    -> {bad['response'][:200]!r}")
        for url in r["urls_unresolved"]:
            print(f"- URL does not resolve on its server: {url}")
    st = results.get("several_schemathesis")
    if st:
        failures += st["http_5xx"] + st["server_tracebacks"]
        rows.append(
            [
                "several /api (schemathesis)",
                str(st["requests"]),
                str(st["http_5xx"]),
                "",
                "",
                "",
                str(st["server_tracebacks"]),
            ]
        )
    print()
    print(
        table(
            [
                "server",
                "requests",
                "5xx",
                "crashes in 200",
                "echoed",
                "URLs resolved",
                "tracebacks",
            ],
            rows,
        )
    )
    passed = failures == 0
    total_5xx = sum(
        results[n]["http_5xx"] + results[n]["no_response"] for n in ("one", "several")
    )
    total_5xx += st["http_5xx"] if st else 0
    verdict = "PASS" if passed else "FAIL"
    print(f"\n5xx: {total_5xx}; failures of any kind: {failures}; {verdict}")
    payload = envelope(
        "fuzz_mcp", http_5xx=total_5xx, failures=failures, passed=passed, **results
    )
    write_result(out, payload)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
