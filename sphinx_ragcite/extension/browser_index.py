"""What answers in the reader's browser need in ``_ragcite/``, when no server runs.

The encoder model and its tokenizer (the ones this build embedded with), the
answer ranker, the onnxruntime-web files and the passages' shards
(:mod:`sphinx_ragcite.formats.shards`), each under a content-addressed name
the manifest lists with its size and digest. A reader downloads them only
when asking with no answer server; ``ragcite_browser_answers = False`` leaves
them out, and so does anything missing (one line in the build log says why):
the widget then searches the static index, as before.
"""

from __future__ import annotations

import importlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sphinx.util import logging

from sphinx_ragcite.formats.browser import (
    DENSE,
    MODEL,
    ORT_JS,
    ORT_MJS,
    ORT_WASM,
    RANKER,
    SHARDS,
    TOKENIZER,
)
from sphinx_ragcite.formats.embeddings import read_npy
from sphinx_ragcite.formats.sentence_vectors import CODES, OFFSETS, SCALES
from sphinx_ragcite.formats.shards import LISTING, SentenceVectors, build_shards

if TYPE_CHECKING:
    from sphinx.application import Sphinx

    from sphinx_ragcite.extension.config import RagciteConfig
    from sphinx_ragcite.extension.passages.records import Record
    from sphinx_ragcite.extension.writer import IndexWriter

logger = logging.getLogger(__name__)

#: The runtime's roles (``browser_assets.ORT_FILES``' keys) that must ship.
#: The emscripten glue (``.mjs``) is stored as ``.js``: some hosts serve
#: ``.mjs`` as octet-stream, which a browser refuses to import as a module.
_RUNTIME_NEEDED = (ORT_JS, ORT_MJS, ORT_WASM)
_SAID = "static mode stays keyword search"
#: The approximate dense search's root, when a book ships one.
DENSE_NAME = "dense.bin"


@dataclass(frozen=True)
class BrowserFiles:
    """What the build adds for answers in the browser, for its log line."""

    bytes_by_role: dict[str, int]
    #: ``(rows, name)`` of each answer shard, in row order
    answer_shards: list[tuple[int, str]]

    @property
    def total(self) -> int:
        return sum(self.bytes_by_role.values())


class Unavailable(Exception):
    """Answers in the browser cannot be shipped; the message says why."""


def _runtime_files() -> dict[str, Path] | None:
    """The onnxruntime-web files the wheel brought (None: npm did not run).

    Looked up by module name: ``browser_assets`` comes with the encoder.
    """
    try:
        assets = importlib.import_module("sphinx_ragcite.extension.browser_assets")
    except ImportError:
        return None
    found = assets.ort_runtime_files()
    return dict(found) if found else None


def shipped(browser_answers: bool, embeddings: bool) -> bool:
    """Whether a build may ship the engine (the model can still turn out
    missing at the end): the option, embeddings and the runtime."""
    return browser_answers and embeddings and _runtime_files() is not None


def runtime_roles(files: dict[str, Path]) -> dict[str, tuple[str, Path]]:
    """Role -> (the name stored under ``_ragcite/``, the file), from the
    runtime's files by role (``browser_assets.ort_runtime_files``)."""
    missing = [role for role in _RUNTIME_NEEDED if role not in files]
    if missing:
        raise Unavailable(f"the runtime lacks its {', '.join(missing)} file")
    roles: dict[str, tuple[str, Path]] = {}
    for role in _RUNTIME_NEEDED:
        path = Path(files[role])
        stem, suffix = os.path.splitext(path.name)
        roles[role] = (stem + (".js" if suffix == ".mjs" else suffix), path)
    return roles


def ranker_text(encoder: str | None = None) -> str:
    """The answer ranker the server would read for a book embedded by
    *encoder* (``$RAGCITE_RANKER``, or the shipped one trained on that
    encoder's signals), checked before it ships."""
    import sphinx_ragcite.answer.ranker as ranker

    try:
        text, _ = ranker.ranker_text(encoder)
        ranker.Ranker.from_json(json.loads(text))
    except Exception as error:
        raise Unavailable(
            f"the answer ranker {ranker.ranker_file(encoder)} cannot be read ({error})"
        ) from None
    return text


def tokenizer_bytes(path: Path) -> bytes:
    """The tokenizer as compact JSON (a third smaller), if the browser's
    encoder reads it: BERT-style WordPiece, or SentencePiece Unigram as the
    multilingual encoder's is written (``js/unigram.js``)."""
    try:
        spec = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as error:
        raise Unavailable(f"{path} cannot be read ({error})") from None
    kind = (spec.get("model") or {}).get("type") if isinstance(spec, dict) else None
    if kind not in ("WordPiece", "Unigram"):
        raise Unavailable(
            "the browser's encoder reads WordPiece and Unigram tokenizers; "
            f"{path} is {kind!r}"
        )
    return json.dumps(spec, ensure_ascii=False, separators=(",", ":")).encode()


def sentence_vectors(writer: IndexWriter, rows: int) -> SentenceVectors | None:
    """The sentence vectors this build staged, or None (built without them)."""
    staged = writer.staged
    if CODES not in staged:
        return None
    offsets = read_npy(staged[OFFSETS].data, (rows + 1,), "int64", OFFSETS)
    total = int(offsets[-1])
    return SentenceVectors(
        offsets,
        read_npy(staged[CODES].data, (total, -1), "int8", CODES),
        read_npy(staged[SCALES].data, (total,), "float32", SCALES),
    )


