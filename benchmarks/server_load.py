"""How does the answer server hold up with 1, 4 and 16 concurrent clients?

Why: ``ragcite serve`` runs retrieval and extractive answers in a thread pool
beside one llama.cpp model that answers one request at a time behind a
bounded queue (``queue_size`` slots, then 503 with ``Retry-After``). This
benchmark checks that search and extractive answers stay fast while clients
pile up, that the model's queue pushes back instead of growing, that nothing
fails with a 5xx other than that 503, and that the process stays within a
memory budget. Targets (printed beside the results):

* ``GET /api/search``: p50 <= 15 ms at 16 clients, with 0 errors;
* ``POST /api/ask`` (generator ``extractive``): p50 <= 150 ms (shown for each
  concurrency level; only the lone client is free of queueing on two cores);
* ``POST /api/ask/stream`` (generator ``llm``): p50 time to the first
  ``event: token`` <= 1.5 s with nothing queued (1 client);
* server RSS (``VmHWM``, the peak) <= 1 GiB.

What it does: takes the example book's build (``_harness.example_site``:
reused while the book and the package's build side are unchanged, or
``--site``), starts
``python -m uvicorn --factory sphinx_ragcite.server.app:app_from_env`` on
127.0.0.1 and a free port in a child process (settings in
``RAGCITE_SERVER_SETTINGS``: generator ``llm`` with the installed SmolLM2
GGUF, ``rate_limit`` 0, ``queue_size`` 4), waits for ``/api/health``, sends
warm-up requests (below), then for each concurrency level runs N requests
per endpoint from that many ``httpx.AsyncClient`` workers (one connection
each, each sending its next request when the last one is answered): 200
searches, 60 extractive answers, 24 LLM streams (``--quick``: 60, 20, 6).
Every request waits for its whole response; a stream is read to its
``event: final``.

Questions are the answerable ones of ``example_book/qa.jsonl`` (those with
``passage_ids``; the unanswerable ones would mostly abstain without running
the model), cycled. Warm-up, untimed in the tables: one extractive
``/api/ask`` per distinct question (the engine embeds each retrieved
passage's sentences once and keeps them in an LRU, so without this the first
level would pay for a cold cache; its p50 is reported as "cold"), then 3
searches and 3 LLM streams. The server caches answers keyed on the exact
question, so every ``/api/ask`` and ``/api/ask/stream`` request gets a unique
suffix (``"<question> #<n>"``, ``n`` counting over the whole run) and does
the real work; ``/api/search`` is not cached and uses the questions as they
are. Some answerable questions still abstain (no token, no model time): the
count per level is printed, and those streams are in the latency figures.

Reported per endpoint and level: successful responses per second over the
level's wall time, p50/p99 latency of the successful responses (for streams
also the time to the first token), and response counts by status. For the LLM
stream a 503 is back-pressure (the queue is full: with 16 clients and
``queue_size`` 4 most requests get one), counted apart and not as an error;
every other non-200 status (any other 5xx above all), a transport failure, an
``event: error`` in a stream or a stream without ``event: final`` is an
error. Server memory is read from ``/proc/<pid>/status``: ``VmRSS`` once
``/api/health`` answers, ``VmRSS`` after all the load, and ``VmHWM`` (peak).

The client runs in this process on the same cores as the server, so its CPU
time is part of every latency: on a two-core machine the numbers are upper
bounds. With closed-loop clients the latency at C clients is about C divided
by the throughput (Little's law): a p50 of 15 ms at 16 clients needs about
1,000 requests/s. The run is bounded: each (endpoint, level) stops issuing
requests after ``--budget`` seconds (default 180), each request times out
after 120 s.

Run from the repository root (about 5 minutes on two busy cores, most of it
the LLM streams; ``--quick`` about 1)::

    .venv/bin/python benchmarks/server_load.py
    .venv/bin/python benchmarks/server_load.py --quick --site path/to/html

Results go to ``benchmarks/results/server_load.json`` unless ``--out``. The
script exits 0 even when a target is missed; the JSON records the outcome.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from benchmarks._harness import (
    EXAMPLE_QA,
    RESULTS,
    Server,
    envelope,
    example_site,
    latency_ms,
    percentile,
    table,
    write_result,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

DEFAULT_OUT = RESULTS / "server_load.json"
LEVELS = (1, 4, 16)
REQUESTS = {"search": 200, "ask extractive": 60, "stream llm": 24}
QUICK_REQUESTS = {"search": 60, "ask extractive": 20, "stream llm": 6}
WARMUP = 3
REQUEST_TIMEOUT = 120.0
TARGET_SEARCH_P50_MS = 15.0
TARGET_ASK_P50_MS = 150.0
TARGET_FIRST_TOKEN_S = 1.5
TARGET_RSS_MIB = 1024.0


# -- requests ----------------------------------------------------------------------


@dataclass
class Sample:
    """One request: HTTP status (None: transport failure), seconds, any error."""

    status: int | None
    seconds: float
    first_token: float | None = None
    tokens: int = 0
    error: str | None = None


async def _request(
    client: httpx.AsyncClient, method: str, path: str, needs: str, **kwargs: Any
) -> Sample:
    """One JSON request; a 200 whose body lacks *needs* is an error too."""
    started = time.perf_counter()
    try:
        response = await client.request(method, path, **kwargs)
        elapsed = time.perf_counter() - started
        error = None
        if response.status_code == 200 and needs not in response.json():
            error = f"200 without {needs}"
        return Sample(response.status_code, elapsed, error=error)
    except (httpx.HTTPError, ValueError) as exc:
        return Sample(None, time.perf_counter() - started, error=type(exc).__name__)


async def search(client: httpx.AsyncClient, question: str) -> Sample:
    return await _request(client, "GET", "/api/search", "hits", params={"q": question})


async def ask(client: httpx.AsyncClient, question: str) -> Sample:
    body = {"question": question, "generator": "extractive"}
    return await _request(client, "POST", "/api/ask", "answer", json=body)


async def stream(client: httpx.AsyncClient, question: str) -> Sample:
    started = time.perf_counter()
    body = {"question": question, "generator": "llm"}
    first = final = None
    tokens = 0
    error = None
    try:
        async with client.stream("POST", "/api/ask/stream", json=body) as response:
            if response.status_code != 200:
                await response.aread()
                return Sample(response.status_code, time.perf_counter() - started)
            async for line in response.aiter_lines():
                if not line.startswith("event:"):
                    continue
                name = line.removeprefix("event:").strip()
                if name == "token":
                    tokens += 1
                    if first is None:
                        first = time.perf_counter() - started
                elif name == "final":
                    final = time.perf_counter() - started
                elif name == "error":
                    error = "event: error"
    except httpx.HTTPError as exc:
        return Sample(None, time.perf_counter() - started, error=type(exc).__name__)
    elapsed = time.perf_counter() - started
    if error is None and final is None:
        error = "no event: final"
    return Sample(200, final or elapsed, first, tokens, error)


class Questions:
    """Answerable qa.jsonl questions, cycled; ``unique`` ones get a counter."""

    def __init__(self, path: Path) -> None:
        rows = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
        self.texts = [r["question"] for r in rows if r and r.get("passage_ids")]
        self._next = itertools.count()

    def take(self, unique: bool) -> str:
        n = next(self._next)
        text = self.texts[n % len(self.texts)]
        return f"{text} #{n}" if unique else text


ENDPOINTS: dict[str, tuple[Callable[..., Awaitable[Sample]], bool]] = {
    # name: (request, unique question per request)
    "search": (search, False),
    "ask extractive": (ask, True),
    "stream llm": (stream, True),
}


async def run_level(
    url: str,
    endpoint: str,
    questions: Questions,
    count: int,
    clients: int,
    budget: float,
) -> tuple[list[Sample], float, bool]:
    """*count* requests from *clients* workers; samples, wall seconds, cut short."""
    request, unique = ENDPOINTS[endpoint]
    issued = itertools.count()
    samples: list[Sample] = []
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    timeout = httpx.Timeout(REQUEST_TIMEOUT)
    cut = False
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=timeout) as c:
        started = time.perf_counter()
        deadline = started + budget

        async def worker() -> None:
            nonlocal cut
            while next(issued) < count:
                if time.perf_counter() > deadline:
                    cut = True
                    return
                samples.append(await request(c, questions.take(unique)))

        await asyncio.gather(*(worker() for _ in range(clients)))
        wall = time.perf_counter() - started
    return samples, wall, cut


async def warm_up(url: str, questions: Questions) -> dict[str, Any]:
    """One extractive answer per question (fills the sentence-vector cache)."""
    async with httpx.AsyncClient(base_url=url, timeout=REQUEST_TIMEOUT) as client:
        cold = [await ask(client, questions.take(True)) for _ in questions.texts]
        for name in ("search", "stream llm"):
            request, unique = ENDPOINTS[name]
            for _ in range(WARMUP):
                await request(client, questions.take(unique))
    return summarise("ask extractive", cold, sum(s.seconds for s in cold), False)


def summarise(
    endpoint: str, samples: list[Sample], wall: float, cut: bool
) -> dict[str, Any]:
    ok = [s for s in samples if s.status == 200 and s.error is None]
    statuses = Counter(
        str(s.status) if s.status is not None else s.error for s in samples
    )
    backpressure = sum(s.status == 503 for s in samples) if "llm" in endpoint else 0
    errors = len(samples) - len(ok) - backpressure
    error_kinds = Counter(
        s.error or f"HTTP {s.status}"
        for s in samples
        if not (s.status == 200 and s.error is None)
        and not (backpressure and s.status == 503)
    )
    result: dict[str, Any] = {
        "requests": len(samples),
        "ok": len(ok),
        "wall_s": round(wall, 3),
        "ok_per_s": round(len(ok) / wall, 2) if wall else None,
        "latency": latency_ms([s.seconds for s in ok], digits=2),
        "statuses": dict(statuses),
        "backpressure_503": backpressure,
        "errors": errors,
        "error_kinds": dict(error_kinds),
        "cut_by_budget": cut,
    }
    if endpoint == "stream llm":
        result["first_token"] = latency_ms(
            [s.first_token for s in ok if s.first_token is not None], digits=2
        )
        # a stream without tokens answered without the model (it abstained)
        result["streams_without_tokens"] = sum(s.tokens == 0 for s in ok)
        result["tokens_per_stream_p50"] = percentile([s.tokens for s in ok], 50)
    return result


# -- report ------------------------------------------------------------------------


def _f(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def targets(
    levels: dict[str, dict[int, dict[str, Any]]], memory: dict[str, float]
) -> list[dict[str, Any]]:
    rows = []
    top = max(levels["search"])
    search = levels["search"][top]
    rows.append(
        {
            "target": f"/api/search p50 at {top} clients",
            "limit": f"<= {TARGET_SEARCH_P50_MS:g} ms",
            "measured": f"{_f(search['latency']['p50_ms'])} ms",
            "met": (search["latency"]["p50_ms"] or float("inf"))
            <= TARGET_SEARCH_P50_MS,
        }
    )
    rows.append(
        {
            "target": f"/api/search errors at {top} clients",
            "limit": "0",
            "measured": str(search["errors"]),
            "met": search["errors"] == 0,
        }
    )
    for clients, r in levels["ask extractive"].items():
        rows.append(
            {
                "target": f"extractive /api/ask p50 at {clients} client(s)",
                "limit": f"<= {TARGET_ASK_P50_MS:g} ms",
                "measured": f"{_f(r['latency']['p50_ms'])} ms",
                "met": (r["latency"]["p50_ms"] or float("inf")) <= TARGET_ASK_P50_MS,
            }
        )
    if 1 in levels["stream llm"]:
        first = levels["stream llm"][1]["first_token"]
        rows.append(
            {
                "target": "LLM first token p50 at 1 client",
                "limit": f"<= {TARGET_FIRST_TOKEN_S:g} s",
                "measured": f"{_f((first['p50_ms'] or 0) / 1000, 3)} s "
                f"(p99 {_f((first['p99_ms'] or 0) / 1000, 3)} s)",
                "met": first["p50_ms"] is not None
                and first["p50_ms"] <= TARGET_FIRST_TOKEN_S * 1000,
            }
        )
    errors = sum(r["errors"] for by in levels.values() for r in by.values())
    rows.append(
        {
            "target": "errors, all endpoints and levels (503 on llm excluded)",
            "limit": "0",
            "measured": str(errors),
            "met": errors == 0,
        }
    )
    rows.append(
        {
            "target": "server peak RSS (VmHWM)",
            "limit": f"<= {TARGET_RSS_MIB:g} MiB",
            "measured": f"{_f(memory.get('peak'))} MiB",
            "met": memory.get("peak", float("inf")) <= TARGET_RSS_MIB,
        }
    )
    return rows


def report(
    levels: dict[str, dict[int, dict[str, Any]]],
    memory: dict[str, float],
    checks: list[dict[str, Any]],
) -> None:
    body = []
    for endpoint, by_level in levels.items():
        for clients, r in by_level.items():
            first = r.get("first_token", {})
            body.append(
                [
                    endpoint,
                    str(clients),
                    str(r["requests"]),
                    str(r["ok"]),
                    _f(r["ok_per_s"]),
                    _f(r["latency"]["p50_ms"]),
                    _f(r["latency"]["p99_ms"]),
                    _f(first.get("p50_ms")),
                    _f(first.get("p99_ms")),
                    str(r["backpressure_503"]) if "llm" in endpoint else "-",
                    str(r["errors"]) + ("*" if r["cut_by_budget"] else ""),
                ]
            )
    print("\nLoad (latency of successful responses; stream latency = to final)")
    print(
        table(
            [
                "endpoint",
                "clients",
                "sent",
                "ok",
                "ok/s",
                "p50 ms",
                "p99 ms",
                "1st tok p50",
                "1st tok p99",
                "503 (queue)",
                "errors",
            ],
            body,
        )
    )
    if any(r["cut_by_budget"] for by in levels.values() for r in by.values()):
        print("* stopped early by --budget")
    for clients, r in levels["stream llm"].items():
        print(
            f"  stream llm x{clients}: {r['streams_without_tokens']} of {r['ok']} "
            "streams answered without the model (abstained); median tokens "
            f"{_f(r['tokens_per_stream_p50'], 0)}"
        )
    for endpoint, by_level in levels.items():
        for clients, r in by_level.items():
            if r["errors"]:
                print(f"  {endpoint} x{clients} errors: {r['error_kinds']}")
    print(
        f"\nServer RSS: {_f(memory.get('after_startup'))} MiB after start-up, "
        f"{_f(memory.get('after_load'))} MiB after load, "
        f"{_f(memory.get('peak'))} MiB peak (VmHWM)"
    )
    print("\nTargets")
    print(
        table(
            ["target", "limit", "measured", "met"],
            [
                [c["target"], c["limit"], c["measured"], "yes" if c["met"] else "NO"]
                for c in checks
            ],
        )
    )


# -- main --------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, help="an existing build to serve")
    parser.add_argument(
        "--quick", action="store_true", help=f"fewer requests: {QUICK_REQUESTS}"
    )
    parser.add_argument(
        "--clients",
        type=int,
        nargs="+",
        default=list(LEVELS),
        help="concurrency levels",
    )
    parser.add_argument("--queue-size", type=int, default=4, help="server setting")
    parser.add_argument(
        "--budget",
        type=float,
        default=180.0,
        help="seconds per endpoint and level before it stops issuing requests",
    )
    parser.add_argument(
        "--qa", type=Path, default=EXAMPLE_QA, help="questions (JSON Lines)"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON output")
    args = parser.parse_args(argv)

    counts = QUICK_REQUESTS if args.quick else REQUESTS
    site = example_site(args.site)
    settings = {
        "build_dir": str(site.resolve()),
        "generator": "llm",
        "rate_limit": 0,
        "queue_size": args.queue_size,
    }
    questions = Questions(args.qa)
    levels: dict[str, dict[int, dict[str, Any]]] = {name: {} for name in ENDPOINTS}
    memory: dict[str, float] = {}
    with (
        tempfile.TemporaryDirectory(prefix="ragcite-load-") as tmp,
        Server(settings, Path(tmp)) as server,
    ):
        memory["after_startup"] = server.memory_mib()["VmRSS"]
        print(
            f"server {server.url} up in {server.startup_s:.1f} s "
            f"({server.health.get('passages')} passages, model "
            f"{server.health.get('model')}, queue {args.queue_size})",
            file=sys.stderr,
        )
        cold = asyncio.run(warm_up(server.url, questions))
        for endpoint in ENDPOINTS:
            for clients in args.clients:
                print(f"  {endpoint} x{clients} ...", file=sys.stderr)
                samples, wall, cut = asyncio.run(
                    run_level(
                        server.url,
                        endpoint,
                        questions,
                        counts[endpoint],
                        clients,
                        args.budget,
                    )
                )
                levels[endpoint][clients] = summarise(endpoint, samples, wall, cut)
        final = server.memory_mib()
        memory["after_load"] = final["VmRSS"]
        memory["peak"] = final["VmHWM"]
        health = server.health
        tracebacks = server.tracebacks()
        log_tail = server.log_tail() if tracebacks else ""
    checks = targets(levels, memory)
    report(levels, memory, checks)
    print(
        f"(warm-up, cold sentence-vector cache: extractive /api/ask p50 "
        f"{_f(cold['latency']['p50_ms'])} ms, p99 {_f(cold['latency']['p99_ms'])} "
        f"ms over {cold['requests']} questions, {cold['errors']} errors)"
    )
    if tracebacks:
        print(f"\nserver log has {tracebacks} traceback(s); its tail:\n{log_tail}")

    payload = envelope(
        "server_load",
        quick=args.quick,
        requests_per_level=counts,
        warmup={
            "extractive_asks": cold["requests"],
            "searches": WARMUP,
            "llm_streams": WARMUP,
        },
        cold_extractive_ask=cold,
        server_settings={k: v for k, v in settings.items() if k != "build_dir"},
        server={
            "passages": health.get("passages"),
            "model": health.get("model"),
            "tracebacks_in_log": tracebacks,
        },
        memory_mib=memory,
        levels={
            endpoint: {str(c): r for c, r in by.items()}
            for endpoint, by in levels.items()
        },
        targets=checks,
    )
    write_result(args.out, payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
