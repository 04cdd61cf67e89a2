"""One bibliographic record per cited passage, so every style and export agrees.

Book-level facts come from the site's manifest (conf.py's ``project``,
``author``, ``copyright``, ``release``, ``html_baseurl``); passage-level facts
from the passage record or the answer's citation. Styles and exports only
read :class:`Reference`: none of them looks at the manifest again.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sphinx_ragcite.contracts import USER_SELECTION, citation_time
from sphinx_ragcite.errors import RagciteError

if TYPE_CHECKING:
    import datetime as dt
    from collections.abc import Mapping, Sequence

    from sphinx_ragcite.contracts import Citation, Manifest
    from sphinx_ragcite.retrieval.searchable import SearchableSite

#: ``author`` values Sphinx or its quickstart use when none was given.
NO_AUTHOR = frozenset({"", "unknown", "author name not set", "author"})
#: Words that mark a group rather than a person (kept whole, never inverted).
GROUP_WORDS = frozenset(
    {
        "authors",
        "contributors",
        "developers",
        "team",
        "project",
        "community",
        "foundation",
        "group",
        "inc",
        "inc.",
        "ltd",
        "llc",
        "organization",
        "organisation",
        "university",
        "institute",
        "maintainers",
        "committee",
        "consortium",
        "society",
    }
)
_AND = re.compile(r"\s*,\s*(?:and\s+|&\s*)?|\s+(?:and|&)\s+", re.IGNORECASE)
_YEAR = re.compile(r"(?<!\d)(1[5-9]\d\d|2\d\d\d)(?!\d)")


@dataclass(frozen=True)
class Name:
    """A person (``given`` + ``family``) or a group (``literal``)."""

    family: str = ""
    given: str = ""
    literal: str = ""

    @property
    def is_person(self) -> bool:
        return not self.literal

    def display(self) -> str:
        return self.literal or " ".join(p for p in (self.given, self.family) if p)


@dataclass(frozen=True)
class CitationSettings:
    """The ``ragcite_*`` citation options a build wrote into its manifest."""

    style: str = "plain"
    show_page: bool = True
    link_to_source: bool = True
    max_quote_length: int = 200

    @classmethod
    def from_manifest(cls, manifest: Manifest) -> CitationSettings:
        """Sites built before these options existed get the defaults."""
        stored = manifest.citation
        defaults = cls()
        values: dict[str, Any] = {}
        for name, default in vars(defaults).items():
            value = stored.get(name, default)
            values[name] = value if type(value) is type(default) else default
        return cls(**values)


@dataclass(frozen=True)
class Book:
    """What every passage of one site shares: title, authors, edition, year."""

    title: str
    authors: tuple[Name, ...]
    version: str
    year: int | None
    publisher: str
    baseurl: str
    language: str

    @property
    def slug(self) -> str:
        return slugify(self.title) or "book"

    @classmethod
    def from_manifest(cls, manifest: Manifest) -> Book:
        title = manifest.project.strip() or "Untitled"
        author = manifest.author.strip()
        if author.lower() in NO_AUTHOR:
            author = ""
        return cls(
            title=title,
            authors=parse_authors(author),
            version=manifest.release or manifest.version,
            year=book_year(manifest.copyright, manifest.built_at),
            publisher=author or title,
            baseurl=manifest.html_baseurl,
            language=manifest.language or "en",
        )

    def url(self, relative: str | None) -> str | None:
        """Absolute when conf.py set ``html_baseurl``; else relative to the site."""
        if not relative:
            return None
        if not self.baseurl or re.match(r"^[a-z][a-z0-9+.-]*:", relative):
            return relative
        return self.baseurl.rstrip("/") + "/" + relative.lstrip("/")


@dataclass(frozen=True)
class Reference:
    """One cited passage as a bibliography needs it."""

    key: str
    passage_id: str
    book: Book
    chapter: str
    section: str
    heading_path: tuple[str, ...]
    url: str | None
    accessed: dt.date
    page: int | None = None
    source_type: str = "book"
    n: int | None = field(default=None, compare=False)

    @property
    def is_selection(self) -> bool:
        return self.source_type == "selection"

    @property
    def chapter_title(self) -> str:
        """The chapter without its number (``Pour-Over``)."""
        return self.heading_path[0] if self.heading_path else self.chapter

    @property
    def section_title(self) -> str:
        """The section without its number (``The bloom``)."""
        return self.heading_path[-1] if self.heading_path else self.section

    @property
    def chapter_number(self) -> str | None:
        """The book's top-level chapter this passage is in (``5`` for ``5.1.``)."""
        prefix = self.chapter[: len(self.chapter) - len(self.chapter_title)]
        if not self.chapter.endswith(self.chapter_title):
            return None
        match = re.match(r"^\s*(\d+)(?:\.\d+)*", prefix)
        return match.group(1) if match else None

    @property
    def title(self) -> str:
        """``Chapter: Section``, or the chapter alone for its opening text."""
        if self.section_title == self.chapter_title:
            return self.chapter_title
        return f"{self.chapter_title}: {self.section_title}"

    def csl(self, *, link: bool = True, page: bool = True) -> dict[str, Any]:
        """This reference as a CSL-JSON item (type ``chapter`` of the book).

        The title carries chapter and section (``Pour-Over: The bloom``);
        ``chapter-number`` only the book's top-level chapter, because CSL
        styles label it "Chapter 5" and would print "5.1" bare.
        """
        book = self.book
        item: dict[str, Any] = {
            "id": self.key,
            "type": "chapter",
            "title": self.title,
            "container-title": book.title,
        }
        if book.authors:
            item["author"] = [_csl_name(n) for n in book.authors]
        if book.version:
            item["version"] = book.version
        if book.year is not None:
            item["issued"] = {"date-parts": [[book.year]]}
        item["publisher"] = book.publisher
        if self.chapter_number is not None:
            item["chapter-number"] = self.chapter_number
        if page and self.page is not None:
            item["page"] = str(self.page)
        if link and self.url:
            item["URL"] = self.url
        accessed = self.accessed
        item["accessed"] = {
            "date-parts": [[accessed.year, accessed.month, accessed.day]]
        }
        return item


