"""``QdrantSite``: a pushed site searched in Qdrant, as a site in memory is.

An answer server keeps only the site's record (manifest, BM25 vocabulary,
document frequencies) and asks Qdrant for each ranking's candidates, then
for the score of each candidate on the side that did not rank it; the
fusion is the in-memory one (:mod:`~sphinx_ragcite.retrieval.fusion`), so
a Qdrant site ranks as the same site in memory.
"""

from __future__ import annotations

import base64
import json
import threading
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sphinx_ragcite.contracts import PASSAGE_FIELDS, Hit
from sphinx_ragcite.errors import RagciteError, SiteIndexError
from sphinx_ragcite.formats.embeddings import dequantize
from sphinx_ragcite.formats.manifest import index_dir, read_manifest
from sphinx_ragcite.retrieval.fusion import Candidates
from sphinx_ragcite.retrieval.qdrant.connection import (
    DEFAULT_COLLECTION,
    DENSE,
    SITES_SUFFIX,
    SPARSE,
    _call,
    _site_filter,
    connect,
    default_site_name,
    point_id,
    push_command,
    pushed_sites,
)
from sphinx_ragcite.retrieval.searchable import FusedSearch
from sphinx_ragcite.retrieval.site import (
    load_embedder,
    lucene_idf,
    moved_hint,
    read_tokenizer,
)

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from qdrant_client import QdrantClient
    from qdrant_client import models as qm

    from sphinx_ragcite.contracts import PassageRecord
    from sphinx_ragcite.encoder import Embedder
    from sphinx_ragcite.retrieval.searchable import Filters, Ranked, SearchRequest
    from sphinx_ragcite.text import Tokenizer

#: candidates fetched beyond ``depth``, so ties at the cut rank as in memory
SLACK = 10
#: rows per call when every record is listed
PAGE = 1024
#: passages kept on an answer server after a search (records + vectors)
CACHE_SIZE = 4096


def _site_record(
    client: QdrantClient,
    location: str,
    collection: str,
    site: str | None,
    version: str | None,
    build_dir: str | Path | None = None,
) -> dict[str, Any]:
    """The record of the one pushed site that fits *site* and *version*."""
    pushed = pushed_sites(client, collection)
    fits = [
        (s, v)
        for s, v in pushed
        if (site is None or s == site) and (version is None or v == version)
    ]
    if len(fits) != 1:
        listed = ", ".join(f"{s} {v!r}" for s, v in pushed) or "none"
        wanted = f"{site or 'any site'} version {version!r}"
        raise RagciteError(
            f"Qdrant collection {collection} at {location} holds "
            f"{'no' if not fits else 'several'} pushed site(s) matching "
            f"{wanted} (pushed: {listed}). Run "
            f"`{push_command(location, collection, build_dir)}` first."
        )
    name, ver = fits[0]
    points = _call(
        "read the site record",
        client.retrieve,
        collection + SITES_SUFFIX,
        [point_id(name, ver, "")],
        with_payload=True,
    )
    if not points:
        raise SiteIndexError(
            f"Qdrant collection {collection}{SITES_SUFFIX} at {location} lost the "
            f"record of site {name} {ver!r}: run "
            f"`{push_command(location, collection, build_dir)}` again."
        )
    record: dict[str, Any] = points[0].payload or {}
    return record


class _Passages:
    """``site.passages`` of a Qdrant site: a row's record, fetched when asked."""

    def __init__(self, site: QdrantSite) -> None:
        self._site = site

    def __len__(self) -> int:
        return self._site.count

    def __getitem__(self, row: int) -> PassageRecord:
        return self._site.row(row)[0]

    def __iter__(self) -> Iterator[PassageRecord]:
        """Every record in row order, a page of rows per call (for a contents)."""
        from qdrant_client import models

        site = self._site
        for start in range(0, len(self), PAGE):
            rows = models.FieldCondition(
                key="row", range=models.Range(gte=start, lt=start + PAGE)
            )
            points, _ = _call(
                "list passages",
                site.client.scroll,
                site.collection,
                scroll_filter=models.Filter(must=[*(site._scope.must or []), rows]),  # type: ignore[misc]
                limit=PAGE,
                with_payload=True,
            )
            page = sorted(points, key=lambda p: int(p.payload["row"]))
            if len(page) != min(PAGE, len(self) - start):
                raise SiteIndexError(
                    f"Qdrant lost passages of {site.where}: push the site again."
                )
            for point in page:
                yield {key: point.payload[key] for key in PASSAGE_FIELDS}  # type: ignore[misc]


