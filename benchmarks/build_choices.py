"""Which build settings pay for themselves: answer quality per second of build.

Why (issue 26): the encoder is nearly all of a build's cost, and two settings
decide how much it runs: ``ragcite_sentence_pooling`` (sentences embedded in
their own pass, or pooled from the passage pass at no cost) and
``ragcite_embedding_max_tokens`` (all-MiniLM-L6-v2 was trained on 128 word
pieces; we truncate at 256). Each *variant* is one set of ``-D`` options:

- quality: ``answer_quality.py --no-near-topic --generators extractive`` on
  every dev set with the variant (``RAGCITE_BENCH_CONF``: its builds live in
  ``results/.sites+<options>``), and ``corpora_retrieval.py`` (click) and
  ``retrieval_quality.py`` (example book) for retrieval alone; a variant's
  JSON is reused when present (``--fresh`` runs them again);
- cost: a clean build of each corpus with an empty embedding cache per
  variant, interleaved within a round (``--rounds``), so the ratios to the
  default come from the same minutes of the same machine.

A variant is acceptable when no dev-set figure (supported, precision,
coverage, gold shown) is lower than the default's by more than
``--tolerance`` and unanswerable-answered is not higher by more than it.

    .venv/bin/python benchmarks/build_choices.py [--rounds 1] [--fresh]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks import _corpora
from benchmarks._harness import RESULTS, envelope, sphinx_build, table, write_result

OUT = RESULTS / "build_choices.json"
FOLDER = RESULTS / "build_variants"
#: name -> -D options; the first is the baseline (today's defaults)
VARIANTS: dict[str, list[str]] = {
    "default": [],
    "pooled": ["ragcite_sentence_pooling=passage"],
    "mt128": ["ragcite_embedding_max_tokens=128"],
    "mt192": ["ragcite_embedding_max_tokens=192"],
}
#: answer_quality figures compared, and whether higher is better
FIGURES = {
    "answered_with_supporting_citation": True,
    "answer_precision": True,
    "coverage": True,
    "gold_shown": True,
    "unanswerable_answered": False,
}
SHORT = {
    "answered_with_supporting_citation": "supported",
    "answer_precision": "precision",
    "coverage": "coverage",
    "gold_shown": "gold shown",
    "unanswerable_answered": "U answered",
}
CORPORA = ("click-docs", "requests-docs", "packaging-guide")


def quality(name: str, options: list[str], fresh: bool) -> dict[str, Any]:
    """The variant's answer_quality and retrieval JSONs (run when missing)."""
    env = {**os.environ, "RAGCITE_BENCH_CONF": " ".join(options)}
    runs = {
        "answers": [
            "answer_quality.py", "--no-near-topic", "--generators", "extractive",
        ],
        "click_retrieval": ["corpora_retrieval.py"],
        "example_retrieval": ["retrieval_quality.py"],
    }  # fmt: skip
    out: dict[str, Any] = {}
    for what, command in runs.items():
        path = FOLDER / f"{'aq' if what == 'answers' else what}_{name}.json"
        if fresh or not path.is_file():
            print(f"{name}: {command[0]} ...", file=sys.stderr, flush=True)
            subprocess.run(
                [sys.executable, str(Path(__file__).parent / command[0]), *command[1:],
                 "--out", str(path)],
                env=env, check=True, stdout=subprocess.DEVNULL,
            )  # fmt: skip
        out[what] = json.loads(path.read_text("utf-8"))
    return out


def cold_builds(rounds: int) -> dict[str, dict[str, list[float]]]:
    """Seconds of a clean build with an empty cache: corpus -> variant -> runs."""
    seconds: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory(prefix="build-choices-") as tmp:
        work = Path(tmp)
        for corpus in CORPORA:
            if _corpora.corpus_path(corpus) is None or _corpora.missing_deps(corpus):
                continue
            source = _corpora.prepare_corpus(corpus, work / corpus / "src", True)
            seconds[corpus] = {name: [] for name in VARIANTS}
            for r in range(rounds):
                for name, options in VARIANTS.items():
                    out = work / corpus / f"{name}{r}"
                    defines = [o for v in options for o in ("-D", v)]
                    build = sphinx_build(
                        source, out / "html", "-N", *defines,
                        doctrees=out / "doctrees",
                        env={"SPHINX_RAGCITE_CACHE_DIR": str(out / "cache")},
                    )  # fmt: skip
                    seconds[corpus][name].append(build.seconds)
                    print(
                        f"  {corpus} {name} #{r + 1}: {build.seconds:.1f} s",
                        file=sys.stderr,
                        flush=True,
                    )
    return seconds


