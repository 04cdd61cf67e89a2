"""Train the answer ranker (``sphinx_ragcite/answer/ranker.json``) on the dev sets.

For every question of every dev set (``benchmarks/devsets.py``'s: the
example book,
click, requests, the Python Packaging User Guide, Flask, attrs, emcee and a
SQuAD dev sample; Jinja and XuanCe never, RQAlpha never by its licence) the
engine retrieves and splits the evidence into answer units exactly as at
query time; each unit's signals
(``sphinx_ragcite.answer.spec.FEATURES``) are labelled 1 when it holds a gold
answer, 0.3 when only its passage does (or is a gold passage), else 0. A
logistic model with an L2 penalty is fitted by Newton's method, and the
abstention threshold is chosen to maximise a utility per question (answered
from a right passage +1, from a wrong one -1, a false abstention -1; an
unanswerable question abstained +1, answered -1), each set weighing the same.

Leave-one-set-out: for each set, weights and threshold come from the other
sets only and are judged on it, so no figure printed here is tuned on the set
it describes. The shipped weights are then fitted on all sets.

    python tools/train_answer_ranker.py            # cross-validate, write
    python tools/train_answer_ranker.py --no-write # cross-validate only

The figures go to ``benchmarks/results/train_answer_ranker.json`` (``--out``).
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

# The dev sets and the harness are the benchmarks': import them from there.
from benchmarks import answer_quality as aq
from benchmarks import answer_signals, devsets, near_topic
from benchmarks._harness import RESULTS, VARIANT, envelope, table, write_result
from sphinx_ragcite.answer.evidence import build_evidence
from sphinx_ragcite.answer.ranker import ranker_file, unit_rows
from sphinx_ragcite.answer.spec import FEATURES
from sphinx_ragcite.answer.units import GATE_FEATURES

REPO = Path(__file__).resolve().parents[1]

#: ``RAGCITE_BENCH_CONF=ragcite_encoder=multilingual``: every set built with
#: multilingual-e5-small, and the ranker of its signals written
#: (``ranker_multilingual.json``; sphinx_ragcite.answer.ranker.RANKER_FILES).
ENCODER = next(
    (v.split("=", 1)[1] for v in VARIANT if v.startswith("ragcite_encoder=")),
    "english",
)
OUT = REPO / "sphinx_ragcite" / "answer" / ranker_file(ENCODER)
CACHE = aq.CACHE / (
    "ranker_features" if ENCODER == "english" else f"ranker_features_{ENCODER}"
)
L2 = 1.0
#: A second passage is cited only when its best unit is this close to the
#: best one. Each second citation trades precision for support. Measured
#: with answer_quality.py (extractive; precision / supported, example book,
#: click, Packaging Guide, SQuAD): 0.85 gave .93/.91 .67/.67 .60/.63 .90/.91;
#: never a second passage .93/.90 .68/.63 .65/.62 .93/.89; 0.93 .93/.90
#: .69/.65 .63/.62 .92/.90. Precision is what readers complained of.
SECOND = 0.93
#: Dev sets never trained on, nor used to choose anything: what the shipped
#: ranker scores on them is a book no weight has seen (answer_quality.py).
#: ``xuance_zh`` is the Chinese set of issue 29 (benchmarks/qa/README.md).
HELD_OUT = ("jinja", "xuance_zh")
#: Dev sets measured, never trained on, because their licence forbids it:
#: RQAlpha's docs are for non-commercial use only (``answer_pairs.SOURCES``).
MEASURE_ONLY = ("rqalpha_zh",)
#: Utility of each outcome when the threshold is chosen.
RIGHT, WRONG, FALSE_ABSTENTION, ABSTAINED, ANSWERED_UNANSWERABLE = 1, -1, -1, 1, -1


@dataclass
class Question:
    set: str
    answerable: bool
    rows: np.ndarray  # units x features
    labels: np.ndarray  # soft labels per unit
    passage_good: np.ndarray  # the unit's passage is right (precision's judge)
    #: a near-topic unanswerable question (its gold pages left out of the build)
    near: bool = False
    #: the first columns of ``rows`` that are a unit's own signals (the gate's)
    gate_size: int = len(GATE_FEATURES)
    #: issue 36's candidate signals per unit (``benchmarks.answer_signals``),
    #: measured by tools/ranker_experiments.py, not trained on here
    candidates: np.ndarray | None = None


def collect(devset: devsets.DevSet) -> list[Question]:
    from sphinx_ragcite.answer.engine import AnswerEngine
    from sphinx_ragcite.retrieval.site import Site

    site = Site.load(devset.site)
    engine = AnswerEngine(site)
    out = []
    for item in devset.items:
        vector = site.embedder.embed([item.question], kind="query")[0]
        hits = site.search(
            item.question, engine.k, fusion=engine.fusion, query_vector=vector
        )
        evidence = build_evidence(site, engine.sentences, vector, [h.row for h in hits])
        units, rows = unit_rows(
            item.question, vector, evidence, [h.bm25 or 0.0 for h in hits], site.idf
        )
        golds = [devsets.norm(a) for a in item.answers]
        good_passage = [
            e.key in item.gold_ids or any(g in devsets.norm(e.text) for g in golds)
            for e in evidence
        ]
        has = np.array([any(g in devsets.norm(u.text) for g in golds) for u in units])
        good = np.array([good_passage[u.evidence] for u in units], dtype=bool)
        labels = np.where(has, 1.0, np.where(good, 0.3, 0.0))
        extra = answer_signals.columns(item.question, units, evidence, site.idf)
        out.append(
            Question(devset.name, item.answerable, rows, labels, good, candidates=extra)
        )
    return out


def load_all(rebuild: bool, refresh: bool) -> dict[str, list[Question]]:
    """Every dev set's questions, its near-topic folds' under the same name
    (so a held-out set's near-topic questions are held out with it)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    sets: dict[str, list[Question]] = {}
    for name, loader in devsets.LOADERS.items():
        if name in HELD_OUT or name in MEASURE_ONLY:
            continue
        sets[name] = questions_of(loader(rebuild), refresh)
        for fold in near_topic.load(name):
            near = questions_of(fold, refresh)
            sets[name] += [
                Question(**{**vars(q), "set": name, "near": True}) for q in near
            ]
    return sets


def questions_of(devset: devsets.DevSet, refresh: bool) -> list[Question]:
    """One set's questions with their units' signals (cached per build)."""
    name = devset.name
    path = CACHE / f"{name}.pickle"
    key = json.loads((devset.site.parent / "stamp.json").read_text())["key"]
    key += "|" + ",".join(FEATURES) + "|" + ",".join(answer_signals.CANDIDATES)
    if path.is_file() and not refresh:
        cached = pickle.loads(path.read_bytes())
        if cached["key"] == key:
            return [Question(**q) for q in cached["questions"]]
    started = time.perf_counter()
    questions = collect(devset)
    seconds = time.perf_counter() - started
    print(f"{name}: {len(questions)} questions in {seconds:.0f} s")
    plain = [vars(q) for q in questions]  # loadable from any __main__
    path.write_bytes(pickle.dumps({"key": key, "questions": plain}))
    return questions


def set_weighted(
    questions: list[Question],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every unit row, its label, and a weight that makes each set count the
    same (the weights average 1)."""
    rows = np.concatenate([q.rows for q in questions if len(q.rows)])
    labels = np.concatenate([q.labels for q in questions if len(q.rows)])
    sets = sorted({q.set for q in questions})
    per_set = {s: sum(len(q.rows) for q in questions if q.set == s) for s in sets}
    weights = np.concatenate(
        [np.full(len(q.rows), 1.0 / per_set[q.set]) for q in questions if len(q.rows)]
    )
    return rows, labels, weights * (len(rows) / weights.sum())


def fit(questions: list[Question]) -> dict[str, Any]:
    """Standardised logistic regression (soft labels, L2), each set equal."""
    rows, labels, weights_of_rows = set_weighted(questions)
    mean = rows.mean(axis=0)
    scale = rows.std(axis=0)
    scale[scale < 1e-9] = 1.0
    x = np.hstack([(rows - mean) / scale, np.ones((len(rows), 1))])
    w = np.zeros(x.shape[1])
    penalty = np.full(x.shape[1], L2)
    penalty[-1] = 0.0
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ w, -30, 30)))
        gradient = x.T @ (weights_of_rows * (p - labels)) + penalty * w
        hessian = (x * (weights_of_rows * p * (1 - p))[:, None]).T @ x
        hessian += np.diag(penalty) + 1e-9 * np.eye(len(w))
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return {"weights": w[:-1], "bias": float(w[-1]), "mean": mean, "scale": scale}


#: Which of the three models (``units``, ``gate_units``, ``gate``) are
#: gradient-boosted trees instead of logistic: set by
#: tools/ranker_experiments.py, which measured them (benchmarks/README.md,
#: "Issue 36"); the engine evaluates logistic models only.
TREES: frozenset[str] = frozenset()
#: The trees' size, set by hand (small, as the browser would evaluate them).
TREE_OPTIONS = {
    "max_iter": 100,
    "learning_rate": 0.1,
    "max_depth": 3,
    "min_samples_leaf": 40,
    "l2_regularization": 1.0,
    "early_stopping": False,
}


def fit_trees(questions: list[Question]) -> dict[str, Any]:
    """scikit-learn's HistGradientBoostingClassifier on the same rows, soft
    labels as two weighted rows (1 with weight y, 0 with 1 - y), each set
    equal. Measured only (tools/ranker_experiments.py): not shipped."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    rows, labels, weights = set_weighted(questions)
    x = np.vstack([rows, rows])
    y = np.concatenate([np.ones(len(rows)), np.zeros(len(rows))])
    w = np.concatenate([weights * labels, weights * (1 - labels)])
    keep = w > 0
    model = HistGradientBoostingClassifier(random_state=0, **TREE_OPTIONS)
    model.fit(x[keep], y[keep], sample_weight=w[keep])
    return {"sklearn": model}


def fit_part(part: str, questions: list[Question]) -> dict[str, Any]:
    return fit_trees(questions) if part in TREES else fit(questions)


def probabilities(rows: np.ndarray, model: dict[str, Any]) -> np.ndarray:
    if "sklearn" in model:
        return model["sklearn"].predict_proba(rows)[:, 1]  # type: ignore[no-any-return]
    z = ((rows - model["mean"]) / model["scale"]) @ model["weights"] + model["bias"]
    return 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))  # type: ignore[no-any-return]


