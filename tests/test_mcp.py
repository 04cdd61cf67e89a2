"""The MCP door with the SDK's real client: stdio (`ragcite mcp`), HTTP (`serve`)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from sphinx_ragcite.contracts import CITATION_DATE_ENV
from sphinx_ragcite.server.app import create_app
from sphinx_ragcite.server.settings import ServerSettings

from conftest import ROOTS, ragcite_serve, read_passages, sphinx_build

TOOLS = {"search", "ask", "get_passage", "cite"}
QUESTION = "How long should the bloom take?"
#: Timings differ between two runs of the same answer; nothing else may.
TIMINGS = ("retrieval_ms", "generation_ms", "verification_ms")
ENV = {**os.environ, CITATION_DATE_ENV: "2026-11-24T00:00:00Z"}


@asynccontextmanager
async def stdio_session(site: Path):  # type: ignore[no-untyped-def]
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "sphinx_ragcite", "mcp", str(site)],
        env=ENV,
    )
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


@asynccontextmanager
async def http_session(url: str):  # type: ignore[no-untyped-def]
    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


@pytest.fixture(scope="module")
def served(example_site: Path, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """A real ``ragcite serve`` process; yields its base URL."""
    log = tmp_path_factory.mktemp("served") / "server.log"
    args = (str(example_site), "--log-level", "warning")
    with ragcite_serve(*args, log=log, env=ENV) as (url, _):
        yield url


def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content  # type: ignore[no-any-return]


def error_text(result: Any) -> str:
    assert result.is_error
    return str(result.content[0].text)


async def exercise(session: ClientSession, site: Path) -> dict[str, Any]:
    """Every tool and resource once, the bad inputs, then the server still works."""
    tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.input_schema["type"] == "object"
        assert tool.output_schema is not None, tool.name
    assert "Only the cited passage IDs are evidence" in (tools["ask"].description or "")
    assert tools["ask"].input_schema["required"] == ["question"]

    hits = structured(await session.call_tool("search", {"query": "bloom", "k": 3}))
    assert len(hits["hits"]) == 3
    first = hits["hits"][0]
    assert {"passage_id", "url", "heading_path", "snippet", "score"} <= set(first)
    filtered = structured(
        await session.call_tool("search", {"query": "bloom", "chapters": [3]})
    )
    assert all(h["passage_id"].startswith("ch3-") for h in filtered["hits"])

    answer = structured(await session.call_tool("ask", {"question": QUESTION}))
    assert answer["grounded"] is True
    assert answer["citations"]
    for citation in answer["citations"]:
        assert f"[{citation['n']}]" in answer["answer"]
        assert citation["passage_id"] in answer["metadata"]["retrieved"]
        page, _, anchor = citation["url"].partition("#")
        assert anchor == citation["passage_id"]
        soup = BeautifulSoup((site / page).read_text("utf-8"), "html.parser")
        assert len(soup.find_all(id=anchor)) == 1, citation["url"]

    pid = answer["citations"][0]["passage_id"]
    record = structured(await session.call_tool("get_passage", {"passage_id": pid}))
    assert record["passage_id"] == pid
    assert record["text"]
    resource = await session.read_resource(f"ragcite://passage/{pid}")
    assert resource.contents[0].text == record["text"]
    assert resource.contents[0].mime_type == "text/plain"
    toc = json.loads((await session.read_resource("ragcite://toc")).contents[0].text)
    ids = [
        p["passage_id"]
        for chapter in toc["chapters"]
        for section in chapter["sections"]
        for p in section["passages"]
    ]
    assert ids == [r["passage_id"] for r in read_passages(site)]

    cited = structured(
        await session.call_tool("cite", {"passage_ids": [pid], "style": "apa"})
    )
    assert cited["format"] == "apa"
    assert cited["text"].startswith("[1] ")
    bib = structured(
        await session.call_tool("cite", {"passage_ids": [pid], "export": "bibtex"})
    )
    assert bib["text"].startswith("@")
    assert pid in bib["text"]

    # bad input: a tool error that says what is wrong, never a dead server
    bad = {
        ("ask", json.dumps({"question": "   "})): "question: must not be empty",
        ("ask", json.dumps({"question": "x" * 2001})): "at most 2000 characters",
        ("ask", json.dumps({"question": "x", "k": 99})): "k",
        ("ask", json.dumps({"question": "x", "style": "mla"})): "style",
        ("ask", json.dumps({})): "question",
        ("search", json.dumps({"query": " "})): "query: must not be empty",
        ("get_passage", json.dumps({"passage_id": "ch99-sec1-p1"})): "No passage",
        ("get_passage", json.dumps({"passage_id": "<b>"})): "look like ch3-sec2-p4",
        ("cite", json.dumps({"passage_ids": ["ch99-sec1-p1"]})): "unknown passage id",
        ("cite", json.dumps({"passage_ids": []})): "passage_ids",
    }
    for (name, arguments), expected in bad.items():
        text = error_text(await session.call_tool(name, json.loads(arguments)))
        assert expected in text, (name, arguments, text)
    with pytest.raises(Exception, match="ch99"):
        await session.read_resource("ragcite://passage/ch99-sec1-p1")
    again = structured(await session.call_tool("search", {"query": "bloom", "k": 1}))
    assert again["hits"][0]["passage_id"] == first["passage_id"]
    return answer


def without_timings(answer: dict[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in answer["metadata"].items() if k not in TIMINGS}
    return {**answer, "metadata": meta}


def test_stdio_real_client(example_site: Path, served: str) -> None:
    async def run() -> dict[str, Any]:
        async with stdio_session(example_site) as session:
            return await exercise(session, example_site)

    answer = asyncio.run(run())
    # the same answer JSON as POST /api/ask in another process (timings aside)
    api = httpx.post(f"{served}/api/ask", json={"question": QUESTION}, timeout=60)
    assert without_timings(answer) == without_timings(api.json())


def test_streamable_http_real_client(example_site: Path, served: str) -> None:
    # /api/ask first: MCP ask then comes from the same answer path and cache,
    # so the JSON is identical to the byte, timings included
    api = httpx.post(
        f"{served}/api/ask", json={"question": QUESTION, "style": "ieee"}, timeout=60
    )
    assert api.status_code == 200

    async def run() -> dict[str, Any]:
        async with http_session(f"{served}/mcp") as session:
            await exercise(session, example_site)
            result = await session.call_tool(
                "ask", {"question": QUESTION, "style": "ieee"}
            )
            return structured(result)

    assert asyncio.run(run()) == api.json()


def test_stdout_carries_only_the_protocol(example_site: Path) -> None:
    """Bad input and errors are answered; stdout holds JSON-RPC lines only."""
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "ask", "arguments": {"question": ""}},
        },
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "nope", "arguments": {}},
        },
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/call",
            "params": {
                "name": "get_passage",
                "arguments": {"passage_id": "ch0-sec0-p1"},
            },
        },
    ]
    process = subprocess.Popen(
        [sys.executable, "-m", "sphinx_ragcite", "mcp", str(example_site)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    process.stdin.write("not json\n")
    process.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
    process.stdin.flush()
    by_id: dict[Any, dict[str, Any]] = {}
    try:
        while not {1, 2, 3, 4} <= set(by_id):
            line = process.stdout.readline()
            assert line, process.stderr.read()  # type: ignore[union-attr]
            reply = json.loads(line)  # every line of stdout is a JSON-RPC message
            by_id[reply.get("id")] = reply
    finally:
        process.stdin.close()
        process.wait(timeout=30)
    assert by_id[2]["result"]["isError"] is True
    assert "question" in by_id[2]["result"]["content"][0]["text"]
    assert "nope" in json.dumps(by_id[3])
    assert by_id[4]["result"]["structuredContent"]["passage_id"] == "ch0-sec0-p1"
    assert process.stdout.read().strip() == ""
    assert process.returncode == 0


def test_a_hostile_passage_comes_back_as_plain_text(tmp_path: Path) -> None:
    site = tmp_path / "out"
    sphinx_build(ROOTS / "test-hostile", site, "-d", str(tmp_path / "d"))
    records = read_passages(site)
    hostile = [r for r in records if "__pwned" in r["text"]]
    assert hostile

    async def run() -> None:
        async with stdio_session(site) as session:
            for record in hostile:
                pid = record["passage_id"]
                result = await session.call_tool("get_passage", {"passage_id": pid})
                assert structured(result)["text"] == record["text"]
                assert json.loads(result.content[0].text)["text"] == record["text"]
                read = await session.read_resource(f"ragcite://passage/{pid}")
                assert read.contents[0].mime_type == "text/plain"
                assert read.contents[0].text == record["text"]
            answer = structured(
                await session.call_tool("ask", {"question": "espresso crema pressure"})
            )
            for citation in answer["citations"]:
                assert citation["url"].partition("#")[2] == citation["passage_id"]

    asyncio.run(run())


def test_mcp_over_http_is_guarded_like_the_api(example_site: Path) -> None:
    settings = ServerSettings(
        build_dir=example_site, host="0.0.0.0", rate_limit=3, max_body_bytes=2048
    )
    headers = {"Accept": "application/json, text/event-stream"}
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        },
    }
    with TestClient(create_app(settings)) as client:
        ok = client.post("/mcp", json=initialize, headers=headers)
        assert ok.status_code == 200
        assert ok.json()["result"]["serverInfo"]["name"] == "sphinx-ragcite"
        assert ok.headers["cache-control"] == "no-store"
        assert ok.headers["x-content-type-options"] == "nosniff"
        assert "default-src 'none'" in ok.headers["content-security-policy"]
        big = client.post(
            "/mcp", content=b'{"x": "' + b"a" * 4000 + b'"}', headers=headers
        )
        assert big.status_code == 413  # a JSON-RPC error the client reads
        assert big.json()["error"]["code"] == -32600
        client.post("/mcp", json=initialize, headers=headers)
        limited = client.post("/mcp", json=initialize, headers=headers)
        assert limited.status_code == 429
        assert "retry-after" in limited.headers


def test_loopback_server_refuses_other_hosts_and_origins(example_site: Path) -> None:
    """DNS rebinding: a page elsewhere cannot reach a server on loopback."""
    settings = ServerSettings(build_dir=example_site)
    headers = {"Accept": "application/json, text/event-stream"}
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    with TestClient(create_app(settings), base_url="http://127.0.0.1:8000") as client:
        foreign = client.post(
            "/mcp", json=body, headers={**headers, "Origin": "https://evil.example"}
        )
        assert foreign.status_code == 403
    with TestClient(create_app(settings), base_url="http://evil.example") as client:
        assert client.post("/mcp", json=body, headers=headers).status_code == 421


# -- the same rules on every door (issue 24) -----------------------------------


@pytest.fixture(scope="module")
def api(example_site: Path):  # type: ignore[no-untyped-def]
    """The app in-process; ``call`` reaches its state through the SDK's client."""
    settings = ServerSettings(build_dir=example_site, rate_limit=0)
    with TestClient(create_app(settings)) as client:
        yield client


