"""Which answer-ranker signals and which model help, leave-one-set-out (issue 36).

Each variant is the units' own signals of the engine
(``sphinx_ragcite.answer.spec.UNIT_FEATURES``) with some of issue 36's
candidates (``benchmarks.answer_signals.CANDIDATES``) added, the listwise
signals always, and a choice of model for the unit model, the gate's unit
model and the gate (logistic, or scikit-learn's gradient-boosted trees). For
every dev set that may be trained on, each variant is fitted on the other
sets, calibrated and thresholded on their held-out predictions and judged on
it (``train_answer_ranker.calibrate_held_out``): precision, coverage,
unanswerable and near-topic answered and ECE at the variant's own
threshold; precision and near-topic answered at the coverage the ``before``
variant reached on that set ("at equal coverage"), and their means over
coverages 0.3-0.9 (both by the gate's raw output). A variant is better on a
set when that mean precision is.

    python tools/ranker_experiments.py                 # every variant
    python tools/ranker_experiments.py --variants before +key

Uses the features train_answer_ranker.py cached (``--refresh`` recomputes
them). Writes ``benchmarks/results/ranker_experiments.json`` (``--out``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._harness import RESULTS, envelope, table, write_result
from benchmarks.answer_signals import CANDIDATES
from sphinx_ragcite.answer.spec import FEATURES, UNIT_FEATURES
from tools import train_answer_ranker as train

#: Issue 36's candidate signals, in groups that go in or out together.
NEW = {
    "lead_in": ("lead_in", "lead_in_quoted"),
    "key": ("key_unit", "key_context", "key_retrieved"),
    "type": ("type_match", "type_mismatch"),
    "topic": ("topic_sentence",),
    "api": ("api_passage", "api_field"),
    "default": ("default_howto",),
    "output": ("output",),
}
BEFORE = tuple(UNIT_FEATURES)
ALL = BEFORE + CANDIDATES


def variants() -> dict[str, tuple[tuple[str, ...], frozenset[str]]]:
    """name -> (unit signals, the models that are trees)."""
    out: dict[str, tuple[tuple[str, ...], frozenset[str]]] = {
        "before": (BEFORE, frozenset())
    }
    for group, names in NEW.items():
        out[f"+{group}"] = (BEFORE + names, frozenset())
    out["+all"] = (ALL, frozenset())
    for group, names in NEW.items():
        out[f"all-{group}"] = (
            tuple(n for n in ALL if n not in names),
            frozenset(),
        )
    for group, names in NEW.items():  # the unit model only, not the gate
        out[f"+{group}:units"] = (BEFORE + names, frozenset())
    out["+all:units"] = (ALL, frozenset())
    out["trees:gate"] = (ALL, frozenset({"gate"}))
    out["trees:all"] = (ALL, frozenset({"units", "gate_units", "gate"}))
    out["before,trees:gate"] = (BEFORE, frozenset({"gate"}))
    out["before,trees:all"] = (BEFORE, frozenset({"units", "gate_units", "gate"}))
    return out


def restrict(
    sets: dict[str, list[train.Question]], names: tuple[str, ...], gate: int = 0
) -> dict[str, list[train.Question]]:
    """The questions with the units' own signals *names* (the engine's, then
    candidates) and every listwise one; the gate sees the first *gate* of
    *names* (0: all)."""
    own = [UNIT_FEATURES.index(n) for n in names if n in UNIT_FEATURES]
    extra = [CANDIDATES.index(n) for n in names if n in CANDIDATES]
    rest = list(range(len(UNIT_FEATURES), len(FEATURES)))

    def rows(q: train.Question) -> np.ndarray:
        assert q.candidates is not None or not extra
        added = q.candidates[:, extra] if extra else np.zeros((len(q.rows), 0))
        return np.hstack([q.rows[:, own], added, q.rows[:, rest]])

    return {
        name: [
            train.Question(
                **{**vars(q), "rows": rows(q), "gate_size": gate or len(names)}
            )
            for q in questions
        ]
        for name, questions in sets.items()
    }


FIGURES = ("precision", "coverage", "unanswerable_answered", "near_topic_answered")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    every = variants()
    parser.add_argument("--variants", nargs="+", choices=list(every), default=None)
    parser.add_argument("--out", type=Path, default=RESULTS / "ranker_experiments.json")
    parser.add_argument(
        "--refresh",
        action="store_true",
        help="recompute the features (their cache knows names, not code)",
    )
    args = parser.parse_args(argv)
    chosen = args.variants or list(every)
    if "before" not in chosen:
        chosen.insert(0, "before")
    sets = train.load_all(rebuild=False, refresh=args.refresh)
    report: dict[str, Any] = {}
    reference: dict[str, float] | None = None
    for name in chosen:
        names, trees = every[name]
        train.TREES = trees
        started = time.perf_counter()
        gate = len(BEFORE) if name.endswith(":units") else 0
        result = train.calibrate_held_out(restrict(sets, names, gate), reference)
        if reference is None:  # the "before" variant sets the coverage to meet
            reference = {s: r["coverage"] for s, r in result.items()}
            result = train.calibrate_held_out(restrict(sets, names), reference)
        seconds = time.perf_counter() - started
        report[name] = {
            "signals": list(names),
            "trees": sorted(trees),
            "seconds": round(seconds, 1),
            "sets": result,
        }
        print(f"== {name} ({seconds:.0f} s)", flush=True)
    train.TREES = frozenset()
    text = summary(report)
    print(text)
    write_result(args.out, {**envelope("ranker_experiments"), "variants": report,
                            "table": text})  # fmt: skip
    return 0


def summary(report: dict[str, Any]) -> str:
    """One row per variant and set; then each variant's mean over sets and
    the sets it beats ``before`` on (mean precision over coverages .3-.9)."""

    def f(v: float | None) -> str:
        return "-" if v is None else f"{v:.3f}"

    rows = []
    means = []
    before = report["before"]["sets"]
    for name, entry in report.items():
        wins = losses = 0
        columns: dict[str, list[float]] = {}
        for held, r in entry["sets"].items():
            at = r.get("at_reference", {})
            row = [
                name,
                held,
                f(r["precision"]),
                f(r["coverage"]),
                f(r["unanswerable_answered"]),
                f(r["near_topic_answered"]),
                f(r["ece"]),
                f(at.get("precision")),
                f(at.get("near_topic_answered")),
                f(r.get("mean_over_coverage", {}).get("precision")),
                f(r.get("mean_over_coverage", {}).get("near_topic_answered")),
            ]
            rows.append(row)
            base = before[held].get("mean_over_coverage", {}).get("precision")
            mine = r.get("mean_over_coverage", {}).get("precision")
            if mine is not None and base is not None:
                wins += mine > base + 1e-9
                losses += mine < base - 1e-9
            for key, value in (
                *((k, r[k]) for k in (*FIGURES, "ece")),
                ("eq_precision", at.get("precision")),
                ("eq_near", at.get("near_topic_answered")),
                ("mean_precision", r.get("mean_over_coverage", {}).get("precision")),
                (
                    "mean_near",
                    r.get("mean_over_coverage", {}).get("near_topic_answered"),
                ),
            ):
                if value is not None:
                    columns.setdefault(key, []).append(value)
        means.append(
            [
                name,
                *(
                    f(float(np.mean(columns[k]))) if k in columns else "-"
                    for k in (
                        *FIGURES,
                        "ece",
                        "eq_precision",
                        "eq_near",
                        "mean_precision",
                        "mean_near",
                    )
                ),
                f"{wins}/{losses}",
            ]
        )
    head = ["variant", "held-out set", "prec.", "cov.", "unans.", "near", "ECE"]
    head += ["prec.@cov", "near@cov", "prec.(.3-.9)", "near(.3-.9)"]
    out = table(head, rows)
    head = ["variant", "prec.", "cov.", "unans.", "near", "ECE", "prec.@cov"]
    head += ["near@cov", "prec.(.3-.9)", "near(.3-.9)", "sets better/worse"]
    return out + "\n\nmean over held-out sets:\n" + table(head, means)


if __name__ == "__main__":
    sys.exit(main())
