# Shaped like the conf.py sphinx-quickstart writes, in German, with the extension.
project = "Demo"
copyright = "2024, Me"
author = "Me"
release = "1.0"
extensions = ["sphinx_ragcite"]
templates_path = ["_templates"]
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
language = "de"
html_theme = "alabaster"
