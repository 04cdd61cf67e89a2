"""Embeddings kept between builds, keyed by model, settings and text hash.

One folder holds them (``ragcite_cache_dir``), shared by every book built on
the machine and by builds running at the same time. Below it, one folder per
model and settings (``v2-<hash of model id and max_tokens>``) holds up to 16
shards, ``<first hex digit of the text key>.npz`` (16, not 256: a warm build
reads every shard, and opening 256 small files cost it 0.25 s). Each shard
is written whole to a temporary name and renamed over the old one, after
merging what another build wrote meanwhile, so a reader sees an old shard or
a new one, never half of one (a lost race costs a recomputation, not a wrong
vector). A shard that cannot be read as one is recomputed, never trusted.
A shard that reads well but holds altered vectors is caught only by
computing some of them again (``embedding.py`` does, on a sample, and then
calls ``distrust``): see "Who can write the cache" in docs/howto/ci-cache.md.

Bounded size: after a build the folder is cut to 90% of ``max_bytes`` by
deleting the least recently used shards first (modification time; a build
refreshes the time of every shard it reads). The folder may hold other
files (it is often a shared or hand-picked one): eviction counts and deletes
only files it recognises as its own, by folder name, file name and header.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
import secrets
import stat
import sys
import time
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from sphinx_ragcite.formats.embeddings import dequantize, quantize

if TYPE_CHECKING:
    from collections.abc import Iterable

#: Bump when the shard layout or quantisation changes: old folders age out.
FORMAT = 2
#: Environment variable read when ``ragcite_cache_dir`` is empty.
ENV_VAR = "SPHINX_RAGCITE_CACHE_DIR"
#: Where ``ragcite_cache_dir = "none"`` keeps vectors: with the doctrees.
DOCTREE_FOLDER = "ragcite-embeddings"
SUFFIX = ".npz"
#: Eviction stops below this share of the bound, so the next build does not
#: evict again at once.
LOW_WATER = 0.9
#: Temporary files older than this are left over from a killed build.
STALE_TMP_SECONDS = 3600
#: What the cache writes, and all that eviction may delete: a folder per
#: format and model (``v2-`` and 16 hex digits), in it shards named by one
#: hex digit (two in format 1) and their temporary files.
OWN_FOLDER = re.compile(r"v[1-9][0-9]*-[0-9a-f]{16}")
OWN_SHARD = re.compile(r"[0-9a-f]{1,2}\.npz")
OWN_TEMP = re.compile(r"\.[0-9a-f]{1,2}\.[0-9a-z_]{8}\.tmp")
#: A shard starts as ``np.savez`` writes it: a zip entry ``model_key.npy``
#: holding an ``.npy`` array. 128 bytes cover the zip header and its zip64
#: extra field.
ZIP_MAGIC = b"PK\x03\x04"
FIRST_ENTRY = b"model_key.npy"
NPY_MAGIC = b"\x93NUMPY"
HEADER_BYTES = 128

Row = tuple[np.ndarray, np.float32]


def text_key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()[:16]


def default_dir() -> Path:
    """The user's cache folder: ``$XDG_CACHE_HOME`` wherever it is set."""
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    if xdg:
        base = Path(xdg)
    elif sys.platform == "win32":
        local = os.environ.get("LOCALAPPDATA", "").strip()
        base = Path(local) if local else Path.home() / "AppData" / "Local"
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path.home() / ".cache"
    return base / "sphinx-ragcite"


def resolve_dir(value: str, confdir: str | Path, doctreedir: str | Path) -> Path:
    """The cache folder for the option's *value* (see ``ragcite_cache_dir``)."""
    value = value.strip() or os.environ.get(ENV_VAR, "").strip()
    if value.lower() == "none":
        return Path(doctreedir) / DOCTREE_FOLDER
    if not value:
        return default_dir()
    return Path(confdir, os.path.expanduser(value))


