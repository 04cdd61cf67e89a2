"""Every screenshot the docs show, made again from this checkout (issue 42).

The docs' screenshots must show what this build does: an answer pictured at
74% that today's engine gives as a list of passages misleads the reader of
the docs. This script

1. runs, with ``RAGCITE_UPDATE_SCREENSHOTS=1``, the browser tests that take
   a screenshot the docs show (each calls ``shot(page, name, docs=True)``,
   found here by reading the test files), which copy it into
   ``docs/_static/screenshots/`` and leave beside it in ``SHOTS`` a record
   of what it pictures (the question, the outcome, the confidence, the
   generator, the cited passages);
2. runs the two tools that picture other books (``xuance_screenshot.py``,
   ``question_report_screenshot.py``) unless ``--only-tests``;
3. writes ``docs/_static/screenshots/shots.json``: each screenshot, what
   made it and what it pictures.

``tests/test_docs_screenshots.py`` then holds the docs to it: every
screenshot the docs show is listed, each pictured answer of the example
book is what the engine answers today, and no figure's text claims
another confidence. Run it after a change to answers or to the widget's
look::

    .venv/bin/python tools/docs_screenshots.py [--only-tests] [-k EXPR]
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOC_SHOTS = REPO / "docs" / "_static" / "screenshots"
RECORD = DOC_SHOTS / "shots.json"
#: Where the tests write screenshots and their records (tests/helpers/browser.py).
SHOTS = Path("/tmp/ragcite-shots")
#: The test files that take screenshots the docs show.
TEST_FILES = (
    "test_widget.py",
    "test_widget_versions.py",
    "test_browser_answers.py",
    "test_themes.py",
)
#: Screenshots of other books, each made by a tool of its own.
TOOLS = {
    "xuance-zh-answer.png": "tools/xuance_screenshot.py",
    "xuance-zh-landed.png": "tools/xuance_screenshot.py",
    "question-report.png": "tools/question_report_screenshot.py",
}


def doc_shot_tests(path: Path) -> list[str]:
    """The tests of *path* that call ``shot(..., docs=True)``."""
    tree = ast.parse(path.read_text("utf-8"))
    found = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef) or not node.name.startswith("test"):
            continue
        for call in ast.walk(node):
            if (
                isinstance(call, ast.Call)
                and getattr(call.func, "id", "") == "shot"
                and any(
                    k.arg == "docs" and getattr(k.value, "value", False)
                    for k in call.keywords
                )
            ):
                found.append(node.name)
                break
    return found


def run_tests(select: str | None) -> int:
    ids = [
        f"tests/{name}::{test}"
        for name in TEST_FILES
        for test in doc_shot_tests(REPO / "tests" / name)
    ]
    print(f"docs_screenshots: {len(ids)} tests take the docs' screenshots", flush=True)
    env = {**os.environ, "RAGCITE_UPDATE_SCREENSHOTS": "1"}
    command = [sys.executable, "-m", "pytest", "-n", "2", "-q", "-p", "no:randomly"]
    if select:
        command += ["-k", select]
    return subprocess.call([*command, *ids], cwd=REPO, env=env)


def write_record() -> dict:
    """shots.json from the records the tests left and the tools' shots."""
    shots = {}
    for png in sorted(DOC_SHOTS.glob("*.png")):
        made = SHOTS / f"{png.stem}.json"
        if png.name in TOOLS:
            shots[png.name] = {"made_by": TOOLS[png.name], "pictured": None}
        elif made.is_file():
            record = json.loads(made.read_text("utf-8"))
            shots[png.name] = {
                "made_by": "tests (tools/docs_screenshots.py)",
                "book": record["book"],
                "pictured": record["pictured"],
            }
    old = json.loads(RECORD.read_text("utf-8")) if RECORD.is_file() else {}
    # a shot not taken this run keeps what it pictured when it was taken
    for name, entry in old.get("shots", {}).items():
        if name not in shots and (DOC_SHOTS / name).is_file():
            shots[name] = entry
    record = {
        "about": "What each screenshot of the docs pictures; written by "
        "tools/docs_screenshots.py, checked by tests/test_docs_screenshots.py",
        "shots": shots,
    }
    RECORD.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", "utf-8")
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only-tests", action="store_true", help="skip the tools")
    parser.add_argument("-k", dest="select", help="only the tests pytest -k selects")
    args = parser.parse_args(argv)
    status = run_tests(args.select)
    if not args.only_tests:
        for tool in sorted(set(TOOLS.values())):
            print(f"docs_screenshots: {tool}", flush=True)
            status = subprocess.call([sys.executable, tool], cwd=REPO) or status
    record = write_record()
    missing = [p.name for p in DOC_SHOTS.glob("*.png") if p.name not in record["shots"]]
    if missing:
        print("docs_screenshots: not made by any test or tool:", *missing, sep="\n  ")
        status = status or 1
    where = RECORD.relative_to(REPO)
    print(f"docs_screenshots: {len(record['shots'])} screenshots in {where}")
    return status


if __name__ == "__main__":
    sys.exit(main())
