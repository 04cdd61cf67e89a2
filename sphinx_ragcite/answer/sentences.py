"""Passages -> sentences, and the content words and numbers claims are checked by."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from sphinx_ragcite.index.tokenize import tokenize, words

# Question words and fillers carry no evidence; on top of Lucene's stop words.
_FILLER = frozenset(
    tokenize(
        "what which who whom whose when where why how do does did should would "
        "could can may might must i you we my your our me us about much many "
        "long so than too very just also any some all each other more most use "
        "used using make makes made get gets one ones way ways"
    )
)
_ABBREVIATIONS = frozenset(
    {"e.g", "i.e", "etc", "vs", "approx", "dr", "mr", "mrs", "ms", "no", "fig",
     "cf", "ca", "al", "st", "eq"}
)  # fmt: skip
# A sentence starts with a capital or digit, or with a bracket: a marker such
# as [ch3-sec2-p4] after a full stop belongs to the sentence before it, which
# split_claims() restores; without the split the next sentence rides along.
_BOUNDARY = re.compile(r"(?<=[.!?…])[\"”’)]*\s+(?=\[|[\"“(]?[A-Z0-9])")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_MARKER = re.compile(
    r"\s*(?:\[[^\[\]\n]{1,80}\]|\((?:chapter|section|source)\b[^()\n]{0,80}\))",
    re.IGNORECASE,
)


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


#: Markers, bracketed or a parenthesised "(Chapter 5, Section 5.1.2)", that
#: the splitter left at the start of the next sentence.
_LEADING_MARKERS = re.compile(
    r"^(?:(?:\[[^\[\]\n]{1,80}\]|\((?:chapter|section|source)\b[^()\n]{0,80}\))"
    r"\s*)+",
    re.IGNORECASE,
)


def split_claims(text: str) -> list[str]:
    """Sentences of an answer, each keeping the markers written after it.

    ``"A. [1] B. [2]"`` -> ``["A. [1]", "B. [2]"]``: a marker belongs to the
    sentence it follows, even where the splitter put it at the next one's start.
    """
    claims: list[str] = []
    for sentence in split_sentences(text):
        piece = sentence.text
        lead = _LEADING_MARKERS.match(piece)
        if lead and claims:
            claims[-1] += " " + lead.group(0).strip()
            piece = piece[lead.end() :]
        if piece.strip():
            claims.append(piece.strip())
    return claims


_TAG = re.compile(r"<[^<>]{0,500}>")
_MD_LINK = re.compile(r"\]\([^()\s]{0,500}\)")
_SCHEME_URL = re.compile(r"\b(?:javascript|data|vbscript|file):\S*", re.IGNORECASE)


def strip_markup(text: str) -> str:
    """Answers are plain text: drop HTML tags, link targets and script URLs.

    The widget shows text with textContent anyway; this keeps markup a model
    wrote from reaching verification (and the answer) as if it were prose.
    """
    text = _TAG.sub(" ", text)
    text = _MD_LINK.sub("]", text)
    text = _SCHEME_URL.sub(" ", text)
    return re.sub(r"[ \t]{2,}", " ", text).strip()


@lru_cache(maxsize=4096)
def content_words(text: str) -> frozenset[str]:
    """Stems that carry meaning: what a claim and its evidence must share."""
    return frozenset(t for t in tokenize(text) if t not in _FILLER)


def numbers(text: str) -> frozenset[str]:
    return frozenset(n.replace(",", "") for n in _NUMBER.findall(text))


def strip_markers(text: str) -> str:
    """Remove ``[1]``-style markers (they are re-added after verification)."""
    return _MARKER.sub("", text).strip()


def word_count(text: str) -> int:
    return len(words(text))
