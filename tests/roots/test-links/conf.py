extensions = ["sphinx_ragcite"]
project = "Links"
exclude_patterns = ["_build"]
# One paragraph per passage, so every edit moves IDs; BM25 only, for speed.
ragcite_passage_words = 20
ragcite_embeddings = False
