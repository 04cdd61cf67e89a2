"""Where a Qdrant store is, and the layout both jobs share.

``ragcite push`` (:mod:`.upload`) writes a collection and :class:`~.query.QdrantSite`
reads it: the vector names, the point IDs, the collection of site records
and the messages that name the push to run are written once, here.
"""

from __future__ import annotations

import json
import pickle
import re
import sqlite3
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sphinx_ragcite.errors import RagciteError

if TYPE_CHECKING:
    from qdrant_client import QdrantClient
    from qdrant_client import models as qm

    from sphinx_ragcite.contracts import Manifest

DENSE = "dense"
SPARSE = "bm25"
DEFAULT_COLLECTION = "ragcite"
#: the collection beside ``NAME`` that holds one record per pushed site
SITES_SUFFIX = "_sites"
#: fixed, so a point's ID depends only on site, version and passage ID
NAMESPACE = uuid.UUID("6f1d3c52-8a0e-5c4b-9d2e-2f3a6b7c8d90")
INSTALL = "install the extra: pip install 'sphinx-ragcite[qdrant]'"


#: ``scheme://...``: only http and https reach a Qdrant server
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
#: ``host:port`` (``localhost:6333``, ``[::1]:6333``): a server without its scheme
_HOST_PORT = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):[0-9]+(/.*)?$")


def is_server(location: str) -> bool:
    """Whether *location* is a Qdrant server's URL; raises for a value that
    would otherwise be taken for a folder but was surely meant as a server."""
    location = location.strip()
    scheme = _SCHEME.match(location)
    if scheme and scheme[1].lower() in ("http", "https"):
        return True
    if scheme or _HOST_PORT.match(location):
        name = location.rsplit("/", 1)[-1] or "store"
        said = (
            f"has the scheme {scheme[1]}://" if scheme else "looks like a host and port"
        )
        raise RagciteError(
            f"--qdrant {location} {said}: write a Qdrant server as an http:// or "
            f"https:// URL (http://{location[scheme.end() if scheme else 0 :]}), "
            f"or a local-mode folder as a path (./{name})"
        )
    return False


def connect(location: str, *, create: bool = False) -> QdrantClient:
    """``http(s)://host:port`` is a Qdrant server; ``:memory:`` or a folder is
    qdrant-client's local mode (one process at a time per folder), made if
    missing only when *create* (``ragcite push``)."""
    try:
        from qdrant_client import QdrantClient
    except ImportError:
        raise RagciteError(f"Qdrant needs qdrant-client: {INSTALL}") from None
    location = location.strip()
    if not location:
        raise RagciteError("--qdrant is empty: pass http://host:6333 or a folder")
    if is_server(location):
        import os

        return QdrantClient(url=location, api_key=os.environ.get("QDRANT_API_KEY"))
    if location == ":memory:":
        return QdrantClient(location=":memory:")
    path = _store_folder(location, create=create)
    try:
        return QdrantClient(path=str(path))
    except RuntimeError as error:  # the folder is open in another client
        raise RagciteError(f"cannot open Qdrant at {location}: {error}") from None
    except Exception as error:  # the folder's files: unwritable, damaged
        raise RagciteError(
            f"cannot open Qdrant at {location}: {_folder_trouble(error)}"
        ) from None


def _store_folder(location: str, *, create: bool) -> Path:
    """The local-mode folder at *location*: a store, or (to *create*) none yet."""
    path = Path(location)
    meta = path / "meta.json"
    if path.exists() and not path.is_dir():
        raise RagciteError(f"--qdrant {location}: not a folder or an http(s) URL")
    if not create and not meta.is_file():
        raise RagciteError(
            f"no Qdrant local-mode store at {location} (no meta.json): run "
            f"`ragcite push BUILD_DIR --qdrant {location}` first"
        )
    if create and path.is_dir() and not meta.exists() and any(path.iterdir()):
        raise RagciteError(
            f"--qdrant {location} holds other files and no Qdrant store: pass a "
            "new or empty folder"
        )
    return path


def _folder_trouble(error: BaseException) -> str:
    """What a local-mode folder that does not open has wrong, and the fix."""
    if isinstance(error, PermissionError):
        return (
            f"{error}. Local mode writes its folder (its .lock file too): use a "
            "folder this user may write, or a Qdrant server"
        )
    if isinstance(error, OSError):
        return f"{error}"
    if isinstance(error, (sqlite3.Error, pickle.UnpicklingError)):
        where = "a collection's storage.sqlite is damaged"
    elif isinstance(error, json.JSONDecodeError):
        where = "its meta.json is damaged"
    else:
        where = "it is not a Qdrant local-mode store, or a damaged one"
    return f"{where} ({type(error).__name__}: {error}). Push the site into a new folder"


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
    except (
        ResponseHandlingException,
        UnexpectedResponse,
        ValueError,
        OSError,  # local mode: its folder
        sqlite3.Error,
    ) as error:
        raise RagciteError(f"Qdrant could not {what}: {error}") from None


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


def push_command(
    location: str, collection: str, build_dir: str | Path | None = None
) -> str:
    """The ``ragcite push`` that puts *build_dir* where a reader looks for it."""
    other = "" if collection == DEFAULT_COLLECTION else f" --collection {collection}"
    return f"ragcite push {build_dir or 'BUILD_DIR'} --qdrant {location}{other}"
