"""Passage records -> every file of ``_ragcite/``, at the end of an HTML build."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from sphinx.util import logging
from sphinx.util.display import status_iterator

from sphinx_ragcite import __version__
from sphinx_ragcite.errors import ModelNotFoundError
from sphinx_ragcite.extension import stages
from sphinx_ragcite.extension.cache import EmbeddingCache, resolve_dir, text_key
from sphinx_ragcite.extension.config import RagciteConfig
from sphinx_ragcite.extension.link_history import LinkHistory, update
from sphinx_ragcite.extension.llms_txt import (
    LLMS_FULL,
    LLMS_TXT,
    Book,
    group_pages,
    listed_paths,
    llms_files,
    manifest_entry,
    safe_path,
)
from sphinx_ragcite.extension.llms_txt import (
    MANIFEST_KEY as LLMS_KEY,
)
from sphinx_ragcite.extension.passages.ids import toctree_docs
from sphinx_ragcite.extension.passages.records import build_records, page_url
from sphinx_ragcite.extension.writer import IndexWriter, build_time
from sphinx_ragcite.formats.bm25 import PARAMS, bm25_files, build_bm25, indexed_text
from sphinx_ragcite.formats.embeddings import npy_bytes
from sphinx_ragcite.formats.files import atomic_write
from sphinx_ragcite.formats.manifest import INDEX_DIR, MANIFEST
from sphinx_ragcite.formats.moved import FILE_NAME as MOVED_FILE
from sphinx_ragcite.formats.moved import Moved, moved_file
from sphinx_ragcite.formats.records import passages_jsonl
from sphinx_ragcite.formats.sentence_vectors import CODES, OFFSETS, SCALES
from sphinx_ragcite.formats.static import FILE_NAME as STATIC_FILE
from sphinx_ragcite.formats.static import static_file, static_index
from sphinx_ragcite.retrieval.embed import (
    BATCH,
    DEFAULT_MODEL_ID,
    Embedder,
    ModelFiles,
    cache_key,
    model_files,
)
from sphinx_ragcite.text import (
    CJK_LANGUAGES,
    Sentence,
    language_code,
    spec_for,
    split_sentences,
    tokenizer,
)

if TYPE_CHECKING:
    from sphinx.application import Sphinx

    from sphinx_ragcite.extension.passages.records import Record

logger = logging.getLogger(__name__)

HISTORY_FILE = "ragcite-links.json"


def write_site_index(app: Sphinx) -> dict[str, Any]:
    config = RagciteConfig.from_sphinx(app.config)
    timed = stages.of(app).timed
    with timed("records"):
        records = build_records(app.env, app.builder)
        writer = IndexWriter(Path(app.builder.outdir))
        writer.add("passages", "passages.jsonl", passages_jsonl(records))
    spec = spec_for(config_text(app.config.language) or None)
    with timed("bm25"):
        retriever = build_bm25(records, tokenizer(spec))
        for name, data in bm25_files(retriever).items():
            writer.add("bm25." + name.split(".")[0], f"bm25/{name}", data)
    with timed("static index"):
        # The widget loads these two by name as well (see IndexWriter).
        static = static_file(static_index(retriever, records, spec))
        writer.add("static", STATIC_FILE, static, alias=True)
    with timed("links"):
        links = _follow_links(app, config, records)
        moved = links[0] if links else None
        if moved is not None:
            writer.add("moved", MOVED_FILE, moved_file(moved), alias=True)

    embedding = None
    if config.embeddings and records:
        embedding = _write_embeddings(app, config, records, writer)

    project = app.config
    with timed("llms.txt"):
        llms = _write_llms_txt(app, records) if config.llms_txt else None
    with timed("write index"):
        manifest = writer.finish(
            {
                "generator": f"sphinx-ragcite {__version__}",
                "project": config_text(project.project),
                "author": config_text(project.author),
                "copyright": config_text(project.copyright),
                "version": config_text(project.version),
                "release": config_text(project.release),
                "html_baseurl": config_text(project.html_baseurl),
                "language": config_text(project.language) or None,
                "builder": str(app.builder.name),
                "root_url": page_url(app.builder, str(project.root_doc)),
                "built_at": build_time(),
                "counts": {
                    "passages": len(records),
                    "documents": len({r["docname"] for r in records}),
                    "moved": len(moved or ()),
                },
                "tokenizer": spec,
                "bm25": PARAMS,
                "embedding": embedding,
                "citation": {
                    "style": config.citation_style,
                    "show_page": config.show_page,
                    "link_to_source": config.link_to_source,
                    "max_quote_length": config.max_quote_length,
                },
                **({LLMS_KEY: llms} if llms is not None else {}),
            }
        )
    if links:
        # Only now: a build whose index failed does not move the history on.
        _save_history(*links[1:])
    sizes = manifest["bytes"]
    logger.info(
        "ragcite: %d passages from %d documents -> %s/ (%.1f KiB; static search "
        "index %.1f KiB)",
        len(records),
        manifest["counts"]["documents"],
        INDEX_DIR,
        sum(sizes.values()) / 1024,
        sizes["static"] / 1024,
    )
    return manifest


def config_text(value: object) -> str:
    """A conf.py value as the manifest's text.

    Values may be lazy translations, numbers (``version = 1.0``), ``None``, or
    a list (``copyright`` may be one since Sphinx 7.1).
    """
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value)


def _write_llms_txt(app: Sphinx, records: list[Record]) -> dict[str, Any] | None:
    """``llms.txt``, ``llms-full.txt`` and the pages' Markdown, before the manifest.

    Each file is written atomically and only if its bytes changed; the files
    an earlier build listed and this one does not are removed. A file this
    extension did not write (an author's own ``llms.txt`` from
    ``html_extra_path``) is left alone with a ``ragcite.llms`` warning. A
    failure costs these files, never the index.
    """
    outdir = Path(app.builder.outdir)
    try:
        previous = _previous_manifest(outdir)
        ours = listed_paths(previous)
        config = app.config
        reached = toctree_docs(
            config.root_doc, app.env.toctree_includes, set(app.env.all_docs)
        )
        book = Book(
            project=config_text(config.project),
            release=config_text(config.release),
            base_url=_base_url(config_text(config.html_baseurl)),
            pages=group_pages(records, frozenset(app.env.all_docs) - set(reached)),
        )
        files = {p: d for p, d in llms_files(book).items() if safe_path(p)}
        written = {}
        for path, data in sorted(files.items()):
            target = outdir / path
            if path in (LLMS_TXT, LLMS_FULL) and not _ours(target, path in ours):
                logger.warning(
                    "ragcite: %s exists and was not written by sphinx-ragcite; it "
                    "is left as it is (set ragcite_llms_txt = False to stop this "
                    "warning).",
                    target,
                    type="ragcite",
                    subtype="llms",
                )
                continue
            if target.is_symlink():
                target.unlink()
            if not (target.is_file() and target.read_bytes() == data):
                target.parent.mkdir(parents=True, exist_ok=True)
                atomic_write(target, data)
            written[path] = data
        for path in sorted(ours - set(written)):
            stale = outdir / path
            if stale.is_file() and not stale.is_symlink():
                stale.unlink()
    except Exception as error:
        logger.warning(
            "ragcite: llms.txt could not be written (%s: %s).",
            type(error).__name__,
            error,
            type="ragcite",
            subtype="llms",
        )
        return None
    return manifest_entry(written)


def _ours(path: Path, listed: bool) -> bool:
    """A file this extension may replace: absent, listed, or one it wrote."""
    if listed or not (path.exists() or path.is_symlink()):
        return True
    try:
        with open(path, "rb") as f:
            return b"passage ID" in f.read(8192)
    except OSError:
        return False


def _base_url(html_baseurl: str) -> str:
    """Absolute links when the site's URL is known, else links from the root."""
    return html_baseurl.rstrip("/") + "/" if html_baseurl else ""


