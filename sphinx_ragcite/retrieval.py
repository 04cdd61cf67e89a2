"""A built site's ``_ragcite/`` -> ranked passages (BM25, dense, or both fused).

Needs no Sphinx: the server, the CLI and tests load a site with :meth:`Site.load`.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from sphinx_ragcite.errors import IndexError as RagciteIndexError
from sphinx_ragcite.index.embed import (
    DEFAULT_MODEL_ID,
    Embedder,
    dequantize,
    model_files,
)
from sphinx_ragcite.index.links import PREFIX as MOVED_PREFIX
from sphinx_ragcite.index.tokenize import tokenize
from sphinx_ragcite.index.writer import FORMAT_VERSION, INDEX_DIR, MANIFEST
from sphinx_ragcite.passages.ids import parse_passage_id

if TYPE_CHECKING:
    from collections.abc import Iterable

    import bm25s

    from sphinx_ragcite.passages.records import Record

logger = logging.getLogger(__name__)

Mode = Literal["bm25", "dense", "hybrid"]
Fusion = Literal["rrf", "linear"]
#: Cormack et al.'s constant; ranks below ~k matter little.
RRF_K = 60
REBUILD = "Rebuild the site with sphinx-ragcite (python -m sphinx -b html SRC OUT)."


@dataclass(frozen=True)
class Filters:
    """Restrict a search to some documents (glob-free prefixes) or chapters."""

    docnames: tuple[str, ...] = ()
    chapters: tuple[int, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.docnames or self.chapters)


@dataclass(frozen=True)
class Hit:
    passage: Record
    row: int
    score: float
    bm25: float | None = None
    dense: float | None = None

    @property
    def passage_id(self) -> str:
        return str(self.passage["passage_id"])

    def as_json(self) -> dict[str, Any]:
        return {
            "passage_id": self.passage_id,
            "score": round(self.score, 6),
            "bm25": None if self.bm25 is None else round(self.bm25, 6),
            "dense": None if self.dense is None else round(self.dense, 6),
            **{k: v for k, v in self.passage.items() if k != "passage_id"},
        }


def _moved(data: bytes | None, directory: Path) -> dict[str, str]:
    """The widget's ``moved.js`` map: a JSON object behind a script prefix."""
    if data is None:
        return {}
    body = data.decode("utf-8", "replace").strip()
    if not (body.startswith(MOVED_PREFIX) and body.endswith(";")):
        raise RagciteIndexError(f"{directory}/moved.js is damaged. {REBUILD}")
    try:
        moved = json.loads(body[len(MOVED_PREFIX) : -1])
    except ValueError:
        raise RagciteIndexError(f"{directory}/moved.js is damaged. {REBUILD}") from None
    if not isinstance(moved, dict):
        raise RagciteIndexError(f"{directory}/moved.js is damaged. {REBUILD}")
    # a value is a URL, or [URL, opening words of a block inside that passage]
    return {str(k): str(v[0] if isinstance(v, list) else v) for k, v in moved.items()}


def _index_dir(path: Path) -> Path:
    return path if (path / MANIFEST).is_file() else path / INDEX_DIR


