"""Passages by ID, looked up as every door looks them up.

``GET /api/passages/{id}`` and the MCP ``get_passage``, ``cite`` and passage
resource ask the sites of a request's scope and hand records out as
:meth:`ServedSite.annotate` makes them: with several sites, naming their site
and version, their URL relative to the server's root, so that every URL the
server returns resolves on it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from sphinx_ragcite.contracts import MAX_PASSAGE_ID, parse_passage_id
from sphinx_ragcite.errors import RagciteError
from sphinx_ragcite.server.sites import ScopeError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sphinx_ragcite.cite.records import Reference
    from sphinx_ragcite.contracts import ServedRecord
    from sphinx_ragcite.retrieval.searchable import SearchableSite
    from sphinx_ragcite.server.sites import ServedSite
    from sphinx_ragcite.server.state import State


class PassageNotFound(RagciteError):
    """No site asked has the ID; the message says where its text went, if known."""


def too_long(passage_id: str) -> str | None:
    """Why *passage_id* is refused unread (its length), else None."""
    if len(passage_id) > MAX_PASSAGE_ID:
        return f"must be at most {MAX_PASSAGE_ID} characters"
    return None


def find_passage(
    state: State,
    passage_id: str,
    site: str | None = None,
    version: str | None = None,
) -> ServedRecord:
    """The record of *passage_id* in the sites asked.

    Raises :class:`ScopeError` for a scope not served or an ID found in more
    than one site asked, :class:`PassageNotFound` when none has it.
    """
    members = state.scope(site, version).members
    found = [
        m.annotate(record)
        for m in members
        if (record := m.site.passage(passage_id)) is not None
    ]
    if len(found) > 1:
        names = ", ".join(r.get("site", "") for r in found)
        raise ScopeError(
            "site", f"Passage {passage_id!r} is in several sites ({names}): pass site."
        )
    if not found:
        raise PassageNotFound(not_found(members, passage_id))
    return found[0]


def not_found(members: Sequence[ServedSite], passage_id: str) -> str:
    hint = "; ".join(
        f"{m.name}: {hint}" if m.name else hint
        for m in members
        if (hint := m.site.moved_hint(passage_id))
    )
    message = f"No passage {passage_id!r} in this index"
    if hint:
        return f"{message}: {hint}."
    if parse_passage_id(passage_id) is None:
        return f"{message} (passage IDs look like ch3-sec2-p4)."
    return f"{message}."


def citing_site(
    state: State,
    passage_ids: Sequence[str],
    site: str | None = None,
    version: str | None = None,
) -> ServedSite:
    """The one site of the scope whose passages *passage_ids* are (a reference
    names one book); raises :class:`ScopeError` when that is not one site."""
    members = state.scope(site, version).members
    if len(members) == 1:
        return members[0]
    holding = [
        m for m in members if any(m.site.passage(p) is not None for p in passage_ids)
    ]
    if len(holding) > 1:
        names = ", ".join(m.name for m in holding)
        raise ScopeError(
            "site",
            f"These passage IDs are in several sites ({names}): pass site.",
        )
    return holding[0] if holding else members[0]


def references(
    state: State, member: ServedSite, passage_ids: Sequence[str]
) -> list[Reference]:
    """References of *passage_ids* in *member*; raises RagciteError for unknown IDs.

    Their URLs are those the server hands out (``NAME/page.html#ID`` with
    several sites), unless conf.py set ``html_baseurl``: then they are the
    published pages' absolute URLs, which resolve anywhere.
    """
    from sphinx_ragcite.cite.records import Book, lookup

    book = Book.from_manifest(member.site.manifest)
    served: SearchableSite = member.site
    if member.name and not book.baseurl:
        # a union of one site hands out its records annotated
        served = cast("SearchableSite", state.sites.union([member]))
    return lookup(served, passage_ids, book)