class _Vectors:
    """``site.vectors`` of a Qdrant site: a row's dense vector."""

    def __init__(self, site: QdrantSite) -> None:
        self._site = site

    def __getitem__(self, row: int, /) -> np.ndarray:
        vector = self._site.row(row)[1]
        assert vector is not None
        return vector


class _Sentences:
    """``site.sentences`` of a Qdrant site: a row's sentence vectors."""

    def __init__(self, site: QdrantSite) -> None:
        self._site = site

    def of(self, row: int) -> np.ndarray:
        sentences = self._site.row(row)[2]
        if sentences is None:
            raise SiteIndexError(
                f"{self._site.where} has no sentence vectors for row {row}: push "
                "the site again."
            )
        return sentences


#: a row's record, dense vector and sentence vectors
_Row = tuple["PassageRecord", "np.ndarray | None", "np.ndarray | None"]


def scope_filter(scope: qm.Filter, filters: Filters | None) -> qm.Filter:
    """The site's scope narrowed by a request's filters, as Qdrant reads them."""
    from qdrant_client import models

    must = list(scope.must or [])  # type: ignore[arg-type]
    if filters and filters.docnames:
        # "guide" is the document guide and those under guide/; "guide/"
        # only those under it (as Site.mask reads them)
        whole = [d for d in filters.docnames if not d.endswith("/")]
        under = [d.rstrip("/") for d in filters.docnames if d.endswith("/")]
        must.append(
            models.Filter(
                should=[
                    models.FieldCondition(key=key, match=models.MatchAny(any=ds))
                    for key, ds in (("doc_prefixes", whole), ("doc_parents", under))
                    if ds
                ]
            )
        )
    if filters and filters.chapters:
        must.append(
            models.FieldCondition(
                key="chapter_number",
                match=models.MatchAny(any=list(filters.chapters)),
            )
        )
    return models.Filter(must=must)


