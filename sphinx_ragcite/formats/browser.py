"""The roles of the files only the browser's answer engine reads.

The build writes them (``extension/browser_index.py``); the server and the
command line skip them, as they skip the static search index: ~38 MB of
model and runtime a Python process never needs.
"""

from __future__ import annotations

MODEL, TOKENIZER, RANKER, SHARDS = "model", "tokenizer", "ranker", "shards"
#: A big book's approximate dense search (``formats/dense_index.py``): the
#: server reads it too, so that both engines search alike.
DENSE = "dense"
ORT_JS, ORT_WASM, ORT_MJS = "ort_js", "ort_wasm", "ort_mjs"
#: Every role of the browser engine's files in the manifest.
BROWSER_ENGINE = frozenset(
    {MODEL, TOKENIZER, RANKER, SHARDS, ORT_JS, ORT_WASM, ORT_MJS}
)
