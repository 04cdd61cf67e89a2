"""How long does an MCP ``ask`` take, next to ``POST /api/ask``, on the example book?

Why: the MCP door must not cost an assistant more than the HTTP API costs the
widget; both run the one answer path (``server/answering.py``), so the
difference is the transport.

The example book is built into a temporary folder (or ``--site``). Three
doors are measured with extractive answers, each in its own server process
(so no door reads another's answer cache): ``ragcite mcp`` over stdio with
the SDK's ``ClientSession``, ``POST /api/ask`` of one ``ragcite serve``, and
``/mcp`` (streamable HTTP, ``ClientSession``) of a second ``ragcite serve``.
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
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(site: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sphinx_ragcite",
            "serve",
            str(site),
            "--port",
            str(port),
            "--log-level",
            "warning",
            "--rate-limit",
            "0",
        ],
        stdout=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(f"{base}/api/health", timeout=1).status_code == 200:
                return process, base
        except httpx.HTTPError:
            time.sleep(0.1)
    raise SystemExit("ragcite serve did not start")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summary(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "p50_ms": round(statistics.median(values), 2),
        "p90_ms": round(percentile(values, 0.9), 2),
        "mean_ms": round(statistics.fmean(values), 2),
    }


async def measure(site: Path, questions: list[str]) -> dict[str, Any]:
    api_server, api = start_server(site)
    mcp_server, mcp_http = start_server(site)
    times: dict[str, list[float]] = {"mcp_stdio": [], "api_ask": [], "mcp_http": []}
    transcript: dict[str, Any] = {}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "sphinx_ragcite", "mcp", str(site)]
    )
    try:
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
                stdio_ms = 1000 * (time.perf_counter() - started)
                assert not result.is_error, result.content
                if not transcript:
                    transcript = {
                        "request": {
                            "method": "tools/call",
                            "params": {
                                "name": "ask",
                                "arguments": {"question": question},
                            },
                        },
                        "structuredContent": result.structured_content,
                    }
                started = time.perf_counter()
                response = await client.post(
                    f"{api}/api/ask", json={"question": question}
                )
                api_ms = 1000 * (time.perf_counter() - started)
                assert response.status_code == 200, response.text
                started = time.perf_counter()
                result = await http.call_tool("ask", {"question": question})
                http_ms = 1000 * (time.perf_counter() - started)
                assert not result.is_error, result.content
                if n >= 2:  # warm-up: first embeddings, first answers
                    times["mcp_stdio"].append(stdio_ms)
                    times["api_ask"].append(api_ms)
                    times["mcp_http"].append(http_ms)
    finally:
        for process in (api_server, mcp_server):
            process.terminate()
            process.wait(timeout=10)
    return {
        "latency": {door: summary(values) for door, values in times.items()},
        "transcript": transcript,
    }


def build(out: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-q",
            "-b",
            "html",
            str(REPO / "example_book"),
            str(out / "html"),
            "-d",
            str(out / "doctrees"),
        ],
        check=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--site", type=Path, help="an existing build of the book")
    parser.add_argument(
        "--out", type=Path, default=REPO / "benchmarks/results/mcp_latency.json"
    )
    args = parser.parse_args()
    qa = REPO / "example_book" / "qa.jsonl"
    questions = [
        json.loads(line)["question"]
        for line in qa.read_text("utf-8").splitlines()
        if line.strip()
    ]
    with tempfile.TemporaryDirectory() as tmp:
        site = args.site
        if site is None:
            build(Path(tmp))
            site = Path(tmp) / "html"
        result = asyncio.run(measure(site, questions))
    result = {
        "benchmark": "mcp_latency",
        "book": "example_book",
        "generator": "extractive",
        "questions": len(questions),
        "warm_up": 2,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        **result,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(result, indent=1, ensure_ascii=False) + "\n", "utf-8"
    )
    print(json.dumps(result["latency"], indent=1))


if __name__ == "__main__":
    main()
