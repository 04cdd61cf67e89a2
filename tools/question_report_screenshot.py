"""The how-to's report screenshot, from a real scripted session (issue 27).

Serves the click documentation (the cached build of ``../shared/corpora/
click-docs`` under ``benchmarks/results/.sites/``; build it first with
``benchmarks/corpora_matrix.py`` if it is missing) with ``ragcite serve
--questions-log``, asks it the questions below through ``POST /api/ask``
(some the book answers, and several phrasings of three topics it does not
cover), votes on some answers through ``POST /api/feedback``, stops the
server, runs ``ragcite report`` and screenshots the page in Chromium (full
page, 1200 px wide) into ``docs/_static/screenshots/question-report.png``.

    .venv/bin/python tools/question_report_screenshot.py [--keep DIR]
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
SITE = REPO / "benchmarks" / "results" / ".sites" / "click-docs" / "html"
SHOT = REPO / "docs" / "_static" / "screenshots" / "question-report.png"
ANSWERABLE = [
    "How do I add an option with a default value?",
    "How do I make an option required?",
    "How do I prompt the user for a password?",
    "How do I test a command with CliRunner?",
    "How do I create a group of subcommands?",
    "How do I enable shell completion for bash?",
    "How do I print colored text?",
    "How do I show a progress bar?",
    "How do I read an option from an environment variable?",
    "How do I accept a file argument?",
    "How do I ask for confirmation before continuing?",
    "What is a context object?",
    "How do I make a boolean flag?",
    "How do I open the user's editor?",
    "How do I log to a file from my command?",
]
MISSING = [  # three topics the click docs do not cover, several phrasings each
    "Can I build a graphical window for my CLI?",
    "make a desktop app with buttons from my command",
    "graphical user interface for a click program",
    "How do I run my click app in a Docker container?",
    "write a Dockerfile for my CLI",
    "deploy the command line tool as a docker image",
    "How do I translate my CLI help into French?",
    "localize the command messages in other languages",
    "translations of help texts with gettext",
]
#: (question, helpful, reason): votes as a reader gives them in the widget
VOTES = [
    ("How do I show a progress bar?", True, None),
    ("How do I make an option required?", True, None),
    ("What is a context object?", True, None),
    ("How do I log to a file from my command?", False, "Not about logging at all"),
    ("How do I accept a file argument?", False, "I wanted an example with a path"),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def session(log: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [
        sys.executable, "-m", "sphinx_ragcite", "serve", str(SITE), "--port",
        str(port), "--questions-log", str(log), "--log-level", "warning",
    ]  # fmt: skip
    server = subprocess.Popen(command)
    try:
        with httpx.Client(base_url=url, timeout=60) as client:
            for _ in range(120):
                try:
                    if client.get("/api/health").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                time.sleep(0.5)
            ids = {}
            # the answerable ones twice (readers repeat), the missing ones once
            for question in [*ANSWERABLE, *MISSING, *ANSWERABLE[:6], MISSING[0]]:
                answer = client.post("/api/ask", json={"question": question})
                answer.raise_for_status()
                data = answer.json()
                ids[question] = data["answer_id"]
                print(f"{data['outcome']:10} {data['confidence']:.2f}  {question}")
            for question, helpful, reason in VOTES:
                vote = {"answer_id": ids[question], "helpful": helpful}
                if reason:
                    vote["reason"] = reason
                client.post("/api/feedback", json=vote).raise_for_status()
    finally:
        server.terminate()
        server.wait(timeout=30)


def screenshot(page_file: Path) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path="/usr/bin/chromium",
            args=["--headless", "--no-sandbox", "--disable-gpu"],
        )
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.goto(page_file.as_uri())
        SHOT.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOT), full_page=True)
        browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keep", type=Path, help="keep the log and report here")
    args = parser.parse_args()
    if not (SITE / "_ragcite" / "manifest.json").is_file():
        sys.exit(f"no build of the click docs in {SITE}")
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        log = work / "q.db"
        log.unlink(missing_ok=True)
        session(log)
        report = work / "report.html"
        subprocess.run(
            [sys.executable, "-m", "sphinx_ragcite", "report", str(log), "--html",
             str(report), "--json", str(work / "report.json")],
            check=True,
        )  # fmt: skip
        screenshot(report)
    print(f"wrote {SHOT.relative_to(REPO)}")


if __name__ == "__main__":
    main()
