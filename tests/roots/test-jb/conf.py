# A Jupyter Book 1 style project: the table of contents lives in _toc.yml.
extensions = ["myst_nb", "sphinx_external_toc", "sphinx_ragcite"]
project = "Jupyter Book"
author = "Test"
external_toc_path = "_toc.yml"
nb_execution_mode = "off"
html_theme = "sphinx_book_theme"
exclude_patterns = ["_build"]