class EmbeddingCache:
    """Quantised vectors as written to the index, so reuse is byte-identical."""

    def __init__(
        self, root: Path, model_key: str, dim: int | None, max_bytes: int
    ) -> None:
        self.root = root
        self.model_key = model_key
        #: None until a shard or the model says (a warm build loads no model)
        self.dim = dim
        self.max_bytes = max_bytes
        digest = hashlib.sha256(model_key.encode("utf-8")).hexdigest()[:16]
        self.folder = root / f"v{FORMAT}-{digest}"
        self.rows: dict[bytes, Row] = {}
        #: Shards read (or found missing) by this build, and the rows it added.
        self._read: set[str] = set()
        self._new: dict[str, dict[bytes, Row]] = {}
        #: Shards that could not be read as one (recomputed).
        self.damaged: list[Path] = []
        #: Keys whose rows were read from the folder, not computed by this build.
        self._stored: set[bytes] = set()
        #: False once altered rows were found: the folder is read no more,
        #: and the shards written hold only what this build computed.
        self.trusted = True

    @staticmethod
    def shard(key: bytes) -> str:
        return key[:1].hex()[0]

    def load(self, keys: Iterable[bytes]) -> None:
        """Read the shards that may hold *keys* into ``rows``."""
        if not self.trusted:
            return
        for name in sorted({self.shard(k) for k in keys} - self._read):
            self._read.add(name)
            rows = self._read_shard(name, note=True)
            self.rows.update(rows)
            self._stored.update(rows)

    def stored(self, keys: Iterable[bytes]) -> list[bytes]:
        """Those of *keys* whose rows came from the folder (loaded first)."""
        return [k for k in keys if k in self._stored]

    def distrust(self) -> None:
        """Forget every row read from the folder: this build computes them
        again, and ``save`` writes back only what it computed."""
        for key in self._stored:
            del self.rows[key]
        self._stored.clear()
        self.trusted = False

    def put(self, key: bytes, code: np.ndarray, scale: np.float32) -> None:
        self._stored.discard(key)
        self.rows[key] = (code, scale)
        self._new.setdefault(self.shard(key), {})[key] = (code, scale)

    def put_many(self, keys: list[bytes], vectors: np.ndarray) -> None:
        """Quantise *vectors* (float32, one row per key) and keep them."""
        if self.dim is None:
            self.dim = int(vectors.shape[1])
        elif vectors.shape[1] != self.dim:
            raise ValueError(
                f"vectors of {vectors.shape[1]} dimensions, not {self.dim}"
            )
        codes, scales = quantize(vectors)
        for key, code, scale in zip(keys, codes, scales, strict=True):
            self.put(key, code, scale)

    def stack(self, keys: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
        """int8 codes [len(keys), dim] and float32 scales of *keys*, all in ``rows``."""
        if not keys:
            return np.zeros((0, self.dim or 0), np.int8), np.zeros(0, np.float32)
        codes = np.stack([self.rows[k][0] for k in keys]).astype(np.int8)
        scales = np.array([self.rows[k][1] for k in keys], dtype=np.float32)
        return codes, scales

    def unit_vectors(self, keys: list[bytes]) -> np.ndarray:
        """float32 [len(keys), dim] of *keys*' rows, dequantised, unit length."""
        vectors = dequantize(*self.stack(keys))
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.maximum(norms, 1e-12)

    def _path(self, name: str) -> Path:
        return self.folder / f"{name}{SUFFIX}"

    def _read_shard(self, name: str, *, note: bool) -> dict[bytes, Row]:
        path = self._path(name)
        try:
            with np.load(path, allow_pickle=False) as data:
                model_key = str(data["model_key"])
                keys, codes, scales = data["keys"], data["codes"], data["scales"]
        except FileNotFoundError:
            return {}
        except OSError:
            # Unreadable (permissions, a folder in the way): work without it.
            return {}
        except (ValueError, KeyError, EOFError, zipfile.BadZipFile):
            if note:
                self.damaged.append(path)
            return {}
        n = len(keys)
        dim = self.dim if self.dim is not None else codes.shape[-1]
        if (
            model_key != self.model_key
            or keys.dtype.kind != "S"
            or codes.dtype != np.int8
            or codes.shape != (n, dim)
            or dim < 1
            or scales.dtype != np.float32
            or scales.shape != (n,)
            or not np.isfinite(scales).all()
        ):
            if note:
                self.damaged.append(path)
            return {}
        self.dim = dim
        # numpy's S16 drops trailing NUL bytes: 1 key in 256 ends in one
        return {
            bytes(k).ljust(16, b"\0"): (c, s)
            for k, c, s in zip(keys, codes, scales, strict=True)
        }

    def save(self) -> None:
        """Write the shards that gained rows, refresh the others', then evict.

        Distrusted (``distrust``), it writes its shards with only the rows it
        computed, over the altered ones, and refreshes none.
        Raises ``OSError`` when the folder cannot be written.
        """
        if self._new:
            self.folder.mkdir(parents=True, exist_ok=True)
        for name, rows in sorted(self._new.items()):
            # Merge what a concurrent build may have written since we read.
            if self.trusted:
                rows = {**self._read_shard(name, note=False), **rows}
            self._write(self._path(name), rows)
        now = time.time()
        for name in sorted(self._read - set(self._new) if self.trusted else ()):
            with contextlib.suppress(OSError):
                os.utime(self._path(name), (now, now))
        self._new.clear()
        self.evict()

    def _write(self, path: Path, rows: dict[bytes, Row]) -> None:
        keys = sorted(rows)
        buffer = io.BytesIO()
        np.savez(
            buffer,
            model_key=np.array(self.model_key),
            keys=np.array(keys, dtype="S16"),
            codes=np.array([rows[k][0] for k in keys], dtype=np.int8).reshape(
                len(keys), -1
            ),
            scales=np.array([rows[k][1] for k in keys], dtype=np.float32),
        )
        tmp = path.parent / f".{path.stem}.{secrets.token_hex(4)}.tmp"
        # The umask decides who may read it, as for any file a build writes.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _BINARY, 0o666)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(buffer.getvalue())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def evict(self) -> list[Path]:
        """Delete least recently used shards until the folder is under the bound."""
        return evict(self.root, self.max_bytes)


def evict(root: Path, max_bytes: int) -> list[Path]:
    """Cut *root*'s shards to ``LOW_WATER * max_bytes`` once they are over
    *max_bytes*: shards of every model and format, oldest modification time
    first. Returns the deleted files. Temporary files killed builds left go
    too. Only files this cache writes count or go (see ``own_files``)."""
    shards, temps = own_files(root)
    now = time.time()
    for path, st in temps:
        if now - st.st_mtime > STALE_TMP_SECONDS:
            with contextlib.suppress(OSError):
                path.unlink()
    total = sum(st.st_size for _, st in shards)
    deleted: list[Path] = []
    if total <= max_bytes:
        return deleted
    target = int(max_bytes * LOW_WATER)
    for path, st in sorted(shards, key=lambda f: (f[1].st_mtime, str(f[0]))):
        if total <= target:
            break
        with contextlib.suppress(OSError):
            path.unlink()
            total -= st.st_size
            deleted.append(path)
    for folder in {path.parent for path in deleted}:
        with contextlib.suppress(OSError):
            folder.rmdir()  # only if nothing else is left in it
    return deleted


def own_files(
    root: Path,
) -> tuple[list[tuple[Path, os.stat_result]], list[tuple[Path, os.stat_result]]]:
    """The shards and the temporary files below *root* that this cache wrote.

    Its own are plain files (no symbolic links) in plain folders named as it
    names them, named as it names them, and starting with the bytes it
    writes. Anything else in the folder is someone else's: never counted,
    never deleted.
    """
    shards: list[tuple[Path, os.stat_result]] = []
    temps: list[tuple[Path, os.stat_result]] = []
    try:
        folders = [e for e in os.scandir(root) if OWN_FOLDER.fullmatch(e.name)]
    except OSError:
        return shards, temps
    for folder in folders:
        try:
            if not folder.is_dir(follow_symlinks=False):
                continue
            entries = list(os.scandir(folder.path))
        except OSError:
            continue
        for entry in entries:
            if OWN_SHARD.fullmatch(entry.name):
                found, partial = shards, False
            elif OWN_TEMP.fullmatch(entry.name):
                found, partial = temps, True
            else:
                continue
            with contextlib.suppress(OSError):
                st = entry.stat(follow_symlinks=False)
                if stat.S_ISREG(st.st_mode) and _own_header(
                    entry.path, partial=partial
                ):
                    found.append((Path(entry.path), st))
    return shards, temps


def _own_header(path: str, *, partial: bool) -> bool:
    """Whether *path* starts as a shard does; *partial*: or as the start of
    one that a killed build was writing (empty, or cut anywhere)."""
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _BINARY)
    with os.fdopen(fd, "rb") as f:
        head = f.read(HEADER_BYTES)

    def fits(start: int, want: bytes) -> bool:
        got = head[start : start + len(want)]
        cut = len(head) < start + len(want)
        return got == want or (partial and cut and want.startswith(got))

    name_length = len(FIRST_ENTRY).to_bytes(2, "little")
    if not (fits(0, ZIP_MAGIC) and fits(26, name_length) and fits(30, FIRST_ENTRY)):
        return False
    if len(head) < 30:
        return partial
    extra = int.from_bytes(head[28:30], "little")
    return fits(30 + len(FIRST_ENTRY) + extra, NPY_MAGIC)


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_BINARY = getattr(os, "O_BINARY", 0)
