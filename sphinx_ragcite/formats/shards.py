"""``shards.json`` + ``shards/*.bin``: what the browser engine fetches per question.

A question in the reader's browser needs the text and the sentence vectors of
the few passages it retrieved, never every passage's. Static hosts cannot be
trusted with HTTP Range requests (one gzips ``application/octet-stream`` on
the fly and then answers ``Range`` with a 200 and the whole file), so these
are cut into small files named by their digest: a passage's shard is fetched
once, then comes from the browser's cache on later questions and visits.

``shards.<hash>.json`` (role ``shards``), loaded once with the engine::

    {"format_version": 1,
     "rows": 140,                     # passages, as passages.jsonl
     "dim": 384,                      # sentence vector width (0: none shipped)
     "docnames": ["index", ...],      # each row's document, interned
     "titles": ["Brewing", ...],      # heading titles, interned
     "paths": [[0], [0, 3], ...],     # heading paths as indices of titles
     "passages": [doc, path, ...],    # per row: docnames index, paths index
     "shards": [[rows, "shards/<hash>.bin"], ...]}   # consecutive, from row 0

The rest of a row's record (``passage_id``, ``url``, ``chapter``, ``section``,
``snippet``) is in the static search index, which the engine loads anyway.

A shard, little-endian::

    b"RCSH" | u32 format version | u32 H | H bytes of JSON, space-padded to a
    multiple of 4 | float32 scales[S] | int8 codes[S * dim]

The JSON is ``{"dim": d, "rows": [[passage_id, text, char_start, char_end,
content_hash, sentences], ...]}``; a row's sentence vectors follow the rows
before it (``sentences`` is -1 and there are no vectors when ``dim`` is 0).
A shard holds no row number, so a chapter left alone keeps its shard's name
(and the readers' cached copy) when an earlier chapter grows.
"""

from __future__ import annotations

import hashlib
import json
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from sphinx_ragcite.formats.files import dumps

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sphinx_ragcite.contracts import PassageRecord

FORMAT_VERSION = 1
LISTING = "shards.json"
FOLDER = "shards"
MAGIC = b"RCSH"
#: Hex digits of a shard's SHA-256 in its name (as every index file).
HASH_CHARS = 16
#: Rows per shard at most, and a shard never spans two documents. Measured
#: on the example book and a 400-page book (benchmarks/browser_answers.py,
#: docs/howto/static-hosting.md): gzip bytes per question over the shards
#: of the six passages a question retrieves.
ROWS_PER_SHARD = 4
#: Each row's ``[passage_id, text, char_start, char_end, content_hash, n]``.
ROW_FIELDS = ("passage_id", "text", "char_start", "char_end", "content_hash")


@dataclass(frozen=True)
class SentenceVectors:
    """Every passage's sentence vectors: row ``r`` owns
    ``codes[offsets[r]:offsets[r + 1]]``."""

    offsets: np.ndarray
    codes: np.ndarray
    scales: np.ndarray


def shard_groups(
    records: Sequence[PassageRecord], rows_per_shard: int = ROWS_PER_SHARD
) -> list[tuple[int, int]]:
    """``(first row, rows)`` of each shard: runs of one document, cut every
    *rows_per_shard* rows (0: one shard per document)."""
    groups: list[tuple[int, int]] = []
    start = 0
    for row in range(1, len(records) + 1):
        full = rows_per_shard > 0 and row - start >= rows_per_shard
        if (
            row == len(records)
            or full
            or records[row]["docname"] != records[start]["docname"]
        ):
            groups.append((start, row - start))
            start = row
    return groups


def shard_bytes(
    records: Sequence[PassageRecord], vectors: SentenceVectors | None, first: int
) -> bytes:
    """The shard of *records*, rows ``first``... of the book."""
    rows: list[list[Any]] = []
    spans: list[tuple[int, int]] = []
    for i, record in enumerate(records, start=first):
        row: list[Any] = [record[name] for name in ROW_FIELDS]  # type: ignore[literal-required]
        if vectors is None:
            row.append(-1)
        else:
            start, end = int(vectors.offsets[i]), int(vectors.offsets[i + 1])
            spans.append((start, end))
            row.append(end - start)
        rows.append(row)
    dim = 0 if vectors is None else int(vectors.codes.shape[1])
    head = dumps({"dim": dim, "rows": rows}).encode("utf-8")
    head += b" " * (-(12 + len(head)) % 4)
    parts = [MAGIC, struct.pack("<II", FORMAT_VERSION, len(head)), head]
    if vectors is not None:
        picked = np.concatenate(
            [np.arange(s, e, dtype=np.int64) for s, e in spans] or [np.zeros(0, int)]
        )
        parts.append(np.asarray(vectors.scales[picked], dtype="<f4").tobytes())
        parts.append(np.asarray(vectors.codes[picked], dtype=np.int8).tobytes())
    return b"".join(parts)