#: ``ragcite_browser_dense = "auto"`` searches approximately from this many
#: passages on: below it every vector costs less than ~780 KB raw (less than
#: the codes and shards would), and exact search keeps every answer, where
#: the approximate one would change 0-3 of 89-200 per dev set
#: (benchmarks/approximate_dense.py, results/approximate_dense.json).
APPROXIMATE_FROM = 2_000


def approximate_dense(
    writer: IndexWriter, rows: int, mode: str = "auto"
) -> tuple[bytes, dict[str, bytes]] | None:
    """A big book's approximate dense search (root, shards by name), or None
    where its readers download every passage vector."""
    from sphinx_ragcite.formats import dense_index

    wanted = mode == "approximate" or (mode == "auto" and rows >= APPROXIMATE_FROM)
    if not wanted or "embeddings" not in writer.staged:
        return None
    codes = read_npy(writer.staged["embeddings"].data, (rows, -1), "int8", "embeddings")
    scales = read_npy(
        writer.staged["embedding_scales"].data, (rows,), "float32", "embedding_scales"
    )
    # its parameters by the book's size (dense_index.parameters)
    return dense_index.build_dense_index(codes, scales)


def add_browser_files(
    app: Sphinx,
    config: RagciteConfig,
    records: list[Record],
    writer: IndexWriter,
    embedding: dict[str, Any] | None,
) -> BrowserFiles | None:
    """Stage the browser engine's files on *writer*; None (and one log line
    saying why) when the site stays with keyword search."""
    if not config.browser_answers:
        return None
    try:
        files = _stage(app, config, records, writer, embedding)
    except Unavailable as error:
        logger.info("ragcite: no answers in the browser: %s; %s.", error, _SAID)
        return None
    logger.info(
        "ragcite: answers in the browser add %.1f MB to the site (model %.1f, "
        "runtime %.1f, passage shards %.1f); readers download them only when "
        "they ask with no answer server (ragcite_browser_answers = False leaves "
        "them out)",
        files.total / 1e6,
        files.bytes_by_role[MODEL] / 1e6,
        sum(b for r, b in files.bytes_by_role.items() if r.startswith("ort_")) / 1e6,
        files.bytes_by_role[SHARDS] / 1e6,
    )
    return files


def _stage(
    app: Sphinx,
    config: RagciteConfig,
    records: list[Record],
    writer: IndexWriter,
    embedding: dict[str, Any] | None,
) -> BrowserFiles:
    from sphinx_ragcite.extension.browser_model import FOLDER as BROWSER_MODEL_FOLDER
    from sphinx_ragcite.extension.browser_model import browser_model
    from sphinx_ragcite.extension.embedding import build_model_files
    from sphinx_ragcite.extension.writer import file_digest

    if embedding is None:
        raise Unavailable(
            "the index has no embeddings (ragcite_embeddings, or the model is missing)"
        )
    runtime = _runtime_files()
    if runtime is None:
        raise Unavailable(
            "the onnxruntime-web files were not installed with sphinx-ragcite "
            "(npm did not run when it was built)"
        )
    roles = runtime_roles(runtime)
    model = build_model_files(app, config, records)
    tokenizer = tokenizer_bytes(model.tokenizer)
    ranker = ranker_text(embedding.get("encoder")).encode("utf-8")
    shards = build_shards(records, sentence_vectors(writer, len(records)))
    dense = approximate_dense(writer, len(records), config.browser_dense)

    copied = {
        role: (name, path, file_digest(path)) for role, (name, path) in roles.items()
    }
    # the model as the browser runs it (its tables looked up before they
    # are dequantised: the same vectors in a fraction of the memory)
    source_digest = file_digest(model.model)
    shipped_model = browser_model(
        model.model, source_digest[0], Path(app.doctreedir) / BROWSER_MODEL_FOLDER
    )
    copied[MODEL] = (
        "model.onnx",
        shipped_model,
        source_digest if shipped_model == model.model else file_digest(shipped_model),
    )
    # Staged only now that every part is there: none or all of them ship.
    # (A model the index already ships, the multilingual one, is the same file.)
    for role, (name, path, digest) in sorted(copied.items()):
        if role not in writer.staged:
            writer.add_file(role, name, path, digest)
    if TOKENIZER not in writer.staged:
        writer.add(TOKENIZER, "tokenizer.json", tokenizer)
    writer.add(RANKER, "ranker.json", ranker)
    writer.add(SHARDS, LISTING, shards.listing)
    for name, data in shards.files.items():
        writer.add_extra(name, data)
    if dense is not None:
        writer.add(DENSE, DENSE_NAME, dense[0])
        for name, data in dense[1].items():
            writer.add_extra(name, data)
    sizes = {role: digest[1] for role, (_, _, digest) in copied.items()}
    sizes[TOKENIZER], sizes[RANKER] = len(tokenizer), len(ranker)
    sizes[SHARDS] = len(shards.listing) + sum(map(len, shards.files.values()))
    if dense is not None:
        sizes[DENSE] = len(dense[0]) + sum(map(len, dense[1].values()))
    listed = json.loads(shards.listing)["shards"]
    return BrowserFiles(sizes, [(int(n), str(name)) for n, name in listed])
