"""Selection mode: the passages a selection lies in, and the sentences to quote.

A question about a selection ("What does this mean?") says little of its own,
and the reader chose what it is about: the answer ranker
(:mod:`sphinx_ragcite.answer.ranker`), trained on questions that do say, is not
asked. Sentences of the evidence are ranked against question and selection
together by :func:`~sphinx_ragcite.answer.confidence.answer_fit` and their passage's
relevance, and the best one or two are quoted; selection mode never abstains.

Its numbers are those of the first answer engine, which ranked sentences this
way for every question and was measured on ``example_book/qa.jsonl``: the
weights by a grid search, the floor by ``tools/calibrate_grounding.py``
as it was then (git history); the rest were set by hand. Selection mode has
no question set of its own to measure them again. They are in
:mod:`sphinx_ragcite.answer.spec`, which the browser's engine shares.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sphinx_ragcite.answer.confidence import answer_fit
from sphinx_ragcite.answer.sentences import content_words, word_count
from sphinx_ragcite.answer.spec import (
    HOLDING_SEARCH,
    HOLDING_WORDS,
    OTHER_PASSAGE_SHARE,
    PASSAGE_WEIGHT,
    RANK_BONUS,
    REDUNDANT,
    SECOND_FLOOR,
    SECOND_SHARE,
    SELECTION_CONTEXT,
    SELECTION_MAX_SENTENCES,
    SELECTION_MAX_WORDS,
    SELECTION_MIN_WORDS,
)
from sphinx_ragcite.answer.units import looks_like_code

if TYPE_CHECKING:
    from sphinx_ragcite.answer.evidence import Evidence
    from sphinx_ragcite.encoder import Embedder
    from sphinx_ragcite.retrieval.searchable import SearchableSite


@dataclass(frozen=True)
class RankedSentence:
    """A sentence of the evidence, scored against question and selection."""

    #: fit plus the passage's relevance: the order sentences are quoted in
    score: float
    #: fit plus a bonus for the passage's retrieval rank (which carries
    #: BM25's evidence): decides whether a second sentence is quoted
    standing: float
    evidence: int
    sentence: int
    text: str


def passages_holding(site: SearchableSite, selection: str) -> list[int]:
    """Rows of the passages the selected text lies in (found by BM25, confirmed
    by a run of :data:`HOLDING_WORDS` words)."""
    words = selection.lower().split()
    n = HOLDING_WORDS
    grams = {" ".join(words[i : i + n]) for i in range(max(1, len(words) - n + 1))}
    rows = []
    for hit in site.search(selection, HOLDING_SEARCH, mode="bm25"):
        text = " ".join(hit.passage["text"].lower().split())
        if any(g in text for g in grams):
            rows.append(hit.row)
    return rows


def rank_sentences(
    question: str, selection: str, embedder: Embedder, evidence: list[Evidence]
) -> list[RankedSentence]:
    """Every sentence of the evidence worth quoting, best first."""
    about = f"{question}\n{selection[:SELECTION_CONTEXT]}"
    vector = embedder.embed([about], kind="query")[0]
    asked = content_words(about)
    out = []
    for e, item in enumerate(evidence):
        if not len(item.sentences):
            continue
        sims = item.vectors @ vector
        prior = PASSAGE_WEIGHT * item.relevance
        for s, sentence in enumerate(item.sentences):
            if word_count(sentence.text) < SELECTION_MIN_WORDS or looks_like_code(
                sentence.text
            ):
                continue
            value = answer_fit(asked, float(sims[s]), sentence.text)
            bonus = RANK_BONUS / max(item.rank, 1)
            out.append(
                RankedSentence(value + prior, value + bonus, e, s, sentence.text)
            )
    out.sort(key=lambda c: (-c.score, c.evidence, c.sentence))
    return out


def compose(ranked: list[RankedSentence], evidence: list[Evidence]) -> str:
    """The best sentences, each followed by the marker of its evidence."""
    chosen: list[RankedSentence] = []
    words = 0
    for candidate in ranked:
        if len(chosen) == SELECTION_MAX_SENTENCES:
            break
        if chosen and (
            candidate.score < SECOND_SHARE * chosen[0].score
            or candidate.standing < SECOND_FLOOR
        ):
            break
        if (
            chosen
            and candidate.evidence != chosen[0].evidence
            and candidate.score < OTHER_PASSAGE_SHARE * chosen[0].score
        ):
            continue  # another passage must be nearly as good to be cited too
        size = word_count(candidate.text)
        if chosen and words + size > SELECTION_MAX_WORDS:
            continue
        vector = evidence[candidate.evidence].vectors[candidate.sentence]
        if any(
            float(evidence[c.evidence].vectors[c.sentence] @ vector) > REDUNDANT
            for c in chosen
        ):
            continue
        chosen.append(candidate)
        words += size
    return " ".join(f"{c.text} [{c.evidence + 1}]" for c in chosen)