def own(q: Question) -> np.ndarray:
    """The unit's own signals (what the gate's unit model sees)."""
    return q.rows[:, : q.gate_size]


def fit_models(questions: list[Question]) -> dict[str, Any]:
    """The unit model (all signals) that chooses the answer, and the gate:
    a unit model over the units' own signals whose best unit, with its
    probability, decides whether the book answers at all. The unit models
    learn from the dev sets' own questions; the gate also from the
    near-topic ones, whose every unit is wrong."""
    written = [q for q in questions if not q.near]
    model = fit_part("units", written)
    model["gate_units"] = fit_part(
        "gate_units",
        [
            Question(
                q.set,
                q.answerable,
                own(q),
                q.labels,
                q.passage_good,
                q.near,
                q.gate_size,
            )
            for q in written
            if len(q.rows)
        ],
    )
    model["gate"] = fit_gate(questions, model)
    return model


def gate_row(q: Question, model: dict[str, Any]) -> tuple[np.ndarray, bool]:
    """The gate's input: the gate unit model's best unit's probability and
    signals; and whether that unit's passage is right (the gate's label)."""
    p = probabilities(own(q), model["gate_units"])
    top = int(np.argmax(p))
    return np.concatenate([[p[top]], own(q)[top]]), bool(q.passage_good[top])


