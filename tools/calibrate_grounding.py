"""Calibrate the grounding thresholds and the confidence curve on the QA set.

Why: the answer engine keeps a generated sentence only when its support clears
``spec.SUPPORT_THRESHOLD`` and maps (fit, relevance, support) to a
confidence with a logistic curve. (Abstention is the answer ranker's gate,
trained by ``train_answer_ranker.py``.) Those constants must come from measurement,
not taste. This script measures them on ``example_book/qa.jsonl`` and prints
the values to put in the code, with 5-fold cross-validated figures so the
in-sample numbers are not the only evidence. They live in
``sphinx_ragcite/answer/spec.py``; after changing them run
``python tools/write_js_spec.py``, which carries them to the browser engine.

Run: ``python tools/calibrate_grounding.py [--site BUILD_DIR]`` (takes the
example book's build of ``benchmarks/_harness.py``, built if needed).
Writes benchmarks/results/calibrate_grounding.json.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

# The example book's build and the result file are the benchmarks' harness's.
from benchmarks._harness import (
    EXAMPLE_QA,
    RESULTS,
    envelope,
    example_site,
    write_result,
)
from sphinx_ragcite.answer.confidence import answer_fit
from sphinx_ragcite.answer.engine import AnswerEngine
from sphinx_ragcite.answer.evidence import build_evidence
from sphinx_ragcite.answer.grounding import support
from sphinx_ragcite.answer.sentences import content_words
from sphinx_ragcite.contracts import confidence_level
from sphinx_ragcite.evaluate import load_qa
from sphinx_ragcite.retrieval.site import Site


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1e-2) -> np.ndarray:
    """Plain gradient descent on the log loss: tiny data, no dependency."""
    xb = np.hstack([np.ones((len(x), 1)), x])
    w = np.zeros(xb.shape[1])
    for _ in range(20000):
        p = 1 / (1 + np.exp(-xb @ w))
        grad = xb.T @ (p - y) / len(y) + l2 * np.r_[0, w[1:]]
        w -= 0.5 * grad
    return w


def predict(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-(w[0] + x @ w[1:])))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path)
    parser.add_argument(
        "--out", type=Path, default=RESULTS / "calibrate_grounding.json"
    )
    args = parser.parse_args()
    site = Site.load(example_site(args.site))
    engine = AnswerEngine(site)
    questions = load_qa(EXAMPLE_QA)

    rows = []
    for q in questions:
        vector = site.embedder.embed([q.question], kind="query")[0]
        hits = site.search(q.question, engine.k, query_vector=vector)
        evidence = build_evidence(site, engine.sentences, vector, [h.row for h in hits])
        rows.append((q, evidence, vector))

    # 1. Support threshold: "question: answer" claims against the gold passage
    # (supported) and against retrieved passages lacking the answer (not).
    pos, neg = [], []
    for q, evidence, _ in rows:
        if q.answer is None:
            continue
        claim = f"{q.question.rstrip('?')}: {q.answer}."
        vector = site.embedder.embed([claim])[0]
        for item in evidence:
            score = support(claim, vector, item).score
            if item.key in q.passage_ids:
                pos.append(score)
            elif q.answer.lower() not in item.text.lower():
                neg.append(score)
    pos_a, neg_a = np.array(pos), np.array(neg)
    print("support threshold  precision  recall")
    support_rows = []
    for t in np.arange(0.30, 0.80, 0.05):
        tp, fp = (pos_a >= t).sum(), (neg_a >= t).sum()
        precision = tp / max(1, tp + fp)
        recall = tp / len(pos_a)
        support_rows.append((round(float(t), 2), float(precision), float(recall)))
        print(f"{t:>17.2f}  {precision:>9.3f}  {recall:>6.3f}")

    # 2. Confidence: fit on the citations the engine returns with abstention
    # off; citations answering an unanswerable question are wrong by definition.
    engine.ranker = replace(engine.ranker, threshold=-1.0)  # never abstain
    features, labels = [], []
    for q, _, vector in rows:
        answer = engine.answer(q.question)
        asked = content_words(q.question)
        for citation in answer.citations:
            text = site.passage(citation.passage_id)["text"].lower()  # type: ignore[index]
            correct = q.answer is not None and (
                citation.passage_id in q.passage_ids or q.answer.lower() in text
            )
            claims = [
                s for s in answer.answer.split("] ") if f"[{citation.n}" in s + "]"
            ]
            claim_vectors = site.embedder.embed(claims or [answer.answer])
            similarity = float((claim_vectors @ vector).max())
            fit_value = max(
                answer_fit(asked, similarity, c) for c in (claims or [answer.answer])
            )
            features.append([fit_value, citation.similarity_score, 1.0])
            labels.append(float(correct))
    x, y = np.array(features)[:, :2], np.array(labels)
    w = fit_logistic(x, y)
    probabilities = predict(w, x)
    print(
        f"confidence fit: BIAS={w[0]:.2f} W_FIT={w[1]:.2f} W_RELEVANCE={w[2]:.2f}"
        f" (support is ~1 for every returned citation, so W_SUPPORT stays 1.0"
        f" and the bias absorbs it: BIAS-1={w[0] - 1:.2f})"
    )
    buckets: dict[str, list[float]] = {}
    for p, label in zip(probabilities, y, strict=True):
        buckets.setdefault(confidence_level(float(p)), []).append(label)
    print("band    citations  correct")
    for band in ("high", "medium", "low"):
        values = buckets.get(band, [])
        share = sum(values) / len(values) if values else math.nan
        print(f"{band:<7} {len(values):>9}  {share:>7.2f}")
    result = {
        "support": {"table": support_rows, "positives": len(pos),
                    "negatives": len(neg)},
        "confidence": {
            "bias": float(w[0] - 1.0), "w_fit": float(w[1]),
            "w_relevance": float(w[2]), "w_support": 1.0,
            "bands": {b: {"n": len(v), "correct": (sum(v) / len(v)) if v else None}
                      for b, v in buckets.items()},
            "citations": len(y), "correct_share": float(y.mean()),
        },
    }  # fmt: skip
    write_result(args.out, {**envelope("calibrate_grounding"), **result})
    return 0


if __name__ == "__main__":
    sys.exit(main())
