"""Where the test suite's time goes, in CPU seconds (issue 34).

Runs the README's test command (``python -m pytest``, extra arguments after
``--``) with the ``_suite_cpu`` plugin, and reports:

- the wall time and the CPU of the whole run (user + sys of pytest and
  every process it reaped), against what the cores can give in the
  8-minute target (cores x 480 s);
- the CPU by kind of xdist group: the third-party corpora (``corpus:*``),
  the Chromium tests (``browser:*``), the rest; the dearest groups, files
  and tests;
- how busy the cores were, in 10-second steps (each test's CPU spread over
  its wall time; CPU reaped only at the end, such as Chromium's, shows in
  the last steps), and when each worker finished;
- whether the kept corpus builds of ``results/.sites`` were current (a warm
  run) or built in this run (a fresh clone's run).

Why CPU and not wall time: the machine's speed varies by 10-15% between
runs, and a worker's wall time depends on what the others do; CPU says what
a change saves wherever the scheduler puts it.

    .venv/bin/python -m benchmarks.suite_cost [--out FILE] [-- PYTEST ARGS]

Takes as long as the suite (7-13 min on 2 cores). Results go to
``benchmarks/results/suite_cost.json``.
"""

from __future__ import annotations

import argparse
import collections
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._harness import REPO, RESULTS, envelope, table, write_result

#: The issue's target for the whole suite, wall seconds.
TARGET_SECONDS = 480
#: The width of a step of the busy-cores timeline, seconds.
STEP = 10


def run_suite(pytest_args: list[str], records: Path) -> dict[str, float]:
    """The README's test command with the plugin; its wall and CPU seconds."""
    env = {**os.environ, "RAGCITE_SUITE_CPU": str(records)}
    command = [sys.executable, "-m", "pytest", "-p", "benchmarks._suite_cpu"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    status = subprocess.call([*command, *pytest_args], cwd=REPO, env=env)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "status": status,
        "wall": wall,
        "user": after.ru_utime - before.ru_utime,
        "sys": after.ru_stime - before.ru_stime,
    }


def read_records(path: Path) -> list[dict[str, Any]]:
    rows = []
    for line in path.read_text("utf-8").splitlines():
        nodeid, group, worker, start, wall, own, reaped = line.split("\t")
        rows.append(
            {
                "test": nodeid,
                "group": group,
                "worker": worker,
                "start": float(start),
                "wall": float(wall),
                "cpu": float(own) + float(reaped),
                "reaped": float(reaped),
            }
        )
    return rows


def kind(group: str) -> str:
    if group.startswith("corpus:"):
        return "corpora"
    if group.startswith("browser:"):
        return "Chromium"
    return "the rest"


def summarise(rows: list[dict[str, Any]], top: int = 20) -> dict[str, Any]:
    """CPU by kind, group, file and test; the busy-cores timeline."""
    by_kind: collections.Counter[str] = collections.Counter()
    by_group: collections.Counter[str] = collections.Counter()
    by_file: collections.Counter[str] = collections.Counter()
    tests_of: collections.Counter[str] = collections.Counter()
    for row in rows:
        by_kind[kind(row["group"])] += row["cpu"]
        by_group[row["group"]] += row["cpu"]
        by_file[row["test"].split("::")[0]] += row["cpu"]
        tests_of[kind(row["group"])] += 1
    start = min(r["start"] for r in rows)
    end = max(r["start"] + r["wall"] for r in rows)
    busy = [0.0] * (int((end - start) // STEP) + 1)
    for row in rows:
        begin, length = row["start"] - start, row["wall"]
        if length <= 0:
            busy[int(begin // STEP)] += row["cpu"]
            continue
        step = int(begin // STEP)
        while step * STEP < begin + length and step < len(busy):
            low, high = max(begin, step * STEP), min(begin + length, (step + 1) * STEP)
            busy[step] += row["cpu"] * max(0.0, high - low) / length
            step += 1
    finished: dict[str, float] = collections.defaultdict(float)
    for row in rows:
        done = row["start"] + row["wall"] - start
        finished[row["worker"]] = max(finished[row["worker"]], done)
    dearest = sorted(rows, key=lambda r: -r["cpu"])[:top]
    return {
        "tests": len(rows),
        "test_cpu": sum(r["cpu"] for r in rows),
        "by_kind": {k: {"cpu": by_kind[k], "tests": tests_of[k]} for k in by_kind},
        "groups": dict(by_group.most_common(top)),
        "files": dict(by_file.most_common(top)),
        "dearest_tests": [
            {"test": r["test"], "cpu": r["cpu"], "wall": r["wall"]} for r in dearest
        ],
        "busy_cores": [round(b / STEP, 2) for b in busy],
        "workers_finished": dict(sorted(finished.items())),
    }


def _manifests() -> dict[str, float]:
    """The kept sites of ``results/.sites`` and when each was last built."""
    return {
        p.parents[2].name: p.stat().st_mtime
        for p in (RESULTS / ".sites").glob("*/html/_ragcite/manifest.json")
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=RESULTS / "suite_cost.json")
    parser.add_argument("pytest_args", nargs="*", help="after --: for pytest")
    args = parser.parse_args(argv)
    kept_before = _manifests()
    with tempfile.TemporaryDirectory() as folder:
        records = Path(folder) / "tests.tsv"
        run = run_suite(args.pytest_args, records)
        rows = read_records(records) if records.exists() else []
    if not rows:
        print("no test ran", file=sys.stderr)
        return 1
    built = sorted(
        name for name, when in _manifests().items() if when > kept_before.get(name, 0)
    )
    summary = summarise(rows)
    cores = os.cpu_count() or 1
    cpu = run["user"] + run["sys"]
    result = {
        **envelope("suite_cost", pytest_args=args.pytest_args),
        "run": run,
        "cpu": cpu,
        "budget_cpu": cores * TARGET_SECONDS,
        "sites_built_in_this_run": built,
        **summary,
    }
    print(
        f"\npytest exit {run['status']}: {run['wall']:.1f} s wall, "
        f"{cpu:.0f} CPU s ({run['user']:.0f} user + {run['sys']:.0f} sys) on "
        f"{cores} cores; the {TARGET_SECONDS} s target gives {cores * TARGET_SECONDS} "
        f"CPU s. Sites built in this run: {len(built)} "
        f"({'a fresh run' if built else 'the kept builds were current'})\n"
    )
    body = [
        [name, f"{v['tests']}", f"{v['cpu']:.0f}", f"{v['cpu'] / cpu:.0%}"]
        for name, v in sorted(summary["by_kind"].items(), key=lambda x: -x[1]["cpu"])
    ]
    outside = cpu - summary["test_cpu"]
    body.append(["outside tests", "", f"{outside:.0f}", f"{outside / cpu:.0%}"])
    print(table(["kind", "tests", "CPU s", "share"], body))
    groups = summary["groups"].items()
    print("\n" + table(["group", "CPU s"], [[g, f"{c:.0f}"] for g, c in groups]))
    dearest = [
        [t["test"], f"{t['cpu']:.1f}", f"{t['wall']:.1f}"]
        for t in summary["dearest_tests"]
    ]
    print("\n" + table(["test", "CPU s", "wall s"], dearest))
    busy = " ".join(f"{b:.1f}" for b in summary["busy_cores"])
    print(f"\nbusy cores per {STEP} s: {busy}")
    done = summary["workers_finished"].items()
    print("workers finished at: " + ", ".join(f"{w} {s:.0f} s" for w, s in done))
    write_result(args.out, result)
    return 0 if run["status"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