def fit_gate(questions: list[Question], model: dict[str, Any]) -> dict[str, Any]:
    """P(the best unit's passage answers): answerable and right -> 1, else 0."""
    usable = [q for q in questions if len(q.rows)]
    pairs = [gate_row(q, model) for q in usable]
    gate_questions = [
        Question(
            q.set,
            q.answerable,
            row[None, :],
            np.array([float(q.answerable and good)]),
            np.array([good]),
            q.near,
            q.gate_size,
        )
        for q, (row, good) in zip(usable, pairs, strict=True)
    ]
    return fit_part("gate", gate_questions)


def best(q: Question, model: dict[str, Any]) -> tuple[float, bool]:
    """The gate's probability, and whether the chosen unit's passage is right."""
    if not len(q.rows):
        return 0.0, False
    row, _ = gate_row(q, model)
    chosen = int(np.argmax(probabilities(q.rows, model)))
    return float(probabilities(row[None, :], model["gate"])[0]), bool(
        q.passage_good[chosen]
    )


def outcomes(
    questions: list[Question], model: dict[str, Any], threshold: float
) -> dict[str, float]:
    answerable = [q for q in questions if q.answerable]
    unanswerable = [q for q in questions if not q.answerable]
    right = wrong = abstained = 0
    for q in answerable:
        p, good = best(q, model)
        if p < threshold:
            abstained += 1
        elif good:
            right += 1
        else:
            wrong += 1
    held = sum(best(q, model)[0] < threshold for q in unanswerable)
    answered = right + wrong
    return {
        "precision": right / answered if answered else 1.0,
        "supported": right / max(1, len(answerable)),
        "false_abstention": abstained / max(1, len(answerable)),
        "abstention_unanswerable": held / len(unanswerable) if unanswerable else None,
        "utility": (
            RIGHT * right
            + WRONG * wrong
            + FALSE_ABSTENTION * abstained
            + ABSTAINED * held
            + ANSWERED_UNANSWERABLE * (len(unanswerable) - held)
        )
        / max(1, len(questions)),
    }


