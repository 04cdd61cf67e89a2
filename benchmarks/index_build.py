"""What does building the ``_ragcite/`` index cost, in time and in bytes?

Why: the index is rebuilt on every HTML build of a user's book, so a full build
must stay close to plain Sphinx, an edit of one paragraph must re-embed only
the passage(s) it changed, and the files shipped with the site must stay small.
The English encoder's default truncation (256; ``ragcite_embedding_max_tokens``
0 means the encoder's own) is justified here too, by build time and retrieval
quality at 128, 256 and 512 word pieces.

On a copy of ``example_book`` it measures, with ``python -m sphinx -q -b html``
in a child process and fresh output + doctree directories for every run:

1. full builds, median of ``--repeat``: plain Sphinx (``sphinx_ragcite``
   removed from the copy's ``conf.py``), the extension with
   ``-D ragcite_embeddings=0`` (BM25 only), and the extension with embeddings;
   each as a ratio to plain Sphinx;
2. incremental builds: after a full build, one sentence is appended to one
   paragraph of ``water.rst`` and the book is rebuilt into the same
   directories; reported are the wall time and
   ``manifest["embedding"]["embedded"]`` (passages embedded by that build)
   next to the passages whose text actually changed (also a no-edit rebuild);
3. index bytes per passage for every file role in the manifest, the totals
   with and without ``passages.jsonl`` and a breakdown of ``search.json``;
   targets: embeddings + scales <= 400 B/passage, everything except
   ``passages.jsonl`` <= 1.5 KiB/passage;
4. ``-D ragcite_embedding_max_tokens=`` 128, 256, 512: build time (and the
   embedding time the extension logs; these builds run without ``-q``), recall@1,
   recall@5 and MRR@10 of dense and hybrid retrieval on ``example_book/qa.jsonl``
   and the share of passages longer than the limit (word pieces, counted with
   the index's tokenizer with truncation switched off).

Run from the repository root (takes about two minutes on two cores)::

    .venv/bin/python benchmarks/index_build.py
    .venv/bin/python benchmarks/index_build.py --repeat 5 --max-tokens 128 256

Results go to ``benchmarks/results/index_build.json`` unless ``--out``.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks import _corpora
from benchmarks._harness import (
    EXAMPLE_QA,
    RESULTS,
    BuildFailed,
    envelope,
    percentile,
    read_manifest,
    read_passages,
    sphinx_build,
    table,
    write_result,
)

DEFAULT_OUT = RESULTS / "index_build.json"

#: label -> (extension in conf.py, -D overrides)
CONFIGS: dict[str, tuple[bool, dict[str, str]]] = {
    "plain sphinx": (False, {}),
    "ragcite, no embeddings": (True, {"ragcite_embeddings": "0"}),
    "ragcite, embeddings": (True, {}),
}
EDIT_FILE = "water.rst"
EDIT_OLD = "Preheating the brewer and the cup with hot water reduces that loss."
EDIT_NEW = EDIT_OLD + " A lid on the brewer keeps the slurry warmer as well."
EMBED_LOG = re.compile(r"ragcite: embedded (\d+) passages in ([0-9.]+) s")
TARGET_EMBEDDING_BYTES = 400
TARGET_INDEX_BYTES = 1536


def build(
    src: Path,
    out: Path,
    doctrees: Path,
    defines: dict[str, str] | None = None,
    *,
    quiet: bool = True,
) -> tuple[float, str]:
    """One ``sphinx -b html`` in a child process: wall seconds and its stdout."""
    options = []
    for name, value in (defines or {}).items():
        options += ["-D", f"{name}={value}"]
    run = sphinx_build(src, out, *options, doctrees=doctrees, quiet=quiet)
    return run.seconds, run.stdout


# -- 1. full builds ------------------------------------------------------------


def full_builds(work: Path, repeat: int) -> dict[str, Any]:
    sources = {
        with_ext: _corpora.prepare_example_book(
            work / ("with" if with_ext else "without"), with_ext
        )
        for with_ext in (False, True)
    }
    times: dict[str, list[float]] = {label: [] for label in CONFIGS}
    last_out: Path | None = None
    for i in range(repeat):
        for n, (label, (with_ext, defines)) in enumerate(CONFIGS.items()):
            run = work / f"full-{n}-{i}"
            seconds, _ = build(
                sources[with_ext], run / "html", run / "doctrees", defines
            )
            times[label].append(round(seconds, 3))
            print(f"  full {label} #{i + 1}: {seconds:.2f}s", file=sys.stderr)
            if label == "ragcite, embeddings":
                last_out = run / "html"
    plain = statistics.median(times["plain sphinx"])
    rows = []
    for label, values in times.items():
        median = statistics.median(values)
        rows.append(
            {
                "config": label,
                "median_s": round(median, 3),
                "ratio_to_plain": round(median / plain, 3),
                "min_s": min(values),
                "max_s": max(values),
                "runs_s": values,
            }
        )
    assert last_out is not None
    return {"rows": rows, "out": last_out}


# -- 2. incremental builds -----------------------------------------------------


def incremental(work: Path) -> dict[str, Any]:
    src = _corpora.prepare_example_book(work / "incremental", with_ragcite=True)
    out, doctrees = work / "incremental-html", work / "incremental-doctrees"
    steps = []

    def step(label: str) -> None:
        before = {p["passage_id"]: p["content_hash"] for p in read_passages(out)}
        seconds, _ = build(src, out, doctrees)
        after = read_passages(out)
        manifest = read_manifest(out)
        changed = sorted(
            p["passage_id"]
            for p in after
            if before.get(p["passage_id"]) != p["content_hash"]
        )
        steps.append(
            {
                "step": label,
                "seconds": round(seconds, 3),
                "passages": manifest["counts"]["passages"],
                "embedded": manifest["embedding"]["embedded"],
                "changed_passages": changed,
            }
        )
        print(f"  incremental {label}: {seconds:.2f}s", file=sys.stderr)

    seconds, _ = build(src, out, doctrees)
    manifest = read_manifest(out)
    steps.append(
        {
            "step": "full build",
            "seconds": round(seconds, 3),
            "passages": manifest["counts"]["passages"],
            "embedded": manifest["embedding"]["embedded"],
            "changed_passages": None,
        }
    )
    step("rebuild, no edit")
    page = src / EDIT_FILE
    text = page.read_text("utf-8")
    if EDIT_OLD not in text:
        raise BuildFailed(f"{EDIT_FILE} no longer contains the sentence to edit")
    page.write_text(text.replace(EDIT_OLD, EDIT_NEW, 1), "utf-8")
    step(f"rebuild, 1 paragraph of {EDIT_FILE} edited")
    return {"edit": {"file": EDIT_FILE, "appended_to": EDIT_OLD}, "steps": steps}


# -- 3. bytes per passage -------------------------------------------------------


def index_bytes(out: Path) -> dict[str, Any]:
    manifest = read_manifest(out)
    passages = manifest["counts"]["passages"]
    sizes: dict[str, int] = manifest["bytes"]
    per_role = {
        role: {"bytes": size, "per_passage": round(size / passages, 1)}
        for role, size in sorted(sizes.items())
    }
    embedding = sum(sizes.get(r, 0) for r in ("embeddings", "embedding_scales"))
    without_passages = sum(s for r, s in sizes.items() if r != "passages")
    from sphinx_ragcite.formats.static import read_static

    static = read_static((out / "_ragcite" / manifest["files"]["static"]).read_bytes())
    static_parts = {
        key: len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
        for key, value in static.items()
    }
    return {
        "passages": passages,
        "roles": per_role,
        "embeddings_plus_scales_per_passage": round(embedding / passages, 1),
        "all_but_passages_per_passage": round(without_passages / passages, 1),
        "all_per_passage": round(sum(sizes.values()) / passages, 1),
        "static_breakdown_per_passage": {
            k: round(v / passages, 1) for k, v in static_parts.items()
        },
        "targets": {
            "embeddings_plus_scales_per_passage": TARGET_EMBEDDING_BYTES,
            "all_but_passages_per_passage": TARGET_INDEX_BYTES,
        },
    }


# -- 4. embedding max length ------------------------------------------------------


def max_tokens_sweep(work: Path, limits: list[int]) -> dict[str, Any]:
    from tokenizers import Tokenizer

    from sphinx_ragcite.evaluate import evaluate_retrieval, load_qa
    from sphinx_ragcite.formats.bm25 import indexed_text
    from sphinx_ragcite.retrieval.site import Site

    questions = load_qa(EXAMPLE_QA)
    src = _corpora.prepare_example_book(work / "max-tokens", with_ragcite=True)
    rows = []
    lengths: list[int] | None = None
    for limit in limits:
        run = work / f"max-tokens-{limit}"
        # Not quiet: the extension logs how long embedding the passages took.
        seconds, log = build(
            src,
            run / "html",
            run / "doctrees",
            {"ragcite_embedding_max_tokens": str(limit)},
            quiet=False,
        )
        embedded = EMBED_LOG.search(log)
        embed_s = float(embedded[2]) if embedded else None
        print(f"  max_tokens={limit}: {seconds:.2f}s", file=sys.stderr)
        site = Site.load(run / "html")
        metrics = evaluate_retrieval(site, questions, ("dense", "hybrid"))
        texts = [indexed_text(p) for p in site.passages]
        if lengths is None:
            # count_tokens() truncates at the index's max_tokens: count with a
            # copy of the same tokenizer that does not truncate.
            tokenizer = Tokenizer.from_str(site.embedder.tokenizer.to_str())
            tokenizer.no_truncation()
            tokenizer.no_padding()
            lengths = [len(e.ids) for e in tokenizer.encode_batch(texts)]
        consistent = all(
            site.embedder.count_tokens(t) == min(n, limit)
            for t, n in zip(texts, lengths, strict=True)
        )
        rows.append(
            {
                "max_tokens": limit,
                "build_s": round(seconds, 3),
                "embed_s": embed_s,
                "passages_longer": sum(n > limit for n in lengths),
                "fraction_longer": round(
                    sum(n > limit for n in lengths) / len(lengths), 4
                ),
                **{
                    f"{mode}_{name}": round(metrics[mode][name], 4)
                    for mode in ("dense", "hybrid")
                    for name in ("recall@1", "recall@5", "mrr@10")
                },
                "questions": metrics["dense"]["questions"],
                "count_tokens_agrees": consistent,
            }
        )
    assert lengths is not None
    summary = {
        "median": statistics.median(lengths),
        "p90": round(percentile(lengths, 90) or 0, 1),
        "max": max(lengths),
    }
    return {"token_lengths": summary, "rows": rows}


# -- output --------------------------------------------------------------------


def check(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def report(result: dict[str, Any]) -> None:
    full = result["full_builds"]
    print(f"Full builds of example_book (median of {result['repeat']})")
    print(
        table(
            ["config", "median", "min", "max", "ratio"],
            [
                [
                    r["config"],
                    f"{r['median_s']:.2f}s",
                    f"{r['min_s']:.2f}s",
                    f"{r['max_s']:.2f}s",
                    f"{r['ratio_to_plain']:.2f}x",
                ]
                for r in full
            ],
        )
    )
    print("\nIncremental builds (same output + doctree dirs)")
    print(
        table(
            ["step", "time", "embedded", "passages", "text changed"],
            [
                [
                    s["step"],
                    f"{s['seconds']:.2f}s",
                    str(s["embedded"]),
                    str(s["passages"]),
                    "-"
                    if s["changed_passages"] is None
                    else str(len(s["changed_passages"])),
                ]
                for s in result["incremental"]["steps"]
            ],
        )
    )
    edited = result["incremental"]["steps"][-1]
    print(
        f"target: only the changed passage(s) re-embedded -> "
        f"{check(edited['embedded'] <= max(1, len(edited['changed_passages'])))}"
        f" (changed: {', '.join(edited['changed_passages']) or 'none'})"
    )

    sizes = result["index_bytes"]
    print(f"\nIndex bytes per passage ({sizes['passages']} passages)")
    body = [
        [role, str(v["bytes"]), f"{v['per_passage']:.1f}"]
        for role, v in sizes["roles"].items()
    ]
    for key, label in (
        ("embeddings_plus_scales_per_passage", "embeddings + scales"),
        ("all_but_passages_per_passage", "all but passages.jsonl"),
        ("all_per_passage", "all files"),
    ):
        body.append([label, "", f"{sizes[key]:.1f}"])
    print(table(["role", "bytes", "B/passage"], body))
    emb = sizes["embeddings_plus_scales_per_passage"]
    rest = sizes["all_but_passages_per_passage"]
    print(
        f"target: embeddings + scales <= {TARGET_EMBEDDING_BYTES} B/passage -> "
        + check(emb <= TARGET_EMBEDDING_BYTES)
    )
    print(
        f"target: all but passages.jsonl <= {TARGET_INDEX_BYTES} B/passage -> "
        + check(rest <= TARGET_INDEX_BYTES)
    )
    parts = ", ".join(
        f"{k} {v:.0f}" for k, v in sizes["static_breakdown_per_passage"].items()
    )
    print(f"search.json B/passage by key: {parts}")

    rows = result["max_tokens"]["rows"]
    stats = result["max_tokens"]["token_lengths"]
    print(
        "\nEmbedding max length (passage word pieces: median "
        f"{stats['median']}, p90 {stats['p90']}, max {stats['max']})"
    )
    print(
        table(
            ["max_tokens", "build", "embed", ">max"]
            + [f"{m} {n}" for m in ("dense", "hybrid") for n in ("r@1", "r@5", "mrr")],
            [
                [
                    str(r["max_tokens"]),
                    f"{r['build_s']:.2f}s",
                    "-" if r["embed_s"] is None else f"{r['embed_s']:.1f}s",
                    f"{100 * r['fraction_longer']:.1f}%",
                    *(
                        f"{r[f'{m}_{n}']:.3f}"
                        for m in ("dense", "hybrid")
                        for n in ("recall@1", "recall@5", "mrr@10")
                    ),
                ]
                for r in rows
            ],
        )
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="full builds per config")
    parser.add_argument(
        "--max-tokens",
        type=int,
        nargs="+",
        default=[128, 256, 512],
        help="ragcite_embedding_max_tokens values to compare (default 128 256 512)",
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON output")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")

    with tempfile.TemporaryDirectory(prefix="ragcite-index-build-") as tmp:
        work = Path(tmp)
        full = full_builds(work, args.repeat)
        result: dict[str, Any] = {
            "repeat": args.repeat,
            "full_builds": full["rows"],
            "index_bytes": index_bytes(full["out"]),
            "incremental": incremental(work),
            "max_tokens": max_tokens_sweep(work, args.max_tokens),
        }
    report(result)

    import sphinx

    write_result(args.out, envelope("index_build", sphinx=sphinx.__version__, **result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