def compare(
    results: dict[str, dict[str, Any]], tolerance: float
) -> tuple[list[list[str]], dict[str, bool]]:
    """Rows variant x set of the figures, and whether each variant holds up."""
    base = results["default"]["answers"]["sets"]
    rows, ok = [], {}
    for name, result in results.items():
        ok[name] = True
        for dev_set, entry in result["answers"]["sets"].items():
            figures = entry["generators"]["extractive"]
            before = base[dev_set]["generators"]["extractive"]
            cells = []
            for key, higher in FIGURES.items():
                value, was = figures.get(key), before.get(key)
                if value is None or was is None:
                    cells.append("-")
                    continue
                worse = (was - value) if higher else (value - was)
                if worse > tolerance:
                    ok[name] = False
                mark = " (lower)" if worse > tolerance else ""
                cells.append(f"{value:.3f}{mark}")
            rows.append([name, dev_set, *cells])
    return rows, ok


def retrieval_rows(results: dict[str, dict[str, Any]]) -> list[list[str]]:
    rows = []
    for name, result in results.items():
        for what in ("click_retrieval", "example_retrieval"):
            data = result[what]
            hybrid = _hybrid(data)
            cells = [
                f"{hybrid.get(k, 0):.3f}" for k in ("recall@1", "recall@5", "mrr@10")
            ]
            rows.append([name, what.split("_")[0], *cells])
    return rows


def _hybrid(data: dict[str, Any]) -> dict[str, float]:
    """Hybrid retrieval (reciprocal rank fusion) figures of a retrieval result."""
    for holder in (data.get("table", {}), data.get("results", {})):
        if isinstance(holder.get("hybrid (rrf)"), dict):
            return holder["hybrid (rrf)"]
    return {}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--fresh", action="store_true")
    parser.add_argument("--tolerance", type=float, default=0.005)
    parser.add_argument("--no-builds", action="store_true", help="quality only")
    args = parser.parse_args(argv)
    FOLDER.mkdir(parents=True, exist_ok=True)

    results = {name: quality(name, opts, args.fresh) for name, opts in VARIANTS.items()}
    rows, ok = compare(results, args.tolerance)
    print(table(["variant", "set", *SHORT.values()], rows))
    print()
    print(
        table(
            ["variant", "site", "recall@1", "recall@5", "MRR"], retrieval_rows(results)
        )
    )
    seconds = {} if args.no_builds else cold_builds(args.rounds)
    cost_rows = []
    for corpus, by_variant in seconds.items():
        base = statistics.median(by_variant["default"])
        for name, runs in by_variant.items():
            median = statistics.median(runs)
            cost_rows.append([corpus, name, f"{median:.1f}", f"{median / base:.2f}"])
    if cost_rows:
        print()
        print(table(["corpus", "variant", "cold build s", "/ default"], cost_rows))
    print()
    for name, holds in ok.items():
        print(f"{name}: quality not lower than default on every dev set: "
              f"{'met' if holds else 'NO'}")  # fmt: skip
    payload = envelope(
        "build_choices",
        variants=VARIANTS,
        tolerance=args.tolerance,
        quality_holds=ok,
        figures={
            name: {
                dev_set: {k: entry["generators"]["extractive"].get(k) for k in FIGURES}
                for dev_set, entry in result["answers"]["sets"].items()
            }
            for name, result in results.items()
        },
        retrieval={
            name: {
                w: _hybrid(result[w]) for w in ("click_retrieval", "example_retrieval")
            }
            for name, result in results.items()
        },
        cold_build_seconds=seconds,
    )
    write_result(OUT, payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
