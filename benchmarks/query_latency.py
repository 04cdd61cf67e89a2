"""How fast does ``Site.search`` answer, on a small book and on 50,000 passages?

Why: the server and the CLI answer every question with ``Site.search``; hybrid
retrieval (BM25 + the sentence encoder + fusion) has to stay interactive on a
large site, with targets of p50 <= 10 ms and p99 <= 30 ms at 50k passages.

Two indexes are measured:

(a) the example book (its build reused while it and the package's build side
    are unchanged, or ``--site``);
(b) a synthetic 50,000-passage ``_ragcite/`` (``_synthetic.py``: the
    extension's format, sentences of the example book recombined, random
    unit vectors quantised like real ones; the manifest names the default
    model, so queries are embedded by the real all-MiniLM-L6-v2). Embedding
    50k passages with the model would take far too long, and the vectors'
    values do not change the cost of a search. The index is cached in
    ``benchmarks/results/.synthetic50k/`` and rewritten when ``_synthetic.py``
    or the package's build side change (``--rebuild`` forces it).

Each index is measured in a fresh child process, so load time and memory are
not polluted by the benchmark itself: ``Site.load`` time, peak RSS after the
load (``ru_maxrss``) and after the model is loaded, then for each mode
(bm25, dense, hybrid with RRF) 20 warm-up queries and p50/p99 of
``Site.search(q, 10, mode=m)`` over the questions of ``example_book/qa.jsonl``
repeated to at least ``--queries`` (300) queries (in rounds of the question
list, each round timing every mode, so that load from other processes
affects the modes alike); separately, the p50/p99 of embedding the query
alone (with the default ONNX Runtime thread count and with one thread) and
the p50 of every stage of a hybrid search. ``--profile`` adds the top
functions of a cProfile run of hybrid searches.

Run from the repository root (a minute or two; the first run also writes the
synthetic index)::

    .venv/bin/python benchmarks/query_latency.py
    .venv/bin/python benchmarks/query_latency.py --profile --passages 50000

Results go to ``benchmarks/results/query_latency.json`` unless ``--out``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from benchmarks._harness import (
    EXAMPLE_QA,
    REPO,
    RESULTS,
    envelope,
    example_site,
    latency_ms,
    table,
    write_result,
)
from benchmarks._synthetic import synthetic_site

if TYPE_CHECKING:
    from collections.abc import Callable

DEFAULT_OUT = RESULTS / "query_latency.json"
MODES = ("bm25", "dense", "hybrid")
WARMUP = 20
TARGET_P50_MS = 10.0
TARGET_P99_MS = 30.0


# -- measurement (runs in a child process) --------------------------------------


def _rss_mib() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(usage / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)


def _current_rss_mib() -> float | None:
    """Resident memory now (Linux only); ru_maxrss is the peak so far."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


def _timed(call: Callable[[str], object], queries: list[str]) -> list[float]:
    """Seconds of ``call(query)`` per query, after WARMUP untimed calls."""
    times = []
    for i, q in enumerate([*queries[:WARMUP], *queries]):
        t = time.perf_counter()
        call(q)
        if i >= WARMUP:
            times.append(time.perf_counter() - t)
    return times


