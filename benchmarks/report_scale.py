"""``ragcite report`` on 100,000 logged questions: under 30 s on 2 cores?

Issue 27 asks for a report of 100,000 questions in under 30 s. This writes a
realistic log (``_question_log.synthetic_log``: three sites, two of them
built (the click and requests corpora, cached builds under
``results/.sites/``; the third site's build is gone, as happens), 60 days,
about 65 / 20 / 15 % answers / passages / not found, questions repeated as
readers repeat them, the unanswered ones in thousands of wordings, feedback
on about 4 % of the answers) split over two replica files with 1 % of the
rows in both, and times ``ragcite report A.db B.db --html --json`` end to
end in a child process (imports, model load and all). Only the distinct
unanswered questions are embedded, the most asked first, at most
``MAX_GROUPED``; everything else is SQL.

Run from the repository root::

    .venv/bin/python benchmarks/report_scale.py [--rows 100000]

Writes ``benchmarks/results/report_scale.json`` (the logs and report go to
``results/.report_scale/``, rewritten on every run).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import subprocess
import sys
import time

from benchmarks._harness import (
    RESULTS,
    SITES,
    envelope,
    read_passages,
    table,
    write_result,
)
from benchmarks._question_log import synthetic_log
from sphinx_ragcite.questions.report import MAX_GROUPED

WORK = RESULTS / ".report_scale"
LIMIT_S = 30.0
CORPORA = {"click": "click-docs", "requests": "requests-docs"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    args = parser.parse_args()
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    sites, passages = {}, {}
    for name, folder in CORPORA.items():
        html = SITES / folder / "html"
        if not (html / "_ragcite" / "manifest.json").is_file():
            sys.exit(f"no cached build of {folder} in {html}: run corpora_matrix.py")
        sites[name] = (str(html), "")
        passages[name] = read_passages(html)
    sites["old"] = (str(WORK / "gone"), "https://docs.example.org/old/")
    start = time.perf_counter()
    whole = synthetic_log(WORK / "all.db", args.rows, sites=sites, passages=passages)
    write_s = time.perf_counter() - start
    a, b = _split(whole, args.rows)
    command = [
        sys.executable,
        "-m",
        "sphinx_ragcite",
        "report",
        str(a),
        str(b),
        "--html",
        str(WORK / "report.html"),
        "--json",
        str(WORK / "report.json"),
    ]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode:
        sys.exit(f"ragcite report failed ({done.returncode}): {done.stderr}")
    report = json.loads((WORK / "report.json").read_text("utf-8"))
    gaps = report["unanswered"]
    met = seconds < LIMIT_S
    print(
        table(
            [
                "rows",
                "duplicates",
                "unanswered",
                "distinct",
                "embedded",
                "groups",
                "report s",
                f"< {LIMIT_S:.0f} s",
            ],
            [
                [
                    f"{report['questions']:,}",
                    f"{report['duplicates']:,}",
                    f"{gaps['asked']:,}",
                    f"{gaps['distinct']:,}",
                    f"{gaps['grouped']:,}",
                    f"{len(gaps['groups']):,}",
                    f"{seconds:.1f}",
                    "met" if met else "NO",
                ]
            ],
        )
    )
    print(f"\n{done.stdout.strip()}")
    write_result(
        RESULTS / "report_scale.json",
        {
            **envelope("report_scale", rows=args.rows, max_grouped=MAX_GROUPED),
            "log_write_seconds": round(write_s, 2),
            "log_bytes": a.stat().st_size + b.stat().st_size,
            "report_seconds": round(seconds, 2),
            "report_seconds_inside": report["seconds"],
            "limit_seconds": LIMIT_S,
            "met": met,
            "questions": report["questions"],
            "duplicates": report["duplicates"],
            "unanswered": {k: v for k, v in gaps.items() if k != "groups"},
            "groups": len(gaps["groups"]),
            "html_bytes": (WORK / "report.html").stat().st_size,
            "json_bytes": (WORK / "report.json").stat().st_size,
        },
    )


def _split(whole, rows):  # type: ignore[no-untyped-def]
    """Two replica files: even and odd rows, and 1 % of the rows in both."""
    a, b = WORK / "replica-a.db", WORK / "replica-b.db"
    for path, keep in ((a, 0), (b, 1)):
        shutil.copy(whole, path)
        db = sqlite3.connect(path)
        with db:
            db.execute(
                "DELETE FROM questions WHERE id % 2 != ? AND id % 100 != 7", (keep,)
            )
        db.execute("VACUUM")
        db.close()
    return a, b


if __name__ == "__main__":
    main()
