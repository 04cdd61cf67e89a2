"""``ragcite push``: a built site's passages into a Qdrant collection.

Each passage is a point with its BM25 weights (a sparse vector), its dense
vector and its record as payload; the site's own record (manifest, BM25
vocabulary and document frequencies) goes beside them, for the servers
that search it (:mod:`.query`).
"""

from __future__ import annotations

import base64
import json
import warnings
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from sphinx_ragcite.contracts import parse_passage_id
from sphinx_ragcite.errors import RagciteError, SiteIndexError
from sphinx_ragcite.formats.bm25 import indexed_text
from sphinx_ragcite.retrieval.qdrant.connection import (
    DEFAULT_COLLECTION,
    DENSE,
    SITES_SUFFIX,
    SPARSE,
    _call,
    _site_filter,
    default_site_name,
    point_id,
)
from sphinx_ragcite.text import ENGLISH, Tokenizer, document_tokenizer

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from qdrant_client import QdrantClient
    from qdrant_client import models as qm

    from sphinx_ragcite.contracts import PassageRecord
    from sphinx_ragcite.retrieval.site import Site

#: points a call
BATCH = 256


@dataclass(frozen=True)
class PushResult:
    collection: str
    site: str
    version: str
    upserted: int
    removed: int


def sparse_rows(
    records: Sequence[PassageRecord],
    vocab: dict[str, int],
    k1: float,
    b: float,
    tokenizer: Tokenizer = ENGLISH,
) -> list[tuple[list[int], list[float]]]:
    """Each passage's BM25 term weights without idf, as bm25s computes them."""
    tokens = [tokenizer.tokenize(indexed_text(r)) for r in records]
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
    name = name or default_site_name(site.manifest)
    version = site.manifest.version if version is None else version
    dim = site.manifest.embedding.dim if site.manifest.embedding else None
    ensure_collection(client, collection, dim if site.vectors is not None else None)
    kept = _upsert_passages(client, collection, site, name, version)
    removed = _delete_gone(client, collection, name, version, kept)
    _record_site(client, collection, site, name, version)
    return PushResult(collection, name, version, len(kept), removed)


def _points(site: Site, name: str, version: str) -> Iterator[qm.PointStruct]:
    """One point per passage: its BM25 and dense vectors, its record as payload."""
    from qdrant_client import models

    # k1 and b as the site's own BM25 index holds them (formats/bm25.py)
    vocab = site.bm25.vocab_dict
    try:  # the documents' terms, cut as the build cut them
        documents = document_tokenizer(site.manifest.tokenizer or None)
    except ValueError as error:
        raise SiteIndexError(f"{site.where}: {error}") from None
    sparse = sparse_rows(
        site.passages, vocab, float(site.bm25.k1), float(site.bm25.b), documents
    )
    for row, (record, (indices, values)) in enumerate(
        zip(site.passages, sparse, strict=True)
    ):
        vector: dict[str, Any] = {
            SPARSE: models.SparseVector(indices=indices, values=values)
        }
        if site.vectors is not None:
            vector[DENSE] = [float(v) for v in site.vectors[row]]
        chapter = (parse_passage_id(record["passage_id"]) or (-1,))[0]
        payload = {
            **record,
            "page": None,
            "site": name,
            "version": version,
            "row": row,
            "doc_prefixes": _prefixes(record["docname"]),
            "doc_parents": _prefixes(record["docname"])[:-1],
            "chapter_number": chapter,
            **_sentence_payload(site, row),
        }
        yield models.PointStruct(
            id=point_id(name, version, record["passage_id"]),
            vector=vector,
            payload=payload,
        )


def _sentence_payload(site: Site, row: int) -> dict[str, Any]:
    """A passage's build-time sentence vectors: int8 codes (base64), scales."""
    if site.sentences is None:
        return {}
    start, end = site.sentences.offsets[row : row + 2]
    codes = np.asarray(site.sentences.codes[start:end], dtype=np.int8)
    return {
        "sentence_codes": base64.b64encode(codes.tobytes()).decode("ascii"),
        "sentence_scales": [float(v) for v in site.sentences.scales[start:end]],
    }


def _upsert_passages(
    client: QdrantClient, collection: str, site: Site, name: str, version: str
) -> set[str]:
    """Store every passage, :data:`BATCH` points a call; their point IDs."""
    ids: set[str] = set()
    batch: list[qm.PointStruct] = []
    for point in _points(site, name, version):
        ids.add(str(point.id))
        batch.append(point)
        if len(batch) == BATCH:
            _call("store passages", client.upsert, collection, batch, wait=True)
            batch = []
    if batch:
        _call("store passages", client.upsert, collection, batch, wait=True)
    return ids


def _delete_gone(
    client: QdrantClient, collection: str, name: str, version: str, kept: set[str]
) -> int:
    """Delete the site's points not in *kept* (passages gone); how many."""
    from qdrant_client import models

    stale = [
        p for p in _site_point_ids(client, collection, name, version) if p not in kept
    ]
    for start in range(0, len(stale), BATCH):
        _call(
            "delete old passages",
            client.delete,
            collection,
            models.PointIdsList(points=stale[start : start + BATCH]),
            wait=True,
        )
    return len(stale)


def _record_site(
    client: QdrantClient, collection: str, site: Site, name: str, version: str
) -> None:
    """The site's record in ``NAME_sites``: its manifest, BM25 vocabulary and
    document frequencies, moved links; what an answer server keeps."""
    from qdrant_client import models

    vocab = site.bm25.vocab_dict
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
