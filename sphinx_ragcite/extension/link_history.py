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
from typing import TYPE_CHECKING, NamedTuple

from sphinx.util import logging

from sphinx_ragcite.extension.passages.records import content_hash
from sphinx_ragcite.formats.files import atomic_write

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from sphinx_ragcite.contracts import PassageRecord as Record
    from sphinx_ragcite.formats.moved import Moved

logger = logging.getLogger(__name__)

HISTORY_FORMAT = 2
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


class Head(NamedTuple):
    """A text's first block: what a link to the text showed at the top."""

    block: str  # content hash of the block
    opening: str  # its first words, for the widget to find it in a passage


class Fingerprint(NamedTuple):
    """What recognises a text when it has been edited or re-chunked."""

    sketch: list[int]
    block: str
    opening: str


class Seen(NamedTuple):
    """A passage of the previous build (stored as a JSON list, in this order)."""

    digest: str
    docname: str
    sketch: list[int]
    block: str
    opening: str

    @property
    def fingerprint(self) -> Fingerprint:
        return Fingerprint(self.sketch, self.block, self.opening)


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
    #: hash of a text in ``first`` -> its first block
    heads: dict[str, Head] = field(default_factory=dict)
    #: the previous build's passages by ID
    passages: dict[str, Seen] = field(default_factory=dict)

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
        try:
            return cls(
                first=dict(data.get("first", {})),
                alias=dict(data.get("alias", {})),
                heads={k: Head(*v) for k, v in data.get("heads", {}).items()},
                passages={k: Seen(*v) for k, v in data.get("passages", {}).items()},
            )
        except (TypeError, ValueError, AttributeError) as error:
            cls._set_aside(path, f"damaged entries: {error}")
            return cls()

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
    history: LinkHistory, current: dict[str, Seen], records: list[Record]
) -> dict[str, str]:
    """Pair text that left the book with the current text that continues it.

    A link showed its passage from the first block on, so a passage that was
    re-chunked (a paragraph inserted before it changes how blocks merge) goes
    to the passage now holding its first block. Otherwise, an edited passage
    goes to the new passage whose words overlap it most.
    """
    now = {v.digest for v in current.values()}
    before = {v.digest for v in history.passages.values()}
    gone = {v.digest: v for v in history.passages.values() if v.digest not in now}
    new = {v.digest: v for v in current.values() if v.digest not in before}
    if not gone:
        return {}
    holding: dict[str, list[tuple[str, str]]] = {}
    for r in records:
        for block in blocks(r["text"]):
            holding.setdefault(block, []).append((r["docname"], r["content_hash"]))
    matched: dict[str, str] = {}
    for old, entry in gone.items():
        places = holding.get(entry.block, [])
        if places:
            same_doc = [h for doc, h in places if doc == entry.docname]
            matched[old] = (same_doc or [h for _, h in places])[0]
    # Candidates share sketch values (an inverted index), so a build that
    # rewrites thousands of passages does not compare every pair.
    postings: dict[int, list[str]] = {}
    for fresh, fresh_entry in new.items():
        for value in fresh_entry.sketch:
            postings.setdefault(value, []).append(fresh)
    pairs: list[tuple[float, str, str]] = []
    for old, seen in gone.items():
        if old in matched:
            continue
        old_doc, old_sketch = seen.docname, seen.sketch
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
            score = similarity(old_sketch, new[fresh].sketch)
            same = new[fresh].docname == old_doc
            floor = SAME_DOC_SIMILARITY if same else OTHER_DOC_SIMILARITY
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


class _Now:
    """This build's passages, looked up the ways :func:`update` needs."""

    def __init__(self, history: LinkHistory, records: list[Record]) -> None:
        self.history = history
        # content hash -> fingerprint, for the previous build's texts and (as
        # they are met) this build's
        self.known = {v.digest: v.fingerprint for v in history.passages.values()}
        self.current = {r["passage_id"]: self._seen(r) for r in records}
        history.alias.update(_match_edits(history, self.current, records))
        self.where: dict[str, list[str]] = {}
        for r in records:
            self.where.setdefault(r["content_hash"], []).append(r["passage_id"])
        self.urls = {r["passage_id"]: r["url"] for r in records}
        self.texts = {r["passage_id"]: r["text"] for r in records}
        self.anchors = {
            f"{r['docname']}#{r['passage_id']}": r["passage_id"] for r in records
        }

    def _seen(self, r: Record) -> Seen:
        digest = r["content_hash"]
        if digest not in self.known:
            head = (blocks(r["text"]) or [digest])[0]
            self.known[digest] = Fingerprint(
                sketch(r["text"]), head, opening(r["text"])
            )
        return Seen(digest, r["docname"], *self.known[digest])

    def resolve(self, digest: str) -> str | None:
        """Where a text's content hash lives today, following edits."""
        alias, seen = self.history.alias, set()
        while digest not in self.where and digest in alias and digest not in seen:
            seen.add(digest)
            digest = alias[digest]
        return digest if digest in self.where else None

    def head_of(self, digest: str) -> Head | None:
        """A text's first block, wherever it was last seen."""
        if digest in self.history.heads:
            return self.history.heads[digest]
        found = self.known.get(digest)
        return None if found is None else Head(found.block, found.opening)

    def moved(self, key: str, digest: str, found: str) -> Moved | None:
        """Where the link *key* (to text *digest*, now *found*) should go."""
        holders = self.where[found]
        here = self.anchors.get(key)  # the passage at that anchor today, if any
        target = here if here in holders else holders[0]
        head = self.head_of(digest)
        if (
            head is not None
            and head.block != self.current[target].block
            and head.block in blocks(self.texts[target])
        ):
            # Its first block now sits inside the passage: say where.
            return [self.urls[target], head.opening]
        return self.urls[target] if target != here else None


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
    now = _Now(history, records)
    moved: dict[str, Moved] = {}
    for key, digest in sorted(history.first.items()):
        found = now.resolve(digest)
        if found is None:
            # The text is gone: the anchor now means whatever it names today.
            here = now.anchors.get(key)
            if here is not None:
                history.first[key] = now.current[here].digest
            else:
                del history.first[key]
            continue
        target = now.moved(key, digest, found)
        if target is not None:
            docname, _, pid = key.rpartition("#")
            moved[link_key(f"{page_url(docname)}#{pid}")] = target
    for key, pid in now.anchors.items():
        history.first.setdefault(key, now.current[pid].digest)
    history.heads = {
        digest: head
        for digest in sorted(set(history.first.values()))
        if (head := now.head_of(digest)) is not None
    }
    history.alias = {
        old: new for old, new in history.alias.items() if now.resolve(old) is not None
    }
    history.passages = now.current
    return dict(sorted(moved.items()))
