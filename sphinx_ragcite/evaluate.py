"""QA files -> retrieval quality: recall@k, MRR@10 and nDCG@10 per mode.

A QA file is JSON Lines, one question per line::

    {"question": "...", "passage_ids": ["ch3-sec2-p4"], "answer": "..."}
    {"question": "...", "answer": "..."}          # relevant = contains answer
    {"question": "...", "passage_ids": [], "answer": null}   # unanswerable

Unanswerable questions are left out of retrieval metrics.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sphinx_ragcite.errors import RagciteError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sphinx_ragcite.answer.engine import AnswerEngine
    from sphinx_ragcite.contracts import Fusion, GeneratorName, SearchMode
    from sphinx_ragcite.retrieval.site import Site

CUTOFFS = (1, 5, 10)


@dataclass(frozen=True)
class Question:
    question: str
    passage_ids: tuple[str, ...]
    answer: str | None

    @property
    def answerable(self) -> bool:
        return self.answer is not None or bool(self.passage_ids)


def load_qa(path: str | Path) -> list[Question]:
    """Parse a QA file, naming the line of the first malformed entry."""
    questions = []
    try:
        lines = Path(path).read_text("utf-8").splitlines()
    except OSError as error:
        raise RagciteError(f"Cannot read QA file {path}: {error}") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            question = item["question"]
            ids = item.get("passage_ids") or []
            answer = item.get("answer")
            if not isinstance(question, str) or not question.strip():
                raise ValueError("'question' must be a non-empty string")
            if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
                raise ValueError("'passage_ids' must be a list of strings")
            if answer is not None and not isinstance(answer, str):
                raise ValueError("'answer' must be a string or null")
        except (ValueError, KeyError, TypeError) as error:
            raise RagciteError(f"{path}:{number}: bad QA line ({error})") from None
        questions.append(Question(question, tuple(ids), answer))
    return questions


def relevant_rows(site: Site, question: Question) -> set[int]:
    if question.passage_ids:
        rows = {site._rows.get(pid) for pid in question.passage_ids}
        return {r for r in rows if r is not None}
    assert question.answer is not None
    needle = question.answer.lower()
    return {i for i, p in enumerate(site.passages) if needle in p["text"].lower()}


def score_ranking(ranking: Sequence[int], relevant: set[int]) -> dict[str, float]:
    metrics = {f"recall@{k}": float(bool(relevant & set(ranking[:k]))) for k in CUTOFFS}
    first = next((i for i, row in enumerate(ranking[:10]) if row in relevant), None)
    metrics["mrr@10"] = 0.0 if first is None else 1.0 / (first + 1)
    dcg = sum(
        1.0 / math.log2(i + 2) for i, row in enumerate(ranking[:10]) if row in relevant
    )
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(relevant), 10)))
    metrics["ndcg@10"] = dcg / ideal if ideal else 0.0
    return metrics


def evaluate_retrieval(
    site: Site,
    questions: Sequence[Question],
    modes: Sequence[SearchMode] = ("bm25", "dense", "hybrid"),
    *,
    fusion: Fusion | None = None,
) -> dict[str, dict[str, Any]]:
    """Mean metrics per mode over the answerable questions."""
    answerable = [q for q in questions if q.answerable]
    if not answerable:
        raise RagciteError("The QA file has no answerable question to evaluate.")
    results: dict[str, dict[str, Any]] = {}
    for mode in modes:
        totals: dict[str, float] = {}
        started = time.perf_counter()
        for question in answerable:
            hits = site.search(question.question, 10, mode=mode, fusion=fusion)
            metrics = score_ranking(
                [h.row for h in hits], relevant_rows(site, question)
            )
            for name, value in metrics.items():
                totals[name] = totals.get(name, 0.0) + value
        elapsed = time.perf_counter() - started
        results[mode] = {
            **{name: value / len(answerable) for name, value in totals.items()},
            "questions": len(answerable),
            "ms_per_query": 1000 * elapsed / len(answerable),
        }
    return results


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def evaluate_answers(
    engine: AnswerEngine, questions: Sequence[Question], generator: GeneratorName
) -> dict[str, Any]:
    """Answer quality, citation validity/precision/recall, abstention, latency."""
    answerable = [q for q in questions if q.answerable]
    unanswerable = [q for q in questions if not q.answerable]
    counts = dict.fromkeys(
        ("accurate", "grounded", "cited", "valid", "precise", "recalled",
         "answered_with_gold", "llm_kept"),
        0,
    )  # fmt: skip
    latencies: list[float] = []
    first_tokens: list[float] = []
    verification: list[float] = []
    abstained = 0
    for question in questions:
        started = time.perf_counter()
        first = None
        final = None
        for event in engine.stream(question.question, generator=generator):
            if event.kind == "token" and first is None:
                first = time.perf_counter() - started
            elif event.kind == "final":
                final = event.data
        latencies.append(1000 * (time.perf_counter() - started))
        if first is not None:
            first_tokens.append(1000 * first)
        assert final is not None
        if "verification_ms" in final.metadata:
            verification.append(final.metadata["verification_ms"])
        if not question.answerable:
            abstained += not final.grounded
            continue
        texts = {
            c.passage_id: record["text"] if record else ""
            for c in final.citations
            for record in [engine.site.passage(c.passage_id)]
        }
        gold = question.answer.lower() if question.answer else None
        counts["grounded"] += final.grounded
        counts["accurate"] += bool(gold and gold in final.answer.lower())
        counts["llm_kept"] += final.metadata.get("generator") == "llm"
        retrieved = set(final.metadata.get("retrieved", []))
        good = [
            pid in question.passage_ids or bool(gold and gold in texts[pid].lower())
            for pid in texts
        ]
        counts["cited"] += len(texts)
        counts["valid"] += sum(pid in retrieved for pid in texts)
        counts["precise"] += sum(good)
        counts["recalled"] += any(pid in question.passage_ids for pid in texts)
        counts["answered_with_gold"] += any(good)
    n = max(1, len(answerable))
    return {
        "generator": generator,
        "questions": len(questions),
        "answer_accuracy": counts["accurate"] / n,
        "answered_with_supporting_citation": counts["answered_with_gold"] / n,
        "citation_validity": counts["valid"] / max(1, counts["cited"]),
        "citation_precision": counts["precise"] / max(1, counts["cited"]),
        "citation_recall": counts["recalled"] / n,
        "grounded_rate": counts["grounded"] / n,
        "llm_answer_kept": counts["llm_kept"] / n,
        "abstention_unanswerable": abstained / max(1, len(unanswerable)),
        "latency_p50_ms": _percentile(latencies, 0.5),
        "latency_p90_ms": _percentile(latencies, 0.9),
        "first_token_p50_ms": _percentile(first_tokens, 0.5) if first_tokens else None,
        "verification_p50_ms": _percentile(verification, 0.5),
    }
