"""Do the feedback door and the Markdown door ever fail (a 5xx, a traceback)?

Why: issue 33 tried the doors added last (``POST /api/feedback`` into the
question log, and pages answered with their Markdown twin by content
negotiation) as a hostile reader and a hostile page author would, and found
a twin symlinked out of the site served at its page's URL and NUL or
over-long names answered with a 500. ``fuzz_api.py`` covers the other
endpoints; this one covers these two, with a server that keeps a question
log (so feedback is on) and a site with hostile files in it.

What it does: copies the example book's build (``_harness.example_site``,
or ``--site``) and adds ``weird name.html`` whose twin is a symlink to a
file outside the site (its text must never be sent), ``alias.html`` whose
twin links to another twin inside it (served), ``dangling.html`` (twin: a
broken symlink), ``folder.html`` (twin: a folder), ``fifo.html`` (twin: a
FIFO) and ``outside.html`` (the page itself a symlink out of the site).
Then it starts the server (``_harness.Server``: uvicorn on 127.0.0.1,
generator ``extractive``, rate limit off, ``questions_log`` in a temporary
folder) and sends:

1. schemathesis on ``POST /api/feedback`` only (``--include-path``,
   ``--max-examples`` 300 by default, seed 0; it makes up answer_ids, so
   valid votes are 404s and the rest 400s);
2. hand-written votes: on real answers (200, then replaced), on unknown
   ones, every field with wrong types, lone surrogates, NUL, U+202E,
   boundary and over-long reasons in ASCII, CJK and emoji, extra fields,
   duplicate keys, deep nesting, invalid UTF-8, other content types, a body
   over the limit; then the log is rotated (renamed, an empty file made in
   its place, as logrotate's ``create`` does) and a vote on a new answer
   must be stored in the new file;
3. every page and twin of the site with a set of ``Accept`` headers (none,
   browsers', ``text/markdown`` with odd q-values, ranges, garbage, 8 KB),
   GET and HEAD; hand-written odd paths (NUL anywhere, names of 255/256
   bytes, 4,000-byte paths, traversal in every spelling, encoded slashes and
   backslashes, invalid UTF-8, dot-files, the hostile files); and
   ``--random`` (2,000) seeded requests made of those pieces.

A failure is a 5xx, a request that got no response, the outside file's text
in any response, a twin served by negotiation that is not the page's own
twin, or a traceback in the server's log; it exits 1 on any. Results go to
``benchmarks/results/fuzz_doors.json`` unless ``--out``.

Run from the repository root (about a minute; needs the ``bench`` extra,
``pip install -e '.[bench]'``)::

    .venv/bin/python benchmarks/fuzz_doors.py [--max-examples N] [--random N]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import quote, urljoin

import httpx

from benchmarks._fuzz import schemathesis_bin
from benchmarks._harness import (
    RESULTS,
    Server,
    envelope,
    example_site,
    table,
    write_result,
)

DEFAULT_OUT = RESULTS / "fuzz_doors.json"
SECRET = "OUTSIDE-THE-SITE-7f3a"
LONE = "\\ud800"  # a JSON escape: json.loads gives a lone surrogate
ACCEPTS: list[str | None] = [
    None,
    "text/markdown",
    "text/html",
    "*/*",
    "text/*",
    "text/markdown;q=0",
    "text/markdown;q=0.5, text/html;q=0.4",
    "text/markdown;q=nan",
    "text/markdown;q=1e999",
    "text/markdown;q=-1",
    "text/markdown;q=",
    "text/markdown;;;q=1;q=0",
    "text/html;q=0, text/markdown",
    "TEXT/MARKDOWN",
    "text/markdown, text/markdown, text/markdown",
    "/markdown, text/, ,,, ;q=1",
    "text/markdown;charset=utf-8;variant=GFM",
    "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
    "text/markdown;q=0.1, */*",
    "\u00e9/\u00e9",  # latin-1 bytes in a header
    ", ".join(["text/markdown;q=0.9"] * 400),  # 8 KB
]
LONG_NAME = "a" * 255
TOO_LONG = "a" * 256
ODD_PATHS: list[str] = [
    "/%00",
    "/%00.md",
    "/index.html%00",
    "/index.html%00.md",
    "/code.html%00.md",
    "/%00/index.html",
    "/brewing/%00",
    "/brewing%00/",
    f"/{LONG_NAME}",
    f"/{LONG_NAME}.md",
    f"/{TOO_LONG}",
    f"/{TOO_LONG}.html",
    f"/{TOO_LONG}.html.md",
    f"/{TOO_LONG}/",
    f"/{TOO_LONG}/index.html",
    f"/brewing/{TOO_LONG}.html",
    "/brewing/" + "%C3%A9" * 128 + ".html",
    "/" + "x/" * 2000 + "index.html",
    "/" + "%2e%2e/" * 20 + "etc/passwd",
    "/../../etc/passwd",
    "/..%2f..%2fetc%2fpasswd",
    "/%2e%2e%5c%2e%2e%5cetc%5cpasswd",
    "/brewing/..%2F..%2F..%2Fetc%2Fpasswd.html",
    "/brewing%2Fespresso.html",
    "/brewing%5Cespresso.html",
    "/%FF%FE.html",
    "/%ED%A0%80.html",
    "/.buildinfo",
    "/.doctrees/",
    "/%2Ebuildinfo",
    "/_static/../.buildinfo",
    "//index.html",
    "/index.html/",
    "/index.html.md/",
    "/index.html.md.md",
    "/brewing",
    "/brewing/",
    "/brewing/index.html",
    "/llms.txt",
    "/llms.txt.md",
    "/weird%20name.html",
    "/weird%20name.html.md",
    "/weird name.html",
    "/alias.html",
    "/alias.html.md",
    "/dangling.html",
    "/dangling.html.md",
    "/folder.html",
    "/folder.html.md",
    "/folder.html.md/",
    "/fifo.html",
    "/fifo.html.md",
    "/outside.html",
    "/outside.html.md",
    "/water.html?x=%00",
    "/water.html;params",
]
PIECES = [
    "brewing",
    "index.html",
    "water.html",
    "weird%20name.html",
    "alias.html",
    "fifo.html",
    "folder.html",
    "outside.html",
    "dangling.html",
    "llms.txt",
    "_ragcite",
    "_static",
    "..",
    ".",
    "%2e%2e",
    "%00",
    "%FF",
    "%2F",
    "%5C",
    "%20",
    "",
    ".doctrees",
    LONG_NAME,
    TOO_LONG,
    "%C3%A9" * 128,
    "\u00e9t\u00e9",
]
SUFFIXES = ["", ".md", ".html", ".html.md", "/", "%00", "%00.md", "?q=1", ";x"]


def hostile_site(site: Path, work: Path) -> Path:
    """A copy of *site* with the hostile files the module docstring lists."""
    copy = work / "html"
    shutil.copytree(site, copy, symlinks=True)
    outside = work / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(f"# {SECRET}\n", "utf-8")
    (outside / "page.html").write_text(f"<p>{SECRET}</p>", "utf-8")
    for name in ("weird name", "alias", "dangling", "folder", "fifo"):
        (copy / f"{name}.html").write_text(f"<title>{name}</title>", "utf-8")
    (copy / "weird name.html.md").symlink_to(outside / "secret.md")
    (copy / "alias.html.md").symlink_to(copy / "water.html.md")
    (copy / "dangling.html.md").symlink_to(work / "nowhere.md")
    (copy / "folder.html.md").mkdir()
    os.mkfifo(copy / "fifo.html.md")
    (copy / "outside.html").symlink_to(outside / "page.html")
    (copy / "outside.html.md").write_text("# a twin of a page that is not here\n")
    return copy


class Sender:
    """One server's requests: each on a fresh connection (after a 500 uvicorn
    closes it), counted, and every failure kept with what reproduces it."""

    def __init__(self, url: str, site: Path) -> None:
        self.url = url
        self.site = site
        self.counts: Counter[str] = Counter()
        self.bad: list[dict[str, Any]] = []

    def send(
        self,
        group: str,
        method: str,
        raw_path: str,
        *,
        headers: dict[str, str] | None = None,
        content: bytes | None = None,
    ) -> httpx.Response | None:
        with httpx.Client(base_url=self.url, timeout=60) as client:
            raw = {k: v.encode("latin-1") for k, v in (headers or {}).items()}
            request = client.build_request(method, "/", headers=raw, content=content)
            request.url = request.url.copy_with(raw_path=raw_path.encode("utf-8"))
            try:
                response = client.send(request)
            except httpx.HTTPError as error:
                self.failed(group, method, raw_path, headers, f"no response: {error!r}")
                return None
        self.counts[f"{group} {response.status_code}"] += 1
        if response.status_code >= 500:
            self.failed(
                group, method, raw_path, headers, f"HTTP {response.status_code}"
            )
        elif SECRET.encode() in response.content:
            self.failed(group, method, raw_path, headers, "sent the outside file")
        elif method == "GET" and response.headers.get("content-location"):
            self.check_twin(group, raw_path, headers, response)
        return response

    def check_twin(
        self,
        group: str,
        raw_path: str,
        headers: dict[str, str] | None,
        response: httpx.Response,
    ) -> None:
        """A negotiated twin is the file its Content-Location names, resolved
        against the URL asked, as a client resolves it."""
        twin = urljoin(str(response.request.url), response.headers["content-location"])
        with httpx.Client(timeout=60) as client:
            direct = client.get(twin)
        if direct.status_code != 200 or direct.content != response.content:
            self.failed(group, "GET", raw_path, headers, f"not its twin: {twin}")

    def failed(
        self,
        group: str,
        method: str,
        raw_path: str,
        headers: dict[str, str] | None,
        what: str,
    ) -> None:
        shown = raw_path if len(raw_path) <= 200 else raw_path[:200] + "..."
        headers = {
            k: v if len(v) <= 100 else f"{v[:100]}... ({len(v)})"
            for k, v in (headers or {}).items()
        }
        self.bad.append(
            {
                "group": group,
                "method": method,
                "path": shown,
                "headers": headers,
                "problem": what,
            }
        )


# -- feedback -------------------------------------------------------------------


def run_schemathesis(url: str, work: Path, examples: int, seed: int) -> dict[str, Any]:
    har = work / "feedback-har.json"
    cmd = [schemathesis_bin(), "run", f"{url}/api/openapi.json"]
    cmd += ["--include-path", "/api/feedback", "--checks", "not_a_server_error"]
    cmd += ["--max-examples", str(examples), "--seed", str(seed)]
    cmd += ["--phases", "examples,coverage,fuzzing", "--generation-database", "none"]
    cmd += ["--report", "har", "--report-har-path", str(har), "--no-color"]
    started = time.perf_counter()
    proc = subprocess.run(
        cmd, cwd=work, capture_output=True, text=True, timeout=900, check=False
    )
    entries = (
        json.loads(har.read_text("utf-8"))["log"]["entries"] if har.is_file() else []
    )
    statuses = Counter(str(e["response"]["status"]) for e in entries)
    errors = [e for e in entries if int(e["response"]["status"]) >= 500]
    return {
        "exit_code": proc.returncode,
        "seconds": round(time.perf_counter() - started, 1),
        "requests": len(entries),
        "statuses": dict(sorted(statuses.items())),
        "server_errors": [
            {
                "body": (e["request"].get("postData") or {}).get("text", "")[:300],
                "status": e["response"]["status"],
            }
            for e in errors
        ],
        "output_tail": (proc.stdout + proc.stderr)[-3000:] if not entries else "",
    }


def ask(url: str, question: str) -> str:
    response = httpx.post(f"{url}/api/ask", json={"question": question}, timeout=60)
    response.raise_for_status()
    return str(response.json()["answer_id"])


def feedback_cases(answer_id: str) -> list[tuple[str, bytes, str, int | None]]:
    """(name, body, content type, the status it must get or None)."""

    def js(text: str) -> bytes:
        return text.encode("utf-8")

    a = answer_id
    body = {"answer_id": a, "helpful": False}
    cases: list[tuple[str, bytes, str, int | None]] = [
        ("a vote", json.dumps(body).encode(), "application/json", 200),
        ("the same vote again", json.dumps(body).encode(), "application/json", 200),
        (
            "with a reason",
            json.dumps(body | {"reason": "too long"}).encode(),
            "application/json",
            200,
        ),
        (
            "unknown answer",
            json.dumps(body | {"answer_id": "0" * 32}).encode(),
            "application/json",
            404,
        ),
    ]
    wrong: list[tuple[str, Any]] = [
        ("answer_id upper case", {"answer_id": a.upper()}),
        ("answer_id of 31", {"answer_id": a[:31]}),
        ("answer_id of 33", {"answer_id": a + "0"}),
        ("answer_id of 5000", {"answer_id": "a" * 5000}),
        ("answer_id not hex", {"answer_id": "g" * 32}),
        ("answer_id a number", {"answer_id": 12345}),
        ("answer_id null", {"answer_id": None}),
        ("answer_id a list", {"answer_id": [a]}),
        ("answer_id empty", {"answer_id": ""}),
        ("helpful 1", {"helpful": 1}),
        ("helpful 'true'", {"helpful": "true"}),
        ("helpful null", {"helpful": None}),
        ("helpful a list", {"helpful": []}),
        ("reason 501", {"reason": "x" * 501}),
        ("reason 501 CJK", {"reason": "咖" * 501}),
        ("reason 501 emoji", {"reason": "\U0001f600" * 501}),
        ("reason a number", {"reason": 5}),
        ("extra field", {"rating": 5}),
    ]
    for name, change in wrong:
        cases.append(
            (name, json.dumps(body | change).encode(), "application/json", 400)
        )
    fine: list[tuple[str, Any]] = [
        ("reason 500", {"reason": "x" * 500}),
        ("reason 500 CJK", {"reason": "咖" * 500}),
        ("reason 500 emoji", {"reason": "\U0001f600" * 500}),
        ("reason blank", {"reason": "   "}),
        ("reason null", {"reason": None}),
        ("reason with U+202E", {"reason": "\u202eevil"}),
        ("reason with zero-width", {"reason": "\u200b" * 50}),
    ]
    for name, change in fine:
        cases.append(
            (name, json.dumps(body | change).encode(), "application/json", 200)
        )
    raw: list[tuple[str, bytes, str, int | None]] = [
        (
            "lone surrogate in reason",
            js(f'{{"answer_id": "{a}", "helpful": false, "reason": "{LONE}"}}'),
            "application/json",
            400,
        ),
        (
            "lone surrogate in answer_id",
            js(f'{{"answer_id": "{LONE}", "helpful": false}}'),
            "application/json",
            400,
        ),
        (
            "NUL in reason",
            js(f'{{"answer_id": "{a}", "helpful": false, "reason": "a\\u0000b"}}'),
            "application/json",
            None,
        ),
        (
            "NUL in answer_id",
            js(f'{{"answer_id": "{a[:31]}\\u0000", "helpful": false}}'),
            "application/json",
            400,
        ),
        (
            "duplicate keys",
            js(f'{{"answer_id": "{a}", "helpful": false, "helpful": true}}'),
            "application/json",
            None,
        ),
        (
            "invalid UTF-8",
            b'{"answer_id": "\xff\xfe", "helpful": true}',
            "application/json",
            400,
        ),
        ("UTF-16 body", json.dumps(body).encode("utf-16"), "application/json", None),
        ("text/plain", json.dumps(body).encode(), "text/plain", None),
        (
            "form",
            f"answer_id={a}&helpful=true".encode(),
            "application/x-www-form-urlencoded",
            400,
        ),
        ("empty body", b"", "application/json", 400),
        ("JSON null", b"null", "application/json", 400),
        ("JSON list", js(json.dumps([body])), "application/json", 400),
        ("JSON string", b'"vote"', "application/json", 400),
        (
            "nested 5,000 deep",
            b'{"a": ' * 5000 + b"1" + b"}" * 5000,
            "application/json",
            400,
        ),
        ("arrays 20,000 deep", b"[" * 20_000 + b"]" * 20_000, "application/json", 400),
        ("NaN", js(f'{{"answer_id": "{a}", "helpful": NaN}}'), "application/json", 400),
        (
            "body over the limit",
            js(json.dumps(body | {"reason": "x" * 400_000})),
            "application/json",
            400,
        ),
    ]
    return cases + raw


def feedback_phase(sender: Sender, log: Path) -> dict[str, Any]:
    """Step 2; returns what each case got, and whether rotation held."""
    results = []
    wrong_status = []
    answer_id = ask(sender.url, "How long should the bloom take?")
    for name, content, content_type, expected in feedback_cases(answer_id):
        response = sender.send(
            "feedback",
            "POST",
            "/api/feedback",
            headers={"Content-Type": content_type},
            content=content,
        )
        status = response.status_code if response is not None else 0
        results.append({"case": name, "status": status, "expected": expected})
        if expected is not None and status != expected:
            wrong_status.append(f"{name}: HTTP {status}, expected {expected}")
    # logrotate's create: the log moves away and an empty file takes its place
    log.rename(log.with_name(log.name + ".1"))
    log.touch(mode=0o600)
    fresh = ask(sender.url, "What grind size suits a pour-over?")
    vote = sender.send(
        "feedback",
        "POST",
        "/api/feedback",
        headers={"Content-Type": "application/json"},
        content=json.dumps({"answer_id": fresh, "helpful": True}).encode(),
    )
    rotated = vote is not None and vote.status_code == 200
    if not rotated:
        wrong_status.append(f"vote after rotation: {vote and vote.status_code}")
    return {"cases": results, "wrong_status": wrong_status, "rotation_held": rotated}


# -- Markdown negotiation -------------------------------------------------------


def site_paths(site: Path) -> list[str]:
    """Every page and twin of the site as a URL path, and each folder."""
    paths = []
    for file in sorted(site.rglob("*")):
        relative = file.relative_to(site).as_posix()
        if relative.startswith((".", "_static/", "_ragcite/", "_sources/")):
            continue
        if file.name.endswith((".html", ".html.md")) or file.is_dir():
            url = "/" + quote(relative) + ("/" if file.is_dir() else "")
            paths.append(url)
    return paths


def markdown_phase(sender: Sender, seed: int, n_random: int) -> dict[str, int]:
    sizes = {}
    pages = site_paths(sender.site)
    for path in pages:
        for accept in ACCEPTS:
            for method in ("GET", "HEAD"):
                headers = {"Accept": accept} if accept is not None else {}
                sender.send("pages", method, path, headers=headers)
    sizes["pages"] = len(pages)
    for path in ODD_PATHS:
        for accept in (None, "text/markdown", "*/*", "text/markdown;q=0"):
            for method in ("GET", "HEAD"):
                headers = {"Accept": accept} if accept is not None else {}
                sender.send(
                    "odd paths", method, quote(path, safe="/%?;"), headers=headers
                )
    sizes["odd paths"] = len(ODD_PATHS)
    rng = random.Random(seed)
    for _ in range(n_random):
        segments = [rng.choice(PIECES) for _ in range(rng.randint(1, 4))]
        path = "/" + "/".join(segments) + rng.choice(SUFFIXES)
        accept = rng.choice(ACCEPTS)
        headers = {"Accept": accept} if accept is not None else {}
        method = rng.choice(("GET", "GET", "HEAD", "POST", "OPTIONS"))
        sender.send("random", method, quote(path, safe="/%?;"), headers=headers)
    sizes["random"] = n_random
    return sizes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, help="an existing build to copy")
    parser.add_argument("--max-examples", type=int, default=300, help="schemathesis")
    parser.add_argument("--random", type=int, default=2000, help="random requests")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON output")
    args = parser.parse_args(argv)

    site = example_site(args.site)
    with tempfile.TemporaryDirectory(prefix="ragcite-fuzz-doors-") as tmp:
        work = Path(tmp)
        hostile = hostile_site(site, work)
        log = work / "questions.db"
        settings = {
            "build_dir": str(hostile),
            "generator": "extractive",
            "rate_limit": 0,
            "questions_log": str(log),
        }
        with Server(settings, work) as server:
            sender = Sender(server.url, hostile)
            fuzz = run_schemathesis(server.url, work, args.max_examples, args.seed)
            feedback = feedback_phase(sender, log)
            sizes = markdown_phase(sender, args.seed, args.random)
            tracebacks = server.tracebacks()
            log_text = server.log_text()
        warnings = [line for line in log_text.splitlines() if "question log" in line]

    groups: dict[str, Counter[str]] = {}
    for key, n in sender.counts.items():
        group, status = key.rsplit(" ", 1)
        groups.setdefault(group, Counter())[status] += n
    rows = [
        [
            group,
            str(sum(c.values())),
            " ".join(f"{s}:{n}" for s, n in sorted(c.items())),
        ]
        for group, c in groups.items()
    ]
    rows.insert(
        0,
        [
            "feedback (schemathesis)",
            str(fuzz["requests"]),
            " ".join(f"{s}:{n}" for s, n in fuzz["statuses"].items()),
        ],
    )
    total = fuzz["requests"] + sum(sender.counts.values())
    print(table(["requests", "n", "statuses"], rows))
    print(
        f"\n{total} requests: {len(sender.bad) + len(fuzz['server_errors'])} failures "
        f"(5xx, no response, outside text, wrong twin), {tracebacks} traceback(s) "
        f"in the server log; hand-written votes with another status than "
        f"expected: {len(feedback['wrong_status'])}; log rotated mid-run and "
        f"held: {feedback['rotation_held']}"
    )
    for bad in sender.bad[:40]:
        print(f"- {bad}")
    for line in feedback["wrong_status"]:
        print(f"- feedback: {line}")
    if fuzz["output_tail"]:
        print(f"schemathesis sent nothing:\n{fuzz['output_tail']}")
    ok = (
        not sender.bad
        and not fuzz["server_errors"]
        and fuzz["requests"] > 0
        and not tracebacks
        and not feedback["wrong_status"]
    )
    print("PASS" if ok else "FAIL")
    write_result(
        args.out,
        {
            **envelope("fuzz_doors", seed=args.seed),
            "requests": total,
            "schemathesis_feedback": fuzz,
            "by_group": {g: dict(sorted(c.items())) for g, c in groups.items()},
            "paths": sizes,
            "accept_headers": len(ACCEPTS),
            "feedback": feedback,
            "failures": sender.bad,
            "server_tracebacks": tracebacks,
            "server_log_question_log_lines": warnings,
            "passed": ok,
        },
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
