"""Question -> retrieval -> generation -> verification -> the answer JSON."""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np

from sphinx_ragcite.answer import ranker
from sphinx_ragcite.answer.confidence import answer_confidence, citation_confidence
from sphinx_ragcite.answer.evidence import Evidence, SentenceVectors, build_evidence
from sphinx_ragcite.answer.extractive import compose, fit, rank_sentences
from sphinx_ragcite.answer.grounding import Claim, Verified, support, verify
from sphinx_ragcite.answer.llm import generate
from sphinx_ragcite.answer.prompt import fit_messages
from sphinx_ragcite.answer.sentences import content_words, numbers, strip_markup
from sphinx_ragcite.answer.units import question_kind
from sphinx_ragcite.contracts import (
    Answer,
    Citation,
    citation_time,
    confidence_level,
    make_snippet,
    timestamp,
)
from sphinx_ragcite.text import Sentence

if TYPE_CHECKING:
    from collections.abc import Generator as EventStream
    from collections.abc import Sequence

    from sphinx_ragcite.answer.llm import Cancel, Generator
    from sphinx_ragcite.answer.prompt import Quotable
    from sphinx_ragcite.contracts import AnswerMode, Fusion, GeneratorName, ServedRecord
    from sphinx_ragcite.retrieval.site import Filters, SearchableSite

logger = logging.getLogger(__name__)

NOT_FOUND = "I could not find an answer to this in the book."
#: Characters of a selection used to rank sentences in selection mode.
SELECTION_CONTEXT = 1000
MAX_TOKENS = 120
SEE_ALSO = 3
#: What a see-also entry keeps of a record (site/version: several sites served).
SEE_ALSO_FIELDS: tuple[str, ...] = (
    *("passage_id", "url", "chapter", "section", "snippet"),
    *("site", "version"),
)


@dataclass(frozen=True)
class Event:
    """A step of a streamed answer: ``retrieval``, ``token`` or ``final``."""

    kind: Literal["retrieval", "token", "final"]
    data: Any