def measure(path: Path, total: int, profile: bool) -> dict[str, Any]:
    started = time.perf_counter()
    from sphinx_ragcite.evaluate import load_qa
    from sphinx_ragcite.retrieval.fusion import Candidates, rrf
    from sphinx_ragcite.retrieval.searchable import Ranked
    from sphinx_ragcite.retrieval.site import Site, _top

    import_s = time.perf_counter() - started
    rss_import = _rss_mib()
    started = time.perf_counter()
    site = Site.load(path)
    load_s = time.perf_counter() - started
    rss_load = _rss_mib()
    rss_load_now = _current_rss_mib()
    started = time.perf_counter()
    embedder = site.embedder
    model_s = time.perf_counter() - started
    rss_model = _rss_mib()
    rss_model_now = _current_rss_mib()

    questions = [q.question for q in load_qa(EXAMPLE_QA)]
    queries = questions * -(-total // len(questions))
    result: dict[str, Any] = {
        "passages": len(site.passages),
        "queries_per_mode": len(queries),
        "import_s": round(import_s, 3),
        "load_s": round(load_s, 3),
        "model_load_s": round(model_s, 3),
        "rss_after_import_mib": rss_import,
        "rss_after_load_mib": rss_load,
        "rss_after_model_mib": rss_model,
        "current_rss_after_load_mib": rss_load_now,
        "current_rss_after_model_mib": rss_model_now,
        "modes": {},
    }
    # Rounds of the question list, every mode in each round: a burst of load
    # from another process then skews all modes alike, not just one of them.
    for mode in MODES:
        for q in queries[:WARMUP]:
            site.search(q, 10, mode=mode)
    timings: dict[str, list[float]] = {mode: [] for mode in MODES}
    for start in range(0, len(queries), len(questions)):
        for mode in MODES:
            for q in queries[start : start + len(questions)]:
                t = time.perf_counter()
                site.search(q, 10, mode=mode)
                timings[mode].append(time.perf_counter() - t)
    result["modes"] = {
        mode: latency_ms(times, mean=True) for mode, times in timings.items()
    }

    # Embedding the query alone, back to back (no BM25 or numpy work between).
    times = _timed(lambda q: embedder.embed([q], kind="query"), queries)
    result["embed_query"] = latency_ms(times, mean=True)

    # The stages of a hybrid search, timed one by one (same code path).
    stages: dict[str, list[float]] = {
        "bm25_scores": [],
        "embed_query": [],
        "dense_top": [],  # int8 pass over every row + float32 rescoring
        "top_bm25": [],
        "fuse_and_hits": [],
    }
    assert site.vectors is not None
    for i, q in enumerate([*queries[:WARMUP], *queries]):
        t0 = time.perf_counter()
        bm25 = site.bm25_scores(q)
        t1 = time.perf_counter()
        vector = embedder.embed([q], kind="query")[0]
        t2 = time.perf_counter()
        rows, exact = site.vectors.top(vector, 50)
        t3 = time.perf_counter()
        lexical = _top(bm25, 50, None, positive=True)
        t4 = time.perf_counter()
        dense = dict(zip(rows.tolist(), exact.tolist(), strict=True))
        others = [r for r in lexical if r not in dense]
        dense.update(
            zip(
                others,
                site.vectors.scores(vector, np.array(others, dtype=np.int64)).tolist(),
                strict=True,
            )
        )
        fused = rrf((lexical, list(dense)[: len(rows)]))
        ranked = sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:10]
        site.hits(
            [Ranked(row, score, float(bm25[row]), dense[row]) for row, score in ranked],
            Candidates(),
        )
        t5 = time.perf_counter()
        if i >= WARMUP:
            for name, (a, b) in zip(
                stages,
                ((t0, t1), (t1, t2), (t2, t3), (t3, t4), (t4, t5)),
                strict=True,
            ):
                stages[name].append(b - a)
    result["hybrid_stages_p50_ms"] = {
        name: latency_ms(values)["p50_ms"] for name, values in stages.items()
    }
    result["query_tokens_mean"] = round(
        float(np.mean([embedder.count_tokens(q) for q in questions])), 1
    )
    result["rss_end_mib"] = _rss_mib()
    result["current_rss_end_mib"] = _current_rss_mib()

    # The same query embedding with one ONNX Runtime thread instead of the
    # default min(4, cpu_count): on two busy cores spinning threads contend.
    from sphinx_ragcite.encoder import Embedder, default_threads, model_files

    single = Embedder(
        model_files(site.model_dir), max_tokens=embedder.max_tokens, threads=1
    )
    times = _timed(lambda q: single.embed([q], kind="query"), queries)
    result["embed_query_threads"] = {
        f"default ({default_threads()})": result["embed_query"],
        "1": latency_ms(times, mean=True),
    }

    if profile:
        import cProfile
        import io
        import pstats

        profiler = cProfile.Profile()
        profiler.enable()
        for q in queries:
            site.search(q, 10, mode="hybrid")
        profiler.disable()
        stream = io.StringIO()
        stats = pstats.Stats(profiler, stream=stream)
        stats.sort_stats("tottime").print_stats(15)
        result["profile_hybrid_tottime"] = stream.getvalue()
    return result


def measure_in_child(path: Path, total: int, profile: bool) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", str(path), "--queries", str(total)]
    if profile:
        cmd.append("--profile")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"measuring {path} failed:\n{proc.stderr}")
    return json.loads(proc.stdout)


# -- output ----------------------------------------------------------------------


