"""The how-to's report screenshot, from a real scripted session (issue 27).

Serves the click documentation (the cached build of ``../shared/corpora/
click-docs`` under ``benchmarks/results/.sites/``; build it first with
``benchmarks/answer_quality.py`` if it is missing) with ``ragcite serve
--questions-log``; a reader in Chromium types the questions below into the
widget (some the book answers, and several phrasings of three topics it
does not cover) and clicks "Helpful? Yes / No" on some answers (a reason
after "No"); then the server stops, ``ragcite report`` runs and the page
is screenshot in Chromium (full page, 1200 px wide) into
``docs/_static/screenshots/question-report.png``.

    .venv/bin/python tools/question_report_screenshot.py [--keep DIR]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from benchmarks._harness import free_port

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


def session(log: Path) -> None:
    """A reader in Chromium: every question typed into the widget, every vote
    clicked (with a reason typed after "No")."""
    from playwright.sync_api import sync_playwright

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [
        sys.executable, "-m", "sphinx_ragcite", "serve", str(SITE), "--port",
        str(port), "--questions-log", str(log), "--log-level", "warning",
    ]  # fmt: skip
    server = subprocess.Popen(command)
    votes = {q: (helpful, reason) for q, helpful, reason in VOTES}
    try:
        with httpx.Client(base_url=url, timeout=60) as client:
            for _ in range(120):
                try:
                    if client.get("/api/health").json().get("feedback"):
                        break
                except (httpx.TransportError, ValueError):
                    pass
                time.sleep(0.5)
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path="/usr/bin/chromium",
                args=["--headless", "--no-sandbox", "--disable-gpu"],
            )
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.goto(f"{url}/index.html")
            page.locator(".ragcite-launcher").click()
            # the answerable ones twice (readers repeat), the missing ones once
            for n, question in enumerate(
                [*ANSWERABLE, *MISSING, *ANSWERABLE[:6], MISSING[0]], start=1
            ):
                box = page.locator("#ragcite-question")
                box.fill(question)
                box.press("Enter")
                _wait_rows(log, n)
                group = page.get_by_role("group", name="Helpful?")
                group.wait_for(state="visible")
                outcome = _last_outcome(log)
                print(f"{outcome:10} {question}")
                if question in votes:
                    helpful, reason = votes.pop(question)
                    group.get_by_role("button", name="Yes" if helpful else "No").click()
                    if reason:
                        page.get_by_label("What was missing or wrong? (optional)").fill(
                            reason
                        )
                        group.get_by_role("button", name="Send").click()
                    page.wait_for_function(
                        "() => document.querySelector('.ragcite-feedback-status')"
                        "?.textContent.startsWith('Thanks')"
                    )
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)


def _rows(log: Path, sql: str) -> list[tuple]:
    import sqlite3

    connection = sqlite3.connect(log)
    try:
        return connection.execute(sql).fetchall()
    finally:
        connection.close()


def _wait_rows(log: Path, n: int) -> None:
    for _ in range(600):
        if log.is_file() and _rows(log, "SELECT count(*) FROM questions")[0][0] >= n:
            return
        time.sleep(0.1)
    raise TimeoutError(f"question {n} was not logged")


def _last_outcome(log: Path) -> str:
    return _rows(log, "SELECT outcome FROM questions ORDER BY id DESC LIMIT 1")[0][0]


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
