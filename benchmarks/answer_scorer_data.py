"""Training data for a small answer-sentence cross-encoder, from SQuAD.

The answer ranker scores answer units (a sentence, or a sentence with the
list or code block it introduces) by hand-made signals; a cross-encoder that
reads the question and the unit together can learn what those miss. This
writes its training groups: per question, the sentences that hold a gold
answer (positives) and sentences that do not (negatives), split exactly as
the engine splits passages (``sphinx_ragcite.answer.sentences``).

- Source: SQuAD v1.1 dev, articles 41-48 (``../shared/datasets/squad-dev-41-48``,
  CC BY-SA 4.0): 1,589 questions over 334 paragraphs.
- Held out: every paragraph that holds any of the 300 questions of our SQuAD
  dev set (``benchmarks/qa/squad_sample.json``), with all its questions, is
  left out, and so are its sentences as negatives, so the dev set stays unseen.
  That leaves 529 questions over 121 paragraphs. The documentation dev sets
  (example book, click, Packaging Guide, requests) are not used at all.
- Positives: the sentences whose span contains an answer span (any of the
  crowd answers; one crossing a sentence boundary marks every sentence it
  overlaps). Negatives: the paragraph's other sentences first (hard
  negatives, at most ``IN_PARAGRAPH``), then the sentences of the 3 other
  paragraphs of the same article, within the same split, that BM25 (the
  project's tokenizer) ranks highest for the question, best sentence first,
  up to ``NEGATIVES``. Sentences under 4 words are skipped, and so is any
  negative that contains an answer's text (it may answer too); a question
  left without a positive is skipped.
- Split by article, so valid is a topic the model has not read: the article
  whose remaining questions come closest to 10% is valid (Prime_number).
  Nothing is random, so the output is the same on every run.

Measured (this script's output): 213 paragraphs (1,060 questions) held out;
529 questions over 121 paragraphs written, none skipped; train 474 questions
(7 articles, 110 paragraphs), valid 55 (Prime_number, 11 paragraphs); 1.12
positives and 14.57 negatives per question on average (1,935 from the
question's own paragraph, 5,771 from other paragraphs).

    python benchmarks/answer_scorer_data.py   # results/.answer_scorer/data/
    python benchmarks/answer_scorer_data.py --out DIR --show 5
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bm25s
import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from sphinx_ragcite.text import (
    split_sentences,
    tokenize,
)

SQUAD = (
    HERE.parent.parent
    / "shared/datasets/squad-dev-41-48/squad-dev-v1.1-articles-41-48.json"
)
HELD_OUT = HERE / "qa" / "squad_sample.json"
OUT = HERE / "results" / ".answer_scorer" / "data"
#: Negatives per question, and how many of them may come from the question's
#: own paragraph (the rest are kept for other paragraphs' sentences).
NEGATIVES = 15
IN_PARAGRAPH = 12
OTHER_PARAGRAPHS = 3
MIN_WORDS = 4
VALID_FRACTION = 0.10


@dataclass
class Paragraph:
    article: str
    index: int
    text: str
    sentences: list[str]
    spans: list[tuple[int, int]]
    qas: list[dict[str, Any]]

    @property
    def key(self) -> str:
        return f"{self.article}/p{self.index}"


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def _answer_span(text: str, answer: dict[str, Any]) -> tuple[int, int] | None:
    """The answer's span; SQuAD's offset, or the nearest occurrence if it is off."""
    start, value = answer["answer_start"], answer["text"]
    if text[start : start + len(value)] == value:
        return start, start + len(value)
    found = [m.start() for m in re.finditer(re.escape(value), text)]
    if not found:
        return None
    best = min(found, key=lambda s: abs(s - start))
    return best, best + len(value)


def load(path: Path, held_ids: set[str]) -> tuple[list[Paragraph], int, int]:
    """Paragraphs kept, and how many paragraphs and questions were held out."""
    data = json.loads(path.read_text(encoding="utf-8"))["data"]
    kept: list[Paragraph] = []
    held_paragraphs = held_questions = 0
    for article in data:
        for i, p in enumerate(article["paragraphs"]):
            if any(q["id"] in held_ids for q in p["qas"]):
                held_paragraphs += 1
                held_questions += len(p["qas"])
                continue
            sents = [
                s
                for s in split_sentences(p["context"])
                if len(s.text.split()) >= MIN_WORDS
            ]
            kept.append(
                Paragraph(
                    article["title"],
                    i,
                    p["context"],
                    [s.text for s in sents],
                    [(s.start, s.end) for s in sents],
                    p["qas"],
                )
            )
    return kept, held_paragraphs, held_questions


def positives(p: Paragraph, qa: dict[str, Any]) -> set[int]:
    """Sentences containing an answer span; overlapping ones if none contains it."""
    out: set[int] = set()
    for answer in qa["answers"]:
        span = _answer_span(p.text, answer)
        if span is None:
            continue
        a, b = span
        inside = {i for i, (s, e) in enumerate(p.spans) if s <= a and b <= e}
        out |= inside or {i for i, (s, e) in enumerate(p.spans) if s < b and a < e}
    return out


def choose_valid(paragraphs: list[Paragraph]) -> str:
    """The article whose question count is closest to VALID_FRACTION of all."""
    counts: dict[str, int] = defaultdict(int)
    for p in paragraphs:
        counts[p.article] += len(p.qas)
    target = VALID_FRACTION * sum(counts.values())
    return min(sorted(counts), key=lambda a: abs(counts[a] - target))


def groups(paragraphs: list[Paragraph], stats: dict[str, int]) -> list[dict[str, Any]]:
    """Training groups for the paragraphs of one split, article by article."""
    by_article: dict[str, list[Paragraph]] = defaultdict(list)
    for p in paragraphs:
        by_article[p.article].append(p)
    out: list[dict[str, Any]] = []
    for paras in by_article.values():
        para_index = bm25s.BM25()
        para_index.index(
            [tokenize(p.text) or ["_"] for p in paras], show_progress=False
        )
        for pi, p in enumerate(paras):
            for qa in p.qas:
                pos = positives(p, qa)
                if not pos:
                    stats["no_positive"] += 1
                    continue
                answers = {_norm(a["text"]) for a in qa["answers"] if a["text"].strip()}

                def is_clean(sentence: str, answers: set[str] = answers) -> bool:
                    if any(a in _norm(sentence) for a in answers):
                        stats["dropped_contains_answer"] += 1
                        return False
                    return True

                pos_text = {p.sentences[i] for i in pos}
                query = tokenize(qa["question"]) or ["_"]
                negs = [
                    s for i, s in enumerate(p.sentences) if i not in pos and is_clean(s)
                ][:IN_PARAGRAPH]
                n_in = len(negs)
                scores = np.asarray(para_index.get_scores(query))
                order = [
                    int(j) for j in np.argsort(-scores, kind="stable") if int(j) != pi
                ]
                others = [paras[j] for j in order[:OTHER_PARAGRAPHS]]
                pool = [s for o in others for s in o.sentences]
                if pool and len(negs) < NEGATIVES:
                    sent_index = bm25s.BM25()
                    sent_index.index(
                        [tokenize(s) or ["_"] for s in pool], show_progress=False
                    )
                    sent_scores = np.asarray(sent_index.get_scores(query))
                    for j in np.argsort(-sent_scores, kind="stable"):
                        if len(negs) >= NEGATIVES:
                            break
                        sentence = pool[int(j)]
                        if (
                            sentence not in negs
                            and sentence not in pos_text
                            and is_clean(sentence)
                        ):
                            negs.append(sentence)
                stats["in_paragraph"] += n_in
                stats["other_paragraph"] += len(negs) - n_in
                out.append(
                    {
                        "question": qa["question"].strip(),
                        "positives": sorted(pos_text, key=p.sentences.index),
                        "negatives": negs,
                        "source": f"squad-v1.1-dev/{p.key}",
                        "id": qa["id"],
                    }
                )
    return out


def summary(name: str, rows: list[dict[str, Any]], paragraphs: int) -> str:
    n = len(rows)
    pos = sum(len(r["positives"]) for r in rows) / max(n, 1)
    neg = sum(len(r["negatives"]) for r in rows) / max(n, 1)
    return (
        f"{name}: {n} questions, {paragraphs} paragraphs, "
        f"positives {pos:.2f}, negatives {neg:.2f} per question"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--squad", type=Path, default=SQUAD, help="SQuAD v1.1 JSON")
    parser.add_argument(
        "--held-out",
        type=Path,
        default=HELD_OUT,
        help="JSON with the dev set's question ids",
    )
    parser.add_argument(
        "--out", type=Path, default=OUT, help="folder for train.jsonl and valid.jsonl"
    )
    parser.add_argument(
        "--show", type=int, default=0, help="print this many groups to spot-check"
    )
    args = parser.parse_args(argv)

    held_ids = set(json.loads(args.held_out.read_text(encoding="utf-8"))["ids"])
    paragraphs, held_p, held_q = load(args.squad, held_ids)
    remaining = sum(len(p.qas) for p in paragraphs)
    print(
        f"held out: {held_p} paragraphs, {held_q} questions (dev set: {len(held_ids)})"
    )
    print(f"remaining: {len(paragraphs)} paragraphs, {remaining} questions")
    valid_article = choose_valid(paragraphs)
    stats: dict[str, int] = defaultdict(int)
    splits = {
        "train": [p for p in paragraphs if p.article != valid_article],
        "valid": [p for p in paragraphs if p.article == valid_article],
    }
    args.out.mkdir(parents=True, exist_ok=True)
    all_rows: list[dict[str, Any]] = []
    for name, paras in splits.items():
        rows = groups(paras, stats)
        all_rows += rows
        with (args.out / f"{name}.jsonl").open("w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
        note = f" (article {valid_article})" if name == "valid" else ""
        print(summary(name, rows, len(paras)) + note)
    print(summary("all", all_rows, len(paragraphs)))
    print(
        f"skipped (no positive): {stats['no_positive']}; negatives from own paragraph "
        f"{stats['in_paragraph']}, other paragraphs {stats['other_paragraph']}; "
        f"dropped as containing an answer: {stats['dropped_contains_answer']}"
    )
    show_groups(all_rows, args.show)
    return 0


def show_groups(rows: list[dict[str, Any]], count: int) -> None:
    """Print *count* groups spread over *rows*, to spot-check by eye."""
    step = max(1, len(rows) // max(count, 1))
    for row in rows[::step][:count]:
        print(json.dumps(row, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    sys.exit(main())
