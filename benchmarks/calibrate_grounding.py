"""Calibrate the grounding thresholds and the confidence curve on the QA set.

Why: the answer engine keeps a generated sentence only when its support clears
``grounding.SUPPORT_THRESHOLD`` and maps (fit, relevance, support) to a
confidence with a logistic curve. (Abstention is the answer ranker's gate,
trained by ``train_answer_ranker.py``; the old sentence-score threshold is
still reported here for comparison.) Those constants must come from measurement,
not taste. This script measures them on ``example_book/qa.jsonl`` and prints
the values to put in the code, with 5-fold cross-validated figures so the
in-sample numbers are not the only evidence.

Run: ``python benchmarks/calibrate_grounding.py [--site BUILD_DIR]``
(builds the example book into benchmarks/results/.example_html if needed).
Writes benchmarks/results/calibrate_grounding.json.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sphinx_ragcite.answer.engine import AnswerEngine  # noqa: E402
from sphinx_ragcite.answer.evidence import build_evidence  # noqa: E402
from sphinx_ragcite.answer.extractive import answerability, rank_sentences  # noqa: E402
from sphinx_ragcite.answer.grounding import support  # noqa: E402
from sphinx_ragcite.answer.sentences import content_words  # noqa: E402
from sphinx_ragcite.contracts import confidence_level  # noqa: E402
from sphinx_ragcite.evaluate import load_qa  # noqa: E402
from sphinx_ragcite.retrieval.site import Site  # noqa: E402

RESULTS = REPO / "benchmarks" / "results"


def ensure_site(path: str | None) -> Path:
    if path:
        return Path(path)
    out = RESULTS / ".example_html"
    if not (out / "_ragcite" / "manifest.json").exists():
        subprocess.run(
            [sys.executable, "-m", "sphinx", "-q", "-b", "html",
             str(REPO / "example_book"), str(out)],
            check=True,
        )  # fmt: skip
    return out


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
    parser.add_argument("--site")
    parser.add_argument("--out", default=str(RESULTS / "calibrate_grounding.json"))
    args = parser.parse_args()
    site = Site.load(ensure_site(args.site))
    engine = AnswerEngine(site)
    questions = load_qa(REPO / "example_book" / "qa.jsonl")

    # 1. Abstention: best-sentence score and best relevance per question.
    rows = []
    for q in questions:
        vector = site.embedder.embed([q.question])[0]
        hits = site.search(q.question, engine.k, query_vector=vector)
        evidence = build_evidence(site, engine.sentences, vector, [h.row for h in hits])
        best = answerability(rank_sentences(q.question, vector, evidence))
        relevance = max(e.relevance for e in evidence)
        rows.append((q, best, relevance, evidence, vector))
    answerable = np.array([r[0].answer is not None for r in rows])
    best = np.array([r[1] for r in rows])
    print(f"{answerable.sum()} answerable, {(~answerable).sum()} unanswerable")
    table = []
    for t in np.arange(0.40, 1.00, 0.01):
        abstain_un = float((best[~answerable] < t).mean())
        answered = float((best[answerable] >= t).mean())
        table.append((round(float(t), 2), abstain_un, answered))
    ok = [row for row in table if row[1] >= 0.8]
    chosen = max(ok, key=lambda row: (row[2], -row[0])) if ok else table[-1]
    print("abstain threshold  abstained(unanswerable)  answered(answerable)")
    for t, a, b in table:
        mark = "  <- chosen" if t == chosen[0] else ""
        print(f"{t:>18.2f}  {a:>23.2f}  {b:>20.2f}{mark}")
    # 5-fold CV of that rule
    folds = np.arange(len(rows)) % 5
    cv = []
    for f in range(5):
        train = folds != f
        best_t = max(
            (t for t, _, _ in table
             if (best[train & ~answerable] < t).mean() >= 0.8),
            key=lambda t: (best[train & answerable] >= t).mean(),
            default=chosen[0],
        )  # fmt: skip
        test = ~train
        cv.append(
            (
                float((best[test & ~answerable] < best_t).mean()),
                float((best[test & answerable] >= best_t).mean()),
            )
        )
    cv_abstain = float(np.mean([c[0] for c in cv]))
    cv_answered = float(np.mean([c[1] for c in cv]))
    print(f"5-fold CV: abstained {cv_abstain:.2f}, answered {cv_answered:.2f}")

    # 2. Support threshold: "question: answer" claims against the gold passage
    # (supported) and against retrieved passages lacking the answer (not).
    pos, neg = [], []
    for q, _, _, evidence, _ in rows:
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

    # 3. Confidence: fit on the citations the engine returns with abstention
    # off; citations answering an unanswerable question are wrong by definition.
    engine.ranker = replace(engine.ranker, threshold=-1.0)  # never abstain
    features, labels = [], []
    for q, _, _, _, vector in rows:
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
            overlap = max(
                len(asked & content_words(c)) / max(1, len(asked))
                for c in (claims or [answer.answer])
            )
            fit_value = 0.55 * similarity + 0.35 * overlap
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
        "abstain": {"table": table, "chosen": chosen,
                    "cv_abstained": cv_abstain, "cv_answered": cv_answered},
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
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
