extensions = ["sphinx_ragcite"]
project = "Languages zh_CN"
language = "zh_CN"
exclude_patterns = ["_build"]
ragcite_embeddings = False
