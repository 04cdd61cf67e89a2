"""``passages.jsonl``: one passage record per line, in reading order."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, NamedTuple

from sphinx_ragcite.contracts import PASSAGE_FIELDS, PASSAGE_ID, parse_passage_id
from sphinx_ragcite.errors import SiteIndexError
from sphinx_ragcite.formats.files import REBUILD, dumps

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sphinx_ragcite.contracts import PassageRecord


def passages_jsonl(records: Sequence[PassageRecord]) -> bytes:
    return "".join(dumps(r) + "\n" for r in records).encode("utf-8")


class CheckedPassages(NamedTuple):
    """``passages.jsonl``'s lines, each a checked record, and what searching
    needs of every row: kept apart so that the store need not parse them."""

    lines: list[bytes]
    ids: list[str]
    docnames: list[str]
    #: each row's chapter number (from its ID; -1 when too large to store)
    chapters: list[int]


def read_passages(data: bytes, where: str) -> CheckedPassages:
    """The records, each checked against the contract (a bad line names itself).

    Every line is parsed and checked here, once; the store then keeps the
    checked lines compressed (see :mod:`~sphinx_ragcite.retrieval.passage_store`).
    """
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise SiteIndexError(f"{where} cannot be read ({error}). {REBUILD}") from None
    # Split on line ends only: JSON escapes them inside strings, but not
    # U+2028 and its kin, which str.splitlines() would also split on.
    lines = data.splitlines()
    ids: list[str] = []
    docnames: list[str] = []
    chapters: list[int] = []
    seen: set[str] = set()
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
        ids.append(record["passage_id"])
        docnames.append(record["docname"])
        chapter = (parse_passage_id(record["passage_id"]) or (-1,))[0]
        chapters.append(chapter if chapter < 2**62 else -1)  # fits the array
    del seen
    return CheckedPassages(lines, ids, docnames, chapters)


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
