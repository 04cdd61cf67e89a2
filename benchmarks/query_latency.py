"""How fast does ``Site.search`` answer, on a small book and on 50,000 passages?

Why: the server and the CLI answer every question with ``Site.search``; hybrid
retrieval (BM25 + the sentence encoder + fusion) has to stay interactive on a
large site, with targets of p50 <= 10 ms and p99 <= 30 ms at 50k passages.

Two indexes are measured:

(a) the example book, built with ``python -m sphinx -q -b html`` into a
    temporary directory (or ``--site`` to reuse an existing build);
(b) a synthetic 50,000-passage ``_ragcite/`` written in exactly the format of
    ``sphinx_ragcite/index/build.py``: passage texts recombine sentences of
    the example book's passages (a realistic vocabulary), BM25 is built by
    ``index.bm25.build_bm25``, ``search.json`` by ``index.static``, and the
    vectors are random unit vectors (``default_rng(0)``, dim 384) quantised
    with ``index.embed.quantize``. The manifest names the default model, so
    queries are embedded by the real all-MiniLM-L6-v2. Embedding 50k passages
    with the model would take far too long, and the vectors' values do not
    change the cost of a search. The index is cached in
    ``benchmarks/results/.synthetic50k/`` and rewritten when this script or
    the index-writing modules change (``--rebuild`` forces it).

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
import os
import platform
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from _report import table

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
EXAMPLE_BOOK = REPO / "example_book"
QA = EXAMPLE_BOOK / "qa.jsonl"
DEFAULT_OUT = HERE / "results" / "query_latency.json"
MODES = ("bm25", "dense", "hybrid")
WARMUP = 20
SEED = 0
DIM = 384
SECTIONS = 20  # per synthetic chapter
PER_SECTION = 25  # passages per synthetic section
TARGET_P50_MS = 10.0
TARGET_P99_MS = 30.0
#: Other processes on the machine skew every timing: recorded with the results.
LOADAVG = os.getloadavg() if hasattr(os, "getloadavg") else None
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def synthetic_dir(passages: int) -> Path:
    return HERE / "results" / f".synthetic{passages // 1000}k"


# -- indexes ---------------------------------------------------------------------


def build_example(dest: Path) -> Path:
    """A fresh HTML build of example_book; returns its output directory."""
    out = dest / "html"
    cmd = [sys.executable, "-m", "sphinx", "-q", "-b", "html"]
    cmd += ["-d", str(dest / "doctrees"), str(EXAMPLE_BOOK), str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr}")
    return out


def _synthetic_key(passages: int) -> dict[str, Any]:
    """What the cached index depends on: size, seed and the code writing it."""
    import hashlib

    import sphinx_ragcite

    digest = hashlib.sha256(Path(__file__).read_bytes())
    package = Path(sphinx_ragcite.__file__).parent
    for module in ("bm25", "embed", "static", "tokenize", "writer"):
        digest.update((package / "index" / f"{module}.py").read_bytes())
    return {"passages": passages, "seed": SEED, "code": digest.hexdigest()[:16]}


def _synthetic_ok(directory: Path, passages: int) -> bool:
    try:
        manifest = json.loads((directory / "_ragcite" / "manifest.json").read_text())
    except (OSError, ValueError):
        return False
    return bool(manifest.get("synthetic") == _synthetic_key(passages))


def _passages_file(site: Path) -> Path:
    """The passages file of a built site, as its manifest names it."""
    index = site / "_ragcite"
    manifest = json.loads((index / "manifest.json").read_text("utf-8"))
    return index / manifest["files"]["passages"]


def write_synthetic(source: Path, directory: Path, passages: int) -> float:
    """Write a ``_ragcite/`` of *passages* records under *directory*; seconds."""
    from sphinx_ragcite import __version__
    from sphinx_ragcite.extension.passages.ids import passage_id
    from sphinx_ragcite.extension.passages.records import content_hash
    from sphinx_ragcite.extension.writer import IndexWriter
    from sphinx_ragcite.contracts import make_snippet
    from sphinx_ragcite.formats.bm25 import PARAMS, bm25_files, build_bm25
    from sphinx_ragcite.formats.embeddings import npy_bytes, quantize
    from sphinx_ragcite.formats.records import passages_jsonl
    from sphinx_ragcite.formats.static import FILE_NAME as STATIC_FILE
    from sphinx_ragcite.formats.static import static_file, static_index
    from sphinx_ragcite.retrieval.embed import DEFAULT_MAX_TOKENS, DEFAULT_MODEL_ID
    from sphinx_ragcite.text import SPEC

    started = time.perf_counter()
    real = [
        json.loads(line) for line in _passages_file(source).read_text().splitlines()
    ]
    sentences = [s for p in real for s in _SENTENCE_END.split(p["text"]) if s.strip()]
    lengths = [len(_SENTENCE_END.split(p["text"])) for p in real]
    rng = random.Random(SEED)
    records: list[dict[str, Any]] = []
    per_chapter = SECTIONS * PER_SECTION
    offsets: dict[str, int] = {}
    for n in range(passages):
        chapter, rest = divmod(n, per_chapter)
        section, position = divmod(rest, PER_SECTION)
        pid = passage_id(chapter, section, position + 1)
        model = real[rng.randrange(len(real))]
        text = " ".join(rng.choice(sentences) for _ in range(rng.choice(lengths)))
        docname = f"chapter{chapter:03d}"
        start = offsets.get(docname, 0)
        offsets[docname] = start + len(text) + 2
        records.append(
            {
                "passage_id": pid,
                "docname": docname,
                "url": f"{docname}.html#{pid}",
                "chapter": f"{chapter}. {model['chapter']}",
                "section": model["section"],
                "heading_path": model["heading_path"],
                "text": text,
                "snippet": make_snippet(text),
                "char_start": start,
                "char_end": start + len(text),
                "content_hash": content_hash(text),
            }
        )

    if directory.exists():
        shutil.rmtree(directory)
    writer = IndexWriter(directory)
    writer.add("passages", "passages.jsonl", passages_jsonl(records))
    retriever = build_bm25(records)
    for name, data in bm25_files(retriever).items():
        writer.add("bm25." + name.split(".")[0], f"bm25/{name}", data)
    writer.add("static", STATIC_FILE, static_file(static_index(retriever, records)))
    vectors = np.random.default_rng(SEED).standard_normal((passages, DIM))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    codes, scales = quantize(vectors.astype(np.float32))
    writer.add("embeddings", "embeddings.npy", npy_bytes(codes))
    writer.add("embedding_scales", "embedding_scales.npy", npy_bytes(scales))
    writer.finish(
        {
            "generator": f"sphinx-ragcite {__version__} (benchmarks/query_latency.py)",
            "project": "Synthetic benchmark book",
            "author": "",
            "copyright": "",
            "version": "",
            "release": "",
            "html_baseurl": "",
            "language": "en",
            "builder": "html",
            "root_url": "index.html",
            "built_at": "1970-01-01T00:00:00Z",
            "counts": {"passages": passages, "documents": len(offsets)},
            "tokenizer": SPEC,
            "bm25": PARAMS,
            "embedding": {
                "model": DEFAULT_MODEL_ID,
                "dim": DIM,
                "dtype": "int8",
                "scale_dtype": "float32",
                "max_tokens": DEFAULT_MAX_TOKENS,
                "pooling": "mean",
                "normalized": True,
                "embedded": passages,
            },
            "synthetic": _synthetic_key(passages),
        }
    )
    return time.perf_counter() - started


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


def _ms(values: list[float]) -> dict[str, float]:
    array = np.array(values) * 1000
    return {
        "p50_ms": round(float(np.percentile(array, 50)), 3),
        "p99_ms": round(float(np.percentile(array, 99)), 3),
        "mean_ms": round(float(array.mean()), 3),
    }


def measure(path: Path, total: int, profile: bool) -> dict[str, Any]:
    started = time.perf_counter()
    from sphinx_ragcite.evaluate import load_qa
    from sphinx_ragcite.retrieval.site import Site, _rrf, _top

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

    questions = [q.question for q in load_qa(QA)]
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
    result["modes"] = {mode: _ms(times) for mode, times in timings.items()}

    # Embedding the query alone, back to back (no BM25 or numpy work between).
    times = []
    for i, q in enumerate([*queries[:WARMUP], *queries]):
        t = time.perf_counter()
        embedder.embed([q])
        if i >= WARMUP:
            times.append(time.perf_counter() - t)
    result["embed_query"] = _ms(times)

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
        vector = embedder.embed([q])[0]
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
        fused = _rrf((lexical, list(dense)[: len(rows)]))
        ranked = sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:10]
        [site._hit(row, score, bm25, dense) for row, score in ranked]
        t5 = time.perf_counter()
        if i >= WARMUP:
            for name, (a, b) in zip(
                stages,
                ((t0, t1), (t1, t2), (t2, t3), (t3, t4), (t4, t5)),
                strict=True,
            ):
                stages[name].append(b - a)
    result["hybrid_stages_p50_ms"] = {
        name: _ms(values)["p50_ms"] for name, values in stages.items()
    }
    result["query_tokens_mean"] = round(
        float(np.mean([embedder.count_tokens(q) for q in questions])), 1
    )
    result["rss_end_mib"] = _rss_mib()
    result["current_rss_end_mib"] = _current_rss_mib()

    # The same query embedding with one ONNX Runtime thread instead of the
    # default min(4, cpu_count): on two busy cores spinning threads contend.
    from sphinx_ragcite.retrieval.embed import Embedder, default_threads, model_files

    single = Embedder(
        model_files(site.model_dir), max_tokens=embedder.max_tokens, threads=1
    )
    times = []
    for i, q in enumerate([*queries[:WARMUP], *queries]):
        t = time.perf_counter()
        single.embed([q])
        if i >= WARMUP:
            times.append(time.perf_counter() - t)
    result["embed_query_threads"] = {
        f"default ({default_threads()})": result["embed_query"],
        "1": _ms(times),
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
    generated_s = None
    with tempfile.TemporaryDirectory(prefix="ragcite-latency-") as tmp:
        example = args.site or build_example(Path(tmp))
        sites["example_book"] = measure_in_child(example, args.queries, args.profile)
        directory = synthetic_dir(args.passages)
        if args.rebuild or not _synthetic_ok(directory, args.passages):
            print(f"writing {directory} ...", file=sys.stderr)
            generated_s = round(write_synthetic(example, directory, args.passages), 1)
            print(f"  took {generated_s:.1f}s", file=sys.stderr)
    sites[synthetic_label] = measure_in_child(directory, args.queries, args.profile)
    report(sites, synthetic_label)

    synthetic = sites[synthetic_label]["modes"]["hybrid"]
    payload = {
        "benchmark": "query_latency",
        "python": platform.python_version(),
        "numpy": np.__version__,
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "loadavg_at_start": LOADAVG,
        "loadavg_at_end": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "warmup": WARMUP,
        "synthetic_index": str(directory.relative_to(REPO)),
        "synthetic_generated_s": generated_s,
        "targets": {
            "index": synthetic_label,
            "hybrid_p50_ms": TARGET_P50_MS,
            "hybrid_p99_ms": TARGET_P99_MS,
            "p50_met": synthetic["p50_ms"] <= TARGET_P50_MS,
            "p99_met": synthetic["p99_ms"] <= TARGET_P99_MS,
        },
        "sites": sites,
    }
    end_load = payload["loadavg_at_end"]
    if LOADAVG and end_load:
        print(
            f"\nload average (1 min) at start {LOADAVG[0]:.2f}, at end "
            f"{end_load[0]:.2f}, on {os.cpu_count()} cores (other processes "
            "running at the same time skew the timings)"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=2) + "\n", "utf-8")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
