"""The MCP door with the SDK's real client: stdio (`ragcite mcp`), HTTP (`serve`)."""

from __future__ import annotations

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

from sphinx_ragcite.contracts import CITATION_DATE_ENV
from sphinx_ragcite.server.app import create_app
from sphinx_ragcite.server.settings import ServerSettings

from helpers.builds import read_passages, sphinx_build
from helpers.mcp import http_session
from helpers.repo import EXAMPLE_BOOK, ROOTS
from helpers.servers import ragcite_serve, run_async

TOOLS = {"search", "ask", "get_passage", "cite"}
QUESTION = "How long is the bloom?"
#: Timings differ between two runs of the same answer; nothing else may.
TIMINGS = ("retrieval_ms", "generation_ms", "verification_ms")
ENV = {**os.environ, CITATION_DATE_ENV: "2026-11-24T00:00:00Z"}


@asynccontextmanager
async def stdio_session(site: Path):
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


@pytest.fixture(scope="module")
def served(example_site: Path, tmp_path_factory: pytest.TempPathFactory):
    """A real ``ragcite serve`` process; yields its base URL."""
    log = tmp_path_factory.mktemp("served") / "server.log"
    args = (str(example_site), "--log-level", "warning")
    with ragcite_serve(*args, log=log, env=ENV) as (url, _):
        yield url


def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


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


@pytest.mark.slow
def test_stdio_real_client(example_site: Path, served: str) -> None:
    async def run() -> dict[str, Any]:
        async with stdio_session(example_site) as session:
            return await exercise(session, example_site)

    answer = run_async(run())
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

    assert run_async(run()) == api.json()


@pytest.mark.slow
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
            assert line, process.stderr.read()
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


@pytest.mark.slow
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

    run_async(run())


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
def api(example_site: Path):
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

    return run_async(run())


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

    return run_async(run())


INTEGER = "must be an integer, not true/false"
NOT_INTEGER = "Input should be a valid integer"


@pytest.mark.slow
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
                await session.call_tool("ask", {"question": "x" * 340_000})
            # the session is still usable
            ok = await session.call_tool("search", {"query": "bloom", "k": 1})
            assert not ok.is_error

    run_async(run())
    raw = httpx.post(
        f"{served}/mcp",
        content=b'{"jsonrpc": "2.0", "id": 7, "x": "' + b"a" * 340_000 + b'"}',
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
        {"question": "How long is the bloom?", "docnames": ["nonexistent"]},
    )
    assert not result.is_error, error_text(result)
    answer = structured(result)
    assert answer["citations"] == []
    assert answer["grounded"] is False


