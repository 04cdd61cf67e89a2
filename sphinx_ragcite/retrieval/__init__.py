"""QUERY: a built site's files -> ranked passages."""
