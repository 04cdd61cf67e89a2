extensions = ["sphinx_ragcite"]
project = "Languages de"
language = "de"
exclude_patterns = ["_build"]
ragcite_embeddings = False
