"""The answer ranker's signals of issue 36 and its tree models.

A lead-in that announces an answer, a definition of the subject asked how or
why, an answer of the wrong type and a question whose key term the book lacks
were the patterns of wrong answers; each has a signal, checked here on the
shapes the issue names. The trees ``tools/train_answer_ranker.py`` exports are
evaluated without scikit-learn (``ranker.Forest``): they must give what
scikit-learn gives.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sphinx_ragcite.answer import ranker, units


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("You can also use these settings:", (True, False)),
        ("The following options control which files are checked.", (True, False)),
        ("This chapter is for readers who want to try X.", (True, False)),
        ("Set these options:\nA = 1\nB = 2", (True, True)),
        ("参阅以下小节以开始创建：", (True, False)),
        ("Set the timeout to 5 seconds.", (False, False)),
        ("These values are read once at start-up.", (False, False)),
    ],
)
def test_lead_ins_are_recognised(text: str, expected: tuple[bool, bool]) -> None:
    assert units.announces(text) == expected


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("Where does pip write its log file?", "path"),
        ("Where was Chopin born?", "place"),
        ("What port does the development server listen on?", "number"),
        ("Which option turns colours off?", "option"),
        ("What function registers a command?", "code"),
        ("How do I descale the kettle?", "procedure"),
        ("Which score does the report show?", "named"),
        ("Is the cache thread-safe?", "yesno"),
        ("What is a wheel?", ""),
        ("自定义多智能体环境的基类叫什么？", ""),
    ],
)
def test_answer_types(question: str, kind: str) -> None:
    assert units.answer_type(question) == kind


@pytest.mark.parametrize(
    ("kind", "text", "question", "expected"),
    [
        ("path", "Logs go to ~/.cache/pip/log.txt.", "Where does pip write logs?", 1.0),
        ("path", "pip writes a log when it fails.", "Where does pip write logs?", 0.0),
        ("number", "It listens on port 5000.", "What port does it use?", 1.0),
        ("number", "It listens on a local port.", "What port does it use?", 0.0),
        ("option", "Pass --no-color to turn them off.", "Which option?", 1.0),
        ("option", "Colours can be turned off.", "Which option?", 0.0),
        ("named", "The report shows the F1 score.", "Which score does it show?", 1.0),
        ("named", "The report shows a score.", "Which score does it show?", 0.0),
        ("", "Anything at all.", "What is it?", 0.5),
    ],
)
def test_type_match(kind: str, text: str, question: str, expected: float) -> None:
    assert units.type_match(kind, text, question) == expected


def test_topic_sentences_and_key_terms() -> None:
    assert units.asks_how_or_why("How do I descale the kettle?")
    assert not units.asks_how_or_why("What is descaling?")
    assert units.defines_subject("Descaling is an important part of caring for it.")
    assert not units.defines_subject("It is recommended that you descale monthly.")
    assert not units.defines_subject("The file is written to ~/.cache.")
    # the rarest word, never what a contraction leaves behind
    assert units.rarest({"shouldn": 9.0, "t": 9.0, "vinegar": 4.0}) == "vinegar"
    assert units.rarest({"a": 1.0, "c": 2.0, "b": 2.0}) == "b"
    assert units.rarest({}) == ""


def test_every_signal_has_a_column() -> None:
    """The shipped ranker was trained on the signals this code computes."""
    data = json.loads(Path(units.__file__).with_name("ranker.json").read_text("utf-8"))
    assert data["features"] == list(units.FEATURES)
    for name in ("lead_in", "key_context", "type_mismatch", "topic_sentence"):
        assert name in units.UNIT_FEATURES
    ranker.load_ranker.cache_clear()
    ranker.load_ranker()


def test_forest_equals_scikit_learn() -> None:
    """numpy's evaluation of exported trees is scikit-learn's predict_proba."""
    ensemble = pytest.importorskip("sklearn.ensemble")
    from tools.train_answer_ranker import export_trees

    rng = np.random.default_rng(1)
    x = rng.random((3000, 6))
    x[:, 2] = (x[:, 2] > 0.5).astype(float)  # a binary signal, as most are
    y = ((x[:, 0] + x[:, 1] * x[:, 2] + 0.3 * rng.standard_normal(3000)) > 0.9)
    model = ensemble.HistGradientBoostingClassifier(
        max_iter=40, max_depth=3, random_state=0
    ).fit(x, y.astype(int))
    forest = ranker.Forest.from_json(json.loads(json.dumps(export_trees(model))), 6)
    sample = rng.random((500, 6))
    sample[:, 2] = (sample[:, 2] > 0.5).astype(float)
    expected = model.predict_proba(sample)[:, 1]
    assert np.allclose(forest(sample), expected, atol=1e-9)
    assert expected.min() < 0.2 and expected.max() > 0.8  # not vacuous


def test_a_broken_forest_is_refused() -> None:
    tree = {
        "feature": [9, 0, 0],
        "threshold": [0.5, 0, 0],
        "left": [1, 0, 0],
        "right": [2, 0, 0],
        "value": [0, -1.0, 1.0],
        "leaf": [0, 1, 1],
    }
    data = {"baseline": 0.0, "depth": 1, "trees": [tree]}
    with pytest.raises(ValueError, match="beyond"):
        ranker.Forest.from_json(data, 4)
    good = ranker.Forest.from_json(data, 10)
    assert good(np.array([[0.0] * 9 + [0.2], [0.0] * 9 + [0.9]])).round(3).tolist() == [
        0.269,
        0.731,
    ]
    tree["right"] = [7, 0, 0]
    with pytest.raises(ValueError, match="child"):
        ranker.Forest.from_json(data, 10)
