"""The answer scorer's data: every dev-set question with the answer units the
engine would choose from, each labelled (issue 44).

For each question of each dev set (``benchmarks/devsets.py``) and of its
near-topic folds (``benchmarks/near_topic.py``: questions whose gold pages
were left out of the build) the engine retrieves and splits the evidence
into answer units exactly as at query time (what
``tools/train_answer_ranker.py`` collects). Each unit is written with its
text, whether it holds a gold answer (``label``), whether its passage is a
right one, and what today's ranker makes of it: the unit's probability and
the question's answerability (the gate). Unanswerable and near-topic
questions have no unit labelled 1: all their units are negatives, among
them the on-topic sentences that do not answer.

Where each example comes from, and whether its licence lets a model be
trained on it, is ``SOURCES``; ``train_answer_scorer.py`` trains only on
the sets marked ``train``. The pairs go to
``benchmarks/results/.answer_pairs/<set>.jsonl`` (cached by each build's
key)::

    .venv/bin/python tools/answer_pairs.py [--sets click,flask] [--refresh]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TYPE_CHECKING, Any

from benchmarks import devsets, near_topic
from benchmarks._harness import RESULTS

if TYPE_CHECKING:
    from pathlib import Path

OUT = RESULTS / ".answer_pairs"

#: Each dev set: where its text comes from, its licence, and its use here.
#: ``train``: a model may learn from it; ``held out``: never trained on, the
#: book no weight has seen; ``measure``: its licence forbids training.
SOURCES: dict[str, dict[str, str]] = {
    "example_book": {
        "source": "example_book/ of this repository",
        "licence": "MIT",
        "use": "train",
    },
    "click": {
        "source": "pallets/click docs (../shared/corpora/click-docs)",
        "licence": "BSD-3-Clause",
        "use": "train",
    },
    "requests": {
        "source": "psf/requests docs (../shared/corpora/requests-docs)",
        "licence": "Apache-2.0",
        "use": "train",
    },
    "packaging_guide": {
        "source": "pypa/packaging.python.org (../shared/corpora/packaging-guide)",
        "licence": "CC-BY-SA-3.0",
        "use": "train",
    },
    "squad": {
        "source": "SQuAD 1.1 dev, articles 41-48 (../shared/datasets/squad-dev-41-48)",
        "licence": "CC-BY-SA-4.0",
        "use": "train",
    },
    "flask": {
        "source": "Flask 3.1.3 sdist docs (PyPI)",
        "licence": "BSD-3-Clause",
        "use": "train",
    },
    "attrs": {
        "source": "attrs sdist docs (PyPI)",
        "licence": "MIT",
        "use": "train",
    },
    "emcee": {
        "source": "emcee 3.1.6 sdist docs (PyPI)",
        "licence": "MIT",
        "use": "train",
    },
    "jinja": {
        "source": "Jinja sdist docs (PyPI)",
        "licence": "BSD-3-Clause",
        "use": "held out",
    },
    "xuance_zh": {
        "source": "XuanCe docs, Chinese (../shared/corpora/xuance-docs-zh)",
        "licence": "MIT",
        "use": "held out",
    },
    "rqalpha_zh": {
        "source": "RQAlpha 6.4.2 sdist docs, Chinese (PyPI)",
        "licence": "Apache-2.0 for non-commercial use only",
        "use": "measure",
    },
    # issue 45: the Japanese set joins training (xuance_zh stays held out)
    "network_ja": {
        "source": "2025-network-doc, Japanese (../shared/corpora/network-doc-ja)",
        "licence": "CC-BY-SA-4.0",
        "use": "train",
    },
}


def collect(devset: devsets.DevSet, near: bool) -> list[dict[str, Any]]:
    """Every question of *devset* with its labelled units."""
    from sphinx_ragcite.answer.engine import AnswerEngine
    from sphinx_ragcite.answer.ranker import answerability
    from sphinx_ragcite.retrieval.site import Site

    site = Site.load(devset.site)
    engine = AnswerEngine(site)
    out = []
    for item in devset.items:
        vector = site.embedder.embed([item.question], kind="query")[0]
        # the engine's own steps: what it retrieves, ranks and chooses
        hits, evidence = engine._retrieve(item.question, vector, engine.k, None, None)
        choice = engine._choose(item.question, vector, hits, evidence, None, {})
        ranked = choice.candidates
        gate = answerability(ranked, engine.ranker)
        golds = [devsets.norm(a) for a in item.answers]
        good = [
            e.key in item.gold_ids or any(g in devsets.norm(e.text) for g in golds)
            for e in evidence
        ]
        units = [
            {
                "text": c.unit.text,
                "passage": evidence[c.unit.evidence].key,
                "label": int(any(g in devsets.norm(c.unit.text) for g in golds)),
                "passage_good": bool(good[c.unit.evidence]),
                "ranker": round(c.probability, 6),
            }
            for c in ranked
        ]
        out.append(
            {
                "set": devset.name,
                "question": item.question,
                "answerable": bool(item.answerable),
                "near": near,
                "gate": round(gate, 6),
                "confidence": choice.confidence,
                # today's engine answers (before grounding checks its claims)
                "answered": bool(choice.units),
                "units": units,
            }
        )
    return out


def write_set(name: str, rebuild: bool, refresh: bool) -> Path:
    """One set's pairs, its near-topic folds' too (cached by build key)."""
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{name}.jsonl"
    devset = devsets.LOADERS[name](rebuild)
    folds = list(near_topic.load(name))
    key = "|".join(
        json.loads((d.site.parent / "stamp.json").read_text())["key"]
        for d in (devset, *folds)
    )
    stamp = path.with_suffix(".key")
    fresh = path.is_file() and stamp.is_file() and stamp.read_text() == key
    if fresh and not refresh:
        return path
    started = time.perf_counter()
    rows = collect(devset, near=False)
    for fold in folds:
        rows += collect(fold, near=True)
    with path.open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    stamp.write_text(key)
    seconds = time.perf_counter() - started
    print(f"{name}: {len(rows)} questions in {seconds:.0f} s -> {path}")
    return path


def read_set(name: str) -> list[dict[str, Any]]:
    path = OUT / f"{name}.jsonl"
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(SOURCES))
    parser.add_argument("--rebuild", action="store_true", help="rebuild the books")
    parser.add_argument("--refresh", action="store_true", help="collect again")
    args = parser.parse_args(argv)
    for name in args.sets.split(","):
        if name not in SOURCES:
            parser.error(f"unknown set {name!r}; known: {', '.join(SOURCES)}")
        write_set(name, args.rebuild, args.refresh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
