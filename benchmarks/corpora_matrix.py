"""Does the extension leave real projects' builds alone?

Why: an extension that adds one warning fails every project built with
``-W``, and one that raises fails the author's whole build. Every project in
``../shared/corpora`` (see ``_corpora.py``) is built from scratch twice,
without and with ``sphinx_ragcite`` in ``extensions`` (``python -m sphinx -b
html``, fresh output and doctrees), and compared:

- the exit status of both builds, and whether ``Extension error`` appears;
- the warnings the extension added, by type (``[ragcite.document]``,
  ``[myst.domains]``, ... or ``untyped``): the WARNING/ERROR lines of the
  build with it, minus those of the build without it, with the builds'
  temporary paths removed. Must be none;
- the build-time ratios, median of ``--repeat`` rounds, each round building
  without, with the extension and an empty embedding cache (*cold*), and
  with the cache the cold build filled (*warm*; fresh output and doctree
  folders: a clean build in CI with its cache restored), and whether the
  warm build wrote byte-identical ``_ragcite/`` files (the manifest, which
  records the build time, aside);
- the seconds of each stage of the cold build (``ragcite-stages.json``:
  Sphinx's reading less chunking, chunking, Sphinx's page writing, records,
  BM25, static index, links, embedding while the pages are written and
  after, loading the model, llms.txt, writing the index; the encoder's
  stages overlap the page writing), and what the encoder costs the build
  (cold less warm seconds) in tokens/s against the bare model's floor
  measured in the same run on the same texts (``embedding_floor.bare`` with
  its best setting, on samples of the passages and of the sentences);
- the passages and documents in the index and the index's bytes per passage
  (every file the manifest names but the browser answer engine's), against
  the figure of the results file this run replaces; the browser engine's
  files (model, runtime, tokenizer, ranker, passage shards: mostly a fixed
  38 MB a reader downloads only to ask with no server) are counted apart.

Targets (issue 26) print as met/NO: cold / plain <= 3.0 on requests and <=
2.0 on click and the Packaging Guide; warm / plain <= 1.2 everywhere;
encoder in the build / floor >= 0.9; bytes per passage not higher.

Run (from the repository root, after ``pip install -e ".[corpora]"``)::

    .venv/bin/python benchmarks/corpora_matrix.py [--repeat 1] [--corpus NAME ...]

Results go to ``benchmarks/results/corpora_matrix.json`` unless ``--out``.
Exits 1 when a build fails or the extension adds a warning.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import re
import shutil
import statistics
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks import _corpora
from benchmarks._harness import (
    RESULTS,
    envelope,
    read_manifest,
    read_passages,
    sphinx_build,
    table,
    write_result,
)
from sphinx_ragcite.formats.browser import BROWSER_ENGINE

DEFAULT_OUT = RESULTS / "corpora_matrix.json"
CACHE_ENV = "SPHINX_RAGCITE_CACHE_DIR"
STAGES = "ragcite-stages.json"
#: cold / plain, per corpus (issue 26); warm / plain everywhere.
COLD_TARGET = {"requests-docs": 3.0, "click-docs": 2.0, "packaging-guide": 2.0}
WARM_TARGET = 1.2
FLOOR_TARGET = 0.9
WARNING_TYPE = re.compile(r"\[([\w.-]+)\](?:\x1b\[[0-9;]*m)?\s*$")


def warning_type(line: str) -> str:
    match = WARNING_TYPE.search(line)
    return match.group(1) if match else "untyped"


def build(
    name: str, work: Path, with_ragcite: bool, cache: Path | None = None
) -> dict[str, Any]:
    """One clean build (fresh output and doctrees): status, seconds, problems."""
    root = work / ("without" if not with_ragcite else "with")
    srcdir = root / "src" / "srcdir.txt"
    if not srcdir.is_file():
        source = _corpora.prepare_corpus(name, root / "src", with_ragcite)
        srcdir.write_text(str(source), "utf-8")
    source = Path(srcdir.read_text("utf-8"))
    out = work / "out" / "html"
    doctrees = work / "out" / "doctrees"
    shutil.rmtree(work / "out", ignore_errors=True)
    env = {CACHE_ENV: str(cache)} if cache is not None else None
    run = sphinx_build(source, out, "-N", doctrees=doctrees, check=False, env=env)
    manifest = files = stages = None
    if with_ragcite and (out / "_ragcite" / "manifest.json").is_file():
        manifest = read_manifest(out)
        files = index_digest(out)
        if (doctrees / STAGES).is_file():
            stages = json.loads((doctrees / STAGES).read_text("utf-8"))
    return {
        "exit": run.returncode,
        "seconds": run.seconds,
        "extension_error": "Extension error" in run.stderr,
        "problems": _corpora.problems(run.stderr, [root, work / "out"]),
        "manifest": manifest,
        "files": files,
        "stages": stages,
        "out": out,
        "stderr_tail": run.stderr[-2000:] if run.returncode else "",
    }


def index_digest(out: Path) -> str:
    """SHA-256 over every ``_ragcite/`` file but the manifest (it has the time)."""
    digest = hashlib.sha256()
    for path in sorted((out / "_ragcite").rglob("*")):
        if path.is_file() and path.name != "manifest.json":
            digest.update(path.relative_to(out).as_posix().encode() + b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()


def encoder_work(out: Path, manifest: dict[str, Any]) -> dict[str, list[str]]:
    """The texts the cold build ran through the encoder, by pass."""
    from sphinx_ragcite.formats.bm25 import indexed_text
    from sphinx_ragcite.text import split_sentences

    info = manifest.get("embedding") or {}
    records = read_passages(out)
    work = {"passages": [indexed_text(r) for r in records], "sentences": []}
    if info.get("sentences") and info.get("sentence_pooling", "separate") == "separate":
        work["sentences"] = [
            s.text for r in records for s in split_sentences(r["text"])
        ]
    return work


@functools.cache
def _embedder(max_tokens: int):  # type: ignore[no-untyped-def]
    from sphinx_ragcite.encoder import Embedder, model_files

    return Embedder(model_files(None), max_tokens=max_tokens)


def floor_seconds(
    work: dict[str, list[str]], max_tokens: int, sample: int = 96
) -> dict[str, Any]:
    """What the bare model (``embedding_floor.bare``, its best setting) needs for
    the build's encoder work: its tokens/s on *sample* texts of each pass (best
    of three), times the tokens of that pass."""
    import random

    from benchmarks.embedding_floor import bare, session
    from sphinx_ragcite.encoder import default_model_files, default_threads

    embedder = _embedder(max_tokens)
    sess = session(
        default_model_files().model, default_threads(), "ORT_ENABLE_ALL", False
    )
    out: dict[str, Any] = {"tokens": 0, "seconds": 0.0}
    for what, texts in work.items():
        if not texts:
            continue
        tokens = sum(len(e.ids) for e in embedder.tokenizer.encode_batch(texts))
        chosen = random.Random(0).sample(texts, min(sample, len(texts)))
        bare(sess, embedder.tokenizer, chosen[:16], 8)  # warm
        seconds, sampled, _ = min(
            bare(sess, embedder.tokenizer, chosen, 8) for _ in range(3)
        )
        out[what] = {"tokens": tokens, "floor_tokens_per_s": round(sampled / seconds)}
        out["tokens"] += tokens
        out["seconds"] += tokens / (sampled / seconds)
    return out


def measure(name: str, repeat: int) -> dict[str, Any]:
    runs: dict[str, list[dict[str, Any]]] = {"plain": [], "cold": [], "warm": []}
    floor = None
    with tempfile.TemporaryDirectory(prefix=f"matrix-{name}-") as tmp:
        work = Path(tmp)
        for i in range(repeat):
            cache = work / f"cache{i}"
            for kind in ("plain", "cold", "warm"):
                with_ragcite = kind != "plain"
                run = build(name, work, with_ragcite, cache if with_ragcite else None)
                runs[kind].append(run)
                took = f"exit {run['exit']}, {run['seconds']:.1f} s"
                print(f"  {name} {kind} #{i + 1}: {took}", file=sys.stderr)
                if kind == "cold" and run["manifest"] and floor is None:
                    info = run["manifest"].get("embedding") or {}
                    if info:
                        texts = encoder_work(run["out"], run["manifest"])
                        floor = floor_seconds(texts, info["max_tokens"])
    return summarise(name, runs, floor)


def summarise(
    name: str,
    runs: dict[str, list[dict[str, Any]]],
    floor: dict[str, Any] | None,
) -> dict[str, Any]:
    without, with_ = runs["plain"][-1], runs["cold"][-1]
    added = with_["problems"] - without["problems"]
    removed = without["problems"] - with_["problems"]
    by_type = Counter()
    for line, n in added.items():
        by_type[warning_type(line)] += n
    median = {k: statistics.median(r["seconds"] for r in v) for k, v in runs.items()}
    manifest = with_["manifest"] or {}
    passages = manifest.get("counts", {}).get("passages")
    sizes = manifest.get("bytes", {})
    index_bytes = (
        sum(b for role, b in sizes.items() if role not in BROWSER_ENGINE)
        if manifest
        else None
    )
    browser_bytes = sum(b for role, b in sizes.items() if role in BROWSER_ENGINE)
    stages = with_["stages"] or {}
    # What the encoder costs the build: the cold build less the warm one (the
    # same build with every vector cached). The encoder runs while Sphinx
    # writes the pages, so this can be less than the encoder's own seconds.
    encode_s = median["cold"] - median["warm"]
    tokens = floor["tokens"] if floor else None
    build_rate = tokens / encode_s if tokens and encode_s > 0 else None
    floor_rate = tokens / floor["seconds"] if floor and floor["seconds"] else None
    thread_s = sum(
        stages.get(k, 0)
        for k in ("embed while writing pages", "embed passages", "embed sentences")
    )
    return {
        "corpus": name,
        "exit_without": [r["exit"] for r in runs["plain"]],
        "exit_with": [r["exit"] for r in runs["cold"] + runs["warm"]],
        "extension_error": any(
            r["extension_error"] for r in runs["cold"] + runs["warm"]
        ),
        "warnings_without": sum(without["problems"].values()),
        "warnings_with": sum(with_["problems"].values()),
        "added_warnings_by_type": dict(sorted(by_type.items())),
        "added_warnings": sorted(added),
        "removed_warnings": sorted(removed),
        "t_without_s": round(median["plain"], 2),
        "t_with_s": round(median["cold"], 2),
        "t_warm_s": round(median["warm"], 2),
        "all_seconds": {
            k: [round(r["seconds"], 2) for r in v] for k, v in runs.items()
        },
        "ratio": round(median["cold"] / median["plain"], 2),
        "ratio_warm": round(median["warm"] / median["plain"], 2),
        "warm_identical": all(
            w["files"] is not None and w["files"] == c["files"]
            for c, w in zip(runs["cold"], runs["warm"], strict=True)
        ),
        "warm_embedded": [
            ((w["manifest"] or {}).get("embedding") or {}).get("embedded")
            for w in runs["warm"]
        ],
        "stages_cold_s": stages,
        "stages_warm_s": runs["warm"][-1]["stages"],
        "encoder_tokens": tokens,
        "encoder_tokens_per_s": round(build_rate) if build_rate else None,
        "encoder_stage_seconds": round(thread_s, 2),
        "floor_tokens_per_s": round(floor_rate) if floor_rate else None,
        "floor": floor,
        "encoder_vs_floor": (
            round(build_rate / floor_rate, 2) if build_rate and floor_rate else None
        ),
        "documents": manifest.get("counts", {}).get("documents"),
        "passages": passages,
        "index_bytes": index_bytes,
        "index_bytes_per_passage": (
            round(index_bytes / passages) if passages and index_bytes else None
        ),
        "browser_bytes": browser_bytes,
        "embedding": manifest.get("embedding"),
        "stderr_tail": with_["stderr_tail"] or without["stderr_tail"],
    }


def targets(row: dict[str, Any], bytes_before: int | None) -> list[dict[str, Any]]:
    """The issue-26 targets for one corpus, each with its figure and met."""
    out = []
    if row["corpus"] in COLD_TARGET:
        bound = COLD_TARGET[row["corpus"]]
        out.append(
            _target(f"cold / plain <= {bound}", row["ratio"], row["ratio"] <= bound)
        )
    out.append(
        _target(
            f"warm / plain <= {WARM_TARGET}",
            row["ratio_warm"],
            row["ratio_warm"] <= WARM_TARGET,
        )
    )
    out.append(
        _target(
            "warm build byte-identical", row["warm_identical"], row["warm_identical"]
        )
    )
    ratio = row["encoder_vs_floor"]
    if ratio is not None:
        out.append(
            _target(f"encoder / floor >= {FLOOR_TARGET}", ratio, ratio >= FLOOR_TARGET)
        )
    now = row["index_bytes_per_passage"]
    if bytes_before and now:
        out.append(
            _target(
                f"bytes/passage <= {bytes_before} (before)", now, now <= bytes_before
            )
        )
    return out


def _target(name: str, figure: object, met: bool) -> dict[str, Any]:
    return {"target": name, "figure": str(figure), "met": bool(met)}


def _previous_bytes(path: Path) -> dict[str, int]:
    """Bytes per passage in the results this run replaces (the "before")."""
    try:
        rows = json.loads(path.read_text("utf-8"))["rows"]
    except (OSError, ValueError, KeyError):
        return {}
    return {
        r["corpus"]: r["index_bytes_per_passage"]
        for r in rows
        if r.get("index_bytes_per_passage")
    }


def ok(row: dict[str, Any]) -> bool:
    return (
        all(code == 0 for code in row["exit_without"] + row["exit_with"])
        and not row["extension_error"]
        and not row["added_warnings"]
        and row["manifest_ok"]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", nargs="*", default=list(_corpora.CORPORA))
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)

    rows, skipped = [], {}
    for name in args.corpus:
        if _corpora.corpus_path(name) is None:
            skipped[name] = f"not found in {_corpora.corpora_dir()}"
        elif missing := _corpora.missing_deps(name):
            skipped[name] = "missing modules: " + ", ".join(missing)
        else:
            row = measure(name, args.repeat)
            row["manifest_ok"] = row["passages"] is not None
            rows.append(row)
    for name, why in skipped.items():
        print(f"skipped {name}: {why}", file=sys.stderr)

    previous = _previous_bytes(args.out)
    for row in rows:
        row["targets"] = targets(row, previous.get(row["corpus"]))
    head = ["corpus", "exit w/o", "exit with", "warnings w/o", "added by type"]
    head += ["plain s", "cold s", "warm s", "cold/plain", "warm/plain", "warm same"]
    head += [
        "enc tok/s",
        "floor tok/s",
        "enc/floor",
        "passages",
        "B/passage",
        "browser MB",
    ]
    body = [
        [
            r["corpus"],
            ",".join(map(str, r["exit_without"])),
            ",".join(map(str, r["exit_with"])),
            str(r["warnings_without"]),
            ", ".join(f"{k}: {v}" for k, v in r["added_warnings_by_type"].items())
            or "none",
            f"{r['t_without_s']:.1f}",
            f"{r['t_with_s']:.1f}",
            f"{r['t_warm_s']:.1f}",
            f"{r['ratio']:.2f}",
            f"{r['ratio_warm']:.2f}",
            "yes" if r["warm_identical"] else "NO",
            str(r["encoder_tokens_per_s"]),
            str(r["floor_tokens_per_s"]),
            str(r["encoder_vs_floor"]),
            str(r["passages"]),
            str(r["index_bytes_per_passage"]),
            f"{r['browser_bytes'] / 1e6:.1f}",
        ]
        for r in rows
    ]
    print(table(head, body))
    stage_names = sorted({k for r in rows for k in (r["stages_cold_s"] or {})})
    print()
    print(
        table(
            ["cold build, seconds", *stage_names],
            [
                [
                    r["corpus"],
                    *(
                        f"{(r['stages_cold_s'] or {}).get(k, 0):.2f}"
                        for k in stage_names
                    ),
                ]
                for r in rows
            ],
        )
    )
    print()
    print(
        table(
            ["corpus", "target", "figure", "met"],
            [
                [r["corpus"], t["target"], t["figure"], "met" if t["met"] else "NO"]
                for r in rows
                for t in r["targets"]
            ],
        )
    )
    failed = [r["corpus"] for r in rows if not ok(r)]
    for row in rows:
        for line in row["added_warnings"]:
            print(f"added ({row['corpus']}): {line}")
        if row["stderr_tail"]:
            print(f"failed build ({row['corpus']}):\n{row['stderr_tail']}")
    import sphinx

    head = envelope("corpora_matrix", sphinx=sphinx.__version__)
    result = {
        **head,
        "script": "benchmarks/corpora_matrix.py",
        "cpus": head["cpu_count"],
        "repeat": args.repeat,
        "rows": rows,
        "skipped": skipped,
        "failed": failed,
    }
    write_result(args.out, result)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
