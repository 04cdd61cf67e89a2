"""The extractive generator: the retrieved sentences that best answer the question.

Always available (no LLM), grounded by construction, and the fallback whenever
the LLM is missing, slow or fails verification.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sphinx_ragcite.answer.sentences import content_words, word_count

if TYPE_CHECKING:
    import numpy as np

    from sphinx_ragcite.answer.evidence import Evidence

#: Weights of a sentence's similarity to the question, its share of the
#: question's content words, and its passage's similarity to the question;
#: chosen by grid search on example_book/qa.jsonl (first citation precision
#: 0.90 -> 0.93 over the first version's rank prior).
W_SIMILARITY = 0.55
W_OVERLAP = 0.35
W_PASSAGE = 0.5
#: Rank bonus in answerability: with it, abstention keeps 91% of answerable
#: questions at 80% abstention on unanswerable ones (86% without).
W_RANK = 0.1
#: Below this best answerability the book is taken not to answer the question.
#: Calibrated on example_book/qa.jsonl (benchmarks/calibrate_grounding.py).
ABSTAIN_THRESHOLD = 0.54
#: Sentences more similar than this to one already chosen add nothing.
REDUNDANT = 0.85


@dataclass(frozen=True)
class Candidate:
    """A sentence of the evidence (selection mode ranks sentences, not units)."""

    score: float
    #: how well the sentence answers, plus a bonus for its passage's
    #: retrieval rank (which carries BM25's evidence): decides abstention
    answerability: float
    evidence: int
    sentence: int
    text: str


def fit(question_words: frozenset[str], similarity: float, sentence: str) -> float:
    """How well a sentence answers a question, before any rank prior."""
    overlap = (
        len(question_words & content_words(sentence)) / len(question_words)
        if question_words
        else 0.0
    )
    return W_SIMILARITY * similarity + W_OVERLAP * overlap


def rank_sentences(
    question: str, vector: np.ndarray, evidence: list[Evidence]
) -> list[Candidate]:
    """Every sentence of the evidence, best answer first."""
    asked = content_words(question)
    out = []
    for e, item in enumerate(evidence):
        if not len(item.sentences):
            continue
        sims = item.vectors @ vector
        prior = W_PASSAGE * item.relevance
        for s, sentence in enumerate(item.sentences):
            if word_count(sentence.text) < 4 or _looks_like_code(sentence.text):
                continue
            value = fit(asked, float(sims[s]), sentence.text)
            bonus = W_RANK / max(item.rank, 1)
            out.append(Candidate(value + prior, value + bonus, e, s, sentence.text))
    out.sort(key=lambda c: (-c.score, c.evidence, c.sentence))
    return out


def _looks_like_code(text: str) -> bool:
    symbols = sum(
        1 for c in text if not (c.isalnum() or c.isspace() or c in ".,;:'\"()-%°")
    )
    return symbols > 0.15 * len(text)


def answerability(candidates: list[Candidate]) -> float:
    return max((c.answerability for c in candidates), default=0.0)


def compose(
    candidates: list[Candidate],
    evidence: list[Evidence],
    *,
    max_sentences: int = 2,
    max_words: int = 80,
) -> str:
    """The best sentences, each followed by the marker of its evidence."""
    chosen: list[Candidate] = []
    words = 0
    for candidate in candidates:
        if len(chosen) == max_sentences:
            break
        if chosen and (
            candidate.score < 0.9 * chosen[0].score
            or candidate.answerability < ABSTAIN_THRESHOLD
        ):
            break
        if (
            chosen
            and candidate.evidence != chosen[0].evidence
            and candidate.score < 0.95 * chosen[0].score
        ):
            continue  # another passage must be nearly as good to be cited too
        size = word_count(candidate.text)
        if chosen and words + size > max_words:
            continue
        item = evidence[candidate.evidence]
        vector = item.vectors[candidate.sentence]
        if any(
            float(evidence[c.evidence].vectors[c.sentence] @ vector) > REDUNDANT
            for c in chosen
        ):
            continue
        chosen.append(candidate)
        words += size
    return " ".join(f"{c.text} [{c.evidence + 1}]" for c in chosen)
