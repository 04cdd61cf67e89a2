"""Passages -> the files under ``_ragcite/`` in the built site."""
