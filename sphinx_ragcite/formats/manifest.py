"""``_ragcite/manifest.json``: the one file a reader opens first, written last.

The manifest names every other file with its digest and size, so a reader
checks it before it trusts any of them, and a build replaces it only once
every file it names is complete.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from sphinx_ragcite.contracts import Manifest
from sphinx_ragcite.errors import SiteIndexError
from sphinx_ragcite.formats.files import REBUILD, read_plain_file

if TYPE_CHECKING:
    from pathlib import Path

#: Bump when a reader of an older format would misread the files.
FORMAT_VERSION = 1
INDEX_DIR = "_ragcite"
MANIFEST = "manifest.json"
#: A manifest lists a dozen files; anything near this size is not one.
MAX_MANIFEST_BYTES = 1 << 20


def index_dir(path: Path) -> Path:
    """The index folder of a built site, given the site or the folder itself."""
    return path if (path / MANIFEST).is_file() else path / INDEX_DIR


def manifest_bytes(manifest: dict[str, Any]) -> bytes:
    """Validated against the contract first, so every build writes a readable one."""
    Manifest.model_validate(manifest)
    return (json.dumps(manifest, sort_keys=True, indent=1) + "\n").encode()


def read_manifest(directory: Path) -> Manifest:
    path = directory / MANIFEST
    if not path.exists() and not path.is_symlink():
        raise SiteIndexError(
            f"No {INDEX_DIR}/{MANIFEST} under {directory.parent}: is this the output "
            f"of an HTML build with 'sphinx_ragcite' in extensions? {REBUILD}"
        )
    if path.is_symlink():
        raise SiteIndexError(f"{path} is a symbolic link. {REBUILD}")
    data = read_plain_file(path, MAX_MANIFEST_BYTES + 1)
    if len(data) > MAX_MANIFEST_BYTES:
        raise SiteIndexError(f"{path} is too large to be a manifest. {REBUILD}")
    try:
        raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise SiteIndexError(f"{path} cannot be read ({error}). {REBUILD}") from None
    if not isinstance(raw, dict):
        raise SiteIndexError(f"{path} is not an index manifest. {REBUILD}")
    version = raw.get("format_version")
    if version != FORMAT_VERSION:
        raise SiteIndexError(
            f"{path} has index format {version!r}; this sphinx-ragcite reads format "
            f"{FORMAT_VERSION}. {REBUILD}"
        )
    try:
        return Manifest.model_validate(raw)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'manifest'}: "
            f"{str(e['msg']).removeprefix('Value error, ')}"
            for e in error.errors()[:5]
        )
        raise SiteIndexError(f"{path} is damaged ({problems}). {REBUILD}") from None