#: Grid points either side of a threshold (0.01 apart) averaged into its
#: utility: the curve is flat and jagged near its top, and its bare argmax
#: moved from 0.31 to 0.26 with a change that relabelled three questions'
#: kind (0.29 smoothed).
SMOOTHING = 3


def choose_threshold(sets: dict[str, list[Question]], model: dict[str, Any]) -> float:
    grid = np.linspace(0.02, 0.9, 89)
    scores = np.array(
        [
            np.mean([outcomes(qs, model, t)["utility"] for qs in sets.values()])
            for t in grid
        ]
    )
    window = np.ones(2 * SMOOTHING + 1) / (2 * SMOOTHING + 1)
    padded = np.pad(scores, SMOOTHING, mode="edge")
    smoothed = np.convolve(padded, window, mode="valid")
    return float(grid[int(np.argmax(smoothed))])


# -- calibration and the three outcomes ---------------------------------------

#: What a wrong answer costs against a right one (+1) when the "answer"
#: threshold is chosen on the held-out risk-coverage curve (a question not
#: answered still shows the passages that most likely hold the answer, and
#: costs nothing). With a calibrated confidence, a cost c puts the threshold
#: where an answer is right c / (1 + c) of the time at the margin: 1 answers
#: what is more likely right than wrong. The figures of the stricter
#: ``ALTERNATIVE_COST`` are reported beside it; issue 25's precision target
#: (0.95 on every set) would answer only 4-9% of answerable questions.
WRONG_COST = 1.0
ALTERNATIVE_COST = 3.0
#: Share of answerable questions whose gold passage was retrieved that may be
#: told "not found" (they lose the passages that would have shown it).
NOT_FOUND_LOSS = 0.03
#: Bins of the expected calibration error.
ECE_BINS = 10


