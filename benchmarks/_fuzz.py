"""What the fuzzers of the server's HTTP doors share: schemathesis against the
server's ``/api/openapi.json``, its requests and 5xx read back from the HAR
report, and one hand-written request on a fresh connection.

``fuzz_api.py`` (``/api/`` of one site) and ``fuzz_mcp.py`` (``/mcp``, and
``/api/`` of a server of several sites) run both; ``fuzz_doors.py`` finds
schemathesis here too.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

# -- schemathesis -------------------------------------------------------------------

#: A passage's URL: its operation is the templated path.
_ID = re.compile(r"/api/passages/[^/?]+$")


def schemathesis_bin() -> str:
    local = Path(sys.executable).with_name("schemathesis")
    found = str(local) if local.exists() else shutil.which("schemathesis")
    if not found:
        raise SystemExit(
            "schemathesis is not installed: .venv/bin/pip install -e '.[bench]'"
        )
    return found


def run_schemathesis(
    url: str, work: Path, max_examples: int, seed: int, checks: str, timeout: float
) -> dict[str, Any]:
    har, report = work / "har.json", work / "report.json"
    cmd = [schemathesis_bin(), "run", f"{url}/api/openapi.json"]
    cmd += ["--checks", checks, "--max-examples", str(max_examples)]
    cmd += ["--seed", str(seed), "--phases", "examples,coverage,fuzzing"]
    cmd += ["--generation-database", "none", "--request-timeout", "60"]
    cmd += ["--report", "har,json", "--report-har-path", str(har)]
    cmd += ["--report-json-path", str(report), "--no-color"]
    started = time.perf_counter()
    proc = subprocess.run(
        cmd, cwd=work, capture_output=True, text=True, timeout=timeout, check=False
    )
    seconds = time.perf_counter() - started
    output = proc.stdout + proc.stderr
    if not har.is_file():
        raise RuntimeError(
            f"schemathesis wrote no HAR (exit {proc.returncode}):\n{output}"
        )
    entries = json.loads(har.read_text("utf-8"))["log"]["entries"]
    summary = json.loads(report.read_text("utf-8")) if report.is_file() else {}
    return {
        "command": shlex.join(cmd[1:]).replace(str(work) + "/", ""),
        "exit_code": proc.returncode,
        "seconds": round(seconds, 1),
        "entries": entries,
        "summary": summary,
        "output": output,
    }


def operation(method: str, url: str) -> str:
    path = urlsplit(url).path
    if _ID.match(path):
        path = "/api/passages/{passage_id}"
    return f"{method} {path}"


def is_server_error(status: int, body: str, stream: bool) -> bool:
    return status >= 500 or (stream and status == 200 and "event: error" in body)


def curl(method: str, url: str, body: str | None, content_type: str | None) -> str:
    parts = ["curl", "-sS", "-X", method, url]
    if content_type:
        parts += ["-H", f"Content-Type: {content_type}"]
    if body is not None:
        parts += ["--data-binary", body]
    return shlex.join(parts)


def fuzz_findings(entries: list[dict[str, Any]]) -> tuple[Counter[str], list[dict]]:
    """Counts by 'operation status' and the requests that got a 5xx."""
    counts: Counter[str] = Counter()
    bad = []
    for entry in entries:
        request, response = entry["request"], entry["response"]
        op = operation(request["method"], request["url"])
        status = int(response["status"])
        body = response.get("content", {}).get("text") or ""
        counts[f"{op} {status}"] += 1
        if is_server_error(status, body, op.endswith("/stream")):
            post = request.get("postData") or {}
            bad.append(
                {
                    "source": "schemathesis",
                    "operation": op,
                    "status": status,
                    "url": request["url"],
                    "body": post.get("text"),
                    "response": body[:500],
                    "curl": curl(
                        request["method"],
                        request["url"],
                        post.get("text"),
                        post.get("mimeType"),
                    ),
                }
            )
    return counts, bad


def failures_section(output: str) -> str:
    """schemathesis' FAILURES block (with 'Reproduce with' commands), if any."""
    match = re.search(r"=+ FAILURES =+\n(.*?)\n=+ SUMMARY", output, re.S)
    return match.group(1).strip() if match else ""


# -- one request -------------------------------------------------------------------


def request_once(
    base: str,
    method: str,
    path: str,
    *,
    content: bytes | None = None,
    headers: dict[str, str] | None = None,
    timeout: float,
) -> tuple[int, str]:
    """*method* *path* of *base* on a connection of its own (after a 500
    uvicorn closes the connection, and reusing it would blame the next
    request): the status and the body, or 0 and what went wrong."""
    with httpx.Client(base_url=base, timeout=timeout) as client:
        try:
            response = client.request(
                method, path, content=content, headers=headers or {}
            )
        except httpx.ReadTimeout:
            return 0, f"no response in {timeout:g} s"
        except httpx.HTTPError as error:
            return 0, f"{type(error).__name__}: {error}"
        return response.status_code, response.text
