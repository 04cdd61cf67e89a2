"""How long does an MCP ``ask`` take, next to ``POST /api/ask``, on the example book?

Why: the MCP door must not cost an assistant more than the HTTP API costs the
widget; both run the one answer path (``server/answering.py``), so the
difference is the transport.

The example book's build is reused while unchanged (or ``--site``). Three
doors are measured with extractive answers, each in its own server process
(so no door reads another's answer cache): ``ragcite mcp`` over stdio with
the SDK's ``ClientSession``, ``POST /api/ask`` of one answer server, and
``/mcp`` (streamable HTTP, ``ClientSession``) of a second one (each the app
``ragcite serve`` runs, under uvicorn, rate limit off).
Every question of ``example_book/qa.jsonl`` is asked once per door, doors
interleaved question by question after two warm-up questions; each timing is
the client's wall clock for one call. The first stdio ``ask`` transcript
(request and answer JSON) is kept in the results.

Run from the repository root (about a minute)::

    .venv/bin/python benchmarks/mcp_latency.py

Results go to ``benchmarks/results/mcp_latency.json`` unless ``--out``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from benchmarks._harness import (
    EXAMPLE_QA,
    RESULTS,
    Server,
    envelope,
    example_site,
    latency_ms,
    write_result,
)

WARM_UP = 2


def summary(seconds: list[float]) -> dict[str, float | None]:
    return {"n": len(seconds), **latency_ms(seconds, (50, 90), mean=True, digits=2)}


async def measure(
    site: Path, api: str, mcp_http: str, questions: list[str]
) -> dict[str, Any]:
    """Every question through the three doors in turn: seconds per door."""
    times: dict[str, list[float]] = {"mcp_stdio": [], "api_ask": [], "mcp_http": []}
    transcript: dict[str, Any] = {}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "sphinx_ragcite", "mcp", str(site)]
    )
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write) as stdio,
        streamable_http_client(f"{mcp_http}/mcp") as (hread, hwrite),
        ClientSession(hread, hwrite) as http,
        httpx.AsyncClient(timeout=60) as client,
    ):
        await stdio.initialize()
        await http.initialize()
        for n, question in enumerate(questions):
            started = time.perf_counter()
            result = await stdio.call_tool("ask", {"question": question})
            stdio_s = time.perf_counter() - started
            assert not result.is_error, result.content
            if not transcript:
                transcript = {
                    "request": {
                        "method": "tools/call",
                        "params": {"name": "ask", "arguments": {"question": question}},
                    },
                    "structuredContent": result.structured_content,
                }
            started = time.perf_counter()
            response = await client.post(f"{api}/api/ask", json={"question": question})
            api_s = time.perf_counter() - started
            assert response.status_code == 200, response.text
            started = time.perf_counter()
            result = await http.call_tool("ask", {"question": question})
            http_s = time.perf_counter() - started
            assert not result.is_error, result.content
            if n >= WARM_UP:  # first embeddings, first answers
                times["mcp_stdio"].append(stdio_s)
                times["api_ask"].append(api_s)
                times["mcp_http"].append(http_s)
    return {
        "latency": {door: summary(values) for door, values in times.items()},
        "transcript": transcript,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--site", type=Path, help="an existing build of the book")
    parser.add_argument("--out", type=Path, default=RESULTS / "mcp_latency.json")
    args = parser.parse_args()
    questions = [
        json.loads(line)["question"]
        for line in EXAMPLE_QA.read_text("utf-8").splitlines()
        if line.strip()
    ]
    site = example_site(args.site)
    settings = {"build_dir": str(site.resolve()), "rate_limit": 0}
    with (
        tempfile.TemporaryDirectory(prefix="ragcite-mcp-") as tmp,
        Server(settings, Path(tmp)) as api,
        Server(settings, Path(tmp)) as mcp_http,
    ):
        result = asyncio.run(measure(site, api.url, mcp_http.url, questions))
    head = envelope(
        "mcp_latency",
        book="example_book",
        generator="extractive",
        questions=len(questions),
        warm_up=WARM_UP,
    )
    machine = {"python": head["python"], "cpus": head["cpu_count"]}
    write_result(args.out, {**head, "machine": machine, **result})
    print(json.dumps(result["latency"], indent=1))


if __name__ == "__main__":
    main()
