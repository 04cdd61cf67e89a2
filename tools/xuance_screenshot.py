"""The Chinese book answering in the widget, in Chromium (issue 29).

Serves the Chinese XuanCe documentation (the benchmark harness's build of
``../shared/corpora/xuance-docs-zh`` with ``-D language=zh_CN``, cached in
``benchmarks/results/.sites/xuance-docs-zh/html``; ``--build`` makes or
refreshes it through ``benchmarks/_harness.py``, about 2.5 minutes on 2
cores) with ``ragcite serve`` on a free port. The questions below (from the
Chinese dev set) are first put to the engine (``POST /api/ask``): the first
that comes back with outcome ``answer`` is the one the reader types.
Then a reader in Chromium opens a real page of the book (the quick start,
快速开始), opens the ask panel, types the Chinese question, waits for the answer
with its ``[1]`` marker and its source, and the viewport (1200x800) is
screenshot; the reader clicks ``[1]``, lands on the cited passage (on
another page) with the quoted sentence marked, and that is screenshot
too::

    docs/_static/screenshots/xuance-zh-answer.png
    docs/_static/screenshots/xuance-zh-landed.png

The marked characters are checked against the citation's ``quote_spans``
in the passage text (whitespace ignored, as the widget compares them).
Browser console errors and warnings, page errors and failed requests are
printed at the end. One is expected and is not the widget's: Sphinx's own
``translations.js`` of a ``zh_CN`` book builds its plural rule with
``new Function()``, which the server's Content-Security-Policy (no
``'unsafe-eval'``) refuses.

Chinese glyphs need a CJK font in the system: without one Chromium draws
boxes ("tofu"). On Debian: ``apt-get install -y fonts-noto-cjk``. Chromium
is the Debian ``chromium`` package at /usr/bin/chromium (never a downloaded
browser), driven by Python playwright.

    .venv/bin/python tools/xuance_screenshot.py [--build | --site DIR] [--question Q]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks._harness import free_port

REPO = Path(__file__).resolve().parents[1]
CORPUS = "xuance-docs-zh"
SITE = REPO / "benchmarks" / "results" / ".sites" / CORPUS / "html"
SHOTS = REPO / "docs" / "_static" / "screenshots"
ANSWER_SHOT = SHOTS / "xuance-zh-answer.png"
LANDED_SHOT = SHOTS / "xuance-zh-landed.png"
CHROMIUM = "/usr/bin/chromium"
VIEWPORT: Any = {"width": 1200, "height": 800}  # playwright's ViewportSize
#: Questions of benchmarks/qa/xuance_zh.jsonl a reader would ask, whose
#: answer is in the book; the first one the engine answers (outcome
#: "answer") is typed into the widget.
QUESTIONS = (
    # xz-further-usage-04: "What is the master_port parameter for in
    # distributed training?" (进一步使用, the further-usage page)
    "分布式训练时 master_port 参数是干什么用的？",
    # xz-installation-12: "What Python version does smac need?" (安装教程)
    "装smac之前对Python版本有什么要求？",
    # xz-sac-01: "Why does SAC use two critic networks?"
    "SAC为什么要用两个评论家网络？",
    # xz-add-new-benchmark-02: "What defines a benchmark in XuanCe?"
    "在XuanCe里一个基准测试由哪些要素确定？",
)
#: the page the reader is on when asking (the quick start; the answer cites
#: another page, the installation guide)
START_PAGE = "documents/usage/basic_usage.html"
#: What the page marks as the quote: CSS highlight ranges, else <mark> slices
#: (as tests/test_widget.py reads it).
QUOTE_MARKED = """() => {
  const h = window.CSS && CSS.highlights && CSS.highlights.get('ragcite-quote');
  if (h && h.size) return {api: 'highlight', parts: [...h].map((r) => r.toString())};
  const marks = [...document.querySelectorAll('mark.ragcite-quote')];
  return marks.length ? {api: 'mark', parts: marks.map((m) => m.textContent)} : null;
}"""


def squeezed(text: str) -> str:
    """Text as the widget compares it: no whitespace, no table bars."""
    return "".join(ch for ch in text if not ch.isspace() and ch != "|")


def build_site() -> Path:
    """The harness's cached build of the corpus (rebuilt when stale)."""
    from benchmarks import _harness

    site, seconds = _harness.corpus_site(CORPUS)
    if seconds is not None:
        print(f"built {CORPUS} in {seconds:.0f} s", file=sys.stderr)
    return site


