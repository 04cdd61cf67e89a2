"""Passages in Qdrant: ``ragcite push`` writes a built site, ``QdrantSite`` reads it.

For sites past one machine's memory: a collection holds the passages of any
number of sites (and versions) with the citation fields as payload; answer
servers keep only each site's manifest and BM25 vocabulary and ask Qdrant
for candidates. Retrieval is the in-memory one, done remotely:

- dense: the shipped vectors (dequantised, float32) under ``dense``, scored by
  dot product exactly as ``Site.dense_scores`` does;
- BM25: a sparse vector ``bm25`` per passage whose values are bm25s's term
  frequency component ``tf / (tf + k1 * (1 - b + b * len / avglen))`` of the
  same tokens (``index.tokenize``); Qdrant's IDF modifier multiplies in the
  idf, counted over the passages of the same site and version only
  (``search_params.idf`` corpus), which is the idf bm25s uses;
- fusion: Qdrant returns the top candidates of each side, the missing side's
  score of each candidate is fetched, and ``retrieval._rrf``/``_linear`` fuse
  them client-side, so hybrid ranks as it does in memory.

Point IDs are uuid5 of site, version and passage ID: a re-push overwrites
the same points and then deletes the site's points whose passage is gone.
"""

from __future__ import annotations

import base64
import json
import re
import threading
import uuid
import warnings
from collections import Counter, OrderedDict
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sphinx_ragcite.contracts import PASSAGE_FIELDS, Hit, parse_passage_id
from sphinx_ragcite.errors import RagciteError, SiteIndexError
from sphinx_ragcite.formats.bm25 import indexed_text
from sphinx_ragcite.formats.embeddings import dequantize
from sphinx_ragcite.formats.manifest import index_dir, read_manifest
from sphinx_ragcite.retrieval.site import (
    Filters,
    _linear,
    _rrf,
    load_embedder,
    lucene_idf,
    moved_hint,
)
from sphinx_ragcite.text import tokenize

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from qdrant_client import QdrantClient
    from qdrant_client import models as qm

    from sphinx_ragcite.contracts import Fusion, Manifest, PassageRecord, SearchMode
    from sphinx_ragcite.retrieval.embed import Embedder
    from sphinx_ragcite.retrieval.site import Site

DENSE = "dense"
SPARSE = "bm25"
DEFAULT_COLLECTION = "ragcite"
#: the collection beside ``NAME`` that holds one record per pushed site
SITES_SUFFIX = "_sites"
#: fixed, so a point's ID depends only on site, version and passage ID
NAMESPACE = uuid.UUID("6f1d3c52-8a0e-5c4b-9d2e-2f3a6b7c8d90")
#: candidates fetched beyond ``depth``, so ties at the cut rank as in memory
SLACK = 10
BATCH = 256
#: rows per call when every record is listed
PAGE = 1024
#: passages kept on an answer server after a search (records + vectors)
CACHE_SIZE = 4096
INSTALL = "install the extra: pip install 'sphinx-ragcite[qdrant]'"


# -- connecting ---------------------------------------------------------------


def connect(location: str) -> QdrantClient:
    """``http(s)://host:port`` is a Qdrant server; ``:memory:`` or a folder is
    qdrant-client's local mode (one process at a time per folder)."""
    try:
        from qdrant_client import QdrantClient
    except ImportError:
        raise RagciteError(f"Qdrant needs qdrant-client: {INSTALL}") from None
    location = location.strip()
    if not location:
        raise RagciteError("--qdrant is empty: pass http://host:6333 or a folder")
    try:
        if re.match(r"^https?://", location):
            import os

            return QdrantClient(url=location, api_key=os.environ.get("QDRANT_API_KEY"))
        if location == ":memory:":
            return QdrantClient(location=":memory:")
        path = Path(location)
        if path.exists() and not path.is_dir():
            raise RagciteError(f"--qdrant {location}: not a folder or an http(s) URL")
        return QdrantClient(path=str(path))
    except RuntimeError as error:  # local mode: the folder is open elsewhere
        raise RagciteError(f"cannot open Qdrant at {location}: {error}") from None


