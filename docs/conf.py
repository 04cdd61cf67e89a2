# Sphinx configuration of the sphinx-ragcite documentation.
#
# The documentation is built with sphinx-ragcite itself: every page is split
# into passages, and the built site ships its own _ragcite/ index, so
# `ragcite serve docs/_build/html` answers questions about sphinx-ragcite.
#
# Build: python -m sphinx -b html docs docs/_build/html
# (needs the `docs` extra: pip install -e ".[docs]").

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

from sphinx_ragcite import __version__  # noqa: E402

project = "sphinx-ragcite"
author = "The sphinx-ragcite authors"
copyright = "2026, The sphinx-ragcite authors"  # noqa: A001
release = __version__
version = ".".join(__version__.split(".")[:2])

extensions = [
    "myst_parser",
    "sphinx_ragcite",
    # Reference pages generated from the code (config fields, CLI help,
    # OpenAPI spec), so they cannot drift from it.
    "ragcite_docs",
]

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
templates_path = []

html_theme = "alabaster"
html_title = f"sphinx-ragcite {release}"
html_static_path = ["_static/ragcite-docs.css"]
html_css_files = ["ragcite-docs.css"]
html_theme_options = {
    "page_width": "1100px",
    "sidebar_width": "240px",
    "description": "Ask the book; every citation deep-links to its paragraph.",
    "fixed_sidebar": False,
    "show_relbars": True,
}

# Dogfooding: the defaults, spelled out for readers of this file.
ragcite_passage_words = 120
ragcite_citation_style = "plain"
# On static hosting (Read the Docs) the widget falls back to searching the
# index in the browser; under `ragcite serve` it asks the server.
ragcite_server_url = ""
