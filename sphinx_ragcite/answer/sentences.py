"""Passages -> sentences, and the content words and numbers claims are checked by."""

from __future__ import annotations

import re
from functools import lru_cache

from sphinx_ragcite.answer.spec import FILLER_WORDS, LEADING_MARKERS, MARKER, NUMBER
from sphinx_ragcite.text import MIXED, is_cjk, split_sentences, tokenize, words

_FILLER = frozenset(tokenize(" ".join(FILLER_WORDS)))


def split_claims(text: str) -> list[str]:
    """Sentences of an answer, each keeping the markers written after it.

    ``"A. [1] B. [2]"`` -> ``["A. [1]", "B. [2]"]``: a marker belongs to the
    sentence it follows, even where the splitter put it at the next one's start.
    """
    claims: list[str] = []
    for sentence in split_sentences(text):
        piece = sentence.text
        lead = LEADING_MARKERS.match(piece)
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
    """Stems that carry meaning: what a claim and its evidence must share.

    Chinese, Japanese and Korean runs give their character bigrams, as the
    index of a book in those languages holds them (English text is cut as
    the English index cuts it).
    """
    return frozenset(t for t in MIXED.tokenize(text) if t not in _FILLER)


def numbers(text: str) -> frozenset[str]:
    return frozenset(n.replace(",", "") for n in NUMBER.findall(text))


def strip_markers(text: str) -> str:
    """Remove ``[1]``-style markers (they are re-added after verification)."""
    return MARKER.sub("", text).strip()


def word_count(text: str) -> int:
    """Words of *text*; a run of CJK characters counts one per two characters."""
    counted = words(text)
    if not any(map(is_cjk, text)):
        return len(counted)
    return sum((len(w) + 1) // 2 if is_cjk(w[0]) else 1 for w in MIXED.words(text))
