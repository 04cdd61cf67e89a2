extensions = ["sphinx_ragcite"]
project = "Languages ja"
language = "ja"
exclude_patterns = ["_build"]
ragcite_embeddings = False
