"""Text contracts both sides share: the BM25 tokenizer and the sentence splitter.

The index stores both results (BM25 terms, sentence offsets of the sentence
vectors), so the build and the query side must cut text the same way. The
browser (``js/tokenize.js``) implements the tokenizer from the spec this
module writes into the index, so Python and JS produce identical tokens.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

import Stemmer

from sphinx_ragcite.stopwords import CJK_STOPWORDS
from sphinx_ragcite.stopwords import STOPWORDS as STOPWORDS_OF

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
#: Code points of the longest word that is a token, as Lucene's
#: ``maxTokenLength``: a longer one (a base64 blob, a hash, a 1 MB "word")
#: is dropped, not cut, so it reaches neither the index nor a reader's
#: download. In the spec as ``max_token_length``: the browser reads it there.
MAX_TOKEN_LENGTH = 255

SPEC: dict[str, Any] = {
    "normalize": "NFKC",
    "lowercase": True,
    "pattern": r"[\p{L}\p{N}]+",
    "stopwords": list(STOPWORDS),
    "stemmer": "snowball-english",
    "max_token_length": MAX_TOKEN_LENGTH,
}


#: Sphinx's search languages that stem with Snowball (``sphinx/search/*.py``).
SNOWBALL = {
    "da": "danish", "de": "german", "en": "english", "es": "spanish",
    "fi": "finnish", "fr": "french", "hu": "hungarian", "it": "italian",
    "nl": "dutch", "no": "norwegian", "pt": "portuguese", "ro": "romanian",
    "ru": "russian", "sv": "swedish", "tr": "turkish",
}  # fmt: skip
#: Languages written without spaces between words: their runs of CJK
#: characters become overlapping character bigrams; Latin words, numbers and
#: code in them keep the English rules (as Sphinx's own Chinese search does).
CJK_LANGUAGES = frozenset({"zh", "ja", "ko"})
#: Han (with its extensions and compatibility ideographs, 々〆〇), Hiragana,
#: Katakana, Hangul syllables and jamo; inclusive code point ranges.
CJK_RANGES = (
    (0x1100, 0x11FF), (0x3005, 0x3007), (0x3040, 0x30FF), (0x3130, 0x318F),
    (0x31F0, 0x31FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xA960, 0xA97F),
    (0xAC00, 0xD7FF), (0xF900, 0xFAFF), (0x20000, 0x3134F),
)  # fmt: skip
CJK_SCHEME = "cjk-bigrams"


def language_code(language: str | None) -> str:
    """Sphinx's ``language`` -> the search language (``"zh_CN"`` -> ``"zh"``).

    As ``sphinx.search.IndexBuilder`` looks it up: the code itself, else the
    part before ``_``; a language Sphinx's search does not know is English.
    """
    code = (language or "en").strip().replace("-", "_").lower()
    for candidate in (code, code.partition("_")[0]):
        if candidate in SNOWBALL or candidate in CJK_LANGUAGES:
            return candidate
    return "en"


def spec_for(language: str | None) -> dict[str, Any]:
    """The tokenizer spec of a book in *language* (conf.py's code).

    English is :data:`SPEC` unchanged; every other spec names its language.
    """
    code = language_code(language)
    if code == "en":
        return SPEC
    if code in CJK_LANGUAGES:
        return {
            **SPEC,
            "language": code,
            "segment": CJK_SCHEME,
            "cjk_ranges": [list(r) for r in CJK_RANGES],
            "cjk_stopwords": list(CJK_STOPWORDS[code]),
        }
    return {
        **SPEC,
        "language": code,
        "stopwords": list(STOPWORDS_OF.get(code, ())),
        "stemmer": f"snowball-{SNOWBALL[code]}",
    }


def _char_class(ranges: Any) -> str:
    return "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in ranges)


class Tokenizer:
    """The BM25 tokenizer one spec describes (build and query side alike)."""

    def __init__(self, spec: dict[str, Any]) -> None:
        problems = [
            f"{key} {spec.get(key)!r}"
            for key, value in (("normalize", "NFKC"), ("lowercase", True))
            if spec.get(key) != value
        ]
        if spec.get("pattern", SPEC["pattern"]) != SPEC["pattern"]:
            problems.append(f"pattern {spec.get('pattern')!r}")
        stemmer = spec.get("stemmer")
        name = stemmer.removeprefix("snowball-") if isinstance(stemmer, str) else None
        if stemmer is not None and name not in SNOWBALL.values():
            problems.append(f"stemmer {stemmer!r}")
        segment = spec.get("segment")
        if segment not in (None, CJK_SCHEME):
            problems.append(f"segment {segment!r}")
        stopwords = spec.get("stopwords", [])
        if not isinstance(stopwords, list) or not all(
            isinstance(w, str) for w in stopwords
        ):
            problems.append("stopwords")
        cuts = spec.get("cjk_stopwords", [])
        if not isinstance(cuts, list) or not all(
            isinstance(w, str) and w for w in cuts
        ):
            problems.append("cjk_stopwords")
        ranges = spec.get("cjk_ranges", [])
        if segment and not (
            isinstance(ranges, list)
            and ranges
            and all(
                isinstance(r, list)
                and len(r) == 2
                and all(type(v) is int and 0 <= v <= 0x10FFFF for v in r)
                and r[0] <= r[1]
                for r in ranges
            )
        ):
            problems.append("cjk_ranges")
        longest = spec.get("max_token_length")
        if longest is not None and not (type(longest) is int and longest >= 1):
            problems.append(f"max_token_length {longest!r}")
        if problems:
            raise ValueError("unknown tokenizer spec: " + ", ".join(problems))
        self.spec = spec
        # an index written before the cap (no max_token_length) kept every word
        self._longest: int = sys.maxsize if longest is None else longest
        self.language = str(spec.get("language", "en"))
        self._stop = frozenset(stopwords)
        self._stem = Stemmer.Stemmer(name).stemWords if name else None
        self._cjk_run = self._cjk_char = None
        self._split: re.Pattern[str] | None = None
        if segment:
            cls = _char_class(ranges)
            self._cjk_run = re.compile(f"[{cls}]+")
            self._cjk_char = re.compile(f"[{cls}]")
            # a word's runs of CJK and of other characters (what words()
            # finds after spacing the CJK runs apart)
            self._split = re.compile(f"([{cls}]+)|([^{cls}]+)")
        self._unigrams = bool(spec.get("cjk_unigrams", False))
        # longest first: an alternation takes the first word that matches
        self._cut = (
            re.compile("|".join(map(re.escape, sorted(cuts, key=len, reverse=True))))
            if cuts
            else None
        )

    def words(self, text: str) -> list[str]:
        """Normalised, lower-cased words before stop-word removal and stemming.

        With CJK segmentation a run of CJK characters is a word of its own,
        apart from the Latin letters and digits it touches.
        """
        text = unicodedata.normalize("NFKC", text).lower()
        if self._cjk_run is not None:
            text = self._cjk_run.sub(r" \g<0> ", text)
        return _TOKEN.findall(text)

    def tokenize(self, text: str) -> list[str]:
        stop = self._stop
        # a word over the cap is no token; a CJK run is never one (its
        # bigrams are two characters long)
        longest = self._longest
        if self._split is None:
            words = [w for w in self.words(text) if w not in stop and len(w) <= longest]
            return self._stem(words) if self._stem else words
        split = self._split.findall
        pieces: list[tuple[str, str]] = []
        for word in _TOKEN.findall(unicodedata.normalize("NFKC", text).lower()):
            if word.isascii():
                pieces.append(("", word))
            else:
                pieces += split(word)
        latin = [w for c, w in pieces if w and w not in stop and len(w) <= longest]
        stems = iter(self._stem(latin) if self._stem else latin)
        out: list[str] = []
        for run, word in pieces:
            if word:
                if word not in stop and len(word) <= longest:
                    out.append(next(stems))
            elif run not in stop:
                for part in self._parts(run):
                    out += self._grams(part)
        return out

    def _parts(self, run: str) -> Iterator[str]:
        """A CJK run's pieces no bigram may span: cut at question words."""
        for part in self._cut.split(run) if self._cut else (run,):
            if part:
                yield part

    def _grams(self, run: str) -> list[str]:
        if len(run) == 1:
            return [run]
        grams = list(map(str.__add__, run, run[1:]))
        return [*run, *grams] if self._unigrams else grams


class WordTokenizer(Tokenizer):
    """A Chinese book's documents, their CJK runs cut at a word segmenter's
    boundaries before the bigrams, so the index holds no bigram that spans
    two words. Build side only: questions keep the spec's plain bigrams (the
    server and the browser need no segmenter), and a question's bigram that
    spans two of its words finds no posting, as none was written."""

    def __init__(self, spec: dict[str, Any], words: Callable[[str], Iterable[str]]):
        super().__init__(spec)
        self._words = words

    def _parts(self, run: str) -> Iterator[str]:
        for word in self._words(run):
            yield from super()._parts(word)


#: The word segmenter a Chinese book's index may be cut with (the ``zh``
#: extra), as the spec's ``index_words`` names it: "jieba <version>".
JIEBA = "jieba"


@lru_cache(maxsize=1)
def jieba_words() -> tuple[str, Callable[[str], Iterable[str]]]:
    """jieba's name and version, and its word cutter (default dictionary, HMM
    on), quiet; an ImportError when the ``zh`` extra is not installed."""
    import jieba

    quiet_jieba()
    # its own instance: Sphinx's Chinese search may load a user dictionary
    # into jieba's global one
    return f"{JIEBA} {jieba.__version__}", jieba.Tokenizer().cut


def quiet_jieba() -> None:
    """No dictionary progress lines in the author's build output: jieba logs
    them to stderr at import (Sphinx's own Chinese search uses it too)."""
    try:
        import jieba
    except ImportError:
        return
    jieba.setLogLevel(logging.WARNING)


def document_tokenizer(spec: dict[str, Any] | None) -> Tokenizer:
    """How the index cut the book's documents: the spec's own tokenizer, or
    with ``index_words`` the segmenter it names (``ragcite push`` recomputes
    the index's terms). ValueError when that segmenter is missing or
    another version, whose words would not be the index's."""
    named = (spec or {}).get("index_words")
    if not named:
        return tokenizer(spec)
    try:
        have, words = jieba_words()
    except ImportError:
        have = None
    if have != named:
        raise ValueError(
            f"the index was cut into words with {named}, this Python has "
            f"{have or 'no jieba'}: pip install 'sphinx-ragcite[zh]' (the same "
            "jieba version) or rebuild the site"
        )
    return WordTokenizer(tokenizer(spec).spec, words)


def _key(spec: dict[str, Any]) -> str:
    return json.dumps(spec, sort_keys=True, ensure_ascii=False)


@lru_cache(maxsize=16)
def _tokenizer(key: str) -> Tokenizer:
    return Tokenizer(json.loads(key))


def tokenizer(spec: dict[str, Any] | None = None) -> Tokenizer:
    """The tokenizer of *spec* (an index's ``tokenizer``; ``None``: English).

    Raises ``ValueError`` for a spec this version cannot reproduce.
    """
    if not spec:
        return ENGLISH
    if not isinstance(spec, dict):
        raise ValueError("unknown tokenizer spec: not an object")
    return _tokenizer(_key(spec))


ENGLISH = Tokenizer(SPEC)
#: The answer layer's words (claims checked against evidence, question terms
#: weighed by idf): English rules, CJK runs as bigrams in any book, as the
#: zh/ja/ko index cuts them. Text without CJK tokenizes as :data:`ENGLISH`.
#: Question words are kept: cut out here as well, the Chinese dev set's
#: precision of answers fell from 0.85 to 0.78.
MIXED = Tokenizer({**spec_for("zh"), "cjk_stopwords": []})
_CJK_CHAR = re.compile(f"[{_char_class(CJK_RANGES)}]")


def is_cjk(char: str) -> bool:
    """A Han, Kana or Hangul character (words of them have no spaces between)."""
    return bool(_CJK_CHAR.match(char))


def words(text: str) -> list[str]:
    """Normalised, lower-cased words before stop-word removal and stemming."""
    return _TOKEN.findall(unicodedata.normalize("NFKC", text).lower())


def tokenize(text: str) -> list[str]:
    """English BM25 tokens (:data:`SPEC`); other books use :func:`tokenizer`."""
    return ENGLISH.tokenize(text)


#: A full stop after these ends no sentence.
ABBREVIATIONS = frozenset(
    {"e.g", "i.e", "etc", "vs", "approx", "dr", "mr", "mrs", "ms", "no", "fig",
     "cf", "ca", "al", "st", "eq"}
)  # fmt: skip
# A sentence starts with a capital or digit, or with a bracket: a marker such
# as [ch3-sec2-p4] after a full stop belongs to the sentence before it, which
# split_claims() restores; without the split the next sentence rides along.
#: Chinese and Japanese end a sentence with 。！？ (or the full-width and
#: half-width forms ．｡), closing quotes and brackets included, with or
#: without a space after.
BOUNDARY = re.compile(
    r"(?<=[.!?…])[\"”’)]*\s+(?=\[|[\"“(]?[A-Z0-9])"
    r"|(?<=[。！？．｡])[」』）】〕”’\")]*\s*(?=\S)"
)

#: Closing quotes and brackets between a sentence's end and the boundary.
CLOSERS = '"”’)'


@dataclass(frozen=True)
class Sentence:
    text: str
    start: int
    end: int


def split_sentences(text: str) -> list[Sentence]:
    """Sentences of prose; each line of a list, table or code block on its own."""
    out: list[Sentence] = []
    offset = 0
    for line in text.split("\n"):
        start = 0
        for match in BOUNDARY.finditer(line):
            before = line[start : match.start()].rstrip(CLOSERS)
            last = before.rsplit(None, 1)[-1].rstrip(".").lower() if before else ""
            if last in ABBREVIATIONS or re.fullmatch(r"[a-z]", last):
                continue
            _add(out, line, start, match.start(), offset)
            start = match.end()
        _add(out, line, start, len(line), offset)
        offset += len(line) + 1
    return out


def _add(out: list[Sentence], line: str, start: int, end: int, offset: int) -> None:
    piece = line[start:end]
    stripped = piece.strip()
    if len(stripped) < 2 or not any(c.isalnum() for c in stripped):
        return
    lead = len(piece) - len(piece.lstrip())
    begin = offset + start + lead
    out.append(Sentence(stripped, begin, begin + len(stripped)))
