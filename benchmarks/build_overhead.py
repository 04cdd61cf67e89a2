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
import statistics
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from benchmarks import _corpora
from benchmarks._harness import (
    RESULTS,
    BuildFailed,
    envelope,
    read_manifest,
    sphinx_build,
    table,
    write_result,
)

DEFAULT_OUT = RESULTS / "build_overhead.json"
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


def build(srcdir: Path, outdir: Path, jobs: str) -> Run:
    """One clean HTML build of *srcdir* in a child process."""
    run = sphinx_build(srcdir, outdir, "-N", "-j", jobs)
    lines = run.stderr.splitlines()
    counts = {}
    if (outdir / "_ragcite" / "manifest.json").is_file():
        counts = read_manifest(outdir)["counts"]
    return Run(
        seconds=round(run.seconds, 3),
        peak_rss_mib=run.peak_rss_mib,
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


def summary_table(rows: list[dict[str, object]]) -> str:
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
    return table(head, body)


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
    print(summary_table(rows) if rows else "(nothing measured)")
    for corpus, reason in skipped.items():
        print(f"skipped {corpus}: {reason}")

    import sphinx

    report = envelope(
        "build_overhead",
        sphinx=sphinx.__version__,
        repeat=args.repeat,
        jobs=args.jobs,
        summary=rows,
        runs={
            r.corpus: {
                "without": [asdict(x) for x in r.runs_without],
                "with": [asdict(x) for x in r.runs_with],
            }
            for r in results
        },
        skipped=skipped,
        failed=failed,
    )
    write_result(args.out, report)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
