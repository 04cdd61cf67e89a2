"""Index files -> ``_ragcite/``: deterministic, content-addressed, manifest last."""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import shutil
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sphinx_ragcite.formats.files import atomic_write
from sphinx_ragcite.formats.manifest import (
    FORMAT_VERSION,
    INDEX_DIR,
    MANIFEST,
    manifest_bytes,
)

#: Hex digits of a file's SHA-256 in its stored name.
HASH_CHARS = 16

if TYPE_CHECKING:
    from pathlib import Path


def build_time() -> str:
    """Honours SOURCE_DATE_EPOCH so reproducible builds stay reproducible."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    moment = (
        dt.datetime.fromtimestamp(int(epoch), dt.timezone.utc)
        if epoch
        else dt.datetime.now(dt.timezone.utc)
    )
    return moment.replace(microsecond=0).isoformat().replace("+00:00", "Z")


def stored_name(name: str, digest: str) -> str:
    """``passages.jsonl`` -> ``passages.<16 hex>.jsonl``: the name says the bytes."""
    stem, dot, rest = name.partition(".")
    return f"{stem}.{digest[:HASH_CHARS]}{dot}{rest}"


def _link_or_copy(source: Path, dest: Path) -> None:
    """Atomically make *dest* a second name of *source* (a copy where links fail).

    A hard link costs no space; both names are plain files.
    """
    tmp = dest.with_name(dest.name + ".tmp")
    tmp.unlink(missing_ok=True)
    try:
        os.link(source, tmp)
    except OSError:
        atomic_write(dest, source.read_bytes())
        return
    os.replace(tmp, dest)


def file_digest(path: Path) -> tuple[str, int]:
    """SHA-256 and size of a file, read in blocks (a model is tens of MB)."""
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
            size += len(block)
    return digest.hexdigest(), size


def _same_as(path: Path, size: int, digest: str) -> bool:
    """*path* holds a file of *size* bytes with this digest (read only if the
    size matches: an incremental build finds large copies already there)."""
    try:
        if path.is_symlink() or path.stat().st_size != size:
            return False
        return file_digest(path)[0] == digest
    except OSError:
        return False


def _copy(source: Path, dest: Path) -> None:
    """Copy *source* to *dest* atomically (a temporary name, then a rename)."""
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.copyfile(source, tmp)
    os.replace(tmp, dest)


@dataclass(frozen=True)
class _Staged:
    name: str
    data: bytes
    sha256: str
    alias: bool
    #: a file copied as it is (a model): *data* is then empty
    source: Path | None = None
    size: int = 0

    @property
    def length(self) -> int:
        return self.size if self.source is not None else len(self.data)

    def write(self, path: Path) -> None:
        """Write it at *path*, unless the same bytes are there already."""
        if _same_as(path, self.length, self.sha256):
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        if self.source is not None:
            _copy(self.source, path)
        else:
            atomic_write(path, self.data)


@dataclass
class IndexWriter:
    """Collects the files of one index; :meth:`finish` writes them.

    The previous index stays valid until the new one is complete. Every file
    the manifest names is stored under a content-addressed name
    (``passages.<hash>.jsonl``; the files of a folder such as ``bm25/`` go
    to ``bm25.<hash>/``), so writing it never changes a file the current
    manifest names. The manifest is replaced last, in one rename: a build
    killed before that leaves the old manifest with all its old files, one
    killed after it leaves the new index. Only then are the browser's
    fixed-name copies updated (the widget loads ``search.js`` from
    ``file://``, where it cannot read the manifest, and ``moved.js`` by name)
    and the files no manifest names any more pruned.
    """

    outdir: Path
    staged: dict[str, _Staged] = field(default_factory=dict)
    #: files another index file names (the browser's shards): name -> bytes
    extras: dict[str, bytes] = field(default_factory=dict)

    @property
    def directory(self) -> Path:
        return self.outdir / INDEX_DIR

    def add(self, role: str, name: str, data: bytes, *, alias: bool = False) -> None:
        """Stage one file; with *alias* it is also kept under its plain *name*."""
        digest = hashlib.sha256(data).hexdigest()
        self.staged[role] = _Staged(name, data, digest, alias)

    def add_file(
        self, role: str, name: str, source: Path, digest: tuple[str, int]
    ) -> None:
        """Stage a file to be copied as it is (*digest*: its SHA-256 and size,
        from :func:`file_digest`); not read again unless it must be copied."""
        sha256, size = digest
        self.staged[role] = _Staged(name, b"", sha256, False, source, size)

    def add_extra(self, name: str, data: bytes) -> None:
        """A file the manifest does not name, but a file it names does: its
        *name* (relative to ``_ragcite/``) must already say its content."""
        self.extras[name] = data

    def stored_names(self) -> dict[str, str]:
        """Role -> content-addressed name, relative to ``_ragcite/``."""
        folders: dict[str, list[str]] = {}
        for item in self.staged.values():
            folder, slash, base = item.name.rpartition("/")
            if slash:
                folders.setdefault(folder, []).append(f"{base}:{item.sha256}")
        folder_digest = {
            folder: hashlib.sha256("\n".join(sorted(parts)).encode()).hexdigest()
            for folder, parts in folders.items()
        }
        names = {}
        for role, item in self.staged.items():
            folder, slash, base = item.name.rpartition("/")
            if slash:
                names[role] = f"{stored_name(folder, folder_digest[folder])}/{base}"
            else:
                names[role] = stored_name(item.name, item.sha256)
        return names

    def finish(self, meta: dict[str, Any]) -> dict[str, Any]:
        """Write the files, then the manifest, then the aliases; prune last."""
        names = self.stored_names()
        roles = sorted(self.staged)
        manifest = {
            **meta,
            "format_version": FORMAT_VERSION,
            "files": {role: names[role] for role in roles},
            "sha256": {role: self.staged[role].sha256 for role in roles},
            "bytes": {role: self.staged[role].length for role in roles},
        }
        manifest_data = manifest_bytes(manifest)  # validated before any write
        for name, data in sorted(self.extras.items()):
            path = self.directory / name
            if not _same_as(path, len(data), hashlib.sha256(data).hexdigest()):
                path.parent.mkdir(parents=True, exist_ok=True)
                atomic_write(path, data)
        for role in roles:
            self.staged[role].write(self.directory / names[role])
        atomic_write(self.directory / MANIFEST, manifest_data)
        aliases = {
            self.staged[role].name: names[role]
            for role in roles
            if self.staged[role].alias
        }
        for alias, name in sorted(aliases.items()):
            _link_or_copy(self.directory / name, self.directory / alias)
        self.prune({MANIFEST, *names.values(), *aliases, *self.extras})
        return manifest

    def prune(self, keep: set[str]) -> None:
        """Remove what the new manifest does not name (old files, ``*.tmp``)."""
        for path in sorted(self.directory.rglob("*"), reverse=True):
            name = path.relative_to(self.directory).as_posix()
            if path.is_symlink() or (path.is_file() and name not in keep):
                path.unlink()
            elif path.is_dir() and not any(path.iterdir()):
                path.rmdir()
