# Sphinx configuration for the "Brewing Better Coffee" example book.
#
# This book is the demo and test fixture for sphinx-ragcite. It mixes
# reStructuredText, MyST Markdown and one Jupyter notebook on purpose.

project = "Brewing Better Coffee"
author = "The sphinx-ragcite authors"
copyright = "2026, The sphinx-ragcite authors"
version = "1.0"
release = "1.0"

# myst_nb registers the MyST Markdown parser itself, so myst_parser must
# not be listed separately.
extensions = ["myst_nb", "sphinx_ragcite"]

myst_enable_extensions = ["colon_fence", "deflist"]

# The notebook chapter ships with stored outputs; builds never execute code.
nb_execution_mode = "off"

exclude_patterns = ["_build", "qa.jsonl", "**.ipynb_checkpoints"]

numfig = False

html_theme = "alabaster"
html_title = "Brewing Better Coffee"
