"""The floor of build-time embedding: the bare encoder against the build's own path.

On the real passages (``indexed_text``: heading path + text) and sentences
(``split_sentences`` of the passage text, as the build embeds them) of the
example book and of the corpora already built under ``results/.sites/``
(click-docs, requests-docs, packaging-guide), a deterministic sample per
corpus (``--passages``, ``--sentences``):

- *build*: the loop of ``sphinx_ragcite.extension.index._embed_texts`` with
  nothing cached: the texts sorted by characters, steps of ``STEP``,
  ``Embedder.embed`` (batch 8, token-sorted within a step, default threads,
  no spinning) and ``quantize``; and the same ``Embedder.embed`` called once
  on the whole workload (token-sorted over everything);
- *bare*: onnxruntime on the same int8 model and tokenizer (``max_tokens`` of
  the manifest), all texts tokenized in one ``encode_batch``, sorted by token
  count over the whole workload, batches padded only to their own longest
  row, mean pooling + L2 in NumPy; across intra-op threads, graph
  optimisation level, thread spinning and batch size.

Reported: real (unpadded) tokens/s, texts/s and the ratio to the best bare
setting; plus the tokenizer alone, and the padding each batching wastes.
``--profile`` adds a cProfile of the build path.

    .venv/bin/python benchmarks/embedding_floor.py [--passages 40] [--sentences 80]
        [--rounds 3] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import random
import sys
import time
from pathlib import Path

import numpy as np

from _harness import (
    RESULTS,
    SITES,
    envelope,
    example_site,
    read_manifest,
    read_passages,
    table,
    write_result,
)

CORPORA = ("click-docs", "requests-docs", "packaging-guide")


def workloads(n_passages: int, n_sentences: int) -> dict[str, list[str]]:
    from sphinx_ragcite.formats.bm25 import indexed_text
    from sphinx_ragcite.text import split_sentences

    sites = {"example_book": example_site()}
    for name in CORPORA:
        html = SITES / name / "html"
        if (html / "_ragcite" / "manifest.json").is_file():
            sites[name] = html
    passages: list[str] = []
    sentences: list[str] = []
    max_tokens = set()
    for name, site in sites.items():
        records = read_passages(site)
        max_tokens.add(read_manifest(site).get("embedding", {}).get("max_tokens", 256))
        rng = random.Random(f"{name}:0")
        texts = [indexed_text(r) for r in records]
        passages += rng.sample(texts, min(n_passages, len(texts)))
        sents = [s.text for r in records for s in split_sentences(r["text"])]
        sentences += rng.sample(sents, min(n_sentences, len(sents)))
    assert len(max_tokens) == 1, max_tokens
    return (
        {"passages": passages, "sentences": sentences},
        sorted(sites),
        max_tokens.pop(),
    )


def session(model: Path, threads: int, level: str, spinning: bool):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    options.add_session_config_entry(
        "session.intra_op.allow_spinning", "1" if spinning else "0"
    )
    return ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])


def bare(sess, tokenizer, texts: list[str], batch: int) -> tuple[float, int, int]:
    """Seconds, real tokens and padded tokens of one pass (tokenizing included)."""
    inputs = {i.name for i in sess.get_inputs()}
    started = time.perf_counter()
    enc = tokenizer.encode_batch(texts)
    ids = [e.ids for e in enc]
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    out = np.empty((len(ids), 384), np.float32)
    padded = 0
    for s in range(0, len(order), batch):
        rows = order[s : s + batch]
        width = len(ids[rows[-1]])
        input_ids = np.zeros((len(rows), width), np.int64)
        mask = np.zeros((len(rows), width), np.int64)
        for r, i in enumerate(rows):
            input_ids[r, : len(ids[i])] = ids[i]
            mask[r, : len(ids[i])] = 1
        padded += input_ids.size
        feed = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in inputs:
            feed["token_type_ids"] = np.zeros_like(input_ids)
        hidden = sess.run(None, feed)[0]
        m = mask[:, :, None].astype(np.float32)
        pooled = (hidden * m).sum(1) / m.sum(1)
        out[rows] = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
    return time.perf_counter() - started, sum(map(len, ids)), padded


def build_path(embedder, texts: list[str]) -> float:
    """Seconds of the build's embedding loop (``index._embed_texts`` without its
    cache, which is being reworked): characters-sorted steps of ``STEP`` texts,
    each ``quantize(embedder.embed(step))`` with ``embed``'s default batch."""
    from sphinx_ragcite.extension.index import STEP, quantize, text_key

    started = time.perf_counter()
    todo = sorted(((text_key(t), t) for t in texts), key=lambda kt: (len(kt[1]), kt[0]))
    for s in range(0, len(todo), STEP):
        step = todo[s : s + STEP]
        quantize(embedder.embed([t for _, t in step]))
    return time.perf_counter() - started


def one_call(embedder, texts: list[str]) -> float:
    """Seconds of ``quantize(embedder.embed(texts))`` on the whole workload: the
    same code, token-sorted over everything (``embed`` reports ``progress``)."""
    from sphinx_ragcite.extension.index import quantize

    started = time.perf_counter()
    quantize(embedder.embed(texts, progress=lambda n: None))
    return time.perf_counter() - started


def build_padding(embedder, texts: list[str]) -> int:
    """Padded tokens of the build's batching (characters-sorted steps, batch 8)."""
    from sphinx_ragcite.extension.index import STEP

    todo = sorted(texts, key=len)
    padded = 0
    for s in range(0, len(todo), STEP):
        lens = sorted(
            len(e.ids) for e in embedder.tokenizer.encode_batch(todo[s : s + STEP])
        )
        for b in range(0, len(lens), 8):
            padded += max(lens[b : b + 8]) * len(lens[b : b + 8])
    return padded