@dataclass
class Prediction:
    set: str
    answerable: bool
    near: bool
    gate: float  # the gate's raw probability
    right: bool  # the chosen unit's passage answers (answerable and right)
    retrieved: bool  # a retrieved passage is right (what "passages" can show)


def predict(questions: list[Question], model: dict[str, Any]) -> list[Prediction]:
    out = []
    for q in questions:
        gate, good = best(q, model)
        out.append(
            Prediction(
                q.set,
                q.answerable,
                q.near,
                gate,
                q.answerable and good,
                q.answerable and bool(q.passage_good.any()),
            )
        )
    return out


def held_out_predictions(sets: dict[str, list[Question]]) -> list[Prediction]:
    """Each set predicted by models fitted on the others only."""
    out = []
    for held in sets:
        train = [q for n, qs in sets.items() if n != held for q in qs]
        out += predict(sets[held], fit_models(train))
    return out


def set_weights(predictions: list[Prediction]) -> np.ndarray:
    counts: dict[str, int] = {}
    for p in predictions:
        counts[p.set] = counts.get(p.set, 0) + 1
    return np.array([1.0 / counts[p.set] for p in predictions])


def isotonic(predictions: list[Prediction]) -> dict[str, list[float]]:
    """Pool-adjacent-violators over the gate's output, each set weighing the
    same: P(right | gate) as a non-decreasing map (its blocks' means).

    Fitted on the dev sets' own questions: the near-topic ones (every one
    wrong when answered) would make the confidence of a reader's question
    too low; they weigh in the gate and in the thresholds instead."""
    predictions = [p for p in predictions if not p.near]
    order = sorted(range(len(predictions)), key=lambda i: predictions[i].gate)
    weights = set_weights(predictions)
    blocks: list[list[float]] = []  # [weight, sum of gate, sum of right]
    for i in order:
        p = predictions[i]
        w = float(weights[i])
        blocks.append([w, w * p.gate, w * float(p.right)])
        while len(blocks) > 1 and (
            blocks[-2][2] / blocks[-2][0] >= blocks[-1][2] / blocks[-1][0]
        ):
            last = blocks.pop()
            blocks[-1] = [a + b for a, b in zip(blocks[-1], last, strict=True)]
    return {
        "x": [round(b[1] / b[0], 6) for b in blocks],
        "y": [round(b[2] / b[0], 6) for b in blocks],
    }


def calibrated(
    predictions: list[Prediction], curve: dict[str, list[float]]
) -> np.ndarray:
    return np.interp([p.gate for p in predictions], curve["x"], curve["y"])


def choose_outcomes(
    predictions: list[Prediction], confidence: np.ndarray, cost: float = WRONG_COST
) -> dict[str, float]:
    """The point of the risk-coverage curve (each set weighing the same)
    where answering gains most (right +1, wrong -*cost*); and
    the highest confidence below which answerable questions with a right
    passage retrieved are told "not found" at most :data:`NOT_FOUND_LOSS` of
    the time."""
    weights = set_weights(predictions)
    right = np.array([p.right for p in predictions], dtype=float)
    grid = np.round(np.arange(0.01, 1.0, 0.01), 2)
    gains = [
        float((weights * (confidence >= t) * (right - cost * (1 - right))).sum())
        for t in grid
    ]
    answer_at = float(grid[int(np.argmax(gains))])
    retrieved = np.array([p.retrieved for p in predictions])
    losses = confidence[retrieved]
    w = weights[retrieved]
    passages_at = 0.0
    for t in np.round(np.arange(0.01, answer_at, 0.01), 2):
        if (w * (losses < t)).sum() / w.sum() > NOT_FOUND_LOSS:
            break
        passages_at = float(t)
    return {"answer": answer_at, "passages": passages_at}


