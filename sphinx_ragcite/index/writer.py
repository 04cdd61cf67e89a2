"""Passage records -> ``_ragcite/``: deterministic bytes, written atomically."""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from pathlib import Path

    from sphinx_ragcite.passages.records import Record

#: Bump when a reader of an older format would misread the files.
FORMAT_VERSION = 1
INDEX_DIR = "_ragcite"
MANIFEST = "manifest.json"


def dumps(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def passages_jsonl(records: list[Record]) -> bytes:
    return "".join(dumps(r) + "\n" for r in records).encode("utf-8")


def atomic_write(path: Path, data: bytes) -> None:
    """Write to a temporary name, then rename: a crash never leaves half a file."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def build_time() -> str:
    """Honours SOURCE_DATE_EPOCH so reproducible builds stay reproducible."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    moment = (
        dt.datetime.fromtimestamp(int(epoch), dt.timezone.utc)
        if epoch
        else dt.datetime.now(dt.timezone.utc)
    )
    return moment.replace(microsecond=0).isoformat().replace("+00:00", "Z")


@dataclass
class IndexWriter:
    """Collects the files of one index, then writes them and the manifest last."""

    outdir: Path
    files: dict[str, str] = field(default_factory=dict)
    sha256: dict[str, str] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)

    @property
    def directory(self) -> Path:
        return self.outdir / INDEX_DIR

    def add(self, role: str, name: str, data: bytes) -> None:
        path = self.directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, data)
        self.files[role] = name
        self.sha256[role] = hashlib.sha256(data).hexdigest()
        self.sizes[role] = len(data)

    def finish(self, meta: dict[str, Any]) -> dict[str, Any]:
        """Write the manifest (the file readers open first) and prune leftovers."""
        manifest = {
            **meta,
            "format_version": FORMAT_VERSION,
            "files": self.files,
            "sha256": self.sha256,
            "bytes": self.sizes,
        }
        data = (json.dumps(manifest, sort_keys=True, indent=1) + "\n").encode()
        atomic_write(self.directory / MANIFEST, data)
        keep = {MANIFEST, *self.files.values()}
        for path in sorted(self.directory.rglob("*"), reverse=True):
            name = path.relative_to(self.directory).as_posix()
            if path.is_file() and name not in keep:
                path.unlink()
            elif path.is_dir() and not any(path.iterdir()):
                path.rmdir()
        return manifest
