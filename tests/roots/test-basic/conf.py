extensions = ["sphinx_ragcite"]
project = "Basic"
exclude_patterns = ["_build"]
