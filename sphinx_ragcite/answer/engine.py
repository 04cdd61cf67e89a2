"""Question -> retrieval -> generation -> verification -> the answer JSON."""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np

from sphinx_ragcite.answer import ranker
from sphinx_ragcite.answer.confidence import (
    answer_confidence,
    answer_fit,
    citation_confidence,
)
from sphinx_ragcite.answer.evidence import Evidence, SentenceVectors, build_evidence
from sphinx_ragcite.answer.grounding import Claim, Verified, support, verify
from sphinx_ragcite.answer.llm import generate
from sphinx_ragcite.answer.prompt import fit_messages
from sphinx_ragcite.answer.selection import (
    RankedSentence,
    compose,
    passages_holding,
    rank_sentences,
)
from sphinx_ragcite.answer.sentences import content_words, numbers, strip_markup
from sphinx_ragcite.answer.spec import (
    BRACKETED_NUMBER,
    MAYBE_HERE,
    NOT_FOUND,
    SEE_ALSO,
    SEE_ALSO_FIELDS,
    SHOWN_FIELDS,
)
from sphinx_ragcite.answer.units import question_kind
from sphinx_ragcite.contracts import (
    Answer,
    Citation,
    ShownPassage,
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
    from sphinx_ragcite.contracts import (
        AnswerMode,
        Fusion,
        GeneratorName,
        Hit,
        ServedRecord,
    )
    from sphinx_ragcite.retrieval.searchable import Filters, SearchableSite

logger = logging.getLogger(__name__)

#: Tokens the model may write (set by hand: room for the one or two short
#: sentences the prompt asks for).
MAX_TOKENS = 120


@dataclass(frozen=True)
class Event:
    """A step of a streamed answer: ``retrieval``, ``token`` or ``final``."""

    kind: Literal["retrieval", "token", "final"]
    data: Any


@dataclass(frozen=True)
class Choice:
    """What an answer may quote: the units the ranker chose, or (about a
    selection) the sentences ranked; nothing when the book does not answer."""

    units: list[ranker.Candidate] = field(default_factory=list)
    sentences: list[RankedSentence] = field(default_factory=list)
    #: every unit ranked, most likely first (book mode)
    candidates: list[ranker.Candidate] = field(default_factory=list)
    #: calibrated probability that the best unit's passage answers
    confidence: float = 0.0

    @property
    def quotable(self) -> Sequence[Quotable]:
        return self.units or self.sentences


@dataclass
class AnswerEngine:
    """Answers questions over one loaded site; safe to share between threads."""

    site: SearchableSite
    llm: Generator | None = None
    #: Passages retrieved (set by hand with the first engine; the answer
    #: ranker is trained on answers from this many, so retrain on a change).
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
    #: ten); ``tools/train_answer_ranker.py`` trains the ranker on
    #: passages retrieved this way.
    fusion: Fusion = "linear"

    @cached_property
    def sentences(self) -> SentenceVectors:
        if self.shared_sentences is not None:
            return self.shared_sentences
        return SentenceVectors(self.site.embedder)

    @cached_property
    def ranker(self) -> ranker.Ranker:
        """The ranker trained on the signals of the site's encoder."""
        embedding = self.site.manifest.embedding
        return ranker.load_ranker(encoder=embedding.encoder if embedding else None)

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
        """Retrieve, choose what answers (or abstain), generate, verify, assemble."""
        question = question.strip()
        started = time.perf_counter()
        vector = self.site.embedder.embed([question], kind="query")[0]
        if mode != "selection":
            selection = None
        hits, evidence = self._retrieve(
            question, vector, k or self.k, filters, selection
        )
        timings = {"retrieval_ms": _ms(started)}
        yield Event("retrieval", _retrieved(evidence))

        generating = time.perf_counter()
        meta: dict[str, Any] = {"generator": "extractive", "model": "extractive"}
        choice = self._choose(question, vector, hits, evidence, selection, meta)
        if not choice.quotable:
            timings["generation_ms"] = _ms(generating)
            yield Event(
                "final", self._abstain(question, mode, evidence, choice, meta, timings)
            )
            return
        text = yield from self._generate(question, choice, generator, cancel, meta)
        if text is None:
            return  # abandoned: nobody is listening
        timings["generation_ms"] = _ms(generating)

        verifying = time.perf_counter()
        verified, shown_removed = self._verify(text, question, choice, evidence, meta)
        timings["verification_ms"] = _ms(verifying)
        answer = self._assemble(
            question, vector, mode, evidence, verified, meta, shown_removed, choice
        )
        answer.metadata.update(timings)
        yield Event("final", answer)

    def _retrieve(
        self,
        question: str,
        vector: np.ndarray,
        k: int,
        filters: Filters | None,
        selection: str | None,
    ) -> tuple[list[Hit], list[Evidence]]:
        """The *k* passages found, those a selection lies in first, as evidence."""
        hits = self.site.search(
            question, k, fusion=self.fusion, filters=filters, query_vector=vector
        )
        rows = [h.row for h in hits]
        if selection:
            rows = _dedupe(passages_holding(self.site, selection) + rows)[:k]
        evidence = build_evidence(self.site, self.sentences, vector, rows, selection)
        return hits, evidence

    def _choose(
        self,
        question: str,
        vector: np.ndarray,
        hits: Sequence[Hit],
        evidence: list[Evidence],
        selection: str | None,
        meta: dict[str, Any],
    ) -> Choice:
        """The units that answer (none: the book does not say), or the
        sentences ranked against a selection, which is never a reason to
        abstain: the reader chose it."""
        if selection:
            embedder = self.site.embedder
            ranked = rank_sentences(question, selection, embedder, evidence)
            return Choice(sentences=ranked)
        bm25 = [h.bm25 or 0.0 for h in hits]
        units = ranker.rank_units(
            question, vector, evidence, bm25, self.site.idf, self.ranker
        )
        answerable = ranker.answerability(units, self.ranker)
        confidence = self.ranker.calibrate(answerable) if units else 0.0
        kind = question_kind(question)
        if units:
            meta["answerability"] = round(answerable, 4)
        chosen = ranker.choose(units, self.ranker, confidence, kind)
        return Choice(units=chosen, candidates=units, confidence=confidence)

    def _generate(
        self,
        question: str,
        choice: Choice,
        generator: GeneratorName,
        cancel: Cancel | None,
        meta: dict[str, Any],
    ) -> EventStream[Event, None, str | None]:
        """The model's answer, its tokens streamed: "" when the quote is the
        answer (no model asked, or it failed), None when abandoned."""
        if generator != "llm" or self.llm is None:
            if generator == "llm":
                meta["fallback"] = "no language model loaded"
            return ""
        meta.update(generator="llm", model=self.llm.name)
        text = ""
        try:
            messages = fit_messages(
                question, choice.quotable, self.llm, max_tokens=MAX_TOKENS
            )
            pieces = generate(self.llm, messages, max_tokens=MAX_TOKENS, cancel=cancel)
            for piece in pieces:
                text += piece
                yield Event("token", piece)
            cleaned = strip_markup(text)
        except Exception as error:  # any failure: the book still answers
            if cancel is not None and cancel.abandoned:
                return None
            logger.warning("generation failed, answering extractively: %s", error)
            meta["fallback"] = f"generation failed: {error}"
            meta["generator"] = "llm->extractive"
            return ""
        if cleaned != text:
            meta["markup_removed"] = True
        return cleaned

    def _verify(
        self,
        text: str,
        question: str,
        choice: Choice,
        evidence: list[Evidence],
        meta: dict[str, Any],
    ) -> tuple[Verified, int | None]:
        """The generated answer verified, or the quote when it may not stand;
        and how many claims the answer shown lost (None: all removed ones)."""
        embedder = self.site.embedder
        generated = verify(text, evidence, embedder) if text else None
        if generated is not None:
            meta["llm_answer"] = text
            problem = _rephrasing_problem(generated, choice.units, evidence, question)
            if problem is None:
                return generated, None
            meta["fallback"] = problem
            meta["generator"] = "llm->extractive"
        if choice.units:
            quoted = quote_units(choice.units, evidence)
        else:
            quoted = verify(compose(choice.sentences, evidence), evidence, embedder)
        # confidence is that of the answer shown: the quote, not the
        # generated sentences it replaced (still listed, for the record)
        shown_removed = len(quoted.removed)
        if generated is not None:
            quoted.removed[:0] = generated.removed
            quoted.reattributed[:0] = generated.reattributed
            quoted.unknown_markers[:0] = generated.unknown_markers
        return quoted, shown_removed

    def _assemble(
        self,
        question: str,
        vector: np.ndarray,
        mode: AnswerMode,
        evidence: list[Evidence],
        verified: Verified,
        meta: dict[str, Any],
        removed: int | None = None,
        choice: Choice | None = None,
    ) -> Answer:
        text, citations = _cite(question, vector, evidence, verified)
        removed = len(verified.removed) if removed is None else removed
        if choice is not None and choice.units:
            # the calibrated gate, lowered when verification removed claims
            confidence = answer_confidence(
                [choice.confidence], len(verified.claims), removed
            )
        else:  # about a selection: the reader chose the passage
            confidence = answer_confidence(
                [c.confidence_score for c in citations], len(verified.claims), removed
            )
        return Answer(
            question=question,
            mode=mode,
            answer=text,
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
        choice: Choice,
        meta: dict[str, Any],
        timings: dict[str, float],
    ) -> Answer:
        """No claim: the passages that most likely hold the answer, when the
        best is likely enough; else word that the book does not cover it."""
        shown = _shown(choice.candidates, evidence, self.ranker)
        passages = (
            shown if shown and shown[0].confidence >= self.ranker.passages_at else []
        )
        confidence = passages[0].confidence if passages else choice.confidence
        return Answer(
            question=question,
            mode=mode,
            answer=MAYBE_HERE if passages else NOT_FOUND,
            citations=[],
            confidence=confidence,
            confidence_level=confidence_level(confidence),
            grounded=False,
            outcome="passages" if passages else "not_found",
            passages=passages,
            site=self.site_name,
            version=self.site_version,
            metadata={
                **meta,
                **timings,
                **_retrieved(evidence),
                "index_version": self.site.version,
                "see_also": _see_also(evidence),
                "removed": [],
                "reattributed": [],
                "unknown_markers": [],
            },
        )


def _shown(
    candidates: Sequence[ranker.Candidate],
    evidence: list[Evidence],
    model: ranker.Ranker,
) -> list[ShownPassage]:
    """The passages most likely to answer, each with its best unit quoted."""
    shown = []
    for confidence, best in ranker.passage_confidences(candidates, model):
        item = evidence[best.evidence]
        record = item.record
        if record is None:
            continue
        shown.append(
            ShownPassage(
                **{k: record[k] for k in SHOWN_FIELDS if k in record},  # type: ignore[literal-required]
                quote=item.text[best.unit.start : best.unit.end],
                quote_spans=[(best.unit.start, best.unit.end)],
                confidence=confidence,
            )
        )
    return shown


def _cite(
    question: str, vector: np.ndarray, evidence: list[Evidence], verified: Verified
) -> tuple[str, list[Citation]]:
    """The claims with their markers, numbered in order of first use, and the
    citations the markers name."""
    numbers: dict[int, int] = {}
    quotes: dict[int, list[Sentence]] = {}
    supports: dict[int, float] = {}
    fits: dict[int, float] = {}
    asked = content_words(question)
    parts = []
    for claim in verified.claims:
        claim_fit = answer_fit(asked, float(claim.vector @ vector), claim.text)
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
            n, evidence[source], quotes[source], fits[source], supports[source], stamp
        )
        for source, n in sorted(numbers.items(), key=lambda item: item[1])
    ]
    return " ".join(parts), citations


def _see_also(evidence: list[Evidence]) -> list[dict[str, Any]]:
    """The nearest passages, for an answer that abstains."""
    return [
        {
            k: e.record[k]  # type: ignore[literal-required]
            for k in SEE_ALSO_FIELDS
            if k in e.record
        }
        for e in evidence
        if e.record is not None
    ][:SEE_ALSO]


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


def defuse_markers(text: str) -> str:
    """``x[0]`` in quoted code would read as a citation marker: a word joiner
    after the bracket keeps it as it looks and out of the marker syntax."""
    return BRACKETED_NUMBER.sub("[\u2060\\1]", text)


_NEGATION = re.compile(r"\b(no|not|never|none|cannot|without)\b|n[’']t\b", re.I)
#: Share of the quote's content words a rephrasing must keep (set by hand).
KEPT_WORDS = 0.6


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
    if words and len(words & content_words(said)) < KEPT_WORDS * len(words):
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
