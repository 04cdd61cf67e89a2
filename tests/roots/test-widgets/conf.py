# Theme and extensions that move, copy or drop element ids after the
# extension's anchors are placed (the Python Packaging User Guide uses them).
extensions = ["sphinx_inline_tabs", "sphinx_toolbox.collapse", "sphinx_ragcite"]
project = "Widgets"
html_theme = "furo"
exclude_patterns = ["_build"]
ragcite_passage_words = 20
ragcite_embeddings = False
