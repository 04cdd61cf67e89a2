"""The built sites a question log names: their passages, pages and deep links.

The log's ``sites`` table maps a site name to its build folder and public
base URL. A report opens each build's ``_ragcite/`` index the way ``ragcite
ask`` does (:meth:`Site.load`); a folder that is gone or unreadable is
noted, and the report goes on without that site's pages and passages.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from sphinx_ragcite.errors import RagciteError

if TYPE_CHECKING:
    import sqlite3

    from sphinx_ragcite.contracts import PassageRecord
    from sphinx_ragcite.retrieval.site import Site

logger = logging.getLogger(__name__)


@dataclass
class Book:
    """One site of the log: where it was built and served, and its index."""

    name: str
    build_dir: str = ""
    base_url: str = ""
    site: Site | None = None
    #: why the index is not there ("" when loaded)
    problem: str = ""
    pages: dict[str, str] = field(default_factory=dict)  # page URL -> title

    def passage(self, passage_id: str) -> PassageRecord | None:
        return None if self.site is None else self.site.passage(passage_id)

    def link(self, url: str | None) -> str | None:
        """*url* (relative to the site's root, as logged) as a deep link: under
        the base URL when the log knows it, else into the build folder.

        A logged URL is quoted already (``weird%20name.html``): it goes under
        the base URL as it is, and is unquoted into the file's own name before
        :meth:`Path.as_uri` quotes that once again.
        """
        if not url:
            return None
        if self.base_url:
            return self.base_url.rstrip("/") + "/" + url.lstrip("/")
        if Path(self.build_dir).is_absolute():
            page, _, fragment = url.partition("#")
            uri = (Path(self.build_dir) / unquote(page).lstrip("/")).as_uri()
            return f"{uri}#{fragment}" if fragment else uri
        return None

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "build_dir": self.build_dir or None,
            "base_url": self.base_url or None,
            "index": "loaded" if self.site is not None else self.problem,
            "passages": 0 if self.site is None else len(self.site.passages),
            "pages": len(self.pages),
        }


def open_books(db: sqlite3.Connection) -> dict[str, Book]:
    """A :class:`Book` for every site that has questions in the merged log."""
    known = {
        name: (build_dir, base_url)
        for name, build_dir, base_url in db.execute("SELECT * FROM s")
    }
    asked = {name for (name,) in db.execute("SELECT DISTINCT site FROM q")}
    books = {}
    for name in sorted(asked | set(known)):
        if name not in known:
            books[name] = Book(name, problem=_UNKNOWN if name else _TOGETHER)
            continue
        build_dir, base_url = known[name]
        books[name] = _open(Book(name, build_dir or "", base_url or ""))
    return books


_UNKNOWN = "the log does not say where this site was built"
_TOGETHER = "questions asked of several sites together"


def _open(book: Book) -> Book:
    from sphinx_ragcite.retrieval.site import Site

    if not book.build_dir:
        book.problem = _UNKNOWN
        return book
    if not Path(book.build_dir).is_dir():
        book.problem = f"the build folder {book.build_dir} is gone"
        return book
    try:
        book.site = Site.load(book.build_dir)
    except (RagciteError, OSError, ValueError) as error:
        book.problem = f"the index in {book.build_dir} cannot be read: {error}"
        logger.warning("%s", book.problem)
        return book
    for record in book.site.passages:
        page = record["url"].partition("#")[0]
        if page not in book.pages:
            path = record["heading_path"]
            book.pages[page] = path[0] if path else record["docname"]
    return book