def shard_name(data: bytes) -> str:
    return f"{FOLDER}/{hashlib.sha256(data).hexdigest()[:HASH_CHARS]}.bin"


@dataclass(frozen=True)
class Shards:
    """The listing's bytes and every shard file (name relative to ``_ragcite/``)."""

    listing: bytes
    files: dict[str, bytes]


def build_shards(
    records: Sequence[PassageRecord],
    vectors: SentenceVectors | None,
    rows_per_shard: int = ROWS_PER_SHARD,
) -> Shards:
    docnames: dict[str, int] = {}
    titles: dict[str, int] = {}
    paths: dict[tuple[int, ...], int] = {}
    flat: list[int] = []
    for record in records:
        path = tuple(titles.setdefault(t, len(titles)) for t in record["heading_path"])
        flat.append(docnames.setdefault(record["docname"], len(docnames)))
        flat.append(paths.setdefault(path, len(paths)))
    files: dict[str, bytes] = {}
    listed: list[list[Any]] = []
    for first, count in shard_groups(records, rows_per_shard):
        data = shard_bytes(records[first : first + count], vectors, first)
        name = shard_name(data)
        files[name] = data
        listed.append([count, name])
    listing = {
        "format_version": FORMAT_VERSION,
        "rows": len(records),
        "dim": 0 if vectors is None else int(vectors.codes.shape[1]),
        "docnames": list(docnames),
        "titles": list(titles),
        "paths": [list(p) for p in paths],
        "passages": flat,
        "shards": listed,
    }
    return Shards(dumps(listing).encode("utf-8"), files)


# -- reading (tests, benchmarks; the browser's twin is js/files.js) ----------


@dataclass(frozen=True)
class ShardRow:
    record: dict[str, Any]
    #: (scales, codes) of its sentences, or None when none were shipped
    sentences: tuple[np.ndarray, np.ndarray] | None


def read_shard(data: bytes) -> list[ShardRow]:
    """The rows of one shard (ValueError when it is not one)."""
    if len(data) < 12 or data[:4] != MAGIC:
        raise ValueError("not a sphinx-ragcite shard")
    version, size = struct.unpack_from("<II", data, 4)
    if version != FORMAT_VERSION:
        raise ValueError(f"shard format {version}, expected {FORMAT_VERSION}")
    head = json.loads(data[12 : 12 + size])
    dim = int(head["dim"])
    offset = 12 + size
    total = sum(max(row[-1], 0) for row in head["rows"])
    if offset + (4 + dim) * total != len(data):
        raise ValueError("shard is truncated or padded")
    scales = np.frombuffer(data, dtype="<f4", count=total, offset=offset)
    codes = np.frombuffer(
        data, dtype=np.int8, count=total * dim, offset=offset + 4 * total
    )
    rows: list[ShardRow] = []
    at = 0
    for row in head["rows"]:
        record = dict(zip(ROW_FIELDS, row[:-1], strict=True))
        n = row[-1]
        sentences = None
        if n >= 0 and dim:
            block = codes[at * dim : (at + n) * dim].reshape(n, dim)
            sentences = (scales[at : at + n], block)
            at += n
        rows.append(ShardRow(record, sentences))
    return rows


def row_meta(listing: dict[str, Any], row: int) -> dict[str, Any]:
    """``docname`` and ``heading_path`` of *row*, from a parsed listing."""
    doc, path = listing["passages"][2 * row : 2 * row + 2]
    titles = listing["titles"]
    return {
        "docname": listing["docnames"][doc],
        "heading_path": [titles[t] for t in listing["paths"][path]],
    }


def shard_of(listing: dict[str, Any], row: int) -> tuple[str, int]:
    """The shard holding *row* and the row's position in it."""
    start = 0
    for count, name in listing["shards"]:
        if row < start + count:
            return name, row - start
        start += count
    raise IndexError(f"row {row} is in no shard")