def outcome_figures(
    predictions: list[Prediction], confidence: np.ndarray, at: dict[str, float]
) -> dict[str, Any]:
    """Precision and coverage of answers, answers to unanswerable questions,
    not-found among retrievable ones, and the calibration error of answers."""
    answered = confidence >= at["answer"]
    shown = confidence >= at["passages"]
    right = np.array([p.right for p in predictions])
    answerable = np.array([p.answerable for p in predictions])
    near = np.array([p.near for p in predictions])
    written = ~answerable & ~near
    retrieved = np.array([p.retrieved for p in predictions])

    def share(mask: np.ndarray, of: np.ndarray) -> float | None:
        return round(float(mask[of].mean()), 3) if of.any() else None

    return {
        "precision": share(right, answered),
        "coverage": share(answered, answerable),
        "unanswerable_answered": share(answered, written),
        "near_topic_answered": share(answered, near),
        "not_found_retrievable": share(~shown, retrieved),
        "ece": ece(confidence[answered], right[answered]),
        "answers": int(answered.sum()),
    }


def ece(confidence: np.ndarray, right: np.ndarray) -> float | None:
    """Expected calibration error: |mean confidence - share right| per bin."""
    if not len(confidence):
        return None
    bins = np.minimum((confidence * ECE_BINS).astype(int), ECE_BINS - 1)
    total = 0.0
    for b in range(ECE_BINS):
        inside = bins == b
        if inside.any():
            gap = abs(confidence[inside].mean() - right[inside].mean())
            total += inside.sum() / len(confidence) * gap
    return round(float(total), 4)


def at_coverage(
    predictions: list[Prediction], confidence: np.ndarray, coverage: float
) -> dict[str, Any]:
    """Precision of answers (own questions, unanswerable ones included) when
    the threshold answers *coverage* of the answerable questions, and the
    share of (near-topic) unanswerable questions answered there: how well
    the confidence orders questions, whatever threshold was chosen."""
    answerable = np.array([p.answerable for p in predictions])
    near = np.array([p.near for p in predictions])
    right = np.array([p.right for p in predictions])
    ranked = np.sort(confidence[answerable])[::-1]
    if not len(ranked):
        return {}
    k = min(len(ranked), max(1, round(coverage * len(ranked))))
    answered = confidence >= ranked[k - 1]
    own_answered = answered & ~near
    written = ~answerable & ~near

    def share(mask: np.ndarray, of: np.ndarray) -> float | None:
        return round(float(mask[of].mean()), 3) if of.any() else None

    return {
        "coverage": round(float(answered[answerable].mean()), 3),
        "precision": share(right, own_answered),
        "unanswerable_answered": share(answered, written),
        "near_topic_answered": share(answered, near),
    }


#: Coverages over which :func:`at_coverage`'s figures are averaged (a
#: steadier comparison of two gates than one point).
COVERAGE_GRID = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


def calibrate_held_out(
    sets: dict[str, list[Question]], reference: dict[str, float] | None = None
) -> dict[str, Any]:
    """For each set: models, calibration and outcome thresholds fitted
    without it (calibration on the others' own held-out predictions), then
    judged on it; with *reference* coverages per set, also the figures at
    that coverage (:func:`at_coverage`)."""
    report = {}
    for held in sets:
        train = {n: qs for n, qs in sets.items() if n != held}
        inner = held_out_predictions(train)
        curve = isotonic(inner)
        at = choose_outcomes(inner, calibrated(inner, curve))
        strict = choose_outcomes(inner, calibrated(inner, curve), ALTERNATIVE_COST)
        mine = predict(sets[held], fit_models([q for qs in train.values() for q in qs]))
        figures = outcome_figures(mine, calibrated(mine, curve), at)
        # how well the gate orders questions, whatever the threshold: its
        # raw output (the calibration's flat steps would tie questions)
        raw = np.array([p.gate for p in mine])
        if reference and held in reference:
            figures["at_reference"] = at_coverage(mine, raw, reference[held])
        grid = [at_coverage(mine, raw, c) for c in COVERAGE_GRID]
        figures["mean_over_coverage"] = {
            key: round(
                float(np.mean([g[key] for g in grid if g.get(key) is not None])), 4
            )
            for key in ("precision", "near_topic_answered", "unanswerable_answered")
            if any(g.get(key) is not None for g in grid)
        }
        report[held] = {
            **figures,
            "answer_at": at["answer"],
            "passages_at": at["passages"],
            f"at_cost_{ALTERNATIVE_COST:g}": {
                **outcome_figures(mine, calibrated(mine, curve), strict),
                "answer_at": strict["answer"],
            },
        }
        print(held, report[held], flush=True)
    return report


