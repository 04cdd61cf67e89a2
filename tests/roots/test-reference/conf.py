import sys
from pathlib import Path

# refmod.py, next to this file, is the module the API page documents.
HERE = str(Path(__file__).parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

extensions = ["sphinx_ragcite", "sphinx.ext.autodoc"]
project = "Reference"
exclude_patterns = ["_build"]
