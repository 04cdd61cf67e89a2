"""``passages.jsonl``: one passage record per line, in reading order."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from sphinx_ragcite.contracts import PASSAGE_FIELDS, PASSAGE_ID
from sphinx_ragcite.errors import SiteIndexError
from sphinx_ragcite.index.files import REBUILD, dumps

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sphinx_ragcite.contracts import PassageRecord


def passages_jsonl(records: Sequence[PassageRecord]) -> bytes:
    return "".join(dumps(r) + "\n" for r in records).encode("utf-8")


def read_passages(data: bytes, where: str) -> list[PassageRecord]:
    """The records, each checked against the contract (a bad line names itself)."""
    try:
        lines = data.decode("utf-8").splitlines()
    except UnicodeDecodeError as error:
        raise SiteIndexError(f"{where} cannot be read ({error}). {REBUILD}") from None
    records: list[PassageRecord] = []
    seen: set[str] = set()
    # The passages of a section repeat its document, titles and heading
    # path: one shared object each instead of one per passage (about 450
    # bytes a passage on a server holding 200k). Records are read-only.
    shared: dict[object, object] = {}
    for number, line in enumerate(lines, start=1):
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        problem = _problem(record)
        if problem is None and record["passage_id"] in seen:
            problem = f"passage_id {record['passage_id']!r} repeats"
        if problem is not None:
            raise SiteIndexError(f"{where}, line {number}: {problem}. {REBUILD}")
        seen.add(record["passage_id"])
        for key in ("docname", "chapter", "section"):
            record[key] = shared.setdefault(record[key], record[key])
        path = record["heading_path"]
        record["heading_path"] = shared.setdefault(tuple(path), path)
        records.append(record)
    return records


def _problem(record: object) -> str | None:
    if not isinstance(record, dict):
        return "not a passage record (a JSON object)"
    for name, kind in PASSAGE_FIELDS.items():
        value = record.get(name)
        if not isinstance(value, kind) or isinstance(value, bool):
            return f"{name} is missing or not a {getattr(kind, '__name__', kind)}"
    if not PASSAGE_ID.match(record["passage_id"]):
        return f"passage_id {record['passage_id']!r} is not chC-secS-pP"
    if not all(isinstance(h, str) for h in record["heading_path"]):
        return "heading_path holds a non-string"
    return None
