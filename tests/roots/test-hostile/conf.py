# A book whose text tries to run script wherever the widget shows it.
extensions = ["sphinx_ragcite"]
project = "Hostile Book"  # alabaster prints the project name unescaped
exclude_patterns = ["_build"]
html_theme = "alabaster"