class QdrantSite(FusedSearch):
    """A pushed site searched in Qdrant; answers the calls of ``retrieval.Site``."""

    def __init__(
        self,
        client: QdrantClient,
        collection: str,
        record: dict[str, Any],
        *,
        location: str = "",
        model_dir: str | None = None,
    ) -> None:
        from sphinx_ragcite.contracts import Manifest

        self.client = client
        self.collection = collection
        self.name: str = record["site"]
        self.site_version: str = record["version"]
        self.location = location
        self.model_dir = model_dir
        #: the pushed site's ``_ragcite/``, where a shipped encoder is read
        self.index_directory: Path | None = None
        self.manifest = Manifest.model_validate_json(record["manifest"])
        self._tokenizer = read_tokenizer(self.manifest, f"{location} {self.name}")
        self.moved: dict[str, str] = json.loads(record["moved"])
        self.count = int(record["passages"])
        self._index_version = str(record["index_version"])
        terms = json.loads(record["vocab"])
        self._vocab = {t: i for i, t in enumerate(terms)}
        self._idf = np.asarray(
            lucene_idf(
                np.asarray(json.loads(record["df"]), dtype=np.float64), self.count
            )
        )
        self._scope = _site_filter(self.name, self.site_version)
        self._rows = _RowCache(self)

    @classmethod
    def open(
        cls,
        location: str,
        collection: str = DEFAULT_COLLECTION,
        *,
        site: str | None = None,
        version: str | None = None,
        model_dir: str | None = None,
        client: QdrantClient | None = None,
        build_dir: str | Path | None = None,
    ) -> QdrantSite:
        """The pushed site *site* (and *version*); either may be left out when
        the collection holds only one that fits. Refuses a collection that
        cannot answer for it (:meth:`problem`); *build_dir*, the folder pushed,
        only goes into the messages."""
        owned = client is None
        client = client or connect(location)
        try:
            record = _site_record(
                client, location, collection, site, version, build_dir
            )
            found = cls(
                client, collection, record, location=location, model_dir=model_dir
            )
            if build_dir is not None:
                found.index_directory = index_dir(Path(build_dir))
            problem = found.problem(build_dir)
            if problem:
                raise SiteIndexError(problem)
        except BaseException:
            if owned:
                client.close()
            raise
        return found

    @classmethod
    def for_build(
        cls,
        location: str,
        build_dir: str | Path,
        collection: str = DEFAULT_COLLECTION,
        *,
        model_dir: str | None = None,
        client: QdrantClient | None = None,
    ) -> QdrantSite:
        """The pushed copy of *build_dir*, which must be the build pushed."""
        manifest = read_manifest(index_dir(Path(build_dir)))
        site = cls.open(
            location,
            collection,
            site=default_site_name(manifest),
            version=manifest.version,
            model_dir=model_dir,
            client=client,
            build_dir=build_dir,
        )
        if site.version != manifest.sha256["passages"][:16]:
            if client is None:
                site.client.close()
            push = push_command(location, collection, build_dir)
            raise SiteIndexError(
                f"{build_dir} was rebuilt after it was pushed to Qdrant (its "
                f"passages differ): run `{push}` again."
            )
        return site

    def problem(
        self, build_dir: str | Path | None = None, *, exact: bool = True
    ) -> str | None:
        """What keeps the collection from answering for this site (see
        :func:`store_problem`); None when it can."""
        return store_problem(self, build_dir, exact=exact)

    # -- what the answer engine and the server use -------------------------

    @property
    def version(self) -> str:
        return self._index_version

    @property
    def where(self) -> str:
        return (
            f"Qdrant {self.location or 'client'} collection {self.collection} "
            f"(site {self.name} {self.site_version!r})"
        )

    @property
    def passages(self) -> _Passages:
        return _Passages(self)

    @property
    def vectors(self) -> _Vectors | None:
        return _Vectors(self) if self.has_dense else None

    @property
    def has_dense(self) -> bool:
        return self.manifest.embedding is not None

    @property
    def dense_search(self) -> bool:
        embedding = self.manifest.embedding
        return embedding is not None and embedding.search

    @property
    def sentences(self) -> _Sentences | None:
        """Build-time sentence vectors, when the build made them."""
        embedding = self.manifest.embedding
        return _Sentences(self) if embedding and embedding.sentences else None

    @cached_property
    def embedder(self) -> Embedder:
        return load_embedder(self.manifest, self.model_dir, self.index_directory)

    def idf(self, term: str) -> float:
        i = self._vocab.get(term)
        if i is None or i >= len(self._idf):
            return float(np.log1p(self.count + 0.5))
        return float(self._idf[i])

    def passage(self, passage_id: str) -> PassageRecord | None:
        points = _call(
            "read a passage",
            self.client.retrieve,
            self.collection,
            [point_id(self.name, self.site_version, passage_id)],
            with_payload=True,
            with_vectors=[DENSE] if self.has_dense else False,
        )
        if not points:
            return None
        return self._rows.remember(points[0])[0]

    def moved_hint(self, passage_id: str) -> str:
        if self.passage(passage_id) is not None:
            return ""
        return moved_hint(self.moved, passage_id)

    def row(self, row: int) -> _Row:
        """A row's record and vectors (cached: the rows just searched are)."""
        return self._rows.get(row)

    def candidates(self, request: SearchRequest) -> _QdrantCandidates:
        """Each ranking from one batch of queries, then each candidate's score
        on the side that did not rank it, as ``Site.candidates`` gives them."""
        mode = request.mode
        if mode != "bm25" and not self.has_dense:
            raise SiteIndexError(
                "This index has no dense embeddings (built with "
                "ragcite_embeddings = False); use mode 'bm25'."
            )
        scope = self._filter(request.filters)
        sparse = (
            _sparse(self._vocab, request.query, self._tokenizer)
            if mode != "dense"
            else None
        )
        vector = None
        if mode != "bm25":
            vector = request.query_vector
            if vector is None:
                vector = self.embedder.embed([request.query], kind="query")[0]
        limit = request.wanted + SLACK
        asked = [
            self._request(query, using, scope, limit)
            for query, using in ((sparse, SPARSE), (vector, DENSE))
            if query is not None
        ]
        answers = (
            _call("search", self.client.query_batch_points, self.collection, asked)
            if asked
            else []
        )
        found = [_scores(a.points) for a in answers]
        bm25 = found.pop(0) if sparse is not None else {}
        dense = found.pop(0) if vector is not None else {}
        ids = {r: p for side in (bm25, dense) for r, (_, p) in side.items()}
        lexical = _best(bm25, request.wanted)
        semantic = _best(dense, request.wanted)
        if mode == "hybrid":
            union = set(lexical) | set(semantic)
            self._complete(bm25, dense, union, ids, sparse, vector)
        return _QdrantCandidates(
            lexical,
            semantic,
            {r: _f32(score) for r, (score, _) in bm25.items()},
            {r: _f32(score) for r, (score, _) in dense.items()},
            ids,
        )

    def hits(self, ranked: Sequence[Ranked], candidates: Candidates[int]) -> list[Hit]:
        """The ranked rows' records, read in one call."""
        ids = candidates.ids if isinstance(candidates, _QdrantCandidates) else None
        self._rows.fetch([r.key for r in ranked], ids)
        return [
            Hit(self.row(r.key)[0], r.key, r.score, r.bm25, r.dense) for r in ranked
        ]

    # -- helpers -------------------------------------------------------------

    def _filter(self, filters: Filters | None) -> qm.Filter:
        return scope_filter(self._scope, filters)

    def _request(
        self, query: Any, using: str, scope: qm.Filter, limit: int
    ) -> qm.QueryRequest:
        from qdrant_client import models

        if isinstance(query, np.ndarray):
            query = [float(v) for v in query]
        return models.QueryRequest(
            query=query,
            using=using,
            filter=scope,
            limit=limit,
            with_payload=["row"],
            # idf over this site's passages, whatever else the collection holds
            params=models.SearchParams(idf=models.IdfCorpusParams(corpus=self._scope))
            if using == SPARSE
            else None,
        )

    def _complete(
        self,
        bm25: dict[int, tuple[float, str]],
        dense: dict[int, tuple[float, str]],
        union: set[int],
        ids: dict[int, str],
        sparse: qm.SparseVector | None,
        vector: np.ndarray | None,
    ) -> None:
        """Each candidate's score on the side that did not rank it."""
        from qdrant_client import models

        requests = []
        sides = []
        for side, query, using in ((bm25, sparse, SPARSE), (dense, vector, DENSE)):
            missing = [ids[r] for r in union if r not in side]
            if missing and query is not None:
                only = models.Filter(must=[models.HasIdCondition(has_id=missing)])
                requests.append(self._request(query, using, only, len(missing)))
                sides.append(side)
        if requests:
            answers = _call(
                "score candidates",
                self.client.query_batch_points,
                self.collection,
                requests,
            )
            for side, answer in zip(sides, answers, strict=True):
                side.update(_scores(answer.points))


