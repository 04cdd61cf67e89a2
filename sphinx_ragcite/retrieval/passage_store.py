"""Passage records held compressed in memory, parsed when a row is read.

One dict per passage cost a server ~1,500 bytes a passage beyond its text
(and the allocator more); at 200k passages that was most of its memory.
Here the validated ``passages.jsonl`` lines are kept deflated in blocks of
:data:`BLOCK` lines with a dictionary sampled from the file (~250 bytes a
passage, text included), and a row's record is inflated and parsed on
access (~30 µs; a question reads 10-20). What searching needs of every row
(its document, its chapter, its ID) is kept apart in arrays, so filters
and ID lookups never parse records.
"""

from __future__ import annotations

import functools
import hashlib
import json
import zlib
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, overload

import numpy as np

from sphinx_ragcite.formats.records import read_passages

if TYPE_CHECKING:
    from sphinx_ragcite.contracts import PassageRecord

#: Lines per deflated block: ~8 KB, inflated in ~22 µs (16: 39 µs, 6 bytes
#: a passage smaller; 4: 13 µs, 9 bytes larger).
BLOCK = 8
#: Bytes of sample lines the blocks share as a preset dictionary (zlib's most).
DICTIONARY = 32 * 1024
#: Inflated blocks kept per site (~8 KB each).
CACHED_BLOCKS = 64
_WBITS = -15  # raw deflate: no header or checksum per block


def _dictionary(lines: Sequence[bytes]) -> bytes:
    """Lines spread over the file: the keys and common words every block has."""
    step = max(1, len(lines) // 64)
    return b"".join(lines[::step])[-DICTIONARY:]


class PassageStore(Sequence["PassageRecord"]):
    """``site.passages``: a read-only sequence of records, one parse per access.

    Every access returns a fresh record, so a caller that changes one cannot
    change what the next caller reads.
    """

    def __init__(
        self, lines: Sequence[bytes], docnames: Sequence[str], chapters: Sequence[int]
    ) -> None:
        """*lines*: the validated JSON lines in row order, without newlines;
        *docnames* and *chapters* (``-1`` for none) of each row, for filters."""
        self._count = len(lines)
        #: the distinct documents, and each row's index into them
        self.docnames = tuple(dict.fromkeys(docnames))
        number = {d: i for i, d in enumerate(self.docnames)}
        self.document_of = np.fromiter(
            (number[d] for d in docnames), dtype=np.int32, count=len(docnames)
        )
        #: each row's chapter number (from its ID)
        self.chapter_of = np.asarray(chapters, dtype=np.int64)
        #: passage ID -> row (set by :meth:`read`, which knows the IDs)
        self.rows: Mapping[str, int] = {}
        # The blocks read last, inflated: a search and then its answer read
        # the same rows, and neighbouring passages often come up together.
        self._block = functools.lru_cache(maxsize=CACHED_BLOCKS)(self._inflate)
        self._zdict = _dictionary(lines)
        blocks = []
        for start in range(0, len(lines), BLOCK):
            deflate = zlib.compressobj(1, zlib.DEFLATED, _WBITS, zdict=self._zdict)
            body = b"\n".join(lines[start : start + BLOCK])
            blocks.append(deflate.compress(body) + deflate.flush())
        self._blob = b"".join(blocks)
        ends = np.cumsum([len(b) for b in blocks], dtype=np.int64)
        self._starts = np.concatenate(([0], ends)).astype(
            np.uint32 if len(self._blob) < 2**32 else np.int64
        )

    @classmethod
    def read(cls, data: bytes, where: str) -> PassageStore:
        """The store of ``passages.jsonl``, every record checked
        (:func:`~sphinx_ragcite.formats.records.read_passages`)."""
        checked = read_passages(data, where)
        store = cls(checked.lines, checked.docnames, checked.chapters)
        store.rows = RowIndex(checked.ids, store)
        return store

    def __len__(self) -> int:
        return self._count

    @property
    def nbytes(self) -> int:
        arrays = self.document_of.nbytes + self.chapter_of.nbytes
        return len(self._blob) + self._starts.nbytes + len(self._zdict) + arrays

    def _inflate(self, number: int) -> list[bytes]:
        start, end = int(self._starts[number]), int(self._starts[number + 1])
        inflate = zlib.decompressobj(_WBITS, zdict=self._zdict)
        return inflate.decompress(self._blob[start:end]).split(b"\n")

    @overload
    def __getitem__(self, row: int) -> PassageRecord: ...
    @overload
    def __getitem__(self, row: slice) -> list[PassageRecord]: ...
    def __getitem__(self, row: int | slice) -> PassageRecord | list[PassageRecord]:
        if isinstance(row, slice):
            return [self[i] for i in range(*row.indices(self._count))]
        row = int(row)  # numpy integers too
        if row < 0:
            row += self._count
        if not 0 <= row < self._count:
            raise IndexError(f"passage row {row} out of range")
        block, line = divmod(row, BLOCK)
        record: PassageRecord = json.loads(self._block(block)[line])
        return record

    def __eq__(self, other: object) -> bool:
        """Equal to a list of the same records, as the list it replaces was."""
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and all(
            a == b for a, b in zip(self, other, strict=True)
        )

    __hash__ = None  # type: ignore[assignment]

    def __iter__(self) -> Iterator[PassageRecord]:
        """Every record in row order, each block inflated once."""
        for block in range(len(self._starts) - 1):
            for line in self._inflate(block):  # not through the cache
                yield json.loads(line)


def _key(passage_id: str) -> int:
    """64 bits of the ID's digest: the same in every process (``hash`` is not)."""
    digest = hashlib.blake2b(passage_id.encode("utf-8", "surrogatepass"), digest_size=8)
    return int.from_bytes(digest.digest(), "little", signed=True)


class RowIndex(Mapping[str, int]):
    """Passage ID -> row, as sorted 64-bit hashes and rows (12 bytes a passage).

    A hash match is confirmed against the record's own ID, so two IDs that
    share a hash never answer for each other.
    """

    def __init__(self, ids: Sequence[str], store: PassageStore) -> None:
        hashes = np.fromiter(map(_key, ids), dtype=np.int64, count=len(ids))
        order = np.argsort(hashes, kind="stable")
        self._hashes = hashes[order]
        self._rows = order.astype(np.int32 if len(ids) < 2**31 else np.int64)
        self._store = store

    @property
    def nbytes(self) -> int:
        return self._hashes.nbytes + self._rows.nbytes

    def __getitem__(self, passage_id: str) -> int:
        if isinstance(passage_id, str):
            key = _key(passage_id)
            at = int(np.searchsorted(self._hashes, key))
            while at < len(self._hashes) and self._hashes[at] == key:
                row = int(self._rows[at])
                if self._store[row]["passage_id"] == passage_id:
                    return row
                at += 1
        raise KeyError(passage_id)

    def __len__(self) -> int:
        return len(self._rows)

    def __iter__(self) -> Iterator[str]:
        for record in self._store:
            yield record["passage_id"]
