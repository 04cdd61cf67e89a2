"""Text contracts both sides share: the BM25 tokenizer and the sentence splitter.

The index stores both results (BM25 terms, sentence offsets of the sentence
vectors), so the build and the query side must cut text the same way. The
browser (``js/tokenize.js``) implements the tokenizer from the spec this
module writes into the index, so Python and JS produce identical tokens.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import Stemmer

#: Lucene's English stop words, as bm25s ships them.
STOPWORDS = (
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in",
    "into", "is", "it", "no", "not", "of", "on", "or", "such", "that", "the",
    "their", "then", "there", "these", "they", "this", "to", "was", "will",
    "with",
)  # fmt: skip

# ``[^\W_]`` is Python's spelling of JS's ``[\p{L}\p{N}]``: letters and numbers.
_TOKEN = re.compile(r"[^\W_]+")
_STOP = frozenset(STOPWORDS)

SPEC: dict[str, Any] = {
    "normalize": "NFKC",
    "lowercase": True,
    "pattern": r"[\p{L}\p{N}]+",
    "stopwords": list(STOPWORDS),
    "stemmer": "snowball-english",
}


@lru_cache(maxsize=1)
def _stemmer() -> Stemmer.Stemmer:
    return Stemmer.Stemmer("english")


def words(text: str) -> list[str]:
    """Normalised, lower-cased words before stop-word removal and stemming."""
    return _TOKEN.findall(unicodedata.normalize("NFKC", text).lower())


def tokenize(text: str) -> list[str]:
    return _stemmer().stemWords([w for w in words(text) if w not in _STOP])  # type: ignore[no-any-return]


_ABBREVIATIONS = frozenset(
    {"e.g", "i.e", "etc", "vs", "approx", "dr", "mr", "mrs", "ms", "no", "fig",
     "cf", "ca", "al", "st", "eq"}
)  # fmt: skip
# A sentence starts with a capital or digit, or with a bracket: a marker such
# as [ch3-sec2-p4] after a full stop belongs to the sentence before it, which
# split_claims() restores; without the split the next sentence rides along.
_BOUNDARY = re.compile(r"(?<=[.!?…])[\"”’)]*\s+(?=\[|[\"“(]?[A-Z0-9])")


@dataclass(frozen=True)
class Sentence:
    text: str
    start: int
    end: int


def split_sentences(text: str) -> list[Sentence]:
    """Sentences of prose; each line of a list, table or code block on its own."""
    out: list[Sentence] = []
    offset = 0
    for line in text.split("\n"):
        start = 0
        for match in _BOUNDARY.finditer(line):
            before = line[start : match.start()].rstrip('"”’)')
            last = before.rsplit(None, 1)[-1].rstrip(".").lower() if before else ""
            if last in _ABBREVIATIONS or re.fullmatch(r"[a-z]", last):
                continue
            _add(out, line, start, match.start(), offset)
            start = match.end()
        _add(out, line, start, len(line), offset)
        offset += len(line) + 1
    return out


def _add(out: list[Sentence], line: str, start: int, end: int, offset: int) -> None:
    piece = line[start:end]
    stripped = piece.strip()
    if len(stripped) < 2 or not any(c.isalnum() for c in stripped):
        return
    lead = len(piece) - len(piece.lstrip())
    begin = offset + start + lead
    out.append(Sentence(stripped, begin, begin + len(stripped)))
