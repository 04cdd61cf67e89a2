"""Retrieved passages (and a reader's selection) as sentences with vectors."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from sphinx_ragcite.answer.sentences import content_words, numbers
from sphinx_ragcite.contracts import USER_SELECTION
from sphinx_ragcite.text import Sentence, split_sentences

if TYPE_CHECKING:
    from collections.abc import Callable

    from sphinx_ragcite.contracts import PassageRecord
    from sphinx_ragcite.encoder import Embedder
    from sphinx_ragcite.retrieval.searchable import SearchableSite


@dataclass(frozen=True)
class Evidence:
    """One source an answer may cite: a book passage or the user's selection."""

    key: str
    record: PassageRecord | None
    text: str
    sentences: tuple[Sentence, ...]
    vectors: np.ndarray
    words: frozenset[str]
    numbers: frozenset[str]
    #: cosine of the question and the whole passage
    relevance: float
    rank: int

    @property
    def is_selection(self) -> bool:
        return self.key == USER_SELECTION


class SentenceVectors:
    """LRU of per-passage sentence vectors: popular passages are embedded once."""

    def __init__(self, embedder: Embedder, size: int = 4096) -> None:
        self.embedder = embedder
        self.size = size
        self._items: OrderedDict[str, tuple[tuple[Sentence, ...], np.ndarray]] = (
            OrderedDict()
        )
        self._lock = threading.Lock()

    def get(
        self, key: str, text: str, built: Callable[[], np.ndarray | None] | None = None
    ) -> tuple[tuple[Sentence, ...], np.ndarray]:
        """The sentences of *text* and their vectors; *built* gives the build's
        vectors, used when they match the split (same splitter, same text).
        Called only on a miss: a cached passage costs no dequantising."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        sentences = tuple(split_sentences(text))
        vectors = built() if built is not None else None
        if vectors is None or len(vectors) != len(sentences):
            vectors = (
                self.embedder.embed([s.text for s in sentences])
                if sentences
                else np.zeros((0, self.embedder.dim), dtype=np.float32)
            )
        with self._lock:
            self._items[key] = (sentences, vectors)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return sentences, vectors


def build_evidence(
    site: SearchableSite,
    cache: SentenceVectors,
    question_vector: np.ndarray,
    rows: list[int],
    selection: str | None = None,
) -> list[Evidence]:
    """Evidence in citation order: the selection first, then passages by rank."""
    items: list[Evidence] = []
    if selection:
        sentences = tuple(split_sentences(selection))
        vectors = (
            cache.embedder.embed([s.text for s in sentences])
            if sentences
            else np.zeros((0, cache.embedder.dim), dtype=np.float32)
        )
        whole = cache.embedder.embed([selection])[0]
        items.append(
            Evidence(
                USER_SELECTION,
                None,
                selection,
                sentences,
                vectors,
                content_words(selection),
                numbers(selection),
                float(whole @ question_vector),
                0,
            )
        )
    for rank, row in enumerate(rows, start=1):
        record = site.passages[row]
        # by content: the same text in two sites or versions is split once,
        # and one passage ID naming different texts in two sites never mixes.
        # The headings too: vectors pooled from the passage pass
        # (ragcite_sentence_pooling = "passage") depend on them, so the same
        # text under two headings has two sets of vectors.
        headings = "\x1f".join(record.get("heading_path") or ())
        sentences, vectors = cache.get(
            f"{record['content_hash']}:{len(record['text'])}:{headings}",
            record["text"],
            partial(site.sentences.of, row) if site.sentences is not None else None,
        )
        if site.vectors is not None:
            relevance = float(site.vectors[row] @ question_vector)
        else:  # a BM25-only index: its best sentence stands in for the passage
            relevance = (
                float((vectors @ question_vector).max()) if len(vectors) else 0.0
            )
        items.append(
            Evidence(
                record["passage_id"],
                record,
                record["text"],
                sentences,
                vectors,
                content_words(record["text"]),
                numbers(record["text"]),
                relevance,
                rank,
            )
        )
    return items