def point_id(site: str, version: str, passage_id: str) -> str:
    return str(uuid.uuid5(NAMESPACE, f"{site}\n{version}\n{passage_id}"))


def default_site_name(manifest: Manifest) -> str:
    """The project's name as a slug ("Example Book" -> ``example-book``)."""
    slug = re.sub(r"[^0-9a-z]+", "-", manifest.project.lower()).strip("-")
    return slug or "site"


def _call(what: str, function: Any, *args: Any, **kwargs: Any) -> Any:
    """A Qdrant call whose failure becomes one message, not a traceback."""
    from qdrant_client.http.exceptions import (
        ResponseHandlingException,
        UnexpectedResponse,
    )

    try:
        return function(*args, **kwargs)
    except (ResponseHandlingException, UnexpectedResponse, ValueError) as error:
        raise RagciteError(f"Qdrant could not {what}: {error}") from None


# -- push ---------------------------------------------------------------------


@dataclass(frozen=True)
class PushResult:
    collection: str
    site: str
    version: str
    upserted: int
    removed: int


def sparse_rows(
    records: Sequence[PassageRecord], vocab: dict[str, int], k1: float, b: float
) -> list[tuple[list[int], list[float]]]:
    """Each passage's BM25 term weights without idf, as bm25s computes them."""
    tokens = [tokenize(indexed_text(r)) for r in records]
    lengths = [len(t) for t in tokens]
    average = float(np.mean(lengths)) if lengths and sum(lengths) else 1.0
    rows = []
    for words, length in zip(tokens, lengths, strict=True):
        counts = Counter(words)
        try:
            ids = [vocab[t] for t in counts]
        except KeyError as error:
            raise SiteIndexError(
                f"the BM25 vocabulary lacks {error}: the index was built with "
                "another tokenizer. Rebuild the site, then push it."
            ) from None
        norm = k1 * ((1 - b) + b * length / average)
        order = np.argsort(ids)
        tf = np.array(list(counts.values()), dtype=np.float64)[order]
        rows.append(
            ([int(ids[i]) for i in order], [float(v) for v in tf / (norm + tf)])
        )
    return rows


def _prefixes(docname: str) -> list[str]:
    parts = docname.split("/")
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def _site_filter(site: str, version: str) -> qm.Filter:
    from qdrant_client import models

    return models.Filter(
        must=[
            models.FieldCondition(key="site", match=models.MatchValue(value=site)),
            models.FieldCondition(
                key="version", match=models.MatchValue(value=version)
            ),
        ]
    )


def ensure_collection(client: QdrantClient, collection: str, dim: int | None) -> None:
    """Create the collection (and its site records) or check it fits *dim*."""
    from qdrant_client import models

    if not _call("list collections", client.collection_exists, collection):
        dense = (
            {DENSE: models.VectorParams(size=dim, distance=models.Distance.DOT)}
            if dim
            else {}
        )
        _call(
            f"create {collection}",
            client.create_collection,
            collection,
            vectors_config=dense,
            sparse_vectors_config={
                SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)
            },
        )
        with warnings.catch_warnings():  # local mode: indexes have no effect
            warnings.simplefilter("ignore")
            for key, schema in (
                ("site", models.PayloadSchemaType.KEYWORD),
                ("version", models.PayloadSchemaType.KEYWORD),
                ("passage_id", models.PayloadSchemaType.KEYWORD),
                ("doc_prefixes", models.PayloadSchemaType.KEYWORD),
                ("doc_parents", models.PayloadSchemaType.KEYWORD),
                ("row", models.PayloadSchemaType.INTEGER),
                ("chapter_number", models.PayloadSchemaType.INTEGER),
            ):
                client.create_payload_index(collection, key, field_schema=schema)
    else:
        info = _call(f"read {collection}", client.get_collection, collection)
        vectors = info.config.params.vectors
        have = vectors.get(DENSE) if isinstance(vectors, dict) else None
        if dim and (have is None or have.size != dim):
            raise RagciteError(
                f"collection {collection} holds "
                f"{'no' if have is None else f'{have.size}-dimensional'} dense "
                f"vectors; this site has {dim}-dimensional ones. Push it to "
                "another collection (--collection)."
            )
    sites = collection + SITES_SUFFIX
    if not _call("list collections", client.collection_exists, sites):
        _call(f"create {sites}", client.create_collection, sites, vectors_config={})


