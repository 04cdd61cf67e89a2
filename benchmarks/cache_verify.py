"""What checking the embedding cache costs, and how closely honest entries agree.

Why: a cache folder can be shared (a CI cache restored from another branch,
a folder other users write), and a shard that reads well may hold altered
vectors (issue 33). The build checks a sample of cached vectors against the
encoder (``ragcite_cache_verify``); this says what that costs and where
the agreement threshold sits.

For the example book and each corpus named (default: requests), fresh output
and doctree folders every build, ``--repeat`` rounds, variants alternating:

- *cold*: an empty cache, ``ragcite_cache_verify`` 0 against ``"auto"``
  (auto checks nothing: nothing is cached yet);
- *partly warm*: the cold build's cache less one of its 16 shards, so the
  encoder runs for about a sixteenth of the texts; 0 against ``"auto"``
  (16 texts checked);
- *warm*: the whole cache; ``"auto"`` (no check, no encoder) against 16
  (the encoder loads only for the check).

Each variant: the median build seconds, and the stages the check adds
(``load model``, ``check the cache`` from ``ragcite-stages.json``).

Then, in one process, what the check itself costs, less exposed to other
processes' load than whole builds (minimum and median of 7): loading the
encoder, and encoding and comparing one random sample of 16 cached texts.

And the agreement: every cached text encoded again in random groups of 16,
as the check does, and its cosine with the cached int8 vector (lowest, 0.1th
percentile, median), against each text's nearest other cached vector (a
vector swapped between two texts that close would pass the check). The
same again with the encoder run differently (one thread, no graph
optimisation: other kernels and summation orders, as another CPU may run),
for the drift an honest cache filled on another machine may show.

Run (from the repository root, after ``pip install -e ".[corpora]"``)::

    .venv/bin/python benchmarks/cache_verify.py [--repeat 2] [--corpus NAME ...]

``--repeat 0`` skips the timed builds (one build per corpus, then the rest).

Results go to ``benchmarks/results/cache_verify.json`` unless ``--out``.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import tempfile
import time
from pathlib import Path
from statistics import median
from typing import Any

import numpy as np

from benchmarks import _corpora
from benchmarks._harness import (
    RESULTS,
    envelope,
    read_passages,
    sphinx_build,
    table,
    write_result,
)

DEFAULT_OUT = RESULTS / "cache_verify.json"
SAMPLE = 16
#: in-process timings: the minimum and median of this many
ROUNDS = 7


def build(src: Path, work: Path, name: str, cache: Path, verify: str) -> dict[str, Any]:
    """One clean build with *cache* and ``ragcite_cache_verify`` *verify*."""
    out, doctrees = work / name / "html", work / name / "doctrees"
    done = sphinx_build(
        src,
        out,
        "-D",
        f"ragcite_cache_dir={cache}",
        "-D",
        f"ragcite_cache_verify={verify}",
        doctrees=doctrees,
    )
    stages = json.loads((doctrees / "ragcite-stages.json").read_text("utf-8"))
    manifest = json.loads((out / "_ragcite" / "manifest.json").read_text("utf-8"))
    shutil.rmtree(work / name)
    return {
        "seconds": round(done.seconds, 2),
        "load_model_s": round(stages.get("load model", 0.0), 3),
        "check_s": round(stages.get("check the cache", 0.0), 3),
        "embedded": manifest["embedding"]["embedded"],
        "ragcite_warnings": done.stderr.count("[ragcite"),
    }


def fresh_copy(cache: Path, target: Path, *, drop_one: bool) -> Path:
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(cache, target)
    if drop_one:
        sorted(target.glob("v*-*/*.npz"))[0].unlink()
    return target


def agreement(site: Path, cache: Path, *, other_kernels: bool) -> dict[str, Any]:
    """Every cached text encoded again, as the check does, against its entry;
    without *other_kernels*, also what loading the encoder and one check of
    16 texts cost, in this process."""
    from sphinx_ragcite.encoder import (
        DEFAULT_MAX_TOKENS,
        Embedder,
        cache_key,
        model_files,
    )
    from sphinx_ragcite.extension.cache import EmbeddingCache
    from sphinx_ragcite.extension.config import RagciteConfig
    from sphinx_ragcite.extension.embedding import AGREEMENT, Work, _encode_again

    config = RagciteConfig()
    work = Work.of(config, read_passages(site))  # type: ignore[arg-type]
    files = model_files(None)  # the example book's: English, MiniLM
    max_tokens = config.embedding_max_tokens or DEFAULT_MAX_TOKENS
    stored = EmbeddingCache(cache, cache_key(files.model_id, max_tokens), None, 1 << 40)
    stored.load(work.keys + work.sentence_keys)
    everything = set(stored.rows)
    loads = []
    for _ in range(1 if other_kernels else ROUNDS):
        started = time.perf_counter()
        embedder = Embedder(files, max_tokens=max_tokens)
        loads.append(time.perf_counter() - started)
    if other_kernels:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.graph_optimization_level = (
            onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
        )
        embedder.session = onnxruntime.InferenceSession(
            str(files.model), options, providers=["CPUExecutionProvider"]
        )
    picks = [(0, i) for i in range(len(work.keys))]
    picks += [(1, j) for j in range(len(work.sentence_keys))]

    def again(group: list[tuple[int, int]]) -> tuple[list[bytes], np.ndarray]:
        passages = sorted(i for kind, i in group if kind == 0)
        sentences = sorted(j for kind, j in group if kind == 1)
        return _encode_again(embedder, work, passages, sentences, everything)

    checks = []
    for n in range(0 if other_kernels else ROUNDS):
        group = random.Random(n).sample(picks, SAMPLE)
        started = time.perf_counter()
        keys, fresh = again(group)
        (stored.unit_vectors(keys) * fresh).sum(axis=1)
        checks.append(time.perf_counter() - started)
    random.Random(0).shuffle(picks)
    keys = []
    parts = []
    for start in range(0, len(picks), SAMPLE):
        k, f = again(picks[start : start + SAMPLE])
        keys += k
        parts.append(f)
    # one row per distinct text (a sentence may repeat)
    first = {key: n for n, key in reversed(list(enumerate(keys)))}
    rows = sorted(first.values())
    vectors = np.concatenate(parts)[rows]
    cached = stored.unit_vectors([keys[n] for n in rows])
    own = (vectors * cached).sum(axis=1)
    others = vectors @ cached.T
    np.fill_diagonal(others, -1.0)
    nearest = others.max(axis=1)
    figures: dict[str, Any] = {
        "texts": len(rows),
        "own_lowest": round(float(own.min()), 6),
        "own_p0_1": round(float(np.percentile(own, 0.1)), 6),
        "own_median": round(float(np.median(own)), 6),
        "below_threshold": int((own < AGREEMENT).sum()),
        "nearest_other_median": round(float(np.median(nearest)), 4),
        "nearest_other_highest": round(float(nearest.max()), 4),
        "nearest_other_at_or_above_threshold": int((nearest >= AGREEMENT).sum()),
        "threshold": AGREEMENT,
    }
    if checks:
        figures["load_model_s"] = [round(min(loads), 3), round(median(loads), 3)]
        figures["check_16_s"] = [round(min(checks), 3), round(median(checks), 3)]
    return figures


def measure(name: str, src: Path, work: Path, repeat: int) -> dict[str, Any]:
    """*repeat* rounds of timed builds, then the agreement on the cache."""
    cache = work / "cache"
    runs: dict[str, list[dict[str, Any]]] = {}

    def run(variant: str, verify: str, cache_dir: Path) -> None:
        result = build(src, work, variant, cache_dir, verify)
        runs.setdefault(variant, []).append(result)
        print(f"  {name} {variant}: {result}", flush=True)

    for round_ in range(repeat):
        for variant, verify in (("cold, 0", "0"), ("cold, auto", "auto")):
            target = work / f"cold-{verify}"
            if target.exists():
                shutil.rmtree(target)
            run(variant, verify, target)
            if round_ == 0 and verify == "auto":
                shutil.copytree(target, cache)
        for variant, verify, drop in (
            ("partly warm, 0", "0", True),
            ("partly warm, auto", "auto", True),
            ("warm, auto", "auto", False),
            (f"warm, {SAMPLE}", str(SAMPLE), False),
        ):
            run(variant, verify, fresh_copy(cache, work / "copy", drop_one=drop))
    site_dir = work / "site"
    sphinx_build(src, site_dir / "html", "-D", f"ragcite_cache_dir={cache}",
                 doctrees=site_dir / "doctrees")  # fmt: skip
    agree = agreement(site_dir / "html", cache, other_kernels=False)
    print(f"  {name} agreement: {agree}", flush=True)
    other = agreement(site_dir / "html", cache, other_kernels=True)
    print(f"  {name} agreement, other kernels: {other}", flush=True)
    summary = {
        variant: {
            "seconds_median": round(median(r["seconds"] for r in rs), 2),
            "load_model_s_median": round(median(r["load_model_s"] for r in rs), 3),
            "check_s_median": round(median(r["check_s"] for r in rs), 3),
            "embedded": rs[-1]["embedded"],
            "ragcite_warnings": max(r["ragcite_warnings"] for r in rs),
        }
        for variant, rs in runs.items()
    }
    return {
        "corpus": name,
        "variants": summary,
        "runs": runs,
        "agreement": agree,
        "agreement_other_kernels": other,
    }


def print_tables(results: list[dict[str, Any]]) -> None:
    body = [
        [
            r["corpus"],
            variant,
            f"{figures['seconds_median']:.2f}",
            f"{figures['load_model_s_median']:.2f}",
            f"{figures['check_s_median']:.2f}",
            str(figures["embedded"]),
        ]
        for r in results
        for variant, figures in r["variants"].items()
    ]
    head = ["corpus", "variant", "build s", "load model s", "check s", "embedded"]
    if body:
        print("\n" + table(head, body))
    head = ["corpus", "texts", "own lowest", "own p0.1", "nearest other median",
            "nearest other highest", "others >= threshold"]  # fmt: skip
    body = [
        [
            r["corpus"] + label,
            str(a["texts"]),
            f"{a['own_lowest']:.6f}",
            f"{a['own_p0_1']:.6f}",
            f"{a['nearest_other_median']:.4f}",
            f"{a['nearest_other_highest']:.4f}",
            str(a["nearest_other_at_or_above_threshold"]),
        ]
        for r in results
        for label, a in [
            ("", r["agreement"]),
            (", other kernels", r["agreement_other_kernels"]),
        ]
    ]
    print("\n" + table(head, body))
    head = ["corpus", "load model s (min / median)", "check of 16 s (min / median)"]
    body = [
        [
            r["corpus"],
            " / ".join(map(str, r["agreement"]["load_model_s"])),
            " / ".join(map(str, r["agreement"]["check_16_s"])),
        ]
        for r in results
    ]
    print("\n" + table(head, body))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--corpus", action="append", default=None)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    names = ["example_book", *(args.corpus or ["requests-docs"])]
    results = []
    with tempfile.TemporaryDirectory(prefix="cache-verify-") as tmp:
        for name in names:
            work = Path(tmp) / name
            if name == "example_book":
                src = _corpora.prepare_example_book(work / "src", with_ragcite=True)
            else:
                src = _corpora.prepare_corpus(name, work / "src", with_ragcite=True)
            results.append(measure(name, src, work, args.repeat))
    print_tables(results)
    write_result(
        args.out, {**envelope("cache_verify", repeat=args.repeat), "results": results}
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
