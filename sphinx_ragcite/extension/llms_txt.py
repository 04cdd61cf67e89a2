"""Passage records -> ``llms.txt``, ``llms-full.txt`` and a Markdown copy per page.

Tools that read a site instead of asking it (llmstxt.org) get the same
passages, in reading order, each preceded by its passage ID linking to its
paragraph, so whatever they quote can be cited as ``page.html#chC-secS-pP``.
The bytes are a pure function of the records and a few book facts, so
rebuilds write identical files. Passage text is plain text: it is escaped so
that no Markdown renderer turns it into HTML, links, headings or rules, and
characters that hide or reorder text are written as references (``&#x202E;``)
so that they act only where the widget lets them act, inside their own text.

Links are URLs, percent-encoded once as the passage records have them
(``uni%20page.html.md``); the files are written under the decoded name, as
Sphinx writes the pages themselves (``uni page.html``).
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import unquote

from sphinx_ragcite.contracts import make_snippet

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path

    from sphinx_ragcite.contracts import PassageRecord

LLMS_TXT = "llms.txt"
LLMS_FULL = "llms-full.txt"
#: The manifest key that lists the files written here (paths from the site root).
MANIFEST_KEY = "llms_txt"
#: The role of ``_ragcite/llms.<hash>.json``, which lists the files written
#: (``{"files": {path: {"sha256", "bytes"}}}``); the manifest says only
#: ``{"role": "llms"}``: listed there, a 5,000-page book's Markdown pages made
#: the manifest every reader's browser fetches 236 KB gzip (issue 46).
LISTING_ROLE = "llms"
LISTING_NAME = "llms.json"
#: Characters of a page's description in llms.txt.
DESCRIPTION_CHARS = 120

#: Characters that could make plain text into Markdown links, HTML, code or
#: emphasis; ``_`` only where it can open or close emphasis (``foo_bar`` can't).
_INLINE = re.compile(r"[\\`*\[\]<>&]|(?<![^\W_])_|_(?![^\W_])")
#: Line starts that Markdown reads as headings, quotes, lists, tables, rules.
_BLOCK_START = re.compile(r"^(\s*)([#>+=|~-]|(?P<n>\d+)[.)])")
#: Where ``str.splitlines`` (and so a renderer such as mistletoe) ends a line
#: besides ``\n``: each becomes a newline, so its next line is escaped too.
_BREAKS = re.compile(r"\r\n?|[\n\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
#: Bidi embeddings, overrides and isolates: they reorder the text after them.
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")
_OPEN_ISOLATE, _CLOSE_ISOLATE = "\u2066\u2067\u2068", "\u2069"
#: Characters written as references: controls, bidi marks and controls, and
#: the zero-width ones that shape no script (ZWJ and ZWNJ stay as they are).
_HIDDEN = re.compile(
    "[\x00-\x08\x0e-\x1f\x7f-\x9f\u061c\u180e\u200b\u200e\u200f"
    "\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]"
)
#: First-strong isolate ... pop directional isolate, as references: rendered,
#: they confine the text's own bidi controls (the widget's ``<bdi>``).
_FSI, _PDI = "&#x2068;", "&#x2069;"


@dataclass(frozen=True)
class Page:
    """One HTML page with passages: its URL (site root relative) and title."""

    url: str
    title: str
    records: tuple[PassageRecord, ...]
    #: in no toctree of the root document (listed under "Optional")
    optional: bool = False

    @property
    def markdown_url(self) -> str:
        """llmstxt.org: the page's URL with ``.md`` appended (``index.html.md``)."""
        if not self.url or self.url.endswith("/"):
            return f"{self.url}index.html.md"
        return f"{self.url}.md"

    @property
    def markdown_path(self) -> str:
        """The copy's file, from the site root: its URL decoded, as the page's."""
        return unquote(self.markdown_url)


@dataclass(frozen=True)
class Book:
    """The facts about the book that llms.txt states."""

    project: str
    release: str = ""
    #: conf.py's html_baseurl: links become absolute when it is set
    base_url: str = ""
    pages: tuple[Page, ...] = field(default_factory=tuple)