def _csl_name(name: Name) -> dict[str, str]:
    if name.literal:
        return {"literal": name.literal}
    return {"family": name.family, "given": name.given}


def slugify(text: str) -> str:
    """Key-safe: ``Brewing Better Coffee`` -> ``brewing-better-coffee``."""
    ascii_text = (
        unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    )
    return re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")


def parse_authors(author: str) -> tuple[Name, ...]:
    """conf.py's ``author`` split on ``,`` / ``and`` / ``&`` into names.

    ``Jane Smith`` becomes family ``Smith``, given ``Jane``; a group such as
    ``The sphinx-ragcite authors`` (or a one-word name) stays whole.
    """
    names = []
    for part in _AND.split(author.strip()):
        part = " ".join(part.split()).strip(" .;")
        if not part:
            continue
        words = part.split()
        group = part.lower().startswith("the ") or any(
            w.lower().strip(".,") in GROUP_WORDS for w in words
        )
        if group or len(words) == 1 or len(words) > 4:
            names.append(Name(literal=part))
        else:
            names.append(Name(family=words[-1], given=" ".join(words[:-1])))
    return tuple(names)


def book_year(copyright_text: str, built_at: str) -> int | None:
    """The first four-digit year of ``copyright``, else the build's year."""
    for text in (copyright_text, built_at[:4]):
        match = _YEAR.search(text)
        if match:
            return int(match.group(1))
    return None


def access_date(today: dt.date | None = None) -> dt.date:
    """*today*, else ``$RAGCITE_CITATION_DATE``, else the current UTC date."""
    return today if today is not None else citation_time().date()


def from_passage(
    record: Mapping[str, Any], book: Book, today: dt.date | None = None
) -> Reference:
    """The reference of a passage record of ``passages.jsonl``."""
    passage_id = str(record["passage_id"])
    return Reference(
        key=f"{book.slug}-{passage_id}",
        passage_id=passage_id,
        book=book,
        chapter=str(record["chapter"]),
        section=str(record["section"]),
        heading_path=tuple(record.get("heading_path") or ()),
        url=book.url(record.get("url")),
        accessed=access_date(today),
        page=record.get("page"),
    )


def from_citation(
    citation: Citation, book: Book, today: dt.date | None = None
) -> Reference:
    """The reference of one citation of an answer (book passage or selection)."""
    return Reference(
        key=f"{book.slug}-{citation.passage_id}",
        passage_id=citation.passage_id,
        book=book,
        chapter=citation.chapter,
        section=citation.section,
        heading_path=tuple(citation.heading_path),
        url=book.url(citation.url),
        accessed=access_date(today),
        page=citation.page,
        source_type=citation.source_type,
        n=citation.n,
    )


def lookup(
    site: SearchableSite,
    passage_ids: Sequence[str],
    book: Book,
    today: dt.date | None = None,
) -> list[Reference]:
    """References of *passage_ids* via ``site.passage``; one error lists all unknown."""
    found = []
    unknown = []
    for passage_id in passage_ids:
        record = site.passage(passage_id) if passage_id != USER_SELECTION else None
        if record is None:
            unknown.append(passage_id)
        else:
            found.append(from_passage(record, book, today))
    if unknown:
        hints = {pid: site.moved_hint(pid) for pid in unknown}
        moved = [f"{pid}: {hint}" for pid, hint in hints.items() if hint]
        raise RagciteError(
            "unknown passage id"
            + ("s" if len(unknown) > 1 else "")
            + ": "
            + ", ".join(unknown)
            + (
                " (an edit moved them; " + "; ".join(moved) + ")"
                if moved
                else " (IDs look like ch3-sec2-p1; `ragcite search` shows them)"
            )
        )
    return found
