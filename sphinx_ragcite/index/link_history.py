"""Deep links that survive edits: where the text an old passage ID named is now.

Passage IDs are positions (``ch3-sec2-p4``), so inserting a paragraph gives the
next paragraph's ID to the new one. A link (page and ID) means the text it
named when it was first published; the history file remembers that text by
content hash across builds, and ``_ragcite/moved.js`` tells the widget where
each such text is now. Text that was re-chunked is followed to the passage
holding its first block; text edited in place (or moved and edited), by word
overlap.
"""

from __future__ import annotations

import heapq
import json
import re
import zlib
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sphinx.util import logging

from sphinx_ragcite.index.writer import atomic_write
from sphinx_ragcite.passages.records import content_hash

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from sphinx_ragcite.passages.records import Record

logger = logging.getLogger(__name__)

HISTORY_FORMAT = 2
FILE_NAME = "moved.js"
PREFIX = "globalThis.ragcite_moved="
#: Word hashes kept per passage: enough to tell an edit from a new paragraph.
SKETCH_SIZE = 16
#: Estimated word-set Jaccard above which changed text counts as the same passage.
SAME_DOC_SIMILARITY = 0.5
OTHER_DOC_SIMILARITY = 0.7
#: Sketch values this common (a frequent word) do not propose candidates.
MAX_POSTING = 64

_WORD = re.compile(r"\w+")
#: Words of a block's start the widget matches against the page's text.
OPENING_WORDS = 8

#: A passage URL, or [URL, opening words of the block inside it].
Moved = str | list[str]


def sketch(text: str) -> list[int]:
    """Bottom-k sketch of the passage's word set (Broder's MinHash variant)."""
    words = {w.lower() for w in _WORD.findall(text)}
    return sorted(heapq.nsmallest(SKETCH_SIZE, {zlib.crc32(w.encode()) for w in words}))


def similarity(a: list[int], b: list[int]) -> float:
    """Jaccard estimate of the two word sets from their bottom-k sketches."""
    if not a or not b:
        return 0.0
    union = sorted(set(a) | set(b))[:SKETCH_SIZE]
    both = set(a) & set(b)
    return sum(1 for h in union if h in both) / len(union)


