"""Confidence in [0, 1] per citation and per answer.

Seed 004's rule maps retrieval relevance to a base (0.5/0.7/0.9) and adds 0.1
for a grounded citation. MiniLM cosines live on another scale and every
citation we return is verified, so the rule is refitted as a logistic curve
over three signals: how well the cited claim answers the question
(:func:`answer_fit`), how relevant the passage is to the question, and the
claim's verified support.
tools/calibrate_grounding.py fits it on example_book/qa.jsonl (label: the
cited passage is a gold passage or contains the gold answer) and prints how
the confidence bands relate to actual correctness. Its weights (``FIT_*``,
``BIAS``, ``W_*``) are in :mod:`sphinx_ragcite.answer.spec`, which the
browser's engine shares.
"""

from __future__ import annotations

import math

from sphinx_ragcite.answer.sentences import content_words
from sphinx_ragcite.answer.spec import (
    BIAS,
    FIT_OVERLAP,
    FIT_SIMILARITY,
    W_FIT,
    W_RELEVANCE,
    W_SUPPORT,
)


def answer_fit(
    question_words: frozenset[str], similarity: float, sentence: str
) -> float:
    """How well a sentence answers a question (*similarity*: their cosine)."""
    overlap = (
        len(question_words & content_words(sentence)) / len(question_words)
        if question_words
        else 0.0
    )
    return FIT_SIMILARITY * similarity + FIT_OVERLAP * overlap


def citation_confidence(fit: float, relevance: float, support: float) -> float:
    z = BIAS + W_FIT * fit + W_RELEVANCE * relevance + W_SUPPORT * support
    return round(1.0 / (1.0 + math.exp(-z)), 4)


def answer_confidence(citations: list[float], kept: int, removed: int) -> float:
    """Mean citation confidence, lowered when verification had to remove claims."""
    if not citations or not kept:
        return 0.0
    mean = sum(citations) / len(citations)
    return round(mean * math.sqrt(kept / (kept + removed)), 4)
