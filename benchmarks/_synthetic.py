"""Synthetic sites of any size, for the latency and memory benchmarks.

``synthetic_site(passages, source)`` returns ``results/.synthetic{N}k/``, a
``_ragcite/`` in exactly the extension's format, written once and rewritten
when this file or the package's build side changes (``rebuild`` forces it).
Passage texts recombine sentences of the passages of *source* (a real build,
normally the example book's: a realistic vocabulary), BM25 and
``search.json`` are built with the extension's own code, and the vectors are
random unit vectors (``default_rng(0)``, dim 384) quantised like real ones.
The manifest names the default model, so queries are embedded by the real
model and dense scoring does the same work as on a real index; only the
rankings are meaningless, which the latency and memory benchmarks do not
look at. Embedding 50,000 passages with the model would take most of an hour
on two cores.

Used by ``query_latency.py``, ``scale.py`` and ``sites_memory.py``.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._harness import RESULTS, build_code_key, digest, read_passages

SEED = 0
DIM = 384
SECTIONS = 20  # per synthetic chapter
PER_SECTION = 25  # passages per synthetic section
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def synthetic_dir(passages: int) -> Path:
    return RESULTS / f".synthetic{passages // 1000}k"


def synthetic_site(
    passages: int, source: Path, *, rebuild: bool = False
) -> tuple[Path, float | None]:
    """The synthetic site of *passages* passages: (folder, seconds writing it,
    None when an up-to-date one was reused)."""
    directory = synthetic_dir(passages)
    if not rebuild and _up_to_date(directory, passages):
        return directory, None
    print(f"writing {directory} ...", file=sys.stderr, flush=True)
    seconds = _write(source, directory, passages)
    print(f"  took {seconds:.1f}s", file=sys.stderr, flush=True)
    return directory, seconds


def _key(passages: int) -> dict[str, Any]:
    """What the written index depends on: size, seed and the code writing it."""
    code = digest([Path(__file__).read_bytes(), build_code_key().encode()])
    return {"passages": passages, "seed": SEED, "code": code}


def _up_to_date(directory: Path, passages: int) -> bool:
    try:
        manifest = json.loads((directory / "_ragcite" / "manifest.json").read_text())
    except (OSError, ValueError):
        return False
    return bool(manifest.get("synthetic") == _key(passages))


def _write(source: Path, directory: Path, passages: int) -> float:
    """Write a ``_ragcite/`` of *passages* records under *directory*; seconds."""
    from sphinx_ragcite import __version__
    from sphinx_ragcite.contracts import make_snippet
    from sphinx_ragcite.encoder import DEFAULT_MAX_TOKENS, DEFAULT_MODEL_ID
    from sphinx_ragcite.extension.passages.ids import passage_id
    from sphinx_ragcite.extension.passages.records import content_hash
    from sphinx_ragcite.extension.writer import IndexWriter
    from sphinx_ragcite.formats.bm25 import PARAMS, bm25_files, build_bm25, tokenized
    from sphinx_ragcite.formats.embeddings import npy_bytes, quantize
    from sphinx_ragcite.formats.records import passages_jsonl
    from sphinx_ragcite.formats.static import FILE_NAME as STATIC_FILE
    from sphinx_ragcite.formats.static import static_file, static_index
    from sphinx_ragcite.text import SPEC

    started = time.perf_counter()
    real = read_passages(source)
    sentences = [s for p in real for s in _SENTENCE_END.split(p["text"]) if s.strip()]
    lengths = [len(_SENTENCE_END.split(p["text"])) for p in real]
    rng = random.Random(SEED)
    records: list[dict[str, Any]] = []
    per_chapter = SECTIONS * PER_SECTION
    offsets: dict[str, int] = {}
    for n in range(passages):
        chapter, rest = divmod(n, per_chapter)
        section, position = divmod(rest, PER_SECTION)
        pid = passage_id(chapter, section, position + 1)
        model = real[rng.randrange(len(real))]
        text = " ".join(rng.choice(sentences) for _ in range(rng.choice(lengths)))
        docname = f"chapter{chapter:03d}"
        start = offsets.get(docname, 0)
        offsets[docname] = start + len(text) + 2
        records.append(
            {
                "passage_id": pid,
                "docname": docname,
                "url": f"{docname}.html#{pid}",
                "chapter": f"{chapter}. {model['chapter']}",
                "section": model["section"],
                "heading_path": model["heading_path"],
                "text": text,
                "snippet": make_snippet(text),
                "char_start": start,
                "char_end": start + len(text),
                "content_hash": content_hash(text),
            }
        )

    if directory.exists():
        shutil.rmtree(directory)
    writer = IndexWriter(directory)
    writer.add("passages", "passages.jsonl", passages_jsonl(records))
    corpus = tokenized(records)
    retriever = build_bm25(records, corpus=corpus)
    for name, data in bm25_files(retriever).items():
        writer.add("bm25." + name.split(".")[0], f"bm25/{name}", data)
    static = static_file(static_index(records, corpus, params=PARAMS))
    writer.add("static", STATIC_FILE, static)
    vectors = np.random.default_rng(SEED).standard_normal((passages, DIM))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    codes, scales = quantize(vectors.astype(np.float32))
    writer.add("embeddings", "embeddings.npy", npy_bytes(codes))
    writer.add("embedding_scales", "embedding_scales.npy", npy_bytes(scales))
    writer.finish(
        {
            "generator": f"sphinx-ragcite {__version__} (benchmarks/_synthetic.py)",
            "project": "Synthetic benchmark book",
            "author": "",
            "copyright": "",
            "version": "",
            "release": "",
            "html_baseurl": "",
            "language": "en",
            "builder": "html",
            "root_url": "index.html",
            "built_at": "1970-01-01T00:00:00Z",
            "counts": {"passages": passages, "documents": len(offsets)},
            "tokenizer": SPEC,
            "bm25": PARAMS,
            "embedding": {
                "model": DEFAULT_MODEL_ID,
                "dim": DIM,
                "dtype": "int8",
                "scale_dtype": "float32",
                "max_tokens": DEFAULT_MAX_TOKENS,
                "pooling": "mean",
                "normalized": True,
                "embedded": passages,
            },
            "synthetic": _key(passages),
        }
    )
    return time.perf_counter() - started
