"""Issue 44's training tool chooses its examples and judges as it says.

The training itself needs the ``train`` extra (torch); what decides which
units a model learns from and how it is judged does not, and is checked
here on hand-made questions: a gold unit the ranker missed is put among the
candidates, no set whose licence forbids training is trained on, and a
blend is judged at exactly today's coverage.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from tools import answer_pairs
from tools import train_answer_scorer as scorer


def unit(text: str, label: int = 0, good: bool = False, ranker: float = 0.5):
    return {
        "text": text,
        "passage": "ch1-sec1-p1",
        "label": label,
        "passage_good": good,
        "ranker": ranker,
    }


def question(text, units, answerable=True, near=False, answered=True):
    return {
        "question": text,
        "answerable": answerable,
        "near": near,
        "answered": answered,
        "units": units,
    }


@pytest.fixture
def one_set(monkeypatch):
    """``read_set`` of a single hand-made set."""
    data: list[dict] = []
    monkeypatch.setattr(scorer, "read_set", lambda name: data)
    return data


def test_gold_unit_joins_the_candidates(one_set):
    ranked = [unit(f"lead-in {i}", ranker=0.9 - i / 100) for i in range(12)]
    ranked.append(unit("The answer is 42.", label=1, good=True, ranker=0.1))
    one_set.append(question("What is the answer?", ranked))
    (group,) = scorer.groups(["x"], random.Random(0))
    assert len(group) == scorer.TOP
    assert group[-1] == ("What is the answer?", "The answer is 42.", 1.0)
    assert [label for _, _, label in group[:-1]] == [0.0] * (scorer.TOP - 1)


def test_unanswerable_groups_are_negatives_unless_answerable_only(one_set):
    one_set.append(question("Off topic?", [unit("a"), unit("b")], answerable=False))
    one_set.append(question("Near?", [unit("c")], near=True))
    one_set.append(question("No gold among units?", [unit("d")]))
    groups = scorer.groups(["x"], random.Random(0))
    assert sorted(len(g) for g in groups) == [1, 2]
    assert all(label == 0.0 for g in groups for _, _, label in g)
    assert scorer.groups(["x"], random.Random(0), answerable_only=True) == []


def test_no_weight_learns_from_a_measure_only_set():
    measured = {n for n, s in answer_pairs.SOURCES.items() if s["use"] == "measure"}
    assert "rqalpha_zh" in measured
    for name, source in answer_pairs.SOURCES.items():
        assert source["use"] in {"train", "held out", "measure"}, name
        assert source["licence"], name


def test_figures_judge_blends_at_todays_coverage():
    """Two answerable questions: today's top unit is from a wrong passage in
    the first; the scorer prefers the right one. Today answers both, so the
    blend's precision is over the same two answers."""
    questions = [
        question(
            "q1",
            [unit("wrong", ranker=0.6), unit("right", 1, good=True, ranker=0.5)],
        ),
        question(
            "q2",
            [unit("right", 1, good=True, ranker=0.7), unit("other", ranker=0.2)],
        ),
        question("q3", [unit("topic", ranker=0.8)], answerable=False, answered=False),
    ]
    logits = [np.array([-0.5, 0.5]), np.array([1.0, 0.0]), np.array([2.5])]
    out = scorer.figures(questions, logits)
    assert out["top1_today"] == 0.5
    assert out["top1_scorer"] == 1.0
    assert out["today_precision"] == 0.5
    assert out["blend_1.0_precision"] == 1.0
    assert out["blend_0.25_precision"] == 0.5  # log-odds .41 beat 0.25 x 1
    # the scorer's own confidence would answer the unanswerable one too
    assert out["scorer_unanswerable_answered"] == 1.0