def group_pages(
    records: Sequence[PassageRecord], optional_docs: frozenset[str] = frozenset()
) -> tuple[Page, ...]:
    """Records (in reading order) -> pages, in order of their first passage."""
    grouped: dict[str, list[PassageRecord]] = {}
    for record in records:
        grouped.setdefault(record["url"].partition("#")[0], []).append(record)
    pages = []
    for url, items in grouped.items():
        docnames = {r["docname"] for r in items}
        pages.append(
            Page(
                url=url,
                title=_one_line(items[0]["chapter"]) or url,
                records=tuple(items),
                optional=docnames <= optional_docs,
            )
        )
    return tuple(pages)


def escape(text: str) -> str:
    """Plain text as Markdown that renders as the same text, never as markup."""
    return "\n".join(
        _hide(_BLOCK_START.sub(_escape_start, _INLINE.sub(_backslash, line)))
        for line in _BREAKS.sub("\n", text).split("\n")
    )


def escape_inline(text: str) -> str:
    """Text inside a line (a heading, a link's text): no links, HTML or code."""
    return _hide(_INLINE.sub(_backslash, _BREAKS.sub(" ", text)))


def _backslash(match: re.Match[str]) -> str:
    return "\\" + match[0]


def _hide(line: str) -> str:
    """Hidden characters as references; a line with bidi controls isolated.

    Raw, the references reorder and hide nothing; rendered, they are the same
    characters, inside an isolate that ends with the line, so an unclosed
    override (U+202E) reverses nothing after it. The line's own isolates are
    balanced first: a stray U+2069 would close the wrapper early.
    """
    if _BIDI.search(line):
        depth, kept = 0, []
        for char in line:
            if char in _OPEN_ISOLATE:
                depth += 1
            elif char == _CLOSE_ISOLATE:
                if not depth:
                    continue  # closes nothing of its own: it would close ours
                depth -= 1
            kept.append(char)
        line = "".join(kept) + _CLOSE_ISOLATE * depth
        return _FSI + _HIDDEN.sub(_reference, line) + _PDI
    return _HIDDEN.sub(_reference, line)


def _reference(match: re.Match[str]) -> str:
    return f"&#x{ord(match[0]):X};"


def _escape_start(match: re.Match[str]) -> str:
    indent, start = match[1], match[2]
    if match["n"]:  # "1." -> "1\.": only punctuation can be escaped
        return f"{indent}{match['n']}\\{start[-1]}"
    return f"{indent}\\{start}"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _link_text(text: str) -> str:
    """A link's text for the llms.txt parser: one line, no brackets."""
    return escape_inline(_one_line(text).replace("[", "(").replace("]", ")"))


def _url(url: str) -> str:
    """A link target without spaces or parentheses (they would end it)."""
    return url.replace(" ", "%20").replace("(", "%28").replace(")", "%29")


def page_markdown(book: Book, page: Page, link: Callable[[str], str]) -> str:
    """The Markdown of one page: headings, then each passage after its ID link."""
    cite = book.base_url + page.url
    out = [
        f"# {escape_inline(page.title)}",
        "",
        f"Page: {escape_inline(cite or 'the site root')}. Each paragraph starts "
        f"with its passage ID, a link to it; cite a paragraph as "
        f"{escape_inline(cite)}#ID.",
        "",
    ]
    # singlehtml: one page holds several documents, each under its own H2
    several = len({r["docname"] for r in page.records}) > 1
    docname, heading = "", cast("tuple[str, ...]", ())
    for record in page.records:
        path = tuple(record["heading_path"])
        if several and record["docname"] != docname:
            out += [f"## {escape_inline(_one_line(record['chapter']))}", ""]
            docname, heading = record["docname"], path[:1]
        elif not heading:
            heading = path[:1]
        if len(path) > 1 and path != heading:
            # The first title is the document's own (the H1, or an H2 above).
            level = min(len(path) + several, 6)
            out += [f"{'#' * level} {escape_inline(_one_line(record['section']))}", ""]
        heading = path or heading
        pid = record["passage_id"]
        out += [f"[{pid}]({_url(link(record['url']))})", escape(record["text"]), ""]
    return "\n".join(out).rstrip("\n") + "\n"


