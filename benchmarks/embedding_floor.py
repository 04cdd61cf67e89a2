"""The floor of build-time embedding: the bare encoder against the build's own path.

On the real passages (``indexed_text``: heading path + text) and sentences
(``split_sentences`` of the passage text, as the build embeds them) of the
example book and of the corpora already built under ``results/.sites/``
(click-docs, requests-docs, packaging-guide), a deterministic sample per
corpus (``--passages``, ``--sentences``):

- *build*: the build's own encoder loop, ``sphinx_ragcite.extension.index.
  _run_encoder`` with an empty cache (one pass over all texts sorted by
  token count, batch 8, default threads, no spinning, quantised into the
  cache); and the same with every sentence pooled from the passage pass;
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

from benchmarks._harness import (
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


def build_path(embedder, texts: list[str], *, pooled: bool = False) -> float:
    """Seconds of the build's own encoder loop (``index._run_encoder``) with an
    empty cache; *pooled* also pools every sentence from the passage pass
    (``ragcite_sentence_pooling = "passage"``)."""
    import tempfile
    from types import SimpleNamespace

    from sphinx_ragcite.encoder import default_model_files
    from sphinx_ragcite.extension.cache import EmbeddingCache, text_key
    from sphinx_ragcite.extension.embedding import Model, _run_encoder
    from sphinx_ragcite.text import split_sentences

    with tempfile.TemporaryDirectory() as tmp:
        cache = EmbeddingCache(Path(tmp), embedder.cache_key, embedder.dim, 1 << 30)
        keys = [text_key(t) for t in texts]
        spans = None
        if pooled:
            spans = [
                [
                    (text_key(f"{i}:{s.start}"), (s.start, s.end))
                    for s in split_sentences(t)
                ]
                for i, t in enumerate(texts)
            ]
        app = SimpleNamespace(verbosity=0)
        started = time.perf_counter()
        model = Model(default_model_files(), embedder.max_tokens, embedder)
        _run_encoder(app, model, cache, texts, keys, spans, "passages")
        return time.perf_counter() - started


def build_padding(embedder, texts: list[str]) -> int:
    """Padded tokens of the build's batching (token-sorted over all, batch 8)."""
    from sphinx_ragcite.encoder import BATCH, length_batches

    lens = [len(e.ids) for e in embedder.tokenizer.encode_batch(texts)]
    return sum(
        max(lens[i] for i in rows) * len(rows) for rows in length_batches(lens, BATCH)
    )


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

    from sphinx_ragcite.encoder import (
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
            o_times.append(build_path(embedder, texts, pooled=True))
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
                "ratio_to_floor": best / b_s,
                "target": 0.9,
                "met": best / b_s >= 0.9,
            },
            "build_pooled": {"seconds": o_s, "all_seconds": o_times},
            "bare": runs,
        }
        rows.append(
            [
                f"{what}: build (embedding._run_encoder, thr {threads}, batch 8)",
                f"{tokens / b_s:,.0f}",
                f"{len(texts) / b_s:,.1f}",
                f"{best / b_s:.2f}",
                f"{build_pad / tokens - 1:.1%}",
            ]
        )
        rows.append(
            [
                f"{what}: build, sentences pooled from the same pass",
                f"{tokens / o_s:,.0f}",
                f"{len(texts) / o_s:,.1f}",
                f"{best / o_s:.2f}",
                f"{build_pad / tokens - 1:.1%}",
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

    for what, result in results.items():
        build = result["build"]
        print(
            f"{what}: encoder in the build / bare floor = "
            f"{build['ratio_to_floor']:.2f} "
            f"(target >= 0.9: {'met' if build['met'] else 'NO'})"
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