@dataclass
class LinkHistory:
    """What each published ID first named, and what became of changed text."""

    #: "docname#passage ID" -> content hash of the text that anchor named when
    #: first published. A link names its page too, so an ID that moved to
    #: another page (a chapter inserted before it) is not ambiguous.
    first: dict[str, str] = field(default_factory=dict)
    #: content hash that left the book -> hash of its edited successor
    alias: dict[str, str] = field(default_factory=dict)
    #: hash of a text in ``first`` -> [its first block's hash, that block's start]
    heads: dict[str, list[str]] = field(default_factory=dict)
    #: the previous build: passage ID -> [hash, docname, sketch, first block's
    #: hash, first block's start]
    passages: dict[str, list[Any]] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> LinkHistory:
        try:
            data = json.loads(path.read_text("utf-8"))
        except (FileNotFoundError, NotADirectoryError):
            return cls()
        except (OSError, ValueError) as error:
            cls._set_aside(path, str(error))
            return cls()
        if not isinstance(data, dict) or data.get("format") != HISTORY_FORMAT:
            cls._set_aside(path, "not a link history of this version")
            return cls()
        history = cls()
        for name in ("first", "alias", "heads", "passages"):
            value = data.get(name)
            if isinstance(value, dict):
                setattr(history, name, value)
        return history

    @staticmethod
    def _set_aside(path: Path, why: str) -> None:
        """Keep an unusable history beside the new one instead of overwriting it."""
        kept = path.with_name(path.name + ".unreadable")
        try:
            path.replace(kept)
        except OSError:
            kept = path
        logger.warning(
            "ragcite: the link history %s is unreadable (%s), kept as %s; old "
            "deep links are followed from this build on only.",
            path,
            why,
            kept,
            type="ragcite",
            subtype="links",
        )

    def save(self, path: Path) -> None:
        data = {
            "format": HISTORY_FORMAT,
            "first": self.first,
            "heads": self.heads,
            "alias": self.alias,
            "passages": self.passages,
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(data, sort_keys=True, separators=(",", ":"))
        atomic_write(path, (text + "\n").encode("utf-8"))


def opening(text: str) -> str:
    """The first words of the first block, as the page shows them."""
    first = text.split("\n\n", 1)[0]
    return " ".join(first.split()[:OPENING_WORDS])


def blocks(text: str) -> list[str]:
    """Fingerprints of a passage's blocks (its text joins them by blank lines)."""
    return [
        content_hash(" ".join(block.split()))
        for block in text.split("\n\n")
        if block.strip()
    ]


def _match_edits(
    history: LinkHistory, current: dict[str, list[Any]], records: list[Record]
) -> dict[str, str]:
    """Pair text that left the book with the current text that continues it.

    A link showed its passage from the first block on, so a passage that was
    re-chunked (a paragraph inserted before it changes how blocks merge) goes
    to the passage now holding its first block. Otherwise, an edited passage
    goes to the new passage whose words overlap it most.
    """
    now = {v[0] for v in current.values()}
    before = {v[0] for v in history.passages.values()}
    gone = {v[0]: v for v in history.passages.values() if v[0] not in now}
    new = {v[0]: v for v in current.values() if v[0] not in before}
    if not gone:
        return {}
    holding: dict[str, list[tuple[str, str]]] = {}
    for r in records:
        for block in blocks(r["text"]):
            holding.setdefault(block, []).append((r["docname"], r["content_hash"]))
    matched: dict[str, str] = {}
    for old, entry in gone.items():
        places = holding.get(entry[3], [])
        if places:
            same_doc = [h for doc, h in places if doc == entry[1]]
            matched[old] = (same_doc or [h for _, h in places])[0]
    # Candidates share sketch values (an inverted index), so a build that
    # rewrites thousands of passages does not compare every pair.
    postings: dict[int, list[str]] = {}
    for fresh, fresh_entry in new.items():
        for value in fresh_entry[2]:
            postings.setdefault(value, []).append(fresh)
    pairs: list[tuple[float, str, str]] = []
    for old, (_, old_doc, old_sketch, *_) in gone.items():
        if old in matched:
            continue
        shared: Counter[str] = Counter()
        for value in old_sketch:
            hits = postings.get(value, ())
            if len(hits) <= MAX_POSTING:
                shared.update(hits)
        # a Jaccard of 0.5 leaves about half the sketch shared; a quarter
        # allows for the values too common to be counted
        least = max(2, len(old_sketch) // 4)
        for fresh, count in shared.items():
            if count < least:
                continue
            _, doc, fresh_sketch, *_ = new[fresh]
            score = similarity(old_sketch, fresh_sketch)
            floor = SAME_DOC_SIMILARITY if doc == old_doc else OTHER_DOC_SIMILARITY
            if score >= floor:
                pairs.append((score, old, fresh))
    taken: set[str] = set()
    for _, old, fresh in sorted(pairs, key=lambda p: (-p[0], p[1], p[2])):
        if old not in matched and fresh not in taken:
            matched[old] = fresh
            taken.add(fresh)
    return matched


def link_key(url: str) -> str:
    """A passage URL as the widget compares it: ``dir/index.html`` is ``dir/``."""
    page, _, anchor = url.partition("#")
    if page == "index.html" or page.endswith("/index.html"):
        page = page[: -len("index.html")]
    return f"{page}#{anchor}"


def update(
    history: LinkHistory,
    records: list[Record],
    page_url: Callable[[str], str] | None = None,
) -> dict[str, Moved]:
    """Advance *history* to this build; return old link -> where its text is now.

    Keys are the old links (page URL and anchor, through :func:`link_key`);
    *page_url* gives a docname's page URL in this build, also for pages that
    are gone. A value is the passage URL, or ``[url, start]`` when the text's
    first block now sits inside that passage, *start* being that block's
    opening words, for the widget to find it.
    """
    page_url = page_url or (lambda docname: f"{docname}.html")
    # content hash -> [sketch, first block's hash, its opening words], for the
    # previous build's texts and (as they are met) this build's
    known = {v[0]: v[2:] for v in history.passages.values()}

    def entry(r: Record) -> list[Any]:
        digest = r["content_hash"]
        if digest not in known:
            head = (blocks(r["text"]) or [digest])[0]
            known[digest] = [sketch(r["text"]), head, opening(r["text"])]
        return [digest, r["docname"], *known[digest]]

    current = {r["passage_id"]: entry(r) for r in records}
    history.alias.update(_match_edits(history, current, records))
    where: dict[str, list[str]] = {}
    for r in records:
        where.setdefault(r["content_hash"], []).append(r["passage_id"])
    urls = {r["passage_id"]: r["url"] for r in records}
    texts = {r["passage_id"]: r["text"] for r in records}
    anchors = {f"{r['docname']}#{r['passage_id']}": r["passage_id"] for r in records}

    def resolve(digest: str) -> str | None:
        seen = set()
        while digest not in where and digest in history.alias and digest not in seen:
            seen.add(digest)
            digest = history.alias[digest]
        return digest if digest in where else None

    def head_of(digest: str) -> list[str] | None:
        """First block's hash and start of a text, wherever it was last seen."""
        if digest in history.heads:
            return history.heads[digest]
        return known[digest][1:3] if digest in known else None

    moved: dict[str, Moved] = {}
    for key, digest in sorted(history.first.items()):
        here = anchors.get(key)  # the passage at that anchor today, if any
        found = resolve(digest)
        if found is None:
            # The text is gone: the anchor now means whatever it names today.
            if here is not None:
                history.first[key] = current[here][0]
            else:
                del history.first[key]
            continue
        holders = where[found]
        target = here if here in holders else holders[0]
        head = head_of(digest)
        docname, _, pid = key.rpartition("#")
        old_link = link_key(f"{page_url(docname)}#{pid}")
        if (
            head is not None
            and head[0] != current[target][3]
            and head[0] in blocks(texts[target])
        ):
            # Its first block now sits inside the passage: say where.
            moved[old_link] = [urls[target], head[1]]
        elif target != here:
            moved[old_link] = urls[target]
    for key, pid in anchors.items():
        history.first.setdefault(key, current[pid][0])
    history.heads = {
        digest: head
        for digest in sorted(set(history.first.values()))
        if (head := head_of(digest)) is not None
    }
    history.alias = {
        old: new for old, new in history.alias.items() if resolve(old) is not None
    }
    history.passages = current
    return dict(sorted(moved.items()))


def moved_file(moved: dict[str, Moved]) -> bytes:
    """A script, like the static index, so pages opened from disk can load it."""
    body = json.dumps(moved, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return f"{PREFIX}{body};\n".encode()