class _RowCache:
    """A Qdrant site's rows read so far (records and vectors), the last
    ``CACHE_SIZE`` kept: the rows a search just ranked are read again to
    answer."""

    def __init__(self, site: QdrantSite) -> None:
        self._site = site
        self._lock = threading.Lock()
        self._cache: OrderedDict[int, _Row] = OrderedDict()

    def get(self, row: int) -> _Row:
        with self._lock:
            if row in self._cache:
                self._cache.move_to_end(row)
                return self._cache[row]
        if not 0 <= row < self._site.count:
            raise IndexError(row)
        self.fetch([row])
        with self._lock:
            return self._cache[row]

    def fetch(self, rows: Sequence[int], ids: dict[int, str] | None = None) -> None:
        """Records and vectors of *rows* not cached yet, in one call."""
        from qdrant_client import models

        with self._lock:
            missing = [r for r in rows if r not in self._cache]
        if not missing:
            return
        vectors: Any = [DENSE] if self._site.has_dense else False
        if ids is not None and all(r in ids for r in missing):
            points = _call(
                "read passages",
                self._site.client.retrieve,
                self._site.collection,
                [ids[r] for r in missing],
                with_payload=True,
                with_vectors=vectors,
            )
        else:
            only = models.Filter(
                must=[
                    *(self._site._scope.must or []),  # type: ignore[misc]
                    models.FieldCondition(
                        key="row", match=models.MatchAny(any=missing)
                    ),
                ]
            )
            points, _ = _call(
                "read passages",
                self._site.client.scroll,
                self._site.collection,
                scroll_filter=only,
                limit=len(missing),
                with_payload=True,
                with_vectors=vectors,
            )
        for point in points:
            self.remember(point)
        with self._lock:
            absent = [r for r in missing if r not in self._cache]
        if absent:
            raise SiteIndexError(
                f"Qdrant lost passages of {self._site.where} (rows {absent[:5]}): push "
                "the site again."
            )

    def remember(self, point: Any) -> _Row:
        payload = point.payload or {}
        record: PassageRecord = {key: payload[key] for key in PASSAGE_FIELDS}  # type: ignore[assignment]
        vector = None
        if self._site.has_dense and point.vector:
            vector = np.asarray(point.vector[DENSE], dtype=np.float32)
        sentences = None
        if "sentence_codes" in payload:
            scales = np.asarray(payload["sentence_scales"], dtype=np.float32)
            codes = np.frombuffer(
                base64.b64decode(payload["sentence_codes"]), dtype=np.int8
            ).reshape(len(scales), -1)
            sentences = dequantize(codes, scales)
        entry = (record, vector, sentences)
        with self._lock:
            self._cache[int(payload["row"])] = entry
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return entry


