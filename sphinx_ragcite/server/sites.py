"""Several loaded sites as one: names, scopes, and a union searched like one site.

``ragcite serve --site NAME=BUILD_DIR ...`` serves each site under ``/NAME/``.
A question is asked of a *scope*: one site, the sites of one version, or all
of them. A scope of several sites is a :class:`SiteUnion`, which answers the
calls the answer engine makes of a ``Site`` (``search``, ``passages``,
``vectors``, ``embedder``, ``idf``, ``version``), so one engine call answers
across sites, every citation is one of the passages retrieved, and each
names its site (a passage ID is unique only within its site). Members are
used only through that interface, so a site kept elsewhere (Qdrant) can be
one.

All of it is the server's: a name is a URL folder, a scope is what a
request asks, and the union hands out records with URLs relative to the
server's root. Retrieval below knows one site at a time.
"""

from __future__ import annotations

import bisect
import hashlib
import logging
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from sphinx_ragcite.contracts import SITE_NAME, Hit
from sphinx_ragcite.errors import RagciteError
from sphinx_ragcite.retrieval.fusion import Candidates, merge
from sphinx_ragcite.retrieval.searchable import FusedSearch
from sphinx_ragcite.retrieval.site import Site

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    import numpy as np

    from sphinx_ragcite.contracts import Manifest, PassageRecord, ServedRecord
    from sphinx_ragcite.encoder import Embedder
    from sphinx_ragcite.retrieval.searchable import (
        Ranked,
        SearchableSite,
        SearchRequest,
    )

logger = logging.getLogger(__name__)

#: Top-level paths the server itself answers on.
RESERVED = frozenset({"api", "mcp"})
#: ``site`` value that asks every site (the default with several sites).
ALL_SITES = "*"


class ScopeError(RagciteError):
    """A request named a site or version this server does not serve."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def check_site_name(name: str) -> str:
    """*name* if it can be a URL folder of its own, else a RagciteError."""
    if not SITE_NAME.match(name):
        raise RagciteError(
            f"site name {name!r}: use 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit (it becomes the URL folder /NAME/)"
        )
    if name.lower() in RESERVED:
        raise RagciteError(
            f"site name {name!r} is taken by the server's own "
            f"/{name.lower()}/ path; choose another"
        )
    return name


def parse_site_spec(spec: str) -> tuple[str, Path]:
    """``NAME=BUILD_DIR`` of ``ragcite serve --site``."""
    name, equals, path = spec.partition("=")
    if not equals or not name or not path:
        raise RagciteError(
            f"--site {spec!r}: give NAME=BUILD_DIR, e.g. --site v1.2=build/v1.2/html"
        )
    return check_site_name(name), Path(path)


@dataclass(frozen=True)
class ServedSite:
    """One loaded site and the name it is served under ("" at ``/``, alone)."""

    name: str
    #: a :class:`~sphinx_ragcite.retrieval.site.Site` or anything searched like one
    site: SearchableSite

    @property
    def version(self) -> str:
        """conf.py's ``version`` (``release`` when only that is set)."""
        manifest = self.site.manifest
        return manifest.version or manifest.release

    def has_version(self, version: str) -> bool:
        manifest = self.site.manifest
        return bool(version) and version in (manifest.version, manifest.release)

    def annotate(self, record: PassageRecord) -> ServedRecord:
        """*record* as the server hands it out: its site, version, and URL
        relative to the server's root. The one site served at ``/`` is left
        as it is, so its JSON does not change."""
        if not self.name:
            return cast("ServedRecord", record)
        served = cast("ServedRecord", dict(record))
        served["site"] = self.name
        served["version"] = self.version
        served["url"] = f"{self.name}/{record['url']}"
        return served

    def info(self) -> dict[str, Any]:
        manifest = self.site.manifest
        return {
            "name": self.name,
            "url": f"{self.name}/" if self.name else "",
            "project": manifest.project,
            "version": manifest.version,
            "release": manifest.release,
            "passages": len(self.site.passages),
            "index_version": self.site.version,
        }


class _Rows:
    """``union.passages``: each member's records in turn, annotated."""

    def __init__(self, union: SiteUnion) -> None:
        self._union = union

    def __len__(self) -> int:
        return self._union.size

    def __getitem__(self, row: int) -> ServedRecord:
        member, local = self._union.locate(row)
        return member.annotate(member.site.passages[local])

    def __iter__(self) -> Iterator[ServedRecord]:
        for member in self._union.members:
            for record in member.site.passages:
                yield member.annotate(record)


class _Vectors:
    """``union.vectors``: a row's dense vector, from the member that holds it."""

    def __init__(self, union: SiteUnion) -> None:
        self._union = union

    def __getitem__(self, row: int) -> np.ndarray:
        member, local = self._union.locate(row)
        vectors = member.site.vectors
        assert vectors is not None
        return vectors[local]