def passage_text(site: Path, passage_id: str) -> str:
    import json

    manifest = json.loads((site / "_ragcite" / "manifest.json").read_text("utf-8"))
    path = site / "_ragcite" / manifest["files"]["passages"]
    for line in path.read_text("utf-8").splitlines():
        record = json.loads(line)
        if record["passage_id"] == passage_id:
            return str(record["text"])
    raise KeyError(passage_id)


def wait_healthy(url: str, server: subprocess.Popen[bytes]) -> None:
    with httpx.Client(base_url=url, timeout=10) as client:
        for _ in range(240):
            if server.poll() is not None:
                raise SystemExit(f"ragcite serve exited with {server.returncode}")
            try:
                if client.get("/api/health").json().get("index_loaded"):
                    return
            except (httpx.TransportError, ValueError):
                pass
            time.sleep(0.5)
    raise SystemExit("ragcite serve did not load the index in 2 minutes")


def engine_answer(url: str, questions: list[str]) -> tuple[str, dict[str, Any]]:
    """The first of *questions* the server answers, and its answer JSON."""
    with httpx.Client(base_url=url, timeout=60) as client:
        for question in questions:
            answer: dict[str, Any] = client.post(
                "/api/ask", json={"question": question}
            ).json()
            if answer.get("outcome") == "answer" and answer.get("citations"):
                return question, answer
            print(f"engine: {answer.get('outcome')} for {question}", file=sys.stderr)
    raise SystemExit("the engine answers none of the questions; pick another")


def settle(page: Any) -> None:
    """Wait until the page has stopped scrolling (smooth scrolling, fonts)."""
    last, still = None, 0
    for _ in range(100):
        now = page.evaluate("() => [scrollX, scrollY]")
        still = still + 1 if now == last else 0
        if still >= 3:
            return
        last = now
        page.wait_for_timeout(150)