def store_problem(
    site: QdrantSite, build_dir: str | Path | None = None, *, exact: bool = True
) -> str | None:
    """What keeps the collection from answering for this site, with the
    fix; None when it can. Checks the collection, its vectors and (when
    *exact*) the number of the site's points; without *exact* (a running
    server's health) they need only be there: a newer build pushed before
    the servers roll out changes their number."""
    at = site.location or "client"
    named = f"site {site.name} {site.site_version!r}"
    push = push_command(site.location or "URL", site.collection, build_dir)
    name = site.collection
    if not _call("list collections", site.client.collection_exists, name):
        return (
            f"Qdrant at {at} has no collection {name} (its "
            f"{name}{SITES_SUFFIX} still records {named}): run `{push}` again"
        )
    params = _call(f"read {name}", site.client.get_collection, name).config.params
    vectors = params.vectors if isinstance(params.vectors, dict) else {}
    have = vectors.get(DENSE)
    dim = site.manifest.embedding.dim if site.manifest.embedding else None
    if dim and (have is None or have.size != dim):
        size = "no" if have is None else f"{have.size}-dimensional"
        return (
            f"collection {name} at {at} holds {size} dense vectors; {named} "
            f"has {dim}-dimensional ones: delete the collection (or pick "
            f"another with --collection), then run `{push}`"
        )
    if SPARSE not in (params.sparse_vectors or {}):
        return (
            f"collection {name} at {at} has no {SPARSE} sparse vectors: "
            f"delete it (or pick another with --collection), then run `{push}`"
        )
    held = _points_held(site, exact=exact)
    if held != site.count and (exact or not held):
        return (
            f"collection {name} at {at} holds {held} of the {site.count} "
            f"passages of {named}: run `{push}` again"
        )
    return None


def _points_held(site: QdrantSite, *, exact: bool) -> int:
    """The site's points in the collection; without *exact*, 0 or 1."""
    if exact:
        return int(
            _call(
                "count passages",
                site.client.count,
                site.collection,
                count_filter=site._scope,
                exact=True,
            ).count
        )
    points, _ = _call(
        "list passages",
        site.client.scroll,
        site.collection,
        scroll_filter=site._scope,
        limit=1,
        with_payload=False,
        with_vectors=False,
    )
    return len(points)


def _sparse(
    vocab: dict[str, int], query: str, tokenizer: Tokenizer
) -> qm.SparseVector | None:
    """The query's BM25 terms as a sparse vector (term counts), or None."""
    from qdrant_client import models

    counts = Counter(vocab[t] for t in tokenizer.tokenize(query) if t in vocab)
    if not counts:
        return None
    indices = sorted(counts)
    return models.SparseVector(
        indices=indices, values=[float(counts[i]) for i in indices]
    )


def _f32(score: float) -> float:
    """A score rounded as the in-memory index holds it (float32), so fusion
    ranks a Qdrant site exactly as the same site in memory."""
    return float(np.float32(score))


@dataclass
class _QdrantCandidates(Candidates[int]):
    """Candidates and the point ID of each row found (to read them by ID)."""

    ids: dict[int, str] = field(default_factory=dict)


def _scores(points: Sequence[Any]) -> dict[int, tuple[float, str]]:
    """row -> (score, point ID) of a query's answer."""
    return {int(p.payload["row"]): (float(p.score), str(p.id)) for p in points}


def _best(scores: dict[int, tuple[float, str]], n: int) -> list[int]:
    """The *n* best rows, ties by row: the order of ``site._top``."""
    order = sorted(scores, key=lambda r: (-scores[r][0], r))
    return order[:n]
