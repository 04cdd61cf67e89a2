"""The one BM25 tokenizer, shared by the build, the server and the browser.

The browser (``js/tokenize.js``) implements the same steps from the spec this
module writes into the index, so Python and JS produce identical tokens.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Any

import Stemmer

#: Lucene's English stop words, as bm25s ships them.
STOPWORDS = (
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in",
    "into", "is", "it", "no", "not", "of", "on", "or", "such", "that", "the",
    "their", "then", "there", "these", "they", "this", "to", "was", "will",
    "with",
)  # fmt: skip

# ``[^\W_]`` is Python's spelling of JS's ``[\p{L}\p{N}]``: letters and numbers.
_TOKEN = re.compile(r"[^\W_]+")
_STOP = frozenset(STOPWORDS)

SPEC: dict[str, Any] = {
    "normalize": "NFKC",
    "lowercase": True,
    "pattern": r"[\p{L}\p{N}]+",
    "stopwords": list(STOPWORDS),
    "stemmer": "snowball-english",
}


@lru_cache(maxsize=1)
def _stemmer() -> Stemmer.Stemmer:
    return Stemmer.Stemmer("english")


def words(text: str) -> list[str]:
    """Normalised, lower-cased words before stop-word removal and stemming."""
    return _TOKEN.findall(unicodedata.normalize("NFKC", text).lower())


def tokenize(text: str) -> list[str]:
    return _stemmer().stemWords([w for w in words(text) if w not in _STOP])  # type: ignore[no-any-return]