def _relative(from_path: str) -> Callable[[str], str]:
    """Links relative to the Markdown file at *from_path* (site root relative)."""
    folder = posixpath.dirname(from_path) or "."

    def link(url: str) -> str:
        target, _, anchor = url.partition("#")
        relative = posixpath.relpath(target or ".", folder)
        if not target or target.endswith("/"):
            relative = "./" if relative == "." else relative + "/"
        return f"{relative}#{anchor}" if anchor else relative

    return link


def llms_files(book: Book) -> dict[str, bytes]:
    """Path (from the site root) -> bytes of every file, in a stable order."""
    files: dict[str, bytes] = {}
    full = []
    for page in book.pages:
        if book.base_url:
            link: Callable[[str], str] = lambda url: book.base_url + url  # noqa: E731
        else:
            link = _relative(page.markdown_url)
        files[page.markdown_path] = page_markdown(book, page, link).encode()
        full.append(page_markdown(book, page, lambda url: book.base_url + url))
    files[LLMS_TXT] = llms_txt(book).encode()
    files[LLMS_FULL] = ("\n".join(full) if full else f"# {book.project}\n").encode()
    return files


def llms_txt(book: Book) -> str:
    """The llmstxt.org index: H1, blockquote summary, details, link sections."""
    title = _one_line(book.project) or "Documentation"
    first = book.pages[0].records[0]["text"] if book.pages else ""
    summary = _one_line(make_snippet(first)) or f"The {title} documentation."
    out = [f"# {escape_inline(title)}", "", f"> {escape_inline(summary)}", ""]
    release = book.release and f" (release {escape_inline(_one_line(book.release))})"
    out += [
        f"Every page of this book{release} has a Markdown copy, linked below. "
        "In it each paragraph starts with its passage ID (chC-secS-pP) linking to "
        "that paragraph on the HTML page: cite what you use as the page URL plus "
        "#ID (for example index.html#ch0-sec0-p1). llms-full.txt holds every page "
        "in one file.",
        "",
    ]
    sections: dict[str, list[str]] = {"Docs": [], "Optional": []}
    for page in book.pages:
        description = make_snippet(page.records[0]["text"], DESCRIPTION_CHARS, 40)
        sections["Optional" if page.optional else "Docs"].append(
            f"- [{_link_text(page.title)}]({_url(book.base_url + page.markdown_url)})"
            f": {escape_inline(_one_line(description))}"
        )
    sections["Optional"].append(
        f"- [All pages in one file]({_url(book.base_url + LLMS_FULL)}): every "
        "page's Markdown with its passage IDs"
    )
    for name, lines in sections.items():
        if lines:
            out += [f"## {name}", "", *lines, ""]
    return "\n".join(out).rstrip("\n") + "\n"


def manifest_entry(files: dict[str, bytes]) -> dict[str, Any]:
    """What the manifest lists: path -> digest and size."""
    return {
        "files": {
            path: {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
            for path, data in sorted(files.items())
        }
    }


def listed_paths(
    manifest: dict[str, Any] | None, folder: Path | None = None
) -> set[str]:
    """The llms.txt files an earlier build lists (this build may remove them):
    in its listing file under *folder* (``_ragcite/``), or, before issue 46,
    in the manifest itself."""
    entry = (manifest or {}).get(MANIFEST_KEY)
    if isinstance(entry, dict) and entry.get("role") == LISTING_ROLE and folder:
        entry = read_listing(manifest or {}, folder)
    if not isinstance(entry, dict) or not isinstance(entry.get("files"), dict):
        return set()
    return {p for p in entry["files"] if isinstance(p, str) and safe_path(p)}


def read_listing(manifest: dict[str, Any], folder: Path) -> dict[str, Any] | None:
    """The listing file a manifest names, read leniently (None: unreadable)."""
    name = (manifest.get("files") or {}).get(LISTING_ROLE)
    if not isinstance(name, str) or not safe_path(name):
        return None
    try:
        data = json.loads((folder / name).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def safe_path(path: str) -> bool:
    """A relative POSIX path inside the site (no ``..``, no dot-folders)."""
    parts = posixpath.normpath(path).split("/")
    return (
        bool(path)
        and not path.startswith("/")
        and "\\" not in path
        and "\0" not in path
        and not any(p in ("", ".", "..") or p.startswith(".") for p in parts)
    )