class _Sentences:
    """``union.sentences``: a row's build-time sentence vectors, if its member
    has them (else None: the answer engine embeds that passage's sentences)."""

    def __init__(self, union: SiteUnion) -> None:
        self._union = union

    def of(self, row: int) -> np.ndarray | None:
        member, local = self._union.locate(row)
        sentences = getattr(member.site, "sentences", None)
        return None if sentences is None else sentences.of(local)


class SiteUnion(FusedSearch):
    """Sites searched as one; rows are numbered through the members in order.

    A search asks each member for its candidates (its top *depth* of each
    ranking, scored on both sides), merges each ranking by score
    (:func:`~sphinx_ragcite.retrieval.fusion.merge`) and fuses them as the
    caller asked, as one site fuses its own. Dense similarities are
    comparable across sites because every member is embedded by the same
    model (checked here); a union of one member ranks as that member does.
    """

    def __init__(self, members: Sequence[ServedSite]) -> None:
        if not members:
            raise ValueError("a union needs at least one site")
        self.members = tuple(members)
        starts, total = [], 0
        for member in self.members:
            starts.append(total)
            total += len(member.site.passages)
        self._starts = starts
        self.size = total
        _check_same_model(self.members)

    # -- what the answer engine reads of a site ----------------------------

    @property
    def manifest(self) -> Manifest:
        """The first member's (book facts differ per member: see each record)."""
        return self.members[0].site.manifest

    @property
    def model_dir(self) -> str | None:
        return self.members[0].site.model_dir

    @property
    def passages(self) -> _Rows:
        return _Rows(self)

    @property
    def vectors(self) -> _Vectors | None:
        return _Vectors(self) if self.has_dense else None

    @property
    def sentences(self) -> _Sentences | None:
        if any(getattr(m.site, "sentences", None) is not None for m in self.members):
            return _Sentences(self)
        return None

    @property
    def has_dense(self) -> bool:
        return all(m.site.has_dense for m in self.members)

    @property
    def dense_search(self) -> bool:
        return all(m.site.dense_search for m in self.members)

    @property
    def embedder(self) -> Embedder:
        return self.members[0].site.embedder

    @property
    def version(self) -> str:
        """Changes when any member's passages change (answer caches)."""
        if len(self.members) == 1 and not self.members[0].name:
            return self.members[0].site.version
        joined = ";".join(f"{m.name}={m.site.version}" for m in self.members)
        return hashlib.sha256(joined.encode()).hexdigest()[:16]

    @property
    def where(self) -> str:
        return ", ".join(f"{m.name}: {m.site.where}" for m in self.members)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(m.name for m in self.members)

    def locate(self, row: int) -> tuple[ServedSite, int]:
        """The member holding union row *row*, and its row there."""
        if not 0 <= row < self.size:
            raise IndexError(row)
        at = bisect.bisect_right(self._starts, row) - 1
        return self.members[at], row - self._starts[at]

    def idf(self, term: str) -> float:
        """The members' mean idf: how rare a word is across what is asked."""
        return sum(m.site.idf(term) for m in self.members) / len(self.members)

    def passage(self, passage_id: str) -> ServedRecord | None:
        for member in self.members:
            record = member.site.passage(passage_id)
            if record is not None:
                return member.annotate(record)
        return None

    def moved_hint(self, passage_id: str) -> str:
        hints = [
            f"{m.name}: {hint}" if m.name else hint
            for m in self.members
            if (hint := m.site.moved_hint(passage_id))
        ]
        return "; ".join(hints)

    def candidates(self, request: SearchRequest) -> _UnionCandidates:
        """Every member's candidates, merged (the query embedded once)."""
        if request.query_vector is None and request.mode != "bm25" and self.has_dense:
            vector = self.embedder.embed([request.query], kind="query")[0]
            request = replace(request, query_vector=vector)
        parts = [m.site.candidates(request) for m in self.members]
        merged = merge(parts, request.wanted)
        return _UnionCandidates(
            merged.lexical, merged.semantic, merged.bm25, merged.dense, parts
        )

    def hits(self, ranked: Sequence[Ranked], candidates: Candidates[Any]) -> list[Hit]:
        """Each member's hits (in one call per member), annotated, in order."""
        assert isinstance(candidates, _UnionCandidates)
        found: dict[tuple[int, int], Hit] = {}
        for at, member in enumerate(self.members):
            mine = [r._replace(key=r.key[1]) for r in ranked if r.key[0] == at]
            if mine:
                hits = member.site.hits(mine, candidates.parts[at])
                for hit in hits:
                    found[at, hit.row] = Hit(
                        cast("PassageRecord", member.annotate(hit.passage)),
                        self._starts[at] + hit.row,
                        hit.score,
                        hit.bm25,
                        hit.dense,
                    )
        return [found[r.key] for r in ranked]