def push(
    client: QdrantClient,
    site: Site,
    collection: str = DEFAULT_COLLECTION,
    *,
    name: str | None = None,
    version: str | None = None,
) -> PushResult:
    """Upsert every passage of *site*, delete the ones gone, record the site."""
    from qdrant_client import models

    name = name or default_site_name(site.manifest)
    version = site.manifest.version if version is None else version
    dim = site.manifest.embedding.dim if site.manifest.embedding else None
    ensure_collection(client, collection, dim if site.vectors is not None else None)
    params = site.manifest.bm25 or {}
    k1, b = float(params.get("k1", 1.5)), float(params.get("b", 0.75))
    vocab = site.bm25.vocab_dict
    sparse = sparse_rows(site.passages, vocab, k1, b)
    ids: set[str] = set()
    batch: list[models.PointStruct] = []
    for row, (record, (indices, values)) in enumerate(
        zip(site.passages, sparse, strict=True)
    ):
        pid = point_id(name, version, record["passage_id"])
        ids.add(pid)
        vector: dict[str, Any] = {
            SPARSE: models.SparseVector(indices=indices, values=values)
        }
        if site.vectors is not None:
            vector[DENSE] = [float(v) for v in site.vectors[row]]
        chapter = (parse_passage_id(record["passage_id"]) or (-1,))[0]
        if site.sentences is not None:
            start, end = site.sentences.offsets[row : row + 2]
            codes = np.asarray(site.sentences.codes[start:end], dtype=np.int8)
            sentences = {
                "sentence_codes": base64.b64encode(codes.tobytes()).decode("ascii"),
                "sentence_scales": [float(v) for v in site.sentences.scales[start:end]],
            }
        else:
            sentences = {}
        payload = {
            **record,
            "page": None,
            "site": name,
            "version": version,
            "row": row,
            "doc_prefixes": _prefixes(record["docname"]),
            "doc_parents": _prefixes(record["docname"])[:-1],
            "chapter_number": chapter,
            **sentences,
        }
        batch.append(models.PointStruct(id=pid, vector=vector, payload=payload))
        if len(batch) == BATCH:
            _call("store passages", client.upsert, collection, batch, wait=True)
            batch = []
    if batch:
        _call("store passages", client.upsert, collection, batch, wait=True)
    stale = [
        p for p in _site_point_ids(client, collection, name, version) if p not in ids
    ]
    for start in range(0, len(stale), BATCH):
        _call(
            "delete old passages",
            client.delete,
            collection,
            models.PointIdsList(points=stale[start : start + BATCH]),
            wait=True,
        )
    indptr = np.asarray(site.bm25.scores["indptr"], dtype=np.int64)
    df = np.diff(indptr)
    terms = sorted(vocab, key=vocab.__getitem__)
    entry = {
        "site": name,
        "version": version,
        "collection": collection,
        "index_version": site.version,
        "passages": len(site.passages),
        "manifest": site.manifest.model_dump_json(),
        "moved": json.dumps(site.moved, sort_keys=True),
        "vocab": json.dumps(terms, ensure_ascii=False),
        "df": json.dumps(
            [int(df[vocab[t]]) if vocab[t] < len(df) else 0 for t in terms]
        ),
    }
    _call(
        "record the site",
        client.upsert,
        collection + SITES_SUFFIX,
        [models.PointStruct(id=point_id(name, version, ""), vector={}, payload=entry)],
        wait=True,
    )
    return PushResult(collection, name, version, len(ids), len(stale))


def _site_point_ids(
    client: QdrantClient, collection: str, site: str, version: str
) -> Iterator[str]:
    offset = None
    while True:
        points, offset = _call(
            "list passages",
            client.scroll,
            collection,
            scroll_filter=_site_filter(site, version),
            limit=1024,
            offset=offset,
            with_payload=False,
            with_vectors=False,
        )
        yield from (str(p.id) for p in points)
        if offset is None:
            return