def _previous_manifest(outdir: Path) -> dict[str, Any] | None:
    """The last build's manifest, read leniently (only its llms.txt list is used)."""
    try:
        data = json.loads((outdir / INDEX_DIR / MANIFEST).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _follow_links(
    app: Sphinx, config: RagciteConfig, records: list[Record]
) -> tuple[dict[str, Moved], LinkHistory, Path] | None:
    """Old passage ID -> where the text it named is now, from the link history.

    Returns the history to save once the index is written. A history that
    cannot be followed costs the redirects of this build, never the index.
    """
    if config.link_history.lower() == "none":
        return None
    if config.link_history:
        path = Path(app.confdir, config.link_history)
    else:
        path = Path(app.doctreedir) / HISTORY_FILE
    if app.builder.name == "singlehtml":
        # One page without the orphans: its own history, so an html build
        # sharing the doctrees does not see the orphans' passages vanish.
        path = path.with_name(f"{path.stem}-singlehtml{path.suffix}")
    try:
        history = LinkHistory.load(path)
        moved = update(history, records, lambda d: page_url(app.builder, d))
    except Exception as error:
        logger.warning(
            "ragcite: the link history %s could not be followed (%s: %s); old "
            "links are not redirected by this build.",
            path,
            type(error).__name__,
            error,
            type="ragcite",
            subtype="links",
        )
        return None
    if moved:
        logger.info("ragcite: %d old passage links follow their moved text", len(moved))
    return moved, history, path


def _save_history(history: LinkHistory, path: Path) -> None:
    try:
        history.save(path)
    except OSError as error:
        logger.warning(
            "ragcite: could not write the link history %s (%s); this build's "
            "passages will not be recognised after the next edit.",
            path,
            error,
            type="ragcite",
            subtype="links",
        )


def _write_embeddings(
    app: Sphinx, config: RagciteConfig, records: list[Record], writer: IndexWriter
) -> dict[str, Any] | None:
    folder = config.embedding_model
    if folder:
        folder = str(Path(app.confdir, folder))
    try:
        model = Model(model_files(folder or None), config.embedding_max_tokens)
    except ModelNotFoundError as error:
        logger.warning(
            "ragcite: %s The index is written without dense embeddings (BM25 only).",
            error,
            type="ragcite",
            subtype="model",
        )
        return None
    try:
        return _embed(app, config, records, model, writer)
    except Exception as error:
        logger.warning(
            "ragcite: embedding the passages failed (%s: %s). The index is "
            "written without dense embeddings (BM25 only).",
            type(error).__name__,
            error,
            type="ragcite",
            subtype="model",
        )
        return None


class Model:
    """The encoder, loaded the first time the cache lacks a vector: a build
    whose vectors are all cached never starts onnxruntime."""

    def __init__(
        self, files: ModelFiles, max_tokens: int, embedder: Embedder | None = None
    ) -> None:
        self.files = files
        self.max_tokens = max_tokens
        self.cache_key = cache_key(files.model_id, max_tokens)
        self._embedder = embedder
        #: seconds spent loading it (None: never loaded)
        self.load_seconds: float | None = None

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            started = time.perf_counter()
            self._embedder = Embedder(self.files, max_tokens=self.max_tokens)
            self.load_seconds = time.perf_counter() - started
        return self._embedder


def _embed(
    app: Sphinx,
    config: RagciteConfig,
    records: list[Record],
    model: Model,
    writer: IndexWriter,
) -> dict[str, Any]:
    cache = EmbeddingCache(
        resolve_dir(config.cache_dir, app.confdir, app.doctreedir),
        model.cache_key,
        None,
        config.cache_max_mb << 20,
    )
    texts = [indexed_text(r) for r in records]
    keys = [text_key(t) for t in texts]
    started = time.perf_counter()
    split: list[list[Sentence]] = []
    pooled: list[list[tuple[bytes, tuple[int, int]]]] | None = None
    if config.sentence_vectors:
        # The same split and text the answer engine uses (record["text"]).
        split = [split_sentences(r["text"]) for r in records]
        if config.sentence_pooling == "passage":
            pooled = [
                [(_pooled_key(t, s), _in_indexed(r, s)) for s in sentences]
                for t, r, sentences in zip(texts, records, split, strict=True)
            ]
    with stages.of(app).timed("embed passages"):
        ran = _run_encoder(app, model, cache, texts, keys, pooled, "passages")
    codes, scales = cache.stack(keys)
    writer.add("embeddings", "embeddings.npy", npy_bytes(codes))
    writer.add("embedding_scales", "embedding_scales.npy", npy_bytes(scales))
    info: dict[str, Any] = {
        "model": model.files.model_id,
        "dim": int(codes.shape[1]),
        "dtype": "int8",
        "scale_dtype": "float32",
        "max_tokens": model.max_tokens,
        "pooling": "mean",
        "normalized": True,
        "embedded": ran,
    }
    if config.sentence_vectors:
        info.update(_write_sentences(app, model, cache, split, pooled, writer))
    if model.load_seconds is not None:  # inside "embed ...": moved to its own stage
        seconds = stages.of(app).seconds
        first = "embed passages" if ran else "embed sentences"
        seconds[first] -= model.load_seconds
        seconds["load model"] += model.load_seconds
    logger.info(
        "ragcite: embedded %d passages and %d sentences on their own in %.1f s "
        "(%d passages and %d sentences from the cache)",
        ran,
        info.get("sentences_embedded", 0),
        time.perf_counter() - started,
        len(texts) - ran,
        info.get("sentences", 0) - info.get("sentences_embedded", 0),
    )
    _keep(cache)
    if not dense_search(config_text(app.config.language) or None, model):
        info["search"] = False
        logger.info(
            "ragcite: the book's language (%s) is written without spaces and "
            "the encoder %s is English: on the Chinese dev set its vectors "
            "lowered retrieval (top passage right 0.25 hybrid against 0.64 "
            "with BM25 alone), so BM25 alone ranks passages and the vectors "
            "only score sentences. Set ragcite_embedding_model to a "
            "multilingual model to search with it.",
            app.config.language,
            model.files.model_id,
        )
    return info


def dense_search(language: str | None, model: Model) -> bool:
    """Whether the dense vectors rank passages in hybrid search.

    Not for a CJK book with the shipped English encoder: measured on
    benchmarks/qa/xuance_zh.jsonl (BM25 alone: top passage right 0.640, in
    the top 3 0.840; fused with the English vectors: 0.253, 0.413; the
    vectors alone 0.080). An encoder the author chose is trusted.
    """
    return not (
        language_code(language) in CJK_LANGUAGES
        and model.files.model_id == DEFAULT_MODEL_ID
    )


def _write_sentences(
    app: Sphinx,
    model: Model,
    cache: EmbeddingCache,
    split: list[list[Sentence]],
    pooled: list[list[tuple[bytes, tuple[int, int]]]] | None,
    writer: IndexWriter,
) -> dict[str, Any]:
    """The sentence matrix; pooled sentences are in the cache already, but for
    those their passage's truncation cut off, which run on their own."""
    flat = [s for sentences in split for s in sentences]
    if pooled is None:
        keys = [text_key(s.text) for s in flat]
    else:
        keys = [key for row in pooled for key, _ in row]
    cache.load(keys)
    alone = {k: s.text for k, s in zip(keys, flat, strict=True) if k not in cache.rows}
    with stages.of(app).timed("embed sentences"):
        ran = _run_encoder(
            app, model, cache, list(alone.values()), list(alone), None, "sentences"
        )
    offsets = np.zeros(len(split) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(s) for s in split])
    codes, scales = cache.stack(keys)
    writer.add(CODES, "sentence_embeddings.npy", npy_bytes(codes))
    writer.add(SCALES, "sentence_scales.npy", npy_bytes(scales))
    writer.add(OFFSETS, "sentence_offsets.npy", npy_bytes(offsets))
    return {
        "sentences": len(flat),
        "sentences_embedded": ran,
        "sentence_pooling": "passage" if pooled is not None else "separate",
    }