@dataclass
class _UnionCandidates(Candidates[tuple[int, Any]]):
    """Merged candidates, and each member's own (its ``hits`` reads them)."""

    parts: list[Candidates[Any]] = field(default_factory=list)


def _model_of(site: SearchableSite) -> tuple[str, int] | None:
    embedding = site.manifest.embedding
    return None if embedding is None else (embedding.model, embedding.dim)


def _check_same_model(members: Sequence[ServedSite]) -> None:
    """Dense similarities of different models cannot be ranked together."""
    models = {m.name: _model_of(m.site) for m in members}
    distinct = {model for model in models.values() if model is not None}
    if len(distinct) > 1:
        listed = ", ".join(
            f"{name or '/'} ({model[0]})"
            for name, model in models.items()
            if model is not None
        )
        raise ScopeError(
            "site",
            f"These sites were embedded with different models and cannot be "
            f"asked together: {listed}. Ask within one site.",
        )


class Sites:
    """The sites a server serves, by name, in the order they were given."""

    def __init__(self, members: Sequence[ServedSite]) -> None:
        names = [m.name for m in members]
        if not members:
            raise RagciteError("no site to serve")
        if len(set(names)) != len(names):
            twice = sorted({n for n in names if names.count(n) > 1})
            raise RagciteError(f"site name given twice: {', '.join(twice)}")
        if "" in names and len(names) > 1:
            raise RagciteError("only a site served alone may be unnamed")
        self.members = tuple(members)
        self._by_name = {m.name: m for m in self.members}
        self._unions: dict[tuple[str, ...], SiteUnion] = {}
        self._lock = threading.Lock()

    @classmethod
    def load(
        cls,
        specs: Sequence[tuple[str, Path]],
        *,
        model_dir: str | None = None,
        load: Callable[[Path], SearchableSite] | None = None,
    ) -> Sites:
        """Load every site (each checked as :meth:`Site.load` checks one);
        *load* reads one build folder some other way (from Qdrant)."""
        members = []
        for name, path in specs:
            started = time.perf_counter()
            site = (
                load(path) if load is not None else Site.load(path, model_dir=model_dir)
            )
            logger.info(
                "loaded %d passages of %s from %s in %.2f s",
                len(site.passages),
                name or "the site",
                site.where,
                time.perf_counter() - started,
            )
            members.append(ServedSite(name, site))
        share_embedders([m.site for m in members])
        return cls(members)

    @property
    def several(self) -> bool:
        """Served under ``/NAME/`` (``--site``), not the one site at ``/``."""
        return bool(self.members[0].name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._by_name)

    def __getitem__(self, name: str) -> ServedSite:
        return self._by_name[name]

    def __iter__(self) -> Iterator[ServedSite]:
        return iter(self.members)

    def __len__(self) -> int:
        return len(self.members)

    def resolve(
        self, site: str | None = None, version: str | None = None
    ) -> tuple[ServedSite, ...]:
        """The sites a request asks: *site* by name (``*`` or None: all),
        then only those whose conf.py ``version`` or ``release`` is *version*."""
        chosen = self.members
        if site and site != ALL_SITES:
            if not self.several:
                raise ScopeError(
                    "site", "This server serves one site; leave out 'site'."
                )
            if site not in self._by_name:
                raise ScopeError(
                    "site",
                    f"No site {site!r} is served here; sites: {', '.join(self.names)}.",
                )
            chosen = (self._by_name[site],)
        if version:
            kept = tuple(m for m in chosen if m.has_version(version))
            if not kept:
                served = ", ".join(
                    f"{m.name or 'the site'} ({m.version or 'no version'})"
                    for m in chosen
                )
                raise ScopeError(
                    "version",
                    f"No site asked has version {version!r}; served: {served}.",
                )
            chosen = kept
        return chosen

    def union(self, members: Sequence[ServedSite]) -> SiteUnion:
        """One union per set of members, made once (it holds no copies)."""
        key = tuple(m.name for m in members)
        with self._lock:
            union = self._unions.get(key)
            if union is None:
                union = self._unions[key] = SiteUnion(members)
            return union

    @property
    def passages(self) -> int:
        return sum(len(m.site.passages) for m in self.members)

    @property
    def version(self) -> str:
        return self.union(self.members).version


def share_embedders(sites: Sequence[SearchableSite]) -> None:
    """One encoder in memory for all sites embedded by the same model.

    ``Site.embedder`` is loaded on first use and cached on the site; sites
    with the same model, token limit and model folder get the first one's.
    """
    first: dict[tuple[Any, ...], Site] = {}
    for site in sites:
        if not isinstance(site, Site):
            continue  # another store brings its own
        embedding = site.manifest.embedding
        key = (
            site.model_dir,
            None if embedding is None else (embedding.model, embedding.max_tokens),
        )
        if key in first:
            vars(site)["embedder"] = first[key].embedder
        else:
            first[key] = site