@dataclass
class Site:
    """The loaded index of one built site; read-only and safe to share."""

    root: Path
    manifest: dict[str, Any]
    passages: list[Record]
    bm25: bm25s.BM25
    vectors: np.ndarray | None
    model_dir: str | None = None
    #: links of earlier builds (page#ID) -> URL of their text now (``moved.js``)
    moved: dict[str, str] = field(default_factory=dict, repr=False)
    _rows: dict[str, int] = field(default_factory=dict, repr=False)

    @classmethod
    def load(
        cls, path: str | Path, *, model_dir: str | None = None, verify: bool = True
    ) -> Site:
        """Load and check ``_ragcite/`` under *path* (or *path* itself)."""
        directory = _index_dir(Path(path))
        manifest = _read_manifest(directory)
        files = manifest.get("files", {})
        data: dict[str, bytes] = {}
        # The static index is the browser's: not read (31 MB at 50k passages).
        for role, name in sorted(files.items()):
            if role == "static":
                continue
            file = directory / name
            try:
                data[role] = file.read_bytes()
            except OSError:
                raise RagciteIndexError(
                    f"{file} is missing (listed in {directory / MANIFEST}). {REBUILD}"
                ) from None
            expected = manifest.get("sha256", {}).get(role)
            if verify and hashlib.sha256(data[role]).hexdigest() != expected:
                raise RagciteIndexError(
                    f"{file} is corrupt: its checksum does not match the manifest. "
                    + REBUILD
                )
        try:
            passages = [
                json.loads(line) for line in data["passages"].decode().splitlines()
            ]
            retriever = _load_bm25((directory / files["bm25.params"]).parent)
            vectors = None
            if manifest.get("embedding"):
                # Stored transposed (dim x passages): the query's dot product then
                # streams memory in order, twice as fast as the row layout at 50k.
                vectors = np.ascontiguousarray(
                    dequantize(
                        _npy(data["embeddings"]),
                        _npy(data["embedding_scales"]),
                    ).T
                ).T
        except (KeyError, ValueError, OSError, UnicodeDecodeError) as error:
            raise RagciteIndexError(
                f"{directory} cannot be read ({error}). {REBUILD}"
            ) from None
        if len(passages) != manifest["counts"]["passages"] or (
            vectors is not None and len(vectors) != len(passages)
        ):
            raise RagciteIndexError(
                f"{directory} is inconsistent: file sizes disagree. {REBUILD}"
            )
        site = cls(directory, manifest, passages, retriever, vectors, model_dir)
        site.moved = _moved(data.get("moved"), directory)
        site._rows = {p["passage_id"]: i for i, p in enumerate(passages)}
        return site

    @property
    def version(self) -> str:
        """Changes whenever the indexed passages change (for caches)."""
        return str(self.manifest["sha256"]["passages"][:16])

    def passage(self, passage_id: str) -> Record | None:
        row = self._rows.get(passage_id)
        return None if row is None else self.passages[row]

    def moved_hint(self, passage_id: str) -> str:
        """Where an ID of an earlier build went, as a clause for error messages."""
        if passage_id in self._rows:
            return ""
        found = sorted(
            (old.partition("#")[0], url)
            for old, url in self.moved.items()
            if old.partition("#")[2] == passage_id
        )
        if len(found) == 1:
            url = found[0][1]
            return f"its text is now {url.rpartition('#')[2]} ({url})"
        return "; ".join(
            f"its text on {page or 'the root page'} is now "
            f"{url.rpartition('#')[2]} ({url})"
            for page, url in found
        )

    @cached_property
    def embedder(self) -> Embedder:
        """The model the passages were embedded with, loaded on first use.

        A BM25-only index still gets one (``--embedding-model`` or the
        default): answers are verified sentence by sentence with it.
        """
        embedding = self.manifest.get("embedding")
        if not embedding:
            return Embedder(model_files(self.model_dir))
        model = embedding["model"]
        if self.model_dir is None and model != DEFAULT_MODEL_ID:
            raise RagciteIndexError(
                f"This index was embedded with model {model!r}: pass its folder "
                "(--embedding-model) to search it."
            )
        return Embedder(model_files(self.model_dir), max_tokens=embedding["max_tokens"])

    @property
    def has_dense(self) -> bool:
        return self.vectors is not None

    # -- scoring ---------------------------------------------------------

    def bm25_scores(self, query: str) -> np.ndarray:
        vocab = self.bm25.vocab_dict
        ids = [vocab[t] for t in tokenize(query) if t in vocab]
        if not ids:
            return np.zeros(len(self.passages), dtype=np.float32)
        return np.asarray(self.bm25.get_scores(ids), dtype=np.float32)

    def dense_scores(
        self, query: str, query_vector: np.ndarray | None = None
    ) -> np.ndarray:
        if self.vectors is None:
            raise RagciteIndexError(
                "This index has no dense embeddings (built with "
                "ragcite_embeddings = False); use mode 'bm25'."
            )
        if query_vector is None:
            query_vector = self.embedder.embed([query])[0]
        return query_vector @ self.vectors.T

    def mask(self, filters: Filters | None) -> np.ndarray | None:
        if not filters:
            return None
        keep = np.zeros(len(self.passages), dtype=bool)
        for row, record in enumerate(self.passages):
            docname = record["docname"]
            chapter = (parse_passage_id(record["passage_id"]) or (-1,))[0]
            keep[row] = (
                not filters.docnames
                or any(
                    docname == d or docname.startswith(d.rstrip("/") + "/")
                    for d in filters.docnames
                )
            ) and (not filters.chapters or chapter in filters.chapters)
        return keep

    def search(
        self,
        query: str,
        k: int = 10,
        *,
        mode: Mode = "hybrid",
        fusion: Fusion = "rrf",
        filters: Filters | None = None,
        depth: int = 50,
        query_vector: np.ndarray | None = None,
    ) -> list[Hit]:
        """Top *k* passages; hybrid fuses the top *depth* of each ranking."""
        if mode == "hybrid" and not self.has_dense:
            mode = "bm25"
        keep = self.mask(filters)
        bm25 = self.bm25_scores(query) if mode != "dense" else None
        dense = self.dense_scores(query, query_vector) if mode != "bm25" else None
        if mode == "bm25":
            assert bm25 is not None
            rows = _top(bm25, k, keep, positive=True)
            return [self._hit(r, float(bm25[r]), bm25, dense) for r in rows]
        if mode == "dense":
            assert dense is not None
            rows = _top(dense, k, keep)
            return [self._hit(r, float(dense[r]), bm25, dense) for r in rows]
        assert bm25 is not None
        assert dense is not None
        lexical = _top(bm25, depth, keep, positive=True)
        semantic = _top(dense, depth, keep)
        fused = (
            _rrf((lexical, semantic))
            if fusion == "rrf"
            else _linear(lexical, semantic, bm25, dense)
        )
        ranked = sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:k]
        return [self._hit(row, score, bm25, dense) for row, score in ranked]

    def _hit(
        self,
        row: int,
        score: float,
        bm25: np.ndarray | None,
        dense: np.ndarray | None,
    ) -> Hit:
        return Hit(
            self.passages[row],
            row,
            score,
            None if bm25 is None else float(bm25[row]),
            None if dense is None else float(dense[row]),
        )