@dataclass
class AnswerEngine:
    """Answers questions over one loaded site; safe to share between threads."""

    site: SearchableSite
    llm: Generator | None = None
    k: int = 6
    #: with several sites served: the one site asked and the version asked
    #: about, named on every answer (None: one site, or asked across sites)
    site_name: str | None = None
    site_version: str | None = None
    #: sentence vectors shared with other engines over the same embedder
    shared_sentences: SentenceVectors | None = None
    #: How the answer's passages are retrieved. An answer quotes the one
    #: unit it ranks best, so the passage ranked first matters most: BM25
    #: and dense scores mixed linearly put a right passage first more often
    #: than RRF (which a results list keeps, for its recall over the top
    #: ten). Held out, the ranker chose a right passage for .811 of the
    #: answerable dev-set questions, .792 with RRF (click .732 vs .659;
    #: benchmarks/train_answer_ranker.py).
    fusion: Fusion = "linear"

    @cached_property
    def sentences(self) -> SentenceVectors:
        if self.shared_sentences is not None:
            return self.shared_sentences
        return SentenceVectors(self.site.embedder)

    @cached_property
    def ranker(self) -> ranker.Ranker:
        return ranker.load_ranker()

    def answer(self, question: str, **options: Any) -> Answer:
        final = None
        for event in self.stream(question, **options):
            if event.kind == "final":
                final = event.data
        assert final is not None
        return final  # type: ignore[no-any-return]

    def stream(
        self,
        question: str,
        *,
        mode: AnswerMode = "book",
        selection: str | None = None,
        k: int | None = None,
        filters: Filters | None = None,
        generator: GeneratorName = "extractive",
        cancel: Cancel | None = None,
    ) -> EventStream[Event, None, None]:
        question = question.strip()
        started = time.perf_counter()
        embedder = self.site.embedder
        vector = embedder.embed([question])[0]
        k = k or self.k
        hits = self.site.search(
            question, k, fusion=self.fusion, filters=filters, query_vector=vector
        )
        rows = [h.row for h in hits]
        if mode == "selection" and selection:
            rows = _dedupe(self._rows_containing(selection) + rows)[:k]
        else:
            selection = None
        evidence = build_evidence(self.site, self.sentences, vector, rows, selection)
        timings = {"retrieval_ms": _ms(started)}
        yield Event("retrieval", _retrieved(evidence))

        generating = time.perf_counter()
        meta: dict[str, Any] = {"generator": "extractive", "model": "extractive"}
        chosen: list[ranker.Candidate] = []
        candidates: Sequence[Quotable]
        if selection:
            # "What does this mean?" carries no evidence of its own: the reader
            # chose the selection, so it is ranked against question + selection
            # and is never a reason to abstain.
            about = f"{question}\n{selection[:SELECTION_CONTEXT]}"
            candidates = rank_sentences(about, embedder.embed([about])[0], evidence)
            unanswerable = not candidates
        else:
            bm25 = [h.bm25 or 0.0 for h in hits]
            ranked = ranker.rank_units(
                question, vector, evidence, bm25, self.site.idf, self.ranker
            )
            answerable = ranker.answerability(ranked, self.ranker)
            chosen = candidates = ranker.choose(
                ranked, self.ranker, answerable, question_kind(question)
            )
            unanswerable = not chosen
            if ranked:
                meta["answerability"] = round(answerable, 4)
        if unanswerable:
            timings["generation_ms"] = _ms(generating)
            yield Event("final", self._abstain(question, mode, evidence, meta, timings))
            return
        text = ""
        if generator == "llm" and self.llm is not None:
            meta.update(generator="llm", model=self.llm.name)
            try:
                messages = fit_messages(
                    question, candidates, self.llm, max_tokens=MAX_TOKENS
                )
                pieces = generate(
                    self.llm, messages, max_tokens=MAX_TOKENS, cancel=cancel
                )
                for piece in pieces:
                    text += piece
                    yield Event("token", piece)
                cleaned = strip_markup(text)
                if cleaned != text:
                    meta["markup_removed"] = True
                    text = cleaned
            except Exception as error:  # any failure: the book still answers
                if cancel is not None and cancel.abandoned:
                    return  # nobody is listening
                logger.warning("generation failed, answering extractively: %s", error)
                meta["fallback"] = f"generation failed: {error}"
                meta["generator"] = "llm->extractive"
                text = ""
        elif generator == "llm":
            meta["fallback"] = "no language model loaded"
        timings["generation_ms"] = _ms(generating)

        verifying = time.perf_counter()
        verified = verify(text, evidence, embedder) if text else None
        shown_removed = None
        if verified is not None:
            meta["llm_answer"] = text
            problem = _rephrasing_problem(verified, chosen, evidence, question)
            if problem:
                meta["fallback"] = problem
                meta["generator"] = "llm->extractive"
                generated, verified = verified, None
        else:
            generated = None
        if verified is None:
            if chosen:
                verified = quote_units(chosen, evidence)
            else:
                text = compose(candidates, evidence)  # type: ignore[arg-type]
                verified = verify(text, evidence, embedder)
            # confidence is that of the answer shown: the quote, not the
            # generated sentences it replaced (still listed, for the record)
            shown_removed = len(verified.removed)
            if generated is not None:
                verified.removed[:0] = generated.removed
                verified.reattributed[:0] = generated.reattributed
                verified.unknown_markers[:0] = generated.unknown_markers
        timings["verification_ms"] = _ms(verifying)
        answer = self._assemble(
            question, vector, mode, evidence, verified, meta, shown_removed
        )
        answer.metadata.update(timings)
        yield Event("final", answer)

    def _rows_containing(self, selection: str) -> list[int]:
        """Passages the selected text lies in (found by BM25, confirmed by 5-grams)."""
        words = selection.lower().split()
        grams = {" ".join(words[i : i + 5]) for i in range(max(1, len(words) - 4))}
        rows = []
        for hit in self.site.search(selection, 10, mode="bm25"):
            text = " ".join(hit.passage["text"].lower().split())
            if any(g in text for g in grams):
                rows.append(hit.row)
        return rows

    def _assemble(
        self,
        question: str,
        vector: np.ndarray,
        mode: AnswerMode,
        evidence: list[Evidence],
        verified: Verified,
        meta: dict[str, Any],
        removed: int | None = None,
    ) -> Answer:
        numbers: dict[int, int] = {}
        quotes: dict[int, list[Sentence]] = {}
        supports: dict[int, float] = {}
        fits: dict[int, float] = {}
        asked = content_words(question)
        parts = []
        for claim in verified.claims:
            claim_fit = fit(asked, float(claim.vector @ vector), claim.text)
            marks = []
            for source in claim.sources:
                n = numbers.setdefault(source, len(numbers) + 1)
                marks.append(f"[{n}]")
                support = claim.supports[source]
                sentence = claim.quote or evidence[source].sentences[support.sentence]
                if sentence not in quotes.setdefault(source, []):
                    quotes[source].append(sentence)
                supports[source] = max(supports.get(source, 0.0), support.score)
                fits[source] = max(fits.get(source, 0.0), claim_fit)
            parts.append(f"{claim.text} {''.join(marks)}")
        stamp = timestamp(citation_time())
        citations = [
            _citation(
                n,
                evidence[source],
                quotes[source],
                fits[source],
                supports[source],
                stamp,
            )
            for source, n in sorted(numbers.items(), key=lambda item: item[1])
        ]
        confidence = answer_confidence(
            [c.confidence_score for c in citations],
            len(verified.claims),
            len(verified.removed) if removed is None else removed,
        )
        return Answer(
            question=question,
            mode=mode,
            answer=" ".join(parts),
            citations=citations,
            confidence=confidence,
            confidence_level=confidence_level(confidence),
            grounded=True,
            site=self.site_name,
            version=self.site_version,
            metadata={
                **meta,
                **_retrieved(evidence),
                "index_version": self.site.version,
                "removed": verified.removed,
                "reattributed": verified.reattributed,
                "unknown_markers": verified.unknown_markers,
            },
        )

    def _abstain(
        self,
        question: str,
        mode: AnswerMode,
        evidence: list[Evidence],
        meta: dict[str, Any],
        timings: dict[str, float],
    ) -> Answer:
        see_also = [
            {
                k: e.record[k]  # type: ignore[literal-required]
                for k in SEE_ALSO_FIELDS
                if k in e.record
            }
            for e in evidence
            if e.record is not None
        ][:SEE_ALSO]
        return Answer(
            question=question,
            mode=mode,
            answer=NOT_FOUND,
            citations=[],
            confidence=0.0,
            confidence_level="low",
            grounded=False,
            site=self.site_name,
            version=self.site_version,
            metadata={
                **meta,
                **timings,
                **_retrieved(evidence),
                "index_version": self.site.version,
                "see_also": see_also,
                "removed": [],
                "reattributed": [],
                "unknown_markers": [],
            },
        )