def _keep(cache: EmbeddingCache) -> None:
    """Save the cache for the next build; a cache that fails costs only that."""
    if cache.damaged:
        logger.warning(
            "ragcite: %d damaged file(s) in the embedding cache %s were ignored "
            "and their vectors computed again (first: %s).",
            len(cache.damaged),
            cache.folder,
            cache.damaged[0].name,
            type="ragcite",
            subtype="cache",
        )
    try:
        cache.save()
    except Exception as error:
        logger.warning(
            "ragcite: could not keep the embeddings in %s for the next build (%s); "
            'set ragcite_cache_dir to a writable folder, or to "none" to keep '
            "them with the doctrees.",
            cache.root,
            error,
            type="ragcite",
            subtype="cache",
        )


def _pooled_key(text: str, sentence: Sentence) -> bytes:
    """A pooled sentence's vector depends on its whole passage, not its own text."""
    return text_key(f"pooled\x1f{sentence.start}:{sentence.end}\x1f{text}")


def _in_indexed(record: Record, sentence: Sentence) -> tuple[int, int]:
    """*sentence*'s span of ``record["text"]`` as a span of ``indexed_text(record)``."""
    shift = len(" ".join(record["heading_path"])) + 1
    return sentence.start + shift, sentence.end + shift


def _run_encoder(
    app: Sphinx,
    model: Model,
    cache: EmbeddingCache,
    texts: list[str],
    keys: list[bytes],
    pooled: list[list[tuple[bytes, tuple[int, int]]]] | None,
    what: str,
) -> int:
    """Encode the texts the cache lacks in one length-sorted pass; how many ran.

    With *pooled* (per text: each sentence's cache key and span), the pass
    also keeps each sentence's vector pooled from the text's token vectors; a
    sentence the truncation cut off is left out, for a separate pass.
    """
    cache.load(keys + [k for row in pooled or () for k, _ in row])
    todo = [
        i
        for i, key in enumerate(keys)
        if key not in cache.rows
        or (pooled is not None and any(k not in cache.rows for k, _ in pooled[i]))
    ]
    if not todo:
        return 0
    spans = None if pooled is None else [[span for _, span in pooled[i]] for i in todo]
    for batch in status_iterator(
        model.embedder.batches([texts[i] for i in todo], spans),
        f"ragcite: embedding {what}... ",
        "darkgreen",
        -(-len(todo) // BATCH),
        app.verbosity,
        stringify_func=lambda b: f"{len(b.rows)} {what}",
    ):
        rows = [todo[row] for row in batch.rows]
        cache.put_many([keys[i] for i in rows], batch.vectors)
        if pooled is None:
            continue
        for i, vectors in zip(rows, batch.spans, strict=True):
            found: list[tuple[bytes, np.ndarray]] = [
                (k, v)
                for (k, _), v in zip(pooled[i], vectors, strict=True)
                if v is not None
            ]
            if found:
                cache.put_many([k for k, _ in found], np.stack([v for _, v in found]))
    return len(todo)