def pushed_sites(client: QdrantClient, collection: str) -> list[tuple[str, str]]:
    """(site, version) of every site pushed to *collection*."""
    sites = collection + SITES_SUFFIX
    if not _call("list collections", client.collection_exists, sites):
        return []
    points, _ = _call(
        "list sites",
        client.scroll,
        sites,
        limit=10_000,
        with_payload=["site", "version"],
    )
    return sorted((p.payload["site"], p.payload["version"]) for p in points)


# -- query --------------------------------------------------------------------


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


class QdrantSite:
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
        self.manifest = Manifest.model_validate_json(record["manifest"])
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
        self._lock = threading.Lock()
        self._cache: OrderedDict[int, _Row] = OrderedDict()

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
    ) -> QdrantSite:
        """The pushed site *site* (and *version*); either may be left out when
        the collection holds only one that fits."""
        client = client or connect(location)
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
                f"{wanted} (pushed: {listed}). Run `ragcite push BUILD_DIR "
                f"--qdrant {location}` first."
            )
        name, ver = fits[0]
        points = _call(
            "read the site record",
            client.retrieve,
            collection + SITES_SUFFIX,
            [point_id(name, ver, "")],
            with_payload=True,
        )
        return cls(
            client,
            collection,
            points[0].payload,
            location=location,
            model_dir=model_dir,
        )

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
        )
        if site.version != manifest.sha256["passages"][:16]:
            raise SiteIndexError(
                f"{build_dir} was rebuilt after it was pushed to Qdrant (its "
                f"passages differ): run `ragcite push {build_dir} --qdrant "
                f"{location}` again."
            )
        return site

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
    def sentences(self) -> _Sentences | None:
        """Build-time sentence vectors, when the build made them."""
        embedding = self.manifest.embedding
        return _Sentences(self) if embedding and embedding.sentences else None

    @cached_property
    def embedder(self) -> Embedder:
        return load_embedder(self.manifest, self.model_dir)

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
        return self._remember(points[0])[0]

    def moved_hint(self, passage_id: str) -> str:
        if self.passage(passage_id) is not None:
            return ""
        return moved_hint(self.moved, passage_id)

    def row(self, row: int) -> _Row:
        """A row's record and vectors (cached: the rows just searched are)."""
        with self._lock:
            if row in self._cache:
                self._cache.move_to_end(row)
                return self._cache[row]
        if not 0 <= row < self.count:
            raise IndexError(row)
        self._fetch([row])
        with self._lock:
            return self._cache[row]

    def search(
        self,
        query: str,
        k: int = 10,
        *,
        mode: SearchMode = "hybrid",
        fusion: Fusion = "rrf",
        filters: Filters | None = None,
        depth: int = 50,
        query_vector: np.ndarray | None = None,
    ) -> list[Hit]:
        """Top *k* passages, ranked as ``Site.search`` ranks them."""
        from qdrant_client import models

        if mode == "hybrid" and not self.has_dense:
            mode = "bm25"
        if mode != "bm25" and not self.has_dense:
            raise SiteIndexError(
                "This index has no dense embeddings (built with "
                "ragcite_embeddings = False); use mode 'bm25'."
            )
        scope = self._filter(filters)
        sparse = self._sparse(query) if mode != "dense" else None
        vector = None
        if mode != "bm25":
            vector = (
                self.embedder.embed([query])[0]
                if query_vector is None
                else query_vector
            )
        wanted = depth if mode == "hybrid" else k
        requests = []
        if sparse is not None:
            requests.append(self._request(sparse, SPARSE, scope, wanted + SLACK))
        if vector is not None:
            requests.append(self._request(vector, DENSE, scope, wanted + SLACK))
        answers = (
            _call("search", self.client.query_batch_points, self.collection, requests)
            if requests
            else []
        )
        found = [_scores(a.points) for a in answers]
        bm25 = found.pop(0) if sparse is not None else {}
        dense = found.pop(0) if vector is not None else {}
        ids = {
            **{r: p for r, (_, p) in bm25.items()},
            **{r: p for r, (_, p) in dense.items()},
        }
        lexical = _best(bm25, wanted)
        semantic = _best(dense, wanted)
        if mode == "bm25":
            ranked = [(r, bm25[r][0]) for r in lexical]
        elif mode == "dense":
            ranked = [(r, dense[r][0]) for r in semantic]
        else:
            union = set(lexical) | set(semantic)
            self._complete(bm25, dense, union, ids, sparse, vector, models)
            fused = (
                _rrf((lexical, semantic))
                if fusion == "rrf"
                else _linear(
                    lexical,
                    semantic,
                    _array(bm25, union, self.count),
                    _array(dense, union, self.count),
                )
            )
            ranked = sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:k]
        self._fetch([r for r, _ in ranked], ids)
        hits = []
        for row, score in ranked:
            record = self.row(row)[0]
            hits.append(
                Hit(
                    record,
                    row,
                    float(score),
                    None if mode == "dense" else bm25.get(row, (0.0, ""))[0],
                    None if mode == "bm25" else dense[row][0],
                )
            )
        return hits

    # -- helpers -------------------------------------------------------------

    def _filter(self, filters: Filters | None) -> qm.Filter:
        from qdrant_client import models

        must = list(self._scope.must or [])  # type: ignore[arg-type]
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

    def _sparse(self, query: str) -> qm.SparseVector | None:
        from qdrant_client import models

        counts = Counter(self._vocab[t] for t in tokenize(query) if t in self._vocab)
        if not counts:
            return None
        indices = sorted(counts)
        return models.SparseVector(
            indices=indices, values=[float(counts[i]) for i in indices]
        )

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
        models: Any,
    ) -> None:
        """Each candidate's score on the side that did not rank it."""
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

    def _fetch(self, rows: Sequence[int], ids: dict[int, str] | None = None) -> None:
        """Records and vectors of *rows* not cached yet, in one call."""
        from qdrant_client import models

        with self._lock:
            missing = [r for r in rows if r not in self._cache]
        if not missing:
            return
        vectors: Any = [DENSE] if self.has_dense else False
        if ids is not None and all(r in ids for r in missing):
            points = _call(
                "read passages",
                self.client.retrieve,
                self.collection,
                [ids[r] for r in missing],
                with_payload=True,
                with_vectors=vectors,
            )
        else:
            only = models.Filter(
                must=[
                    *(self._scope.must or []),  # type: ignore[misc]
                    models.FieldCondition(
                        key="row", match=models.MatchAny(any=missing)
                    ),
                ]
            )
            points, _ = _call(
                "read passages",
                self.client.scroll,
                self.collection,
                scroll_filter=only,
                limit=len(missing),
                with_payload=True,
                with_vectors=vectors,
            )
        for point in points:
            self._remember(point)
        with self._lock:
            absent = [r for r in missing if r not in self._cache]
        if absent:
            raise SiteIndexError(
                f"Qdrant lost passages of {self.where} (rows {absent[:5]}): push "
                "the site again."
            )

    def _remember(self, point: Any) -> _Row:
        payload = point.payload or {}
        record: PassageRecord = {key: payload[key] for key in PASSAGE_FIELDS}  # type: ignore[assignment]
        vector = None
        if self.has_dense and point.vector:
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


def _array(
    scores: dict[int, tuple[float, str]], rows: set[int], count: int
) -> np.ndarray:
    """The scores of *rows* at their rows (float32, as in memory); 0 elsewhere."""
    array = np.zeros(count, dtype=np.float32)
    for row in rows:
        array[row] = scores.get(row, (0.0, ""))[0]
    return array


def _scores(points: Sequence[Any]) -> dict[int, tuple[float, str]]:
    """row -> (score, point ID) of a query's answer."""
    return {int(p.payload["row"]): (float(p.score), str(p.id)) for p in points}


def _best(scores: dict[int, tuple[float, str]], n: int) -> list[int]:
    """The *n* best rows, ties by row: ``retrieval._top``'s order."""
    order = sorted(scores, key=lambda r: (-scores[r][0], r))
    return order[:n]
