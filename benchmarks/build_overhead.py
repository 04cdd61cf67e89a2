"""How much slower (and noisier) does a Sphinx build get with sphinx_ragcite?

Why: the extension runs on every build of a user's documentation, so its cost
has to stay small next to Sphinx's own work, and it must not add warnings.
This script measures both on the example book and on real third-party
documentation (the corpora in ``../shared/corpora``, see ``_corpora.py``).

For each corpus it copies the sources twice, once with ``sphinx_ragcite`` in
``extensions`` and once without, then runs ``python -m sphinx -b html -q``
from scratch (new output directory, no cached doctrees) ``--repeat`` times
each, alternating the two variants. It reports the median wall time, the peak
RSS of the Sphinx process (Unix only), the number of WARNING lines on stderr,
and the passage count from ``_ragcite/manifest.json``.

Run (from the repository root, after ``pip install -e ".[corpora]"``)::

    .venv/bin/python benchmarks/build_overhead.py --repeat 3
    .venv/bin/python benchmarks/build_overhead.py --corpus click-docs --jobs 4

Results go to ``benchmarks/results/build_overhead.json`` unless ``--out``.
Missing corpora, or corpora whose build dependencies are not installed, are
skipped with a note; that is not an error.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _corpora

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "results" / "build_overhead.json"
EXAMPLE = "example_book"
ALL = (EXAMPLE, *_corpora.CORPORA)


@dataclass
class Run:
    seconds: float
    peak_rss_mib: float | None
    warnings: int
    errors: int
    passages: int | None
    documents: int | None


@dataclass
class Result:
    corpus: str
    runs_without: list[Run] = field(default_factory=list)
    runs_with: list[Run] = field(default_factory=list)

    def summary(self) -> dict[str, object]:
        def med(runs: list[Run], attr: str) -> float | None:
            values = [getattr(r, attr) for r in runs if getattr(r, attr) is not None]
            return statistics.median(values) if values else None

        t_without = med(self.runs_without, "seconds")
        t_with = med(self.runs_with, "seconds")
        last = self.runs_with[-1]
        return {
            "corpus": self.corpus,
            "documents": last.documents,
            "passages": last.passages,
            "t_without_s": round(t_without, 3) if t_without else None,
            "t_with_s": round(t_with, 3) if t_with else None,
            "ratio": round(t_with / t_without, 3) if t_with and t_without else None,
            "rss_without_mib": med(self.runs_without, "peak_rss_mib"),
            "rss_with_mib": med(self.runs_with, "peak_rss_mib"),
            "warnings_without": self.runs_without[-1].warnings,
            "warnings_with": last.warnings,
            "errors_without": self.runs_without[-1].errors,
            "errors_with": last.errors,
        }


class BuildFailed(RuntimeError):
    pass


def _wait(proc: subprocess.Popen[bytes]) -> tuple[int, float | None]:
    """Wait for *proc*; return its exit code and its own peak RSS in MiB."""
    if not hasattr(os, "wait4"):  # Windows: no per-child rusage
        return proc.wait(), None
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = code = os.waitstatus_to_exitcode(status)
    # ru_maxrss is KiB on Linux, bytes on macOS.
    scale = 1024 * 1024 if sys.platform == "darwin" else 1024
    return code, round(usage.ru_maxrss / scale, 1)


def build(srcdir: Path, outdir: Path, jobs: str) -> Run:
    """One clean HTML build of *srcdir* in a child process."""
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-N", "-j", jobs]
    cmd += [str(srcdir), str(outdir)]
    log = outdir.parent / (outdir.name + ".stderr")
    with log.open("wb") as stderr:
        start = time.perf_counter()
        proc = subprocess.Popen(
            cmd, cwd=srcdir.parent, stdout=subprocess.DEVNULL, stderr=stderr
        )
        code, rss = _wait(proc)
        seconds = time.perf_counter() - start
    text = log.read_text("utf-8", errors="replace")
    if code != 0:
        raise BuildFailed(f"{' '.join(cmd)} exited {code}:\n{text[-2000:]}")
    lines = text.splitlines()
    manifest_path = outdir / "_ragcite" / "manifest.json"
    counts = {}
    if manifest_path.is_file():
        counts = json.loads(manifest_path.read_text("utf-8"))["counts"]
    return Run(
        seconds=round(seconds, 3),
        peak_rss_mib=rss,
        warnings=sum("WARNING" in line for line in lines),
        errors=sum("ERROR" in line or "CRITICAL" in line for line in lines),
        passages=counts.get("passages"),
        documents=counts.get("documents"),
    )


def prepare(corpus: str, dest: Path, with_ragcite: bool) -> Path:
    if corpus == EXAMPLE:
        return _corpora.prepare_example_book(dest, with_ragcite)
    return _corpora.prepare_corpus(corpus, dest, with_ragcite)


def skip_reason(corpus: str) -> str | None:
    if corpus == EXAMPLE:
        return None if _corpora.EXAMPLE_BOOK.is_dir() else "example_book missing"
    if _corpora.corpus_path(corpus) is None:
        return f"not found (looked for shared/corpora; set {_corpora.ENV_VAR})"
    missing = _corpora.missing_deps(corpus)
    if missing:
        return 'missing build deps: {} (pip install -e ".[corpora]")'.format(
            ", ".join(missing)
        )
    return None


def measure(corpus: str, repeat: int, jobs: str, work: Path) -> Result:
    srcs = {
        flag: prepare(corpus, work / ("with" if flag else "without"), flag)
        for flag in (False, True)
    }
    result = Result(corpus)
    for i in range(repeat):
        for flag in (False, True):  # alternate, so drift hits both alike
            out = work / f"out-{'with' if flag else 'without'}-{i}"
            run = build(srcs[flag], out, jobs)
            (result.runs_with if flag else result.runs_without).append(run)
            label = "with   " if flag else "without"
            print(f"  {corpus} {label} #{i + 1}: {run.seconds:.2f}s", file=sys.stderr)
    return result


def table(rows: list[dict[str, object]]) -> str:
    head = ["corpus", "docs", "passages", "t_without", "t_with", "ratio",
            "rss w/o", "rss with", "warn w/o", "warn with"]  # fmt: skip

    def cell(value: object, fmt: str = "{}") -> str:
        return "-" if value is None else fmt.format(value)

    body = [
        [
            str(r["corpus"]),
            cell(r["documents"]),
            cell(r["passages"]),
            cell(r["t_without_s"], "{:.2f}s"),
            cell(r["t_with_s"], "{:.2f}s"),
            cell(r["ratio"], "{:.2f}x"),
            cell(r["rss_without_mib"], "{:.0f}M"),
            cell(r["rss_with_mib"], "{:.0f}M"),
            cell(r["warnings_without"]),
            cell(r["warnings_with"]),
        ]
        for r in rows
    ]
    widths = [max(len(row[i]) for row in [head, *body]) for i in range(len(head))]

    def fmt(row: list[str]) -> str:
        return "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        )

    return "\n".join([fmt(head), fmt(["-" * w for w in widths]), *map(fmt, body)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="builds per variant")
    parser.add_argument(
        "--corpus",
        action="append",
        choices=ALL,
        help="corpus to measure (repeatable; default: all available)",
    )
    parser.add_argument("--jobs", default="1", help="sphinx -j value (default 1)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON output")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")

    wanted = args.corpus or list(ALL)
    skipped = {c: r for c in wanted if (r := skip_reason(c)) is not None}
    results: list[Result] = []
    failed: dict[str, str] = {}
    for corpus in wanted:
        if corpus in skipped:
            continue
        with tempfile.TemporaryDirectory(prefix=f"ragcite-bench-{corpus}-") as tmp:
            try:
                results.append(measure(corpus, args.repeat, args.jobs, Path(tmp)))
            except BuildFailed as exc:
                failed[corpus] = str(exc)
                print(f"FAILED {corpus}: {exc}", file=sys.stderr)

    rows = [r.summary() for r in results]
    print(table(rows) if rows else "(nothing measured)")
    for corpus, reason in skipped.items():
        print(f"skipped {corpus}: {reason}")

    import sphinx

    report = {
        "benchmark": "build_overhead",
        "repeat": args.repeat,
        "jobs": args.jobs,
        "python": platform.python_version(),
        "sphinx": sphinx.__version__,
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "summary": rows,
        "runs": {
            r.corpus: {
                "without": [asdict(x) for x in r.runs_without],
                "with": [asdict(x) for x in r.runs_with],
            }
            for r in results
        },
        "skipped": skipped,
        "failed": failed,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", "utf-8")
    print(f"wrote {args.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
