"""Answer units -> the one that answers: a logistic model over their signals.

The weights are learned by ``tools/train_answer_ranker.py`` from the
project's dev sets (our example book, the click, requests, Flask, attrs,
emcee and Python Packaging User Guide documentation and a Japanese course
text with questions written for them, and a SQuAD v1.1 dev sample; never a
set whose licence forbids
it, such as RQAlpha's; see
``benchmarks/qa/README.md``), leaving each
set out in turn to choose the features and the abstention threshold, and
are shipped in ``ranker.json`` beside this module. ``RAGCITE_RANKER`` names
another file.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sphinx_ragcite.answer.sentences import content_words
from sphinx_ragcite.answer.spec import (
    FEATURES,
    SECOND_CANDIDATES,
    SHOWN_PASSAGES,
    STRICT_KINDS,
    UNIT_FEATURES,
)
from sphinx_ragcite.answer.units import (
    GATE_FEATURES,
    Unit,
    features,
    listwise,
    question_kind,
    units_of,
)
from sphinx_ragcite.errors import ModelNotFoundError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from sphinx_ragcite.answer.evidence import Evidence

RANKER_ENV = "RAGCITE_RANKER"


@dataclass(frozen=True)
class Logistic:
    """A logistic model over standardised inputs."""

    weights: np.ndarray
    bias: float
    mean: np.ndarray
    scale: np.ndarray

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        z = ((rows - self.mean) / self.scale) @ self.weights + self.bias
        return 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))  # type: ignore[no-any-return]

    @classmethod
    def from_json(cls, data: dict[str, Any], size: int) -> Logistic:
        model = cls(
            weights=np.asarray(data["weights"], dtype=np.float64),
            bias=float(data["bias"]),
            mean=np.asarray(data["mean"], dtype=np.float64),
            scale=np.asarray(data["scale"], dtype=np.float64),
        )
        if not model.weights.shape == model.mean.shape == model.scale.shape == (size,):
            raise ValueError(f"expected {size} weights")
        return model


@dataclass(frozen=True)
class Calibration:
    """Gate probability -> the measured probability that the answer is right.

    An isotonic (monotone) map fitted by ``tools/train_answer_ranker.py`` on
    gate outputs of models that had not seen the question's dev set; read
    between its points linearly. Without one the gate's own output is used.
    """

    x: np.ndarray
    y: np.ndarray

    def __call__(self, probability: float) -> float:
        if not len(self.x):
            return float(probability)
        return float(np.interp(probability, self.x, self.y))

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Calibration:
        if not data:
            return cls(np.empty(0), np.empty(0))
        x = np.asarray(data["x"], dtype=np.float64)
        y = np.asarray(data["y"], dtype=np.float64)
        if x.shape != y.shape or x.ndim != 1 or bool((np.diff(x) < 0).any()):
            raise ValueError("calibration: x and y must be sorted lists of one length")
        return cls(x, y)


@dataclass(frozen=True)
class Ranker:
    """Which unit answers (``units``), and whether the book answers (``gate``).

    ``units`` weighs every signal, a unit's standing among its rivals
    included. The gate sees the best unit by ``gate_units`` (a unit's own
    signals only), its probability and signals, and says how likely its
    passage answers the question at all: abstention is decided on it. Fed
    the listwise signals, the gate fitted each set's abstentions and
    transferred worse to a set it had not seen (see ``FEATURES``).
    """

    units: Logistic
    gate_units: Logistic
    gate: Logistic
    #: below this gate probability the book is taken not to answer (the
    #: ranker's own threshold, before calibration; see ``answer_at``)
    threshold: float
    #: a second unit is cited only when this close to the best
    second: float
    #: the gate's output as a measured probability of a right answer
    calibration: Calibration
    #: calibrated confidence from which the engine answers (chosen on the
    #: held-out risk-coverage curve for the precision target)
    answer_at: float
    #: calibrated confidence of the best passage from which the engine shows
    #: passages instead of saying the book does not cover the question
    passages_at: float

    def calibrate(self, answerable: float) -> float:
        return round(min(max(self.calibration(answerable), 0.0), 1.0), 4)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Ranker:
        names = list(data["features"])
        if names != list(FEATURES):
            raise ModelNotFoundError(
                f"the answer ranker was trained on features {names}, this "
                f"sphinx-ragcite computes {list(FEATURES)}: retrain it with "
                "tools/train_answer_ranker.py"
            )
        outcomes = data.get("outcomes") or {}
        return cls(
            units=Logistic.from_json(data, len(FEATURES)),
            gate_units=Logistic.from_json(data["gate_units"], len(GATE_FEATURES)),
            gate=Logistic.from_json(data["gate"], len(GATE_FEATURES) + 1),
            threshold=float(data["threshold"]),
            second=float(data["second"]),
            calibration=Calibration.from_json(data.get("calibration")),
            answer_at=float(outcomes.get("answer", data["threshold"])),
            passages_at=float(outcomes.get("passages", data["threshold"] / 2)),
        )


#: The ranker trained on each encoder's signals, by the manifest's
#: ``embedding.encoder``: an e5 cosine is not a MiniLM one (e5's unrelated
#: pairs score .7-.8), so MiniLM's weights answered .96 of the Chinese and
#: Japanese sets' questions and .79 of the unanswerable ones (issue 45).
RANKER_FILES = {"multilingual": "ranker_multilingual.json"}


def ranker_file(encoder: str | None = None) -> str:
    """The shipped ranker's file name for *encoder* (``ranker.json`` else)."""
    return RANKER_FILES.get(encoder or "", "ranker.json")