def call(client: TestClient, name: str, arguments: dict[str, Any]) -> Any:
    """One tool call with the SDK's client, in-process, over *client*'s state."""
    from mcp import Client

    from sphinx_ragcite.server.mcp import build_server

    async def run() -> Any:
        async with Client(build_server(lambda: client.app.state.ragcite)) as session:
            return await session.call_tool(name, arguments)

    return asyncio.run(run())


def read(client: TestClient, uri: str) -> Any:
    """The resource at *uri*, or the MCPError reading it raised."""
    from mcp import Client
    from mcp.shared.exceptions import MCPError

    from sphinx_ragcite.server.mcp import build_server

    async def run() -> Any:
        async with Client(build_server(lambda: client.app.state.ragcite)) as session:
            try:
                return await session.read_resource(uri)
            except MCPError as error:
                return error

    return asyncio.run(run())


INTEGER = "must be an integer, not true/false"
NOT_INTEGER = "Input should be a valid integer"


@pytest.mark.parametrize(
    ("tool", "arguments", "expected", "api_body", "api_field"),
    [
        ("ask", {"k": True}, f"k: {INTEGER}", {"k": True}, "k"),
        ("ask", {"k": "3"}, f"k: {NOT_INTEGER}", {"k": "3"}, "k"),
        ("ask", {"k": 3.0}, f"k: {NOT_INTEGER}", {"k": 3.0}, "k"),
        (
            "ask",
            {"chapters": [True]},
            f"chapters.0: {INTEGER}",
            {"filters": {"chapters": [True]}},
            "filters.chapters.0",
        ),
        (
            "ask",
            {"chapters": ["3"]},
            f"chapters.0: {NOT_INTEGER}",
            {"filters": {"chapters": ["3"]}},
            "filters.chapters.0",
        ),
        (
            "ask",
            {"question": 5},
            "question: Input should be a valid string",
            {"question": 5},
            "question",
        ),
        (
            "ask",
            {"kk": 3},
            "kk: Extra inputs are not permitted",
            {"kk": 3},
            "kk",
        ),
        ("search", {"k": True}, f"k: {INTEGER}", None, None),
        ("search", {"k": "3"}, f"k: {NOT_INTEGER}", None, None),
        ("search", {"chapters": [True]}, f"chapters.0: {INTEGER}", None, None),
        ("search", {"query": 5}, "query: Input should be a valid string", None, None),
        ("search", {"kk": 3}, "kk: Extra inputs are not permitted", None, None),
        (
            "get_passage",
            {"passage_id": 5},
            "passage_id: Input should be a valid string",
            None,
            None,
        ),
        (
            "cite",
            {"passage_ids": ["ch0-sec0-p1"], "style": 3},
            "style: Input should be",
            None,
            None,
        ),
    ],
)
def test_mcp_validates_like_the_api(
    api: TestClient,
    tool: str,
    arguments: dict[str, Any],
    expected: str,
    api_body: dict[str, Any] | None,
    api_field: str | None,
) -> None:
    """Issue 24.8: strict types, and ``field: message`` as ``/api/ask`` says it."""
    base = {"ask": {"question": QUESTION}, "search": {"query": "bloom"}}
    text = error_text(call(api, tool, {**base.get(tool, {}), **arguments}))
    assert text.startswith(f"Error executing tool {tool}: {expected}"), text
    assert "pydantic" not in text
    assert "validation error" not in text
    if api_body is not None:
        response = api.post("/api/ask", json={"question": QUESTION, **api_body})
        assert response.status_code == 400, response.text
        error = response.json()["error"]
        assert error["field"] == api_field
        # the same message; only the field's path differs (filters.chapters)
        assert error["message"].partition(": ")[2] == expected.partition(": ")[2]