def rounded_model(model: dict[str, Any]) -> dict[str, Any]:
    return {
        "weights": [round(float(v), 6) for v in model["weights"]],
        "bias": round(model["bias"], 6),
        "mean": [round(float(v), 6) for v in model["mean"]],
        "scale": [round(float(v), 6) for v in model["scale"]],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--refresh", action="store_true", help="recompute features")
    parser.add_argument(
        "--out",
        type=Path,
        default=RESULTS
        / (
            "train_answer_ranker.json"
            if ENCODER == "english"
            else f"train_answer_ranker_{ENCODER}.json"
        ),
    )
    args = parser.parse_args(argv)
    sets = load_all(args.rebuild, args.refresh)
    report: dict[str, Any] = {"features": list(FEATURES), "held_out": {}}
    rows = []
    for held in sets:
        train = {n: qs for n, qs in sets.items() if n != held}
        pooled = [q for qs in train.values() for q in qs]
        model = fit_models(pooled)
        threshold = choose_threshold(train, model)
        result = outcomes(sets[held], model, threshold)
        result["threshold"] = round(threshold, 3)
        report["held_out"][held] = result
        rows.append(
            [
                held,
                *(
                    f"{v:.3f}" if isinstance(v, float) else str(v)
                    for v in result.values()
                ),
            ]
        )
    print(
        table(
            [
                "held-out set",
                "precision",
                "supported",
                "false abst.",
                "abst. unans.",
                "utility",
                "threshold",
            ],
            rows,
        )
    )
    report["calibration_held_out"] = calibrate_held_out(sets)
    oof = held_out_predictions(sets)
    curve = isotonic(oof)
    at = choose_outcomes(oof, calibrated(oof, curve))
    pooled = [q for qs in sets.values() for q in qs]
    model = fit_models(pooled)
    threshold = choose_threshold(sets, model)
    shipped = {
        "features": list(FEATURES),
        "weights": [round(float(v), 6) for v in model["weights"]],
        "bias": round(model["bias"], 6),
        "mean": [round(float(v), 6) for v in model["mean"]],
        "scale": [round(float(v), 6) for v in model["scale"]],
        "gate_units": rounded_model(model["gate_units"]),
        "gate": rounded_model(model["gate"]),
        "threshold": round(threshold, 4),
        "second": SECOND,
        "calibration": curve,
        "outcomes": at,
        "trained_on": {n: len(qs) for n, qs in sets.items()},
        "trained_by": "tools/train_answer_ranker.py",
    }
    if ENCODER != "english":
        shipped["encoder"] = ENCODER  # its signals' encoder: the sets built with it
    report["shipped"] = shipped
    report["shipped_in_sample"] = {
        n: outcomes(qs, model, threshold) for n, qs in sets.items()
    }
    print("weights:", dict(zip(FEATURES, shipped["weights"], strict=True)))
    print("threshold:", shipped["threshold"])
    write_result(args.out, {**envelope("train_answer_ranker"), **report})
    if not args.no_write:
        OUT.write_text(json.dumps(shipped, indent=1) + "\n", "utf-8")
        print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
