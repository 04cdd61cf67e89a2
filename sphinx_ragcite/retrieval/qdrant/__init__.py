"""Passages in Qdrant: ``ragcite push`` writes a built site, ``QdrantSite`` reads it.

For sites past one machine's memory: a collection holds the passages of any
number of sites (and versions) with the citation fields as payload; answer
servers keep only each site's manifest and BM25 vocabulary and ask Qdrant
for candidates. Retrieval is the in-memory one, done remotely:

- dense: the shipped vectors (dequantised, float32) under ``dense``, scored by
  dot product exactly as ``Site.dense_scores`` does;
- BM25: a sparse vector ``bm25`` per passage whose values are bm25s's term
  frequency component ``tf / (tf + k1 * (1 - b + b * len / avglen))`` of the
  same tokens (``sphinx_ragcite.text``); Qdrant's IDF modifier multiplies in
  the idf, counted over the passages of the same site and version only
  (``search_params.idf`` corpus), which is the idf bm25s uses;
- fusion: Qdrant returns the top candidates of each side, the missing side's
  score of each candidate is fetched, and ``retrieval.fusion`` fuses them
  client-side, so hybrid ranks as it does in memory.

Point IDs are uuid5 of site, version and passage ID: a re-push overwrites
the same points and then deletes the site's points whose passage is gone.

One module a job: :mod:`.connection` finds the store and holds the layout
both others share, :mod:`.upload` pushes, :mod:`.query` searches.
"""

from sphinx_ragcite.retrieval.qdrant.connection import (
    DEFAULT_COLLECTION,
    DENSE,
    INSTALL,
    NAMESPACE,
    SITES_SUFFIX,
    SPARSE,
    connect,
    default_site_name,
    is_server,
    point_id,
    push_command,
    pushed_sites,
)
from sphinx_ragcite.retrieval.qdrant.query import (
    CACHE_SIZE,
    PAGE,
    SLACK,
    QdrantSite,
    scope_filter,
    store_problem,
)
from sphinx_ragcite.retrieval.qdrant.upload import (
    BATCH,
    PushResult,
    ensure_collection,
    push,
    sparse_rows,
)

__all__ = [
    "BATCH",
    "CACHE_SIZE",
    "DEFAULT_COLLECTION",
    "DENSE",
    "INSTALL",
    "NAMESPACE",
    "PAGE",
    "SITES_SUFFIX",
    "SLACK",
    "SPARSE",
    "PushResult",
    "QdrantSite",
    "connect",
    "default_site_name",
    "ensure_collection",
    "is_server",
    "point_id",
    "push",
    "push_command",
    "pushed_sites",
    "scope_filter",
    "sparse_rows",
    "store_problem",
]