def test_one_limit_for_passage_ids_on_every_door(
    api: TestClient, example_site: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 24.10: an over-long ID is refused by its length, never echoed."""
    from sphinx_ragcite.cli.commands import main
    from sphinx_ragcite.contracts import MAX_PASSAGE_ID

    limit = f"at most {MAX_PASSAGE_ID} characters"
    huge = "ch1-sec1-p" + "9" * 100_000
    for tool, arguments in (
        ("cite", {"passage_ids": [huge]}),
        ("cite", {"passage_ids": ["ch0-sec0-p1", "x" * (MAX_PASSAGE_ID + 1)]}),
        ("get_passage", {"passage_id": huge}),
    ):
        text = error_text(call(api, tool, arguments))
        assert limit in text, text[:300]
        assert len(text) < 500
    long = huge[:5000]  # clients refuse a URL of 64 KiB themselves
    for uri in (f"ragcite://passage/{long}", f"ragcite://{long}"):
        refused = str(read(api, uri))
        assert "at most" in refused
        assert len(refused) < 500
    for passage_id in (long, "x" * (MAX_PASSAGE_ID + 1)):
        response = api.get(f"/api/passages/{passage_id}")
        assert response.status_code == 400
        assert response.json()["error"]["field"] == "passage_id"
        assert limit in response.json()["error"]["message"]
        assert len(response.text) < 500
    longest = "x" * MAX_PASSAGE_ID  # at the limit: an ordinary unknown ID
    assert api.get(f"/api/passages/{longest}").status_code == 404
    assert "No passage" in error_text(call(api, "get_passage", {"passage_id": longest}))
    assert main(["cite", huge, "--site", str(example_site)]) == 2
    err = capsys.readouterr().err
    assert limit in err
    assert len(err) < 500


def test_an_oversized_mcp_request_is_a_jsonrpc_error(served: str) -> None:
    """Issue 24.9: the client reads why (a JSON-RPC error), not a bare HTTP 400."""
    from mcp.shared.exceptions import MCPError

    async def run() -> None:
        async with http_session(f"{served}/mcp") as session:
            with pytest.raises(MCPError, match="larger than"):
                await session.call_tool("ask", {"question": "x" * 100_000})
            # the session is still usable
            ok = await session.call_tool("search", {"query": "bloom", "k": 1})
            assert not ok.is_error

    asyncio.run(run())
    raw = httpx.post(
        f"{served}/mcp",
        content=b'{"jsonrpc": "2.0", "id": 7, "x": "' + b"a" * 100_000 + b'"}',
        headers={
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        },
    )
    assert raw.status_code == 413
    body = raw.json()
    assert body["jsonrpc"] == "2.0"
    assert body["error"]["code"] == -32600
    assert "larger than" in body["error"]["message"]


def test_get_mcp_is_refused_not_left_open(served: str) -> None:
    """Issue 24.11: stateless /mcp has no stream to offer: 405, at once."""
    response = httpx.get(
        f"{served}/mcp", headers={"Accept": "text/event-stream"}, timeout=5
    )
    assert response.status_code == 405
    assert "POST" in response.headers["allow"]


def test_loopback_accepts_origins_without_a_port(example_site: Path) -> None:
    """Issue 24.11: a page on port 80 (``http://localhost``) may use /mcp."""
    settings = ServerSettings(build_dir=example_site)
    headers = {"Accept": "application/json, text/event-stream"}
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    with TestClient(create_app(settings), base_url="http://localhost") as client:
        for origin in ("http://localhost", "http://127.0.0.1", "http://[::1]"):
            response = client.post(
                "/mcp", json=body, headers={**headers, "Origin": origin}
            )
            assert response.status_code == 200, (origin, response.text)
        evil = client.post(
            "/mcp", json=body, headers={**headers, "Origin": "http://localhost.evil"}
        )
        assert evil.status_code == 403


def test_mcp_ask_with_a_filter_that_keeps_nothing_is_not_found(api: TestClient) -> None:
    result = call(
        api,
        "ask",
        {"question": "How long should the bloom take?", "docnames": ["nonexistent"]},
    )
    assert not result.is_error, error_text(result)
    answer = structured(result)
    assert answer["citations"] == []
    assert answer["grounded"] is False


@pytest.mark.parametrize(
    "question",
    [
        "How long should the bloom take?",
        "Who invented the French press?",
        "How do I compute PageRank scores for the characters?",
    ],
)
def test_mcp_ask_carries_the_outcome_of_the_api(api: TestClient, question: str) -> None:
    """The same outcome through both doors; the tool says what each means."""
    answer = structured(call(api, "ask", {"question": question}))
    expected = api.post("/api/ask", json={"question": question}).json()
    assert answer["outcome"] == expected["outcome"]
    assert answer["passages"] == expected["passages"]
    assert answer["grounded"] is (answer["outcome"] == "answer")


def test_mcp_ask_output_schema_names_the_outcomes(api: TestClient) -> None:
    from mcp import Client

    from sphinx_ragcite.server.mcp import build_server

    async def tools() -> Any:
        async with Client(build_server(lambda: api.app.state.ragcite)) as session:
            return (await session.list_tools()).tools

    ask = next(tool for tool in asyncio.run(tools()) if tool.name == "ask")
    schema = ask.output_schema
    assert schema is not None
    outcomes = ["answer", "passages", "not_found"]
    assert schema["properties"]["outcome"]["enum"] == outcomes
    assert "ShownPassage" in schema["$defs"]
    for outcome in ("`passages`", "`not_found`"):
        assert outcome in (ask.description or "")
