"""Cited answers for Sphinx sites: every citation deep-links to its paragraph."""

from __future__ import annotations

from typing import TYPE_CHECKING

__version__ = "0.1.0"

if TYPE_CHECKING:
    from sphinx.application import Sphinx
    from sphinx.util.typing import ExtensionMetadata


def setup(app: Sphinx) -> ExtensionMetadata:
    from sphinx_ragcite.extension import setup as _setup

    return _setup(app)
