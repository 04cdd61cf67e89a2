"""Errors that carry a message a user can act on."""

from __future__ import annotations


class RagciteError(Exception):
    """Base class: the message says what is wrong and how to fix it."""


class ModelNotFoundError(RagciteError):
    pass


class SiteIndexError(RagciteError):
    """A built site's ``_ragcite/`` is missing, corrupt or of another version."""