@pytest.mark.parametrize(
    "question",
    [
        "How long is the bloom?",
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

    ask = next(tool for tool in run_async(tools()) if tool.name == "ask")
    schema = ask.output_schema
    assert schema is not None
    outcomes = ["answer", "passages", "not_found"]
    assert schema["properties"]["outcome"]["enum"] == outcomes
    assert "ShownPassage" in schema["$defs"]
    for outcome in ("`passages`", "`not_found`"):
        assert outcome in (ask.description or "")


# -- both protocol revisions; --qdrant and --site over stdio (issue 28) --------

#: The SDK client's ``mode`` for each revision: the ``initialize`` handshake
#: (which offers 2025-11-25), or a pin to the stateless revision.
REVISIONS = {"2025-11-25": "legacy", "2026-07-28": "2026-07-28"}
#: One question per outcome, in this order.
OUTCOMES = {
    "How long is the bloom?": "answer",
    "Who invented the French press?": "passages",
    "How do I compute PageRank scores for the characters?": "not_found",
}


def mcp_command(*args: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "sphinx_ragcite", "mcp", *args], env=ENV
    )


def schema_problems(instance: Any, schema: dict[str, Any]) -> list[str]:
    """Why *instance* does not match *schema* (JSON Schema, checked itself)."""
    from jsonschema.validators import validator_for

    validator = validator_for(schema)
    validator.check_schema(schema)
    return [error.message for error in validator(schema).iter_errors(instance)]


async def list_and_ask(client: Any, revision: str, site: Path) -> list[dict[str, Any]]:
    """List the tools, ask one question per outcome; each answer matches the
    ``ask`` tool's declared output schema, and its citations link to the page."""
    assert client.protocol_version == revision
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    schema = tools["ask"].output_schema
    answers = []
    for question, outcome in OUTCOMES.items():
        answer = structured(await client.call_tool("ask", {"question": question}))
        assert answer["outcome"] == outcome, question
        assert schema_problems(answer, schema) == [], question
        answers.append(answer)
    cited, shown, _ = answers
    assert cited["citations"]
    assert shown["passages"]
    for citation in cited["citations"]:
        page, _, anchor = citation["url"].partition("#")
        assert anchor == citation["passage_id"]
        soup = BeautifulSoup((site / page).read_text("utf-8"), "html.parser")
        assert len(soup.find_all(id=anchor)) == 1, citation["url"]
    # the schema holds the new fields to their values, not just to their names
    assert schema_problems({**cited, "outcome": "maybe"}, schema)
    assert schema_problems({**shown, "passages": [{"url": 3}]}, schema)
    return answers


@pytest.mark.slow
def test_both_revisions_over_stdio(example_site: Path) -> None:
    from mcp import Client

    async def run(mode: str, revision: str) -> list[dict[str, Any]]:
        async with Client(mcp_command(str(example_site)), mode=mode) as client:
            return await list_and_ask(client, revision, example_site)

    answers = {r: run_async(run(mode, r)) for r, mode in REVISIONS.items()}
    old, new = answers.values()
    assert [without_timings(a) for a in old] == [without_timings(a) for a in new]


def test_both_revisions_over_http(example_site: Path, served: str) -> None:
    from mcp import Client
    from mcp.shared.exceptions import MCPError

    async def run(mode: str, revision: str) -> list[dict[str, Any]]:
        async with Client(f"{served}/mcp", mode=mode) as client:
            answers = await list_and_ask(client, revision, example_site)
            # the API's guards hold for every revision
            with pytest.raises(MCPError, match="larger than"):
                await client.call_tool("ask", {"question": "x" * 340_000})
            return answers

    for revision, mode in REVISIONS.items():
        answers = run_async(run(mode, revision))
        for answer in answers:
            api = httpx.post(
                f"{served}/api/ask", json={"question": answer["question"]}, timeout=60
            )
            assert without_timings(answer) == without_timings(api.json()), revision


def post(url: str, method: str, revision: str, **params: Any) -> httpx.Response:
    """One JSON-RPC request as a 2026-07-28 client sends it: no session, no
    handshake, the revision in ``_meta`` and in the headers."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": revision,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": revision,
        "Mcp-Method": method,
    }
    if "uri" in params:
        headers["Mcp-Name"] = params["uri"]
    return httpx.post(
        url,
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": method,
            "params": {**params, "_meta": meta},
        },
        headers=headers,
        timeout=10,
    )


@pytest.mark.slow
def test_the_catalog_is_cacheable_and_stateless(served: str) -> None:
    from sphinx_ragcite.server.mcp import CATALOG_TTL_MS

    url = f"{served}/mcp"
    for method in ("server/discover", "tools/list", "resources/templates/list"):
        response = post(url, method, "2026-07-28")
        assert response.status_code == 200, response.text
        assert "mcp-session-id" not in response.headers
        result = response.json()["result"]
        assert (result["ttlMs"], result["cacheScope"]) == (CATALOG_TTL_MS, "public")
        assert result["resultType"] == "complete"
    discovered = post(url, "server/discover", "2026-07-28").json()["result"]
    assert discovered["supportedVersions"] == ["2026-07-28"]
    assert discovered["capabilities"]["tools"] == {"listChanged": False}
    # nothing to listen for: refused at once, never a POST held open
    listen = post(
        url,
        "subscriptions/listen",
        "2026-07-28",
        notifications={"toolsListChanged": True},
    )
    assert listen.json()["error"]["code"] == -32601
    # a passage may change with a rebuild: never reused
    uri = "ragcite://passage/ch0-sec0-p1"
    read = post(url, "resources/read", "2026-07-28", uri=uri).json()["result"]
    assert (read["ttlMs"], read["cacheScope"]) == (0, "private")
    # 2025-11-25 has no cache fields: none are sent
    legacy = post(url, "tools/list", "2025-11-25").json()["result"]
    assert {"ttlMs", "cacheScope", "resultType"}.isdisjoint(legacy)
    assert {tool["name"] for tool in legacy["tools"]} == TOOLS


def test_a_2026_client_reuses_the_tool_list(api: TestClient) -> None:
    """The SDK client honours ``ttlMs``: one ``tools/list`` reaches the server."""
    from mcp import Client

    from sphinx_ragcite.server.mcp import build_server

    async def listings(mode: str) -> int:
        server = build_server(lambda: api.app.state.ragcite)
        calls = []
        list_tools = server.list_tools

        async def counted() -> Any:
            calls.append(1)
            return await list_tools()

        server.list_tools = counted
        async with Client(server, mode=mode) as client:
            for _ in range(3):
                assert len((await client.list_tools()).tools) == len(TOOLS)
        return len(calls)

    assert run_async(listings("2026-07-28")) == 1
    assert run_async(listings("legacy")) == 3


@pytest.fixture(scope="module")
def qdrant_folder(example_site: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example book pushed to a local-mode Qdrant folder (then closed)."""
    from sphinx_ragcite.cli.commands import main

    folder = tmp_path_factory.mktemp("mcp_qdrant") / "store"
    assert main(["push", str(example_site), "--qdrant", str(folder)]) == 0
    return folder


@pytest.mark.slow
def test_mcp_qdrant_cites_as_the_build_dir(
    example_site: Path, qdrant_folder: Path, tmp_path: Path
) -> None:
    """``ragcite mcp --qdrant FOLDER`` answers with the citations of BUILD_DIR."""
    from mcp import Client
    from mcp.client.stdio import stdio_client

    from sphinx_ragcite.evaluate import load_qa

    questions = [q.question for q in load_qa(EXAMPLE_BOOK / "qa.jsonl")][::9]
    questions += list(OUTCOMES)
    log = tmp_path / "stderr.log"

    async def answers(client: Any) -> list[dict[str, Any]]:
        return [
            structured(await client.call_tool("ask", {"question": question}))
            for question in questions
        ]

    async def run() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        memory = mcp_command(str(example_site))
        stored = mcp_command(
            str(example_site), "--qdrant", str(qdrant_folder), "--log-level", "info"
        )
        with log.open("w") as errlog:
            async with (
                Client(memory, mode="2026-07-28") as a,
                Client(stdio_client(stored, errlog=errlog), mode="legacy") as b,
            ):
                return await answers(a), await answers(b)

    expected, got = run_async(run())
    assert f"Qdrant {qdrant_folder} collection ragcite" in log.read_text("utf-8")
    cited = 0
    for question, x, y in zip(questions, expected, got, strict=True):
        assert [c["passage_id"] for c in y["citations"]] == [
            c["passage_id"] for c in x["citations"]
        ], question
        assert without_timings(y) == without_timings(x), question
        cited += bool(x["citations"])
    assert cited >= len(questions) // 2


@pytest.mark.slow
def test_mcp_sites_over_stdio(example_site: Path, example_site_v2: Path) -> None:
    """``ragcite mcp --site NAME=BUILD_DIR`` (twice): answers name their site."""
    from mcp import Client

    from helpers.builds import BLOOM_V1, BLOOM_V2

    question = "How long is the bloom?"
    command = mcp_command(
        "--site", f"v1={example_site}", "--site", f"v2={example_site_v2}"
    )

    async def run() -> None:
        async with Client(command, mode="2026-07-28") as client:
            ask = next(t for t in (await client.list_tools()).tools if t.name == "ask")
            both = structured(await client.call_tool("ask", {"question": question}))
            assert schema_problems(both, ask.output_schema) == []
            assert both["citations"]
            for citation in both["citations"]:
                site = citation["site"]
                assert citation["version"] == {"v1": "1.0", "v2": "2.0"}[site]
                assert citation["url"].startswith(f"{site}/")
            for name, version, text in (
                ("v1", "1.0", BLOOM_V1),
                ("v2", "2.0", BLOOM_V2),
            ):
                one = structured(
                    await client.call_tool("ask", {"question": question, "site": name})
                )
                assert schema_problems(one, ask.output_schema) == []
                assert (one["site"], one["version"]) == (name, version)
                assert {c["site"] for c in one["citations"]} == {name}
                assert text.split(" ", 1)[1] in one["answer"], one["answer"]
            hits = structured(
                await client.call_tool("search", {"query": "bloom", "site": "v2"})
            )
            assert {h["site"] for h in hits["hits"]} == {"v2"}
            pid = hits["hits"][0]["passage_id"]
            record = structured(
                await client.call_tool("get_passage", {"passage_id": pid, "site": "v2"})
            )
            assert (record["site"], record["version"]) == ("v2", "2.0")
            toc = json.loads(
                (await client.read_resource("ragcite://toc")).contents[0].text
            )
            assert [(s["site"], s["version"]) for s in toc["sites"]] == [
                ("v1", "1.0"), ("v2", "2.0.1")
            ]  # fmt: skip
            wrong = error_text(
                await client.call_tool("ask", {"question": question, "site": "v3"})
            )
            assert "v3" in wrong

    run_async(run())


def test_mcp_refuses_what_serve_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sphinx_ragcite.cli.commands import main

    assert main(["mcp"]) == 2
    assert "give BUILD_DIR or --site NAME=BUILD_DIR" in capsys.readouterr().err
    assert main(["mcp", str(tmp_path), "--site", f"a={tmp_path}"]) == 2
    assert "not both" in capsys.readouterr().err
    missing = tmp_path / "missing"
    assert main(["mcp", "--site", f"a={missing}"]) == 2
    assert f"{missing} (site a) is not a folder" in capsys.readouterr().err


def test_http_issues_no_session_and_lets_browsers_send_2026_headers(
    example_site: Path,
) -> None:
    settings = ServerSettings(
        build_dir=example_site, cors_origins=("https://docs.example",)
    )
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        },
    }
    accept = {"Accept": "application/json, text/event-stream"}
    loopback = "http://127.0.0.1:8000"
    with TestClient(create_app(settings), base_url=loopback) as client:
        handshake = client.post("/mcp", json=initialize, headers=accept)
        assert handshake.json()["result"]["protocolVersion"] == "2025-11-25"
        assert "mcp-session-id" not in handshake.headers
        sent = "content-type, mcp-protocol-version, mcp-method, mcp-name"
        preflight = client.options(
            "/mcp",
            headers={
                "Origin": "https://docs.example",
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": sent,
            },
        )
        assert preflight.status_code == 200, preflight.text
        allowed = preflight.headers["access-control-allow-headers"].lower()
        for header in sent.split(", "):
            assert header in allowed
