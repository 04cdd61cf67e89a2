"""Post-generation attribution and verification, sentence by sentence.

The small model is trusted with neither facts nor citations: every sentence of
an answer is attributed to the evidence that supports it best and kept only if
that support clears :data:`SUPPORT_THRESHOLD`; markers the generator wrote are
only checked. Numbers are strict: a claim whose numbers are not all in the
cited text is unsupported by it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from sphinx_ragcite.answer.citations import parse_markers
from sphinx_ragcite.answer.sentences import (
    content_words,
    numbers,
    split_claims,
    strip_markers,
)
from sphinx_ragcite.answer.spec import (
    SUPPORT_OVERLAP,
    SUPPORT_SIMILARITY,
    SUPPORT_THRESHOLD,
    TWIN_MARGIN,
)

if TYPE_CHECKING:
    from sphinx_ragcite.answer.evidence import Evidence
    from sphinx_ragcite.encoder import Embedder
    from sphinx_ragcite.text import Sentence


@dataclass(frozen=True)
class Support:
    score: float
    similarity: float
    overlap: float
    numbers_ok: bool
    sentence: int  # index of the best sentence of the evidence, -1 if none


def support(claim: str, vector: np.ndarray, evidence: Evidence) -> Support:
    words = content_words(claim)
    overlap = len(words & evidence.words) / len(words) if words else 0.0
    numbers_ok = numbers(claim) <= evidence.numbers
    if len(evidence.sentences):
        sims = evidence.vectors @ vector
        best = int(np.argmax(sims))
        similarity = float(sims[best])
    else:
        best, similarity = -1, 0.0
    score = SUPPORT_SIMILARITY * max(similarity, 0.0) + SUPPORT_OVERLAP * overlap
    return Support(score if numbers_ok else 0.0, similarity, overlap, numbers_ok, best)


@dataclass
class Claim:
    text: str
    sources: list[int]  # indices into the evidence list, best first
    supports: list[Support]
    vector: np.ndarray
    #: what to quote from the first source, when not its best sentence
    quote: Sentence | None = None


@dataclass
class Verified:
    claims: list[Claim]
    removed: list[dict[str, Any]] = field(default_factory=list)
    reattributed: list[dict[str, Any]] = field(default_factory=list)
    unknown_markers: list[str] = field(default_factory=list)


def _selection_twins(
    source: int, supports: list[Support], evidence: list[Evidence]
) -> list[int]:
    """A claim from the reader's selection also cites the book passage holding
    it (and the other way round), when that supports it as well."""
    if not any(e.is_selection for e in evidence):
        return []
    best = supports[source].score
    return [
        j
        for j, item in enumerate(evidence)
        if j != source
        and item.is_selection != evidence[source].is_selection
        and supports[j].score >= best - TWIN_MARGIN
    ][:1]


def verify(
    text: str,
    evidence: list[Evidence],
    embedder: Embedder,
    *,
    threshold: float = SUPPORT_THRESHOLD,
) -> Verified:
    """Keep the sentences of *text* that some evidence supports, attributed."""
    pieces = split_claims(text)
    parsed = [parse_markers(piece, evidence) for piece in pieces]
    claims_text = [strip_markers(piece) for piece in pieces]
    keep = [i for i, c in enumerate(claims_text) if content_words(c)]
    vectors = list(embedder.embed([claims_text[i] for i in keep])) if keep else []
    result = Verified([])
    for i, (_, unknown) in enumerate(parsed):
        result.unknown_markers.extend(unknown)
        if i not in keep and claims_text[i]:
            result.removed.append(
                {
                    "sentence": claims_text[i],
                    "reason": "no content",
                    "best_support": 0.0,
                }
            )
    for i, vector in zip(keep, vectors, strict=True):
        claim, claimed = claims_text[i], parsed[i][0]
        supports = [support(claim, vector, e) for e in evidence]
        ranked = sorted(range(len(evidence)), key=lambda j: -supports[j].score)
        if not ranked or supports[ranked[0]].score < threshold:
            result.removed.append(
                {
                    "sentence": claim,
                    "reason": "unsupported",
                    "best_support": round(supports[ranked[0]].score, 3)
                    if ranked
                    else 0.0,
                }
            )
            continue
        confirmed = [j for j in claimed if supports[j].score >= threshold]
        if claimed and not confirmed:
            result.reattributed.append(
                {
                    "sentence": claim,
                    "from": [evidence[j].key for j in claimed],
                    "to": evidence[ranked[0]].key,
                }
            )
        sources = confirmed or [ranked[0]]
        sources += _selection_twins(sources[0], supports, evidence)
        result.claims.append(Claim(claim, sources, supports, vector))
    return result