def ranker_text(encoder: str | None = None) -> tuple[str, str]:
    """(text, name) of the ranker for *encoder*, or of ``$RAGCITE_RANKER``'s
    file, which stands for every encoder (an experiment's)."""
    chosen = os.environ.get(RANKER_ENV)
    if chosen:
        return Path(chosen).read_text("utf-8"), chosen
    name = ranker_file(encoder)
    return (resources.files("sphinx_ragcite.answer") / name).read_text("utf-8"), name


@lru_cache(maxsize=4)
def load_ranker(path: str | None = None, encoder: str | None = None) -> Ranker:
    """The shipped ranker for *encoder*, or the file ``path`` /
    ``$RAGCITE_RANKER`` names."""
    name = path or ranker_file(encoder)
    try:
        if path:
            text = Path(path).read_text("utf-8")
        else:
            text, name = ranker_text(encoder)
        return Ranker.from_json(json.loads(text))
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ModelNotFoundError(
            f"the answer ranker {name} cannot be read ({error}); "
            "reinstall sphinx-ragcite or fix $RAGCITE_RANKER"
        ) from None


@dataclass(frozen=True)
class Candidate:
    unit: Unit
    probability: float
    row: np.ndarray

    @property
    def evidence(self) -> int:
        return self.unit.evidence

    @property
    def sentence(self) -> int:
        return self.unit.first

    @property
    def text(self) -> str:
        return self.unit.text


def unit_rows(
    question: str,
    vector: np.ndarray,
    evidence: Sequence[Evidence],
    bm25: Sequence[float],
    idf: Callable[[str], float],
) -> tuple[list[Unit], np.ndarray]:
    """Every unit of the evidence and its feature row."""
    asked = {term: idf(term) for term in sorted(content_words(question))}
    kind = question_kind(question)
    best_bm25 = max([b for b in bm25 if b > 0], default=0.0)
    units: list[Unit] = []
    rows: list[list[float]] = []
    for e, item in enumerate(evidence):
        if not len(item.sentences):
            continue
        sims = item.vectors @ vector
        share = bm25[e] / best_bm25 if best_bm25 > 0 and e < len(bm25) else 0.0
        for unit in units_of(e, item):
            units.append(unit)
            rows.append(features(unit, item, sims, asked, kind, share, question))
    own = np.asarray(rows, dtype=np.float64).reshape(len(rows), len(UNIT_FEATURES))
    return units, listwise(own)


def rank_units(
    question: str,
    vector: np.ndarray,
    evidence: Sequence[Evidence],
    bm25: Sequence[float],
    idf: Callable[[str], float],
    ranker: Ranker,
) -> list[Candidate]:
    """Every unit, most likely answer first."""
    units, rows = unit_rows(question, vector, evidence, bm25, idf)
    if not units:
        return []
    probabilities = ranker.units(rows)
    ranked = [
        Candidate(u, float(p), row)
        for u, p, row in zip(units, probabilities, rows, strict=True)
    ]
    ranked.sort(key=lambda c: (-c.probability, c.unit.evidence, c.unit.first))
    return ranked


def answerability(candidates: Sequence[Candidate], ranker: Ranker) -> float:
    """How likely the best unit's passage answers the question (the gate)."""
    if not candidates:
        return 0.0
    own = np.stack([c.row[: len(GATE_FEATURES)] for c in candidates])
    p = ranker.gate_units(own)
    top = int(np.argmax(p))
    row = np.concatenate([[p[top]], own[top]])[None, :]
    return float(ranker.gate(row)[0])


_KIND_MISMATCH = FEATURES.index("kind_mismatch")


def choose(
    candidates: Sequence[Candidate],
    ranker: Ranker,
    confidence: float,
    kind: str = "other",
) -> list[Candidate]:
    """The answer: the best unit, and a second only when nearly as likely.

    Nothing when the calibrated *confidence* (the gate's
    :func:`answerability` through :meth:`Ranker.calibrate`) is below
    ``ranker.answer_at``, or when the question asks for a kind of answer
    (*kind*, one of :data:`STRICT_KINDS`) the best unit does not hold: "Who
    invented the French press?" is not answered by a description of one,
    however close its words. A second unit from another passage makes a second
    citation, so it must be nearly as likely as the first; units overlapping
    the first add nothing.
    """
    if not candidates or confidence < ranker.answer_at:
        return []
    best = candidates[0]
    if kind in STRICT_KINDS and best.row[_KIND_MISMATCH] == 1.0:
        return []
    chosen = [best]
    for other in candidates[1 : 1 + SECOND_CANDIDATES]:
        if other.probability < ranker.second * best.probability:
            break
        if other.unit.evidence == best.unit.evidence and (
            other.unit.start < best.unit.end and best.unit.start < other.unit.end
        ):
            continue
        chosen.append(other)
        break
    return chosen


def passage_confidences(
    candidates: Sequence[Candidate], ranker: Ranker
) -> list[tuple[float, Candidate]]:
    """Each passage's calibrated confidence that it answers (the gate over its
    own units) and its best unit; most likely first, at most
    :data:`SHOWN_PASSAGES`."""
    by_passage: dict[int, list[Candidate]] = {}
    for candidate in candidates:
        by_passage.setdefault(candidate.evidence, []).append(candidate)
    scored = [
        (ranker.calibrate(answerability(units, ranker)), units[0])
        for units in by_passage.values()
    ]
    scored.sort(key=lambda item: (-item[0], item[1].evidence))
    return scored[:SHOWN_PASSAGES]
