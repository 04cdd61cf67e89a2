"""Embeddings kept between builds, keyed by (model, text hash)."""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from sphinx_ragcite.formats.files import atomic_write

if TYPE_CHECKING:
    from pathlib import Path


def text_key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()[:16]


@dataclass
class EmbeddingCache:
    """Quantised vectors as written to the index, so reuse is byte-identical."""

    model_key: str
    rows: dict[bytes, tuple[np.ndarray, np.float32]] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path, model_key: str) -> EmbeddingCache:
        cache = cls(model_key)
        try:
            with np.load(path, allow_pickle=False) as data:
                if str(data["model_key"]) != model_key:
                    return cache
                keys, codes, scales = data["keys"], data["codes"], data["scales"]
        except (OSError, KeyError, ValueError):
            return cache  # no cache yet, or an unreadable one: embed afresh
        for key, code, scale in zip(keys, codes, scales, strict=True):
            # numpy's S16 drops trailing NUL bytes: 1 key in 256 ends in one
            cache.rows[bytes(key).ljust(16, b"\0")] = (code, scale)
        return cache

    def save(self, path: Path, keys: list[bytes]) -> None:
        """Keep only *keys* (the current passages), so the cache never grows stale."""
        rows = [self.rows[k] for k in keys]
        dim = rows[0][0].shape[0] if rows else 0
        buffer = io.BytesIO()
        np.savez(
            buffer,
            model_key=np.array(self.model_key),
            keys=np.array(keys, dtype="S16"),
            codes=np.array([r[0] for r in rows], dtype=np.int8).reshape(-1, dim),
            scales=np.array([r[1] for r in rows], dtype=np.float32),
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, buffer.getvalue())
