"""The patterns of wrong answers on every dev set (issue 36).

Why: wrong answers on books nobody here had seen followed a few patterns; to
fix them, count them in our own dev sets first. Reads the answers
``answer_quality.py`` dumped (``.answer_quality/answers/<set>.extractive*.jsonl``;
run it first) and sorts every wrong ``answer`` outcome:

- wrong: an answerable question answered citing no right passage, or whose
  answer misses every gold string; an unanswerable question (written or
  near-topic) answered.
- ``lead_in``: the answer announces what follows instead of saying it
  (:func:`benchmarks.answer_signals.announces`: ends with a colon, points to
  "the following", "below", "this chapter" ...); ``lead_in_alone`` when it
  does not quote what it announces (the unit did not grow past it).
- ``topic``: the question asks how or why and the answer's first sentence
  defines its subject (``answer_signals.defines_subject``).
- ``wrong_type``: the question asks for a path, place, number, option, code,
  named item, yes/no or procedure
  (``answer_signals.answer_type``) and the answer holds none.
- ``missing_key_term``: the question's content word of the highest idf in the
  book is in neither the answer, its passage nor its headings.

A wrong answer can show several patterns (each counted) or none (``other``).
Prints a table per set and writes ``results/error_patterns.json`` (``--out``).

    python -m benchmarks.error_patterns [--dump-dir DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from benchmarks import answer_quality as aq
from benchmarks import devsets, near_topic
from benchmarks._harness import RESULTS, envelope, read_jsonl, table, write_result
from benchmarks.answer_signals import (
    announces,
    answer_type,
    asks_how_or_why,
    defines_subject,
    rarest,
    type_match,
)
from sphinx_ragcite.answer.sentences import content_words

PATTERNS = ("lead_in", "lead_in_alone", "topic", "wrong_type", "missing_key_term")


def wrong(record: dict[str, Any]) -> str | None:
    """Why an answer is wrong ("" for a right one, None when not answered)."""
    if record["outcome"] != "answer":
        return None
    verdict = record["judgement"]
    if not record["answerable"]:
        return "near_topic" if record.get("near_topic") else "unanswerable"
    if not verdict["supported"]:
        return "wrong_passage"
    if not verdict["gold_in_answer"]:
        return "wrong_sentence"
    return ""


def patterns(
    question: str, unit: str, passage: str, headings: list[str], site: Any
) -> tuple[list[str], str]:
    """The patterns one answer (*unit*, from *passage*) shows, and the
    question's key term."""
    found = []
    lead_in, quoted = announces(unit)
    if lead_in:
        found.append("lead_in")
        if not quoted:
            found.append("lead_in_alone")
    if asks_how_or_why(question) and defines_subject(unit):
        found.append("topic")
    kind = answer_type(question)
    if kind and type_match(kind, unit, question) == 0.0:
        found.append("wrong_type")
    asked = {t: site.idf(t) for t in content_words(question)}
    key = rarest(asked)
    context = content_words(unit) | content_words(passage)
    context |= content_words(" ".join(headings))
    if key and key not in context:
        found.append("missing_key_term")
    return found, key


def classify(name: str, dump_dir: Path) -> dict[str, Any] | None:
    """Counts and examples of one set's wrong answers (None without dumps)."""
    from sphinx_ragcite.retrieval.site import Site

    own = dump_dir / f"{name}.extractive.jsonl"
    if not own.is_file():
        return None
    records = read_jsonl(own)
    near = dump_dir / f"{name}.extractive.near.jsonl"
    if near.is_file():
        records += read_jsonl(near)
    sites = {name: Site.load(devsets.LOADERS[name](False).site)}
    if near.is_file():
        sites.update(
            {fold.name: Site.load(fold.site) for fold in near_topic.load(name)}
        )
    counts = {p: 0 for p in (*PATTERNS, "other")}
    by_reason: dict[str, dict[str, int]] = {}
    examples: dict[str, list[dict[str, str]]] = {p: [] for p in counts}
    answers = errors = 0
    for record in records:
        reason = wrong(record)
        if reason is None:
            continue
        answers += 1
        if not reason:
            continue
        errors += 1
        site = sites[record.get("near_topic") or name]
        citation = record["answer"]["citations"][0]
        passage = (site.passage(citation["passage_id"]) or {}).get("text", "")
        found, key = patterns(
            record["question"],
            citation["quote"],
            passage,
            citation["heading_path"],
            sites[name],
        )
        found = found or ["other"]
        row = by_reason.setdefault(reason, {p: 0 for p in counts} | {"wrong": 0})
        row["wrong"] += 1
        for p in found:
            counts[p] += 1
            row[p] += 1
            if len(examples[p]) < 4:
                examples[p].append(
                    {"id": record["id"], "question": record["question"],
                     "answer": citation["quote"][:200], "why": reason, "key": key}
                )  # fmt: skip
    return {
        "answers": answers,
        "wrong": errors,
        "patterns": counts,
        "by_reason": by_reason,
        "examples": examples,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--sets", nargs="+", choices=devsets.SETS, default=list(devsets.SETS)
    )
    parser.add_argument("--dump-dir", type=Path, default=aq.CACHE / "answers")
    parser.add_argument("--out", type=Path, default=RESULTS / "error_patterns.json")
    args = parser.parse_args(argv)
    results = {}
    for name in args.sets:
        found = classify(name, args.dump_dir)
        if found is None:
            print(f"{name}: no answers dumped (run answer_quality.py)", file=sys.stderr)
            continue
        results[name] = found
    head = ["set", "answers", "wrong", *PATTERNS, "other"]
    rows = [
        [
            name,
            r["answers"],
            r["wrong"],
            *(r["patterns"][p] for p in (*PATTERNS, "other")),
        ]
        for name, r in results.items()
    ]
    text = table(head, [[str(v) for v in row] for row in rows])
    print(text)
    reasons = sorted({k for r in results.values() for k in r["by_reason"]})
    for reason in reasons:
        print(f"\n{reason}:")
        print(
            table(
                ["set", "wrong", *PATTERNS, "other"],
                [
                    [name, *(str(r["by_reason"][reason][p]) for p in
                             ("wrong", *PATTERNS, "other"))]
                    for name, r in results.items()
                    if reason in r["by_reason"]
                ],
            )
        )  # fmt: skip
    write_result(
        args.out, {**envelope("error_patterns"), "sets": results, "table": text}
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
