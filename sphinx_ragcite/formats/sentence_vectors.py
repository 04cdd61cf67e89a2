"""``sentence_*.npy``: every passage's sentences embedded at build time.

Answers are chosen sentence by sentence, and embedding a long technical
passage's sentences costs the first reader who retrieves it ~100-200 ms. The
build embeds them once instead. The vectors are memory-mapped, not read, so
a large book's server only holds the pages of the passages it has answered
from (~2 KiB of vectors per passage otherwise).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from sphinx_ragcite.errors import SiteIndexError
from sphinx_ragcite.formats.embeddings import dequantize, read_npy, read_npy_header
from sphinx_ragcite.formats.files import MAX_FILE_BYTES, REBUILD, index_path

if TYPE_CHECKING:
    from pathlib import Path

    from sphinx_ragcite.contracts import Manifest

#: Roles in the manifest. The codes are mapped, never read whole.
CODES, SCALES, OFFSETS = "sentence_embeddings", "sentence_scales", "sentence_offsets"
MAPPED = frozenset({CODES})


@dataclass(frozen=True)
class SentenceMatrix:
    """Row ``r``'s sentence vectors are ``codes[offsets[r]:offsets[r + 1]]``."""

    offsets: np.ndarray
    codes: np.ndarray
    scales: np.ndarray

    def of(self, row: int) -> np.ndarray:
        """float32 [sentences of passage *row*, dim]."""
        start, end = int(self.offsets[row]), int(self.offsets[row + 1])
        return dequantize(np.asarray(self.codes[start:end]), self.scales[start:end])


def read_sentence_matrix(
    directory: Path,
    manifest: Manifest,
    data: dict[str, bytes],
    passages: int,
    dim: int,
    where: str,
) -> SentenceMatrix | None:
    """The build's sentence vectors, or None for an index built without them."""
    if CODES not in manifest.files:
        return None
    if SCALES not in data or OFFSETS not in data:
        raise SiteIndexError(
            f"{where}: sentence vectors without their scales or offsets. {REBUILD}"
        )
    offsets = read_npy(data[OFFSETS], (passages + 1,), "int64", f"{where}/{OFFSETS}")
    total = int(offsets[-1]) if len(offsets) else 0
    if offsets[0] != 0 or (np.diff(offsets) < 0).any():
        raise SiteIndexError(
            f"{where}/{OFFSETS} is not a list of row starts. {REBUILD}"
        )
    claimed = manifest.embedding.sentences if manifest.embedding else 0
    if total != claimed:
        raise SiteIndexError(
            f"{where}: {total} sentence vectors, the manifest says {claimed}. "
            + REBUILD
        )
    scales = read_npy(data[SCALES], (total,), "float32", f"{where}/{SCALES}")
    if not np.isfinite(scales).all():
        raise SiteIndexError(f"{where}/{SCALES} holds non-numbers. {REBUILD}")
    codes = map_npy(
        directory,
        manifest.files[CODES],
        manifest.bytes[CODES],
        manifest.sha256[CODES],
        (total, dim),
        f"{where}/{CODES}",
    )
    return SentenceMatrix(offsets, codes, scales)


def map_npy(
    directory: Path,
    name: str,
    size: int,
    digest: str,
    shape: tuple[int, int],
    where: str,
) -> np.ndarray:
    """An int8 ``.npy`` the manifest names, checked like a read file, then mapped."""
    path = index_path(directory, name)
    if not 0 <= size <= MAX_FILE_BYTES:
        raise SiteIndexError(f"{path}: the manifest gives it {size} bytes. {REBUILD}")
    try:
        info = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        raise SiteIndexError(
            f"{path} is missing (listed in {path.parent}/manifest.json). {REBUILD}"
        ) from None
    if not os.path.isfile(path) or info.st_size != size:
        raise SiteIndexError(
            f"{path} is corrupt: {info.st_size} bytes, the manifest says {size}. "
            + REBUILD
        )
    sha = hashlib.sha256()
    with open(path, "rb") as f:
        head = f.read(1 << 16)
        sha.update(head)
        for block in iter(lambda: f.read(1 << 20), b""):
            sha.update(block)
    if sha.hexdigest() != digest:
        raise SiteIndexError(
            f"{path} is corrupt: its checksum does not match the manifest. {REBUILD}"
        )
    read_npy_header(head, shape, "int8", where)  # before anything is mapped
    if shape[0] == 0:
        return np.zeros(shape, dtype=np.int8)  # numpy cannot map an empty body
    try:
        return np.load(path, mmap_mode="r", allow_pickle=False)  # type: ignore[no-any-return]
    except (OSError, ValueError) as error:
        raise SiteIndexError(f"{where} cannot be read ({error}). {REBUILD}") from None