def _timed(fn, *args) -> float:
    started = time.perf_counter()
    fn(*args)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--passages", type=int, default=40, help="per corpus")
    parser.add_argument("--sentences", type=int, default=80, help="per corpus")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved, best kept")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--out", type=Path, default=RESULTS / "embedding_floor.json")
    args = parser.parse_args(argv)

    from sphinx_ragcite.retrieval.embed import (
        Embedder,
        default_model_files,
        default_threads,
    )

    loads, corpora, max_tokens = workloads(args.passages, args.sentences)
    files = default_model_files()
    embedder = Embedder(files, max_tokens=max_tokens)
    tok = embedder.tokenizer  # truncation to max_tokens, no padding
    threads = default_threads()
    print(
        f"corpora: {', '.join(corpora)}; max_tokens {max_tokens}; "
        f"default threads {threads}"
    )

    settings = [
        # (threads, level, spinning, batch): the build's session, then one change each
        (threads, "ORT_ENABLE_ALL", False, 8),
        (threads, "ORT_ENABLE_ALL", False, 4),
        (threads, "ORT_ENABLE_ALL", False, 16),
        (threads, "ORT_ENABLE_ALL", False, 32),
        (threads, "ORT_ENABLE_ALL", True, 8),
        (threads, "ORT_ENABLE_BASIC", False, 8),
        (threads, "ORT_ENABLE_EXTENDED", False, 8),
        (1, "ORT_ENABLE_ALL", False, 8),
    ]
    sessions: dict = {}
    for th, level, spin, _ in settings:
        if (th, level, spin) not in sessions:
            sessions[th, level, spin] = session(files.model, th, level, spin)
            bare(sessions[th, level, spin], tok, loads["passages"][:32], 8)  # warm
    build_path(embedder, loads["passages"][:32])  # warm

    results: dict[str, dict] = {}
    rows = []
    for what, texts in loads.items():
        tokens = sum(len(e.ids) for e in tok.encode_batch(texts))
        tok_s = min(_timed(tok.encode_batch, texts) for _ in range(3))
        # Interleaved rounds, best of each: others share these cores.
        b_times: list[float] = []
        o_times: list[float] = []
        times: dict[int, list] = {k: [] for k in range(len(settings))}
        for _ in range(args.rounds):
            b_times.append(build_path(embedder, texts))
            o_times.append(one_call(embedder, texts))
            for k, (th, level, spin, batch) in enumerate(settings):
                times[k].append(bare(sessions[th, level, spin], tok, texts, batch))
        b_s = min(b_times)
        o_s = min(o_times)
        runs = []
        for k, (th, level, spin, batch) in enumerate(settings):
            sec, real, padded = min(times[k], key=lambda r: r[0])
            runs.append(
                {
                    "threads": th,
                    "opt_level": level,
                    "spinning": spin,
                    "batch": batch,
                    "seconds": sec,
                    "all_seconds": [t[0] for t in times[k]],
                    "tokens": real,
                    "padded_tokens": padded,
                }
            )
        best = min(r["seconds"] for r in runs)
        build_pad = build_padding(embedder, texts)
        results[what] = {
            "texts": len(texts),
            "tokens": tokens,
            "mean_tokens": tokens / len(texts),
            "tokenizer_seconds": tok_s,
            "build": {
                "seconds": b_s,
                "all_seconds": b_times,
                "padded_tokens": build_pad,
            },
            "bare": runs,
        }
        rows.append(
            [
                f"{what}: build Embedder.embed (thr {threads}, all, spin off, batch 8)",
                f"{tokens / b_s:,.0f}",
                f"{len(texts) / b_s:,.1f}",
                f"{best / b_s:.2f}",
                f"{build_pad / tokens - 1:.1%}",
            ]
        )
        rows.append(
            [
                f"{what}: Embedder.embed, one call over all texts",
                f"{tokens / o_s:,.0f}",
                f"{len(texts) / o_s:,.1f}",
                f"{best / o_s:.2f}",
                f"{runs[0]['padded_tokens'] / tokens - 1:.1%}",
            ]
        )
        for r in runs:
            rows.append(
                [
                    f"{what}: bare thr {r['threads']} {r['opt_level'][4:].lower()} "
                    f"spin {'on' if r['spinning'] else 'off'} batch {r['batch']}",
                    f"{r['tokens'] / r['seconds']:,.0f}",
                    f"{len(texts) / r['seconds']:,.1f}",
                    f"{best / r['seconds']:.2f}",
                    f"{r['padded_tokens'] / r['tokens'] - 1:.1%}",
                ]
            )
        rows.append(
            [
                f"{what}: tokenizer alone (encode_batch)",
                f"{tokens / tok_s:,.0f}",
                f"{len(texts) / tok_s:,.1f}",
                "",
                "",
            ]
        )
    print(
        table(["setting", "tokens/s", "texts/s", "ratio to best bare", "padding"], rows)
    )

    profile_text = None
    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        build_path(embedder, loads["sentences"])
        prof.disable()
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(12)
        profile_text = buf.getvalue()
        print(profile_text)

    payload = envelope(
        "embedding_floor",
        corpora=corpora,
        max_tokens=max_tokens,
        default_threads=threads,
        sample={
            "passages_per_corpus": args.passages,
            "sentences_per_corpus": args.sentences,
            "rounds": args.rounds,
        },
        workloads=results,
        profile=profile_text,
    )
    write_result(args.out, payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
