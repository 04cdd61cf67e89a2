extensions = ["sphinx_ragcite"]
project = "Languages en"
language = "en"
exclude_patterns = ["_build"]
ragcite_embeddings = False
