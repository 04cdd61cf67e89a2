import os
import sys

sys.path.insert(0, os.path.abspath("."))

extensions = [
    "sphinx.ext.autodoc",
    "sphinx_design",
    "myst_nb",
    "sphinx_ragcite",
]
project = "Themes"
author = "Test"
exclude_patterns = ["_build"]
nb_execution_mode = "off"
# The theme comes from the command line (-D html_theme=...).
html_theme = "alabaster"
