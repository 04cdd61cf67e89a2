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
- the build-time ratio (with / without, median of ``--repeat`` runs each,
  alternating), the passages and documents in the index, and the index's
  bytes per passage (every file the manifest names).

Run (from the repository root, after ``pip install -e ".[corpora]"``)::

    .venv/bin/python benchmarks/corpora_matrix.py [--repeat 1] [--corpus NAME ...]

Results go to ``benchmarks/results/corpora_matrix.json`` unless ``--out``.
Exits 1 when a build fails or the extension adds a warning.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import _corpora
from _harness import (
    RESULTS,
    envelope,
    read_manifest,
    sphinx_build,
    table,
    write_result,
)

DEFAULT_OUT = RESULTS / "corpora_matrix.json"
WARNING_TYPE = re.compile(r"\[([\w.-]+)\](?:\x1b\[[0-9;]*m)?\s*$")


def warning_type(line: str) -> str:
    match = WARNING_TYPE.search(line)
    return match.group(1) if match else "untyped"


def build(name: str, work: Path, with_ragcite: bool) -> dict[str, Any]:
    """One clean build: exit status, seconds, problems and the manifest."""
    root = work / ("with" if with_ragcite else "without")
    srcdir = _corpora.prepare_corpus(name, root, with_ragcite)
    out = root / "html"
    run = sphinx_build(srcdir, out, "-N", doctrees=root / "doctrees", check=False)
    manifest = None
    if with_ragcite and (out / "_ragcite" / "manifest.json").is_file():
        manifest = read_manifest(out)
    return {
        "exit": run.returncode,
        "seconds": run.seconds,
        "extension_error": "Extension error" in run.stderr,
        "problems": _corpora.problems(run.stderr, [root]),
        "manifest": manifest,
        "stderr_tail": run.stderr[-2000:] if run.returncode else "",
    }


def measure(name: str, repeat: int) -> dict[str, Any]:
    runs: dict[bool, list[dict[str, Any]]] = {False: [], True: []}
    with tempfile.TemporaryDirectory(prefix=f"matrix-{name}-") as tmp:
        for i in range(repeat):
            for with_ragcite in (False, True):
                run = build(name, Path(tmp) / f"run{i}", with_ragcite)
                runs[with_ragcite].append(run)
                print(
                    f"  {name} {'with' if with_ragcite else 'without'} #{i + 1}: "
                    f"exit {run['exit']}, {run['seconds']:.1f} s",
                    file=sys.stderr,
                )
    without, with_ = runs[False][-1], runs[True][-1]
    added = with_["problems"] - without["problems"]
    removed = without["problems"] - with_["problems"]
    by_type = Counter()
    for line, n in added.items():
        by_type[warning_type(line)] += n
    t_without = statistics.median(r["seconds"] for r in runs[False])
    t_with = statistics.median(r["seconds"] for r in runs[True])
    manifest = with_["manifest"] or {}
    passages = manifest.get("counts", {}).get("passages")
    index_bytes = sum(manifest.get("bytes", {}).values()) if manifest else None
    return {
        "corpus": name,
        "exit_without": [r["exit"] for r in runs[False]],
        "exit_with": [r["exit"] for r in runs[True]],
        "extension_error": any(r["extension_error"] for r in runs[True]),
        "warnings_without": sum(without["problems"].values()),
        "warnings_with": sum(with_["problems"].values()),
        "added_warnings_by_type": dict(sorted(by_type.items())),
        "added_warnings": sorted(added),
        "removed_warnings": sorted(removed),
        "t_without_s": round(t_without, 2),
        "t_with_s": round(t_with, 2),
        "ratio": round(t_with / t_without, 2),
        "documents": manifest.get("counts", {}).get("documents"),
        "passages": passages,
        "index_bytes": index_bytes,
        "index_bytes_per_passage": (
            round(index_bytes / passages) if passages and index_bytes else None
        ),
        "embedding": (manifest.get("embedding") or {}).get("model"),
        "stderr_tail": with_["stderr_tail"] or without["stderr_tail"],
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

    head = ["corpus", "exit w/o", "exit with", "warnings w/o", "added by type"]
    head += ["t w/o s", "t with s", "ratio", "docs", "passages", "B/passage"]
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
            f"{r['ratio']:.2f}",
            str(r["documents"]),
            str(r["passages"]),
            str(r["index_bytes_per_passage"]),
        ]
        for r in rows
    ]
    print(table(head, body))
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