def report(sites: dict[str, dict[str, Any]], synthetic_label: str) -> None:
    body = []
    for label, r in sites.items():
        for mode in MODES:
            m = r["modes"][mode]
            body.append(
                [
                    label,
                    mode,
                    f"{m['p50_ms']:.2f}",
                    f"{m['p99_ms']:.2f}",
                    f"{m['mean_ms']:.2f}",
                ]
            )
        for threads, m in r["embed_query_threads"].items():
            body.append(
                [
                    label,
                    f"embed query only, {threads} thread(s)",
                    f"{m['p50_ms']:.2f}",
                    f"{m['p99_ms']:.2f}",
                    f"{m['mean_ms']:.2f}",
                ]
            )
    count = next(iter(sites.values()))["queries_per_mode"]
    print(
        f"Site.search(q, 10) latency ({count} queries per mode after {WARMUP} "
        "warm-up queries)"
    )
    print(table(["index", "mode", "p50 ms", "p99 ms", "mean ms"], body))

    def mib(value: float | None) -> str:
        return "-" if value is None else f"{value:.0f} MiB"

    print("\nLoading (peak = ru_maxrss so far; now = VmRSS)")
    print(
        table(
            [
                "index",
                "passages",
                "Site.load",
                "model load",
                "peak after load",
                "now after load",
                "now after model",
                "peak at end",
            ],
            [
                [
                    label,
                    str(r["passages"]),
                    f"{r['load_s']:.3f}s",
                    f"{r['model_load_s']:.3f}s",
                    mib(r["rss_after_load_mib"]),
                    mib(r["current_rss_after_load_mib"]),
                    mib(r["current_rss_after_model_mib"]),
                    mib(r["rss_end_mib"]),
                ]
                for label, r in sites.items()
            ],
        )
    )

    print(
        "\nHybrid search, p50 of each stage (ms), timed in sequence as search runs them"
    )
    names = list(next(iter(sites.values()))["hybrid_stages_p50_ms"])
    print(
        table(
            ["index", *names],
            [
                [label, *(f"{r['hybrid_stages_p50_ms'][n]:.3f}" for n in names)]
                for label, r in sites.items()
            ],
        )
    )

    if synthetic_label in sites:
        hybrid = sites[synthetic_label]["modes"]["hybrid"]
        p50_ok = hybrid["p50_ms"] <= TARGET_P50_MS
        p99_ok = hybrid["p99_ms"] <= TARGET_P99_MS
        print(
            f"\ntarget on {synthetic_label}: hybrid p50 <= {TARGET_P50_MS:.0f} ms -> "
            f"{hybrid['p50_ms']:.2f} ms {'ok' if p50_ok else 'MISSED'}; "
            f"p99 <= {TARGET_P99_MS:.0f} ms -> {hybrid['p99_ms']:.2f} ms "
            f"{'ok' if p99_ok else 'MISSED'}"
        )
    for label, r in sites.items():
        if "profile_hybrid_tottime" in r:
            print(f"\ncProfile of hybrid searches on {label} (by tottime):")
            print(r["profile_hybrid_tottime"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--queries", type=int, default=300, help="timed queries per mode (min.)"
    )
    parser.add_argument(
        "--passages", type=int, default=50_000, help="synthetic index size"
    )
    parser.add_argument(
        "--rebuild", action="store_true", help="regenerate the synthetic index"
    )
    parser.add_argument(
        "--site", type=Path, help="an existing example_book build to reuse"
    )
    parser.add_argument(
        "--profile", action="store_true", help="cProfile hybrid searches"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON output")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.child is not None:
        print(json.dumps(measure(args.child, args.queries, args.profile)))
        return 0

    sites: dict[str, dict[str, Any]] = {}
    synthetic_label = f"synthetic {args.passages // 1000}k"
    example = example_site(args.site)
    sites["example_book"] = measure_in_child(example, args.queries, args.profile)
    directory, generated_s = synthetic_site(
        args.passages, example, rebuild=args.rebuild
    )
    sites[synthetic_label] = measure_in_child(directory, args.queries, args.profile)
    report(sites, synthetic_label)

    synthetic = sites[synthetic_label]["modes"]["hybrid"]
    payload = envelope(
        "query_latency",
        numpy=np.__version__,
        warmup=WARMUP,
        synthetic_index=str(directory.relative_to(REPO)),
        synthetic_generated_s=None if generated_s is None else round(generated_s, 1),
        targets={
            "index": synthetic_label,
            "hybrid_p50_ms": TARGET_P50_MS,
            "hybrid_p99_ms": TARGET_P99_MS,
            "p50_met": synthetic["p50_ms"] <= TARGET_P50_MS,
            "p99_met": synthetic["p99_ms"] <= TARGET_P99_MS,
        },
        sites=sites,
    )
    write_result(args.out, payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