def browse(url: str, question: str, expected: dict[str, Any], site: Path) -> list[str]:
    """The reader's session; returns the console errors and page errors seen."""
    from playwright.sync_api import (
        ConsoleMessage,
        Error,
        Request,
        Response,
        sync_playwright,
    )

    seen: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--headless", "--no-sandbox", "--disable-gpu"],
        )
        context = browser.new_context(viewport=VIEWPORT, locale="zh-CN")
        page = context.new_page()
        page.set_default_timeout(30_000)

        def where() -> str:
            return page.url.removeprefix(url)

        def on_console(message: ConsoleMessage) -> None:
            if message.type in ("error", "warning"):
                seen.append(f"console {message.type} on {where()}: {message.text}")

        def on_page_error(error: Error) -> None:
            seen.append(f"page error on {where()}: {error}")

        def on_response(response: Response) -> None:
            if response.status >= 400:
                seen.append(f"HTTP {response.status}: {response.url}")

        def on_request_failed(request: Request) -> None:
            seen.append(f"request failed: {request.url} ({request.failure})")

        page.on("console", on_console)
        page.on("pageerror", on_page_error)
        page.on("response", on_response)
        page.on("requestfailed", on_request_failed)

        page.goto(f"{url}/{START_PAGE}")
        page.locator(".ragcite-launcher").click()
        page.get_by_role("dialog", name="Ask this book").wait_for(state="visible")
        box = page.locator("#ragcite-question")
        box.fill(question)
        box.press("Enter")
        marker = page.locator('a[data-ragcite-n="1"]')
        marker.wait_for(state="visible")
        page.locator(".ragcite-source").first.wait_for(state="visible")
        answer_text = page.locator(".ragcite-answer").first.inner_text()
        sources = page.locator(".ragcite-source").all_inner_texts()
        print(f"answer shown: {answer_text}")
        for source in sources:
            print(f"source shown: {' '.join(source.split())}")
        page.wait_for_timeout(300)  # the marker's focus ring and fonts settle
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ANSWER_SHOT))

        target = expected["citations"][0]
        href = marker.get_attribute("href")
        if href != f"{url}/{target['url']}":  # the stream cited what the API did
            raise SystemExit(f"the widget's [1] is {href}, the API's {target['url']}")
        marker.click()
        page.wait_for_url(f"{url}/{target['url']}")
        page.wait_for_function(
            "(id) => document.getElementById(id)"
            "?.classList.contains('ragcite-highlight')",
            arg=target["passage_id"],
        )
        marked = None
        for _ in range(50):  # polled: a string expression is eval, which CSP forbids
            marked = page.evaluate(QUOTE_MARKED)
            if marked:
                break
            page.wait_for_timeout(100)
        settle(page)  # the theme scrolls smoothly: about a second
        page.screenshot(path=str(LANDED_SHOT))
        context.close()
        browser.close()

    print(f"followed [1]: {href}")
    if not marked:
        raise SystemExit("no quote marked on the landed page")
    text = passage_text(site, target["passage_id"])
    want = [squeezed(text[a:b]) for a, b in target["quote_spans"]]
    got = [squeezed(part) for part in marked["parts"]]
    print(f"quote marked ({marked['api']}): {' … '.join(marked['parts'])}")
    if got != want:
        raise SystemExit(f"the marked characters {got} are not the quoted ones {want}")
    print("the marked characters are exactly the quote's spans")
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--build",
        action="store_true",
        help="build the site with benchmarks/_harness.py (or rebuild it when stale)",
    )
    parser.add_argument(
        "--site",
        type=Path,
        default=SITE,
        help="a build of the corpus elsewhere (default: the harness's cache)",
    )
    parser.add_argument(
        "--question",
        action="append",
        help="ask this instead (repeat: the first one answered is used)",
    )
    args = parser.parse_args()
    if not Path(CHROMIUM).exists() or shutil.which("fc-list") is None:
        sys.exit("needs /usr/bin/chromium (apt-get install -y chromium)")
    fonts = subprocess.run(
        ["fc-list", ":lang=zh"], capture_output=True, text=True, check=False
    )
    if not fonts.stdout.strip():
        sys.exit("no CJK font: apt-get install -y fonts-noto-cjk")
    site = build_site() if args.build else args.site
    if not (site / "_ragcite" / "manifest.json").is_file():
        sys.exit(f"no build of {CORPUS} in {site}: run with --build")

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [
        sys.executable, "-m", "sphinx_ragcite", "serve", str(site), "--port",
        str(port), "--rate-limit", "0", "--log-level", "warning",
    ]  # fmt: skip
    server = subprocess.Popen(command)
    try:
        wait_healthy(url, server)
        question, answer = engine_answer(url, args.question or list(QUESTIONS))
        first = answer["citations"][0]
        print(f"question: {question}")
        print(f"engine: {answer['outcome']} ({answer['confidence_level']}) "
              f"citing {first['passage_id']}: {first['quote']}")  # fmt: skip
        seen = browse(url, question, answer, site)
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(f"wrote {ANSWER_SHOT.relative_to(REPO)} and {LANDED_SHOT.relative_to(REPO)}")
    print(f"{len(seen)} browser console/page errors and warnings:")
    for line in seen:
        print(f"  {line}")


if __name__ == "__main__":
    main()