def _top(
    scores: np.ndarray, k: int, keep: np.ndarray | None, *, positive: bool = False
) -> list[int]:
    """Rows of the *k* best scores, best first, ties by row (deterministic)."""
    wanted = scores > 0 if positive else None
    if keep is not None:
        wanted = keep if wanted is None else wanted & keep
    candidates = np.arange(len(scores)) if wanted is None else np.flatnonzero(wanted)
    if len(candidates) > k:
        part = np.argpartition(-scores[candidates], k - 1)[:k]
        candidates = candidates[part]
    order = np.lexsort((candidates, -scores[candidates]))
    return [int(r) for r in candidates[order]]


def _rrf(rankings: Iterable[list[int]]) -> dict[int, float]:
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, row in enumerate(ranking, start=1):
            fused[row] = fused.get(row, 0.0) + 1.0 / (RRF_K + rank)
    return fused


def _linear(
    lexical: list[int],
    semantic: list[int],
    bm25: np.ndarray,
    dense: np.ndarray,
    alpha: float = 0.5,
) -> dict[int, float]:
    """Min-max normalised scores, mixed: the alternative RRF is measured against."""
    rows = sorted(set(lexical) | set(semantic))

    def normalised(scores: np.ndarray) -> np.ndarray:
        values = scores[rows]
        low, high = float(values.min()), float(values.max())
        return (values - low) / (high - low) if high > low else np.zeros_like(values)

    mixed = alpha * normalised(bm25) + (1 - alpha) * normalised(dense)
    return {row: float(v) for row, v in zip(rows, mixed, strict=True)}


def _npy(data: bytes) -> np.ndarray:
    """An array from the bytes already read and checked (no second read)."""
    return np.load(io.BytesIO(data), allow_pickle=False)


def _read_manifest(directory: Path) -> dict[str, Any]:
    path = directory / MANIFEST
    try:
        manifest = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise RagciteIndexError(
            f"No {INDEX_DIR}/{MANIFEST} under {directory.parent}: is this the output "
            f"of an HTML build with 'sphinx_ragcite' in extensions? {REBUILD}"
        ) from None
    except (OSError, ValueError) as error:
        raise RagciteIndexError(f"{path} cannot be read ({error}). {REBUILD}") from None
    if not isinstance(manifest, dict):
        raise RagciteIndexError(f"{path} is not an index manifest. {REBUILD}")
    version = manifest.get("format_version")
    if version != FORMAT_VERSION:
        raise RagciteIndexError(
            f"{path} has index format {version!r}; this sphinx-ragcite reads format "
            f"{FORMAT_VERSION}. {REBUILD}"
        )
    return manifest


def _load_bm25(directory: Path) -> bm25s.BM25:
    import bm25s

    return bm25s.BM25.load(str(directory), show_progress=False)
