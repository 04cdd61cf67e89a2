"""Are near-topic questions near the topic? Page folds against section folds.

Why (issue 36, item 5): SQuAD's pages are whole Wikipedia articles, so a
near-topic fold that leaves out a question's page leaves out everything on
its subject, and its questions are off-topic rather than near-topic.
``near_topic.py`` now leaves out SQuAD's sections (five paragraphs) instead
(``BY_SECTION``). This measures both ways of folding a set, on the same
questions' book:

- ``questions``: near-topic (unanswerable) questions the folds make, and
  ``dropped``: those left out because a gold answer string is still in the
  fold's book;
- ``top1_cosine``: the mean, over those questions, of the highest dense
  (MiniLM) cosine between the question and any passage of its fold's book,
  as the engine's retrieval sees it;
- ``top1_same_page``: the share whose best passage by that cosine lies on
  the question's gold page (for SQuAD: the same article), i.e. the book
  still speaks of the subject;
- ``answered``: the share the extractive engine still gives the
  ``answer`` outcome (what near-topic questions are for).

Run from the repository root (folds are built or reused as
``near_topic.py`` builds them; the other choice as ``<set>~doc<n>`` or
``<set>~sec<n>``)::

    .venv/bin/python -m benchmarks.near_topic_units --sets squad

Results go to ``benchmarks/results/near_topic_units.json``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import devsets, near_topic
from benchmarks._harness import (
    RESULTS,
    envelope,
    fmt,
    git_commit,
    git_dirty,
    read_passages,
    share,
    table,
    write_result,
)

OUT = RESULTS / "near_topic_units.json"


def measure(
    devset: devsets.DevSet, by_section: bool, folds: int, answer: bool
) -> dict[str, Any]:
    """The figures above for *devset* folded by page or by section."""
    from sphinx_ragcite.answer.engine import AnswerEngine
    from sphinx_ragcite.retrieval.site import Site

    sets = near_topic.near_topic_sets(devset, folds, by_section=by_section)
    gold_page = {p["passage_id"]: p["docname"] for p in read_passages(devset.site)}
    by_id = {item.id: item for item in devset.items}
    cosines: list[float] = []
    same: list[bool] = []
    answered: list[bool] = []
    for nts in sets:
        site = Site.load(nts.site)
        pages = [p["docname"] for p in read_passages(nts.site)]
        vectors = site.embedder.embed(
            [item.question for item in nts.items], kind="query"
        )
        engine = AnswerEngine(site) if answer else None
        for item, vector in zip(nts.items, vectors, strict=True):
            scores = np.asarray(site.dense_scores(item.question, vector))
            best = int(scores.argmax())
            cosines.append(float(scores[best]))
            wanted = {gold_page[pid] for pid in by_id[item.id].gold_ids}
            same.append(pages[best] in wanted)
            if engine is not None:
                outcome = engine.answer(item.question, generator="extractive")
                answered.append(outcome.outcome == "answer")
    n = len(cosines)
    return {
        "unit": "section" if by_section else "document",
        "folds": [list(s.excluded) for s in sets],
        "questions": n,
        "dropped": sum(len(s.dropped) for s in sets),
        "top1_cosine": round(float(np.mean(cosines)), 4) if n else None,
        "top1_same_page": share(sum(same), n),
        "answered": share(sum(answered), n) if answer else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", choices=devsets.SETS, default=["squad"])
    parser.add_argument("--folds", type=int, default=near_topic.FOLDS)
    parser.add_argument(
        "--no-answer", action="store_true", help="skip the extractive engine"
    )
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    began = time.perf_counter()
    results: dict[str, Any] = {}
    rows = []
    for name in args.sets:
        devset = devsets.LOADERS[name](False)
        results[name] = {}
        for by_section in (False, True):
            m = measure(devset, by_section, args.folds, not args.no_answer)
            results[name][m["unit"]] = m
            rows.append(
                [
                    name,
                    m["unit"]
                    + (
                        " (used)"
                        if by_section == (name in near_topic.BY_SECTION)
                        else ""
                    ),
                    str(m["questions"]),
                    str(m["dropped"]),
                    fmt(m["top1_cosine"], ""),
                    fmt(m["top1_same_page"], ""),
                    fmt(m["answered"], ""),
                ]
            )
    head = ["set", "folds by", "near-topic", "dropped", "top-1 cos"]
    head += ["top-1 same page", "answered"]
    text = table(head, rows)
    print(text)
    payload = envelope(
        "near_topic_units",
        git_commit=git_commit(),
        uncommitted=git_dirty(),
        options={"sets": args.sets, "folds": args.folds},
        total_seconds=round(time.perf_counter() - began, 1),
        sets=results,
        table=text,
    )
    write_result(args.out, payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
