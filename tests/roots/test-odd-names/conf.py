# Page names a URL must quote (spaces, %, parentheses, non-ASCII) and text
# that Markdown would read as markup or that reorders what is shown around it.
extensions = ["sphinx_ragcite"]
project = "Odd Names"
exclude_patterns = ["_build"]
ragcite_embeddings = False
