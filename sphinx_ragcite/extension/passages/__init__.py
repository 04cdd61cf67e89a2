"""Doctree -> passages: chunking, numbering and the environment collector."""
