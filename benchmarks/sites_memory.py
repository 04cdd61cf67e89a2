"""How much memory does each site add when one server serves several?

Why: ``ragcite serve --site NAME=BUILD_DIR ...`` keeps every site's index in
one process; what a site costs decides how many books and versions fit on a
machine before the passages should move to Qdrant.

For each index (the example book, its build reused while unchanged or given
by ``--site``, and a synthetic ``--passages`` index written by
``_synthetic.py``, as for ``query_latency.py``), two fresh child
processes each load the server's state (``load_state``, as ``ragcite serve``
does) for the same build served as 1 and as ``--copies`` sites (``s0``,
``s1``, ...; each load reads its own arrays, as distinct sites would),
record the resident memory (``VmRSS``), answer one question scoped to each
site and one across all of them (``State.scope``, the server's own code),
and record it again (sentence caches, unions, engines).

One more site costs the difference divided by ``copies - 1``: the process,
the sentence encoder (one, shared by all sites) and the thread pool cancel
out. :func:`measure_sites_memory` measures one index and returns these
figures (``benchmarks/scale.py`` can call it).

Run from the repository root (a minute or two)::

    .venv/bin/python benchmarks/sites_memory.py
    .venv/bin/python benchmarks/sites_memory.py --copies 8 --passages 20000

Results go to ``benchmarks/results/sites_memory.json`` unless ``--out``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks._harness import (
    REPO,
    RESULTS,
    envelope,
    example_site,
    latency_ms,
    table,
    write_result,
)
from benchmarks._synthetic import synthetic_site

DEFAULT_OUT = RESULTS / "sites_memory.json"
QUESTION = "How long should the bloom take?"


def _rss_mib() -> float:
    """Resident memory now (Linux ``VmRSS``), in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    raise RuntimeError("no VmRSS in /proc/self/status (Linux only)")


def measure(path: Path, copies: int) -> dict[str, Any]:
    """In this process: the server's state for *copies* sites loaded from *path*."""
    from sphinx_ragcite.server.settings import ServerSettings
    from sphinx_ragcite.server.state import load_state

    rss_import = _rss_mib()
    specs = tuple((f"s{i}", path) for i in range(copies))
    started = time.perf_counter()
    state = load_state(ServerSettings(sites=specs, rate_limit=0))
    load_s = time.perf_counter() - started
    rss_loaded = _rss_mib()
    timings = []
    for member in state.sites:
        started = time.perf_counter()
        state.scope(member.name).engine.answer(QUESTION)
        timings.append(time.perf_counter() - started)
    across_s = None
    cited: list[str] = []
    if copies > 1:
        started = time.perf_counter()
        across = state.scope().engine.answer(QUESTION)
        across_s = round(1000 * (time.perf_counter() - started), 1)
        cited = sorted({c.site or "" for c in across.citations})
    rss_answered = _rss_mib()
    passages = len(state.sites.members[0].site.passages)
    state.close()
    return {
        "passages": passages,
        "copies": copies,
        "load_s": round(load_s, 2),
        "rss_after_import_mib": rss_import,
        "rss_loaded_mib": rss_loaded,
        "rss_after_answers_mib": rss_answered,
        "scoped_answer_ms": latency_ms(timings, (50,), digits=1)["p50_ms"],
        "across_answer_ms": across_s,
        "across_cited_sites": cited,
    }


def _child(path: Path, copies: int) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", str(path), "--copies", str(copies)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    if proc.returncode != 0:
        raise RuntimeError(f"measuring {path} failed:\n{proc.stderr}")
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def measure_sites_memory(path: Path, copies: int = 4) -> dict[str, Any]:
    """Memory per site of the build at *path*, served *copies* times.

    Two fresh child processes load 1 and *copies* sites; the difference
    divided by ``copies - 1`` is what one more site costs (the process, the
    shared encoder and the thread pool cancel out), after loading and after
    answering a question in each site and one across them.
    """
    if copies < 2:
        raise ValueError("copies must be at least 2")
    one, many = _child(path, 1), _child(path, copies)
    extra = copies - 1
    per_site = (many["rss_loaded_mib"] - one["rss_loaded_mib"]) / extra
    served = (many["rss_after_answers_mib"] - one["rss_after_answers_mib"]) / extra
    return {
        "passages": many["passages"],
        "copies": copies,
        "per_site_mib": round(per_site, 2),
        "per_site_served_mib": round(served, 2),
        "per_1k_passages_mib": round(per_site / many["passages"] * 1000, 3),
        "fixed_mib": round(one["rss_loaded_mib"] - per_site, 1),
        "one_site": one,
        "all_sites": many,
    }


def report(results: dict[str, dict[str, Any]]) -> None:
    head = ["index", "passages", "sites", "MiB/site", "MiB/site served"]
    head += ["MiB/1k passages", "fixed MiB", "across ms"]
    body = [
        [
            name,
            str(r["passages"]),
            str(r["copies"]),
            f"{r['per_site_mib']:.1f}",
            f"{r['per_site_served_mib']:.1f}",
            f"{r['per_1k_passages_mib']:.2f}",
            f"{r['fixed_mib']:.0f}",
            f"{r['all_sites']['across_answer_ms']:.0f}",
        ]
        for name, r in results.items()
    ]
    print(table(head, body))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=4, help="sites per index")
    parser.add_argument(
        "--passages", type=int, default=10_000, help="synthetic index size"
    )
    parser.add_argument("--site", type=Path, help="an example_book build to reuse")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON output")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        print(json.dumps(measure(args.child, args.copies)))
        return 0

    results: dict[str, dict[str, Any]] = {}
    example = example_site(args.site)
    results["example_book"] = measure_sites_memory(example, args.copies)
    directory, _ = synthetic_site(args.passages, example)
    label = f"synthetic {args.passages // 1000}k"
    results[label] = measure_sites_memory(directory, args.copies)
    report(results)
    write_result(args.out, envelope("sites_memory", question=QUESTION, indexes=results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