def _citation(
    n: int,
    item: Evidence,
    quotes: list[Sentence],
    fit: float,
    support: float,
    stamp: str,
) -> Citation:
    relevance = min(max(item.relevance, 0.0), 1.0)
    common: dict[str, Any] = {
        "n": n,
        "quote": " … ".join(q.text for q in quotes),
        "quote_spans": [(q.start, q.end) for q in quotes],
        "similarity_score": round(relevance, 4),
        "confidence_score": citation_confidence(fit, relevance, support),
        "grounded": True,
        "citation_date": stamp,
    }
    if item.record is None:
        return Citation(
            passage_id=item.key,
            url=None,
            chapter="User Selection",
            section="Selected Text",
            heading_path=[],
            snippet=make_snippet(item.text),
            source_type="selection",
            **common,
        )
    record = cast("ServedRecord", item.record)
    return Citation(
        passage_id=record["passage_id"],
        url=record["url"],
        chapter=record["chapter"],
        section=record["section"],
        heading_path=record["heading_path"],
        snippet=record["snippet"],
        source_type="book",
        site=record.get("site"),
        version=record.get("version"),
        **common,
    )


def _retrieved(evidence: list[Evidence]) -> dict[str, list[str]]:
    """``retrieved`` IDs; with several sites also ``retrieved_sites``, in step.

    A passage ID is unique only within its site: (site, ID) names a passage.
    """
    found: dict[str, list[str]] = {"retrieved": [e.key for e in evidence]}
    sites = [
        "" if e.record is None else cast("ServedRecord", e.record).get("site", "")
        for e in evidence
    ]
    if any(sites):
        found["retrieved_sites"] = sites
    return found


def quote_units(
    chosen: Sequence[ranker.Candidate], evidence: list[Evidence]
) -> Verified:
    """The chosen units as claims, each citing the passage it is quoted from.

    A quote is supported by construction; its support is still computed, as
    for any claim, so confidence means the same for every answer.
    """
    claims = []
    for candidate in chosen:
        unit, item = candidate.unit, evidence[candidate.evidence]
        vector = item.vectors[list(unit.sentence_indices())].mean(axis=0)
        vector = vector / max(float(np.linalg.norm(vector)), 1e-12)
        supports = [support(unit.text, vector, e) for e in evidence]
        quote = Sentence(item.text[unit.start : unit.end], unit.start, unit.end)
        text = defuse_markers(unit.text)
        claims.append(Claim(text, [unit.evidence], supports, vector, quote))
    return Verified(claims)


_BRACKETED_NUMBER = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")


def defuse_markers(text: str) -> str:
    """``x[0]`` in quoted code would read as a citation marker: a word joiner
    after the bracket keeps it as it looks and out of the marker syntax."""
    return _BRACKETED_NUMBER.sub("[\u2060\\1]", text)


_NEGATION = re.compile(r"\b(no|not|never|none|cannot|without)\b|n[’']t\b", re.I)


def _rephrasing_problem(
    verified: Verified,
    chosen: Sequence[ranker.Candidate],
    evidence: list[Evidence],
    question: str = "",
) -> str | None:
    """Why a generated answer may not replace the quote, or None if it may.

    The model may only say again, in its words, what the chosen units say,
    and join other evidence that verification accepts: every sentence
    verified, the chosen passages still cited, their numbers and most of
    their content words kept, no word that neither its sources nor the
    question has ("Bortz-compressed", "The answer is no to the question
    ..."), and no negation the quote does not make. Verification measures
    similarity, which a flipped or garbled sentence keeps.
    """
    if not verified.claims:
        return "no generated sentence was supported"
    if any(r["reason"] == "unsupported" for r in verified.removed):
        return "a generated sentence was not supported"
    needed = {c.evidence for c in chosen}
    cited = {source for claim in verified.claims for source in claim.sources}
    if not needed <= cited:
        return "the generated answer left out the passage that answers"
    said = " ".join(claim.text for claim in verified.claims)
    quoted = " ".join(c.text for c in chosen)
    if not numbers(quoted) <= numbers(said):
        return "the generated answer dropped a number"
    words = content_words(quoted)
    if words and len(words & content_words(said)) < 0.6 * len(words):
        return "the generated answer left out what the book says"
    sources = frozenset().union(*(evidence[source].words for source in cited))
    novel = content_words(said) - sources - content_words(question)
    if novel:
        unsaid = ", ".join(sorted(novel))
        return f"the generated answer says what its sources do not ({unsaid})"
    if _NEGATION.search(said) and not _NEGATION.search(quoted):
        return "the generated answer negates what the book says"
    return None


def _dedupe(rows: list[int]) -> list[int]:
    return list(dict.fromkeys(rows))


def _ms(since: float) -> float:
    return round(1000 * (time.perf_counter() - since), 2)
