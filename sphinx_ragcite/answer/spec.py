"""What the two answer engines share: every number, word list and pattern.

The Python engine and the browser's (``js/``) must cut, count and score
alike, so what they share is written once, here. The answer layer's own
values live in this module; those whose home is a lower layer (the text
contract, the request limits, retrieval, the index files) stay there and are
named here again, so :data:`__all__` is the one public list.

``tools/write_js_spec.py`` writes ``js/spec.js`` from that list (patterns as
their Python source and the JS flags, ``sphinx_ragcite.extension.js_spec``);
``tests/test_js_spec.py`` fails when the file is stale. The JS compiles each
pattern with ``pyRegExp`` (``js/sentences.js``), which gives it Python's
meaning.

Most values were set by hand or fitted once; the comments say which, and what
a change means (the answer ranker is trained on units made with these rules,
the confidence curve is fitted over these weights).
"""

from __future__ import annotations

import re

from sphinx_ragcite.contracts import (
    DEFAULT_K,
    HIGH_CONFIDENCE,
    MAX_K,
    MAX_QUESTION,
    MAX_REASON,
    MAX_SELECTION,
    MEDIUM_CONFIDENCE,
    PASSAGE_ID,
    SITE_NAME,
    SNIPPET_CHARS,
    SNIPPET_MIN_CHARS,
    SNIPPET_SPACES,
    USER_SELECTION,
)
from sphinx_ragcite.formats import dense_index, manifest, search_shards, shards, static
from sphinx_ragcite.retrieval.fusion import LINEAR_ALPHA
from sphinx_ragcite.retrieval.searchable import DEPTH
from sphinx_ragcite.text import (
    ABBREVIATIONS,
    BOUNDARY,
    CJK_RANGES,
    CJK_SCHEME,
    CLOSERS,
    MIXED,
    SNOWBALL,
    SPEC,
    STOPWORDS,
)

# grouped by the engine's stages, as js/spec.js lists them
__all__ = [  # noqa: RUF022
    # -- the text contract (text.py) -----------------------------------------
    "STOPWORDS",
    "CJK_RANGES",
    "CJK_SCHEME",
    "SNOWBALL_STEMMERS",
    "ENGLISH_SPEC",
    "MIXED_SPEC",
    "ABBREVIATIONS",
    "BOUNDARY",
    "CLOSERS",
    # -- sentences, words, numbers (answer/sentences.py) ---------------------
    "FILLER_WORDS",
    "NUMBER",
    "MARKER",
    "LEADING_MARKERS",
    # -- answer units and their signals (answer/units.py) --------------------
    "MAX_FOLLOW_LINES",
    "MAX_UNIT_WORDS",
    "MIN_UNIT_WORDS",
    "CODE_SYMBOLS",
    "CJK_PROSE",
    "PROSE_MARKS",
    "BACK_REFERENCE",
    "YEAR",
    "KIND_NUMBER",
    "NUMBER_WORD",
    "MONTH",
    "CAPITALISED",
    "OPENER_WORDS",
    "CAUSE",
    "DEFINITION",
    "CODE_TOKEN",
    "CODE_LINE",
    "QUESTION_KINDS",
    "UNIT_FEATURES",
    "LISTWISE",
    "FEATURES",
    # -- the ranker's choice (answer/ranker.py) ------------------------------
    "STRICT_KINDS",
    "SECOND_CANDIDATES",
    "SHOWN_PASSAGES",
    # -- verification (answer/grounding.py, answer/citations.py) -------------
    "SUPPORT_SIMILARITY",
    "SUPPORT_OVERLAP",
    "SUPPORT_THRESHOLD",
    "TWIN_MARGIN",
    "BRACKET",
    "SOURCE",
    "CHAPTER",
    "REFERENCE_SEPARATOR",
    "BRACKETED_NUMBER",
    "PASSAGE_ID",
    "USER_SELECTION",
    # -- confidence (answer/confidence.py, contracts.py) ---------------------
    "FIT_SIMILARITY",
    "FIT_OVERLAP",
    "BIAS",
    "W_FIT",
    "W_RELEVANCE",
    "W_SUPPORT",
    "HIGH_CONFIDENCE",
    "MEDIUM_CONFIDENCE",
    # -- selection mode (answer/selection.py) --------------------------------
    "SELECTION_CONTEXT",
    "HOLDING_SEARCH",
    "HOLDING_WORDS",
    "PASSAGE_WEIGHT",
    "SELECTION_MIN_WORDS",
    "RANK_BONUS",
    "SECOND_FLOOR",
    "SELECTION_MAX_SENTENCES",
    "SELECTION_MAX_WORDS",
    "SECOND_SHARE",
    "OTHER_PASSAGE_SHARE",
    "REDUNDANT",
    # -- the answer (answer/engine.py, contracts.py) -------------------------
    "NOT_FOUND",
    "MAYBE_HERE",
    "SEE_ALSO",
    "SHOWN_FIELDS",
    "SEE_ALSO_FIELDS",
    "SNIPPET_SPACES",
    "SNIPPET_CHARS",
    "SNIPPET_MIN_CHARS",
    # -- requests (contracts.py) ---------------------------------------------
    "DEFAULT_K",
    "MAX_K",
    "MAX_QUESTION",
    "MAX_SELECTION",
    "MAX_REASON",
    "SITE_NAME",
    # -- retrieval (retrieval/) ----------------------------------------------
    "LINEAR_ALPHA",
    "DEPTH",
    # -- the index files the browser reads (formats/) ------------------------
    "STATIC_PREFIX",
    "STATIC_FORMAT",
    "SEARCH_FORMAT",
    "DENSE_ROOT_MAGIC",
    "DENSE_SHARD_MAGIC",
    "DENSE_FORMAT",
    "MANIFEST_FORMAT",
    "MAX_MANIFEST_BYTES",
    "SHARD_MAGIC",
    "SHARD_FORMAT",
]

# -- the text contract -------------------------------------------------------

#: The Snowball stemmers besides English (``snowball-<name>``; the browser
#: loads each from ``snowball/<name>.js``).
SNOWBALL_STEMMERS = tuple(sorted(set(SNOWBALL.values()) - {"english"}))
#: The English tokenizer spec (``text.SPEC``).
ENGLISH_SPEC = SPEC
#: The answer layer's words in any book (``text.MIXED``).
MIXED_SPEC = MIXED.spec

# -- sentences, words, numbers -----------------------------------------------

#: Question words and fillers carry no evidence; dropped from content words
#: on top of Lucene's stop words (tokenized as English).
FILLER_WORDS = (
    "what", "which", "who", "whom", "whose", "when", "where", "why", "how",
    "do", "does", "did", "should", "would", "could", "can", "may", "might",
    "must", "i", "you", "we", "my", "your", "our", "me", "us", "about",
    "much", "many", "long", "so", "than", "too", "very", "just", "also",
    "any", "some", "all", "each", "other", "more", "most", "use", "used",
    "using", "make", "makes", "made", "get", "gets", "one", "ones", "way",
    "ways",
)  # fmt: skip
#: A number of a claim or its evidence (thousands commas are dropped after).
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
#: A citation marker: bracketed, or a parenthesised "(Chapter 5, Section 5.1.2)".
MARKER = re.compile(
    r"\s*(?:\[[^\[\]\n]{1,80}\]|\((?:chapter|section|source)\b[^()\n]{0,80}\))",
    re.IGNORECASE,
)
#: Markers that the splitter left at the start of the next sentence.
LEADING_MARKERS = re.compile(
    r"^(?:(?:\[[^\[\]\n]{1,80}\]|\((?:chapter|section|source)\b[^()\n]{0,80}\))"
    r"\s*)+",
    re.IGNORECASE,
)

# -- answer units and their signals ------------------------------------------

# What makes a unit was set by hand when units were introduced; the ranker
# (ranker.json) is trained on units so made, so changing one means retraining.
#: Lines a unit may take from the block a sentence introduces.
MAX_FOLLOW_LINES = 6
#: Words of a unit beyond which it stops growing.
MAX_UNIT_WORDS = 80
#: Words below which a lone sentence (not code) is no unit.
MIN_UNIT_WORDS = 3
#: Share of a text's characters that are symbols above which it is code.
CODE_SYMBOLS = 0.15
#: Chinese and Japanese prose punctuation (full-width): not code symbols.
#: None of it is English typography, so English units are judged as before.
CJK_PROSE = "、。，．；：？！（）「」『』《》〈〉【】〔〕～・"
#: Characters besides letters, digits and spaces that are no code symbols.
PROSE_MARKS = ".,;:'\"()-%°"

#: A sentence that refers back ("This ...", "It ...") takes the one before.
BACK_REFERENCE = re.compile(
    r"^(this|that|these|those|it|they|such|then|otherwise|however|instead)\b",
    re.IGNORECASE,
)
YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")
#: A number that answers when or how much.
KIND_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
#: Quantities written out ("eight seats", "nearly three hundred years").
NUMBER_WORD = re.compile(
    r"\b(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
    r"(thir|four|fif|six|seven|eigh|nine)teen|(twen|thir|for|fif|six|seven|"
    r"eigh|nine)ty|hundreds?|thousands?|millions?|billions?|dozens?|half|"
    r"twice|double|triple|several|zero|none)\b",
    re.IGNORECASE,
)
MONTH = re.compile(
    r"\b(January|February|March|April|May|June|July|August|September|October|"
    r"November|December|century|centuries|decades?)\b"
)
CAPITALISED = re.compile(r"\b[A-Z][\w'’-]*")
#: Capitalised words that open a sentence without naming anyone (besides
#: the stop words).
OPENER_WORDS = (
    "its", "his", "her", "he", "she", "we", "you", "our", "your", "my", "those",
    "after", "before", "when", "while", "although", "however", "during", "since",
    "until", "once", "here", "today", "many", "some", "most", "each", "every",
    "all", "both", "also", "thus", "so", "what", "which", "who", "how", "why",
    "where", "one", "two", "three", "other", "another", "first", "later",
    "finally", "instead", "historically", "typically", "usually",
)  # fmt: skip
CAUSE = re.compile(
    r"\b(because|since|so that|in order to|to avoid|to prevent|to make sure|"
    r"reason|due to|thus|therefore|otherwise|so you|which means|allows?|lets?)\b",
    re.IGNORECASE,
)
DEFINITION = re.compile(r"\b(is|are|means|refers to|stands for|describes)\b")
CODE_TOKEN = re.compile(
    r"(--?[a-z][\w-]*|\w+\(|\w+=\S|\w+\.\w+\(|`|\$ |>>> |/\w+|\w+_\w+|\.\w{2,4}\b)"
)
#: Lines that are code though few of their characters are symbols.
CODE_LINE = re.compile(
    r"^(@[\w.]+|def |class |import |from [\w.]+ import |\$ |>>> |\.\.\. |return\b|"
    r"[\w.]+\(.*\)$|[\w.]+ = |\S+=\S+,?$|\"[^\"]*\",|[\])}]+[,:]?$)"
)

#: Question kinds and the words that ask for them, first match wins. A
#: question's opening words decide first ("How can I count how often -v was
#: given?" asks how to, "Why doesn't PyPI show how many downloads?" why);
#: words further in only when the opening does not say; "what is" and
#: yes/no openings last, since the words after them often say more.
QUESTION_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("when", re.compile(r"^(when|what year|which year|in what year|what date)\b")),
    ("who", re.compile(r"^(who|whom|whose)\b")),
    ("why", re.compile(r"^why\b")),
    ("howto", re.compile(r"^(how (do|can|should|would) (i|you|we)|how to)\b")),
    ("where", re.compile(r"^where\b")),
    (
        "quantity",
        re.compile(
            r"\b(how (many|much|long|often|far|old|large|big|high|fast|hot)|"
            r"percentage|proportion|temperature|ratio|what (size|amount|number))\b"
        ),
    ),
    ("who", re.compile(r"\bwhich (person|people|company)\b")),
    ("why", re.compile(r"\bwhat is the (reason|point|purpose)\b")),
    (
        "howto",
        re.compile(
            r"\b(what|which) (command|option|flag|argument|parameter|function|"
            r"file|setting|decorator|method|class|key|field|tool)\b"
        ),
    ),
    ("definition", re.compile(r"^what (is|are|does)\b")),
    (
        "yesno",
        re.compile(r"^(is|are|can|could|does|do|did|should|will|must|may)\b"),
    ),
)

#: The signals of one unit on its own.
UNIT_FEATURES = (
    "similarity",  # best cosine of the question and the unit's sentences
    "overlap",  # share of the question's content words in the unit
    "heading_overlap",  # ... in the unit and its passage's headings
    "idf_overlap",  # share of the question's idf mass in the unit
    "idf_heading",  # ... in the unit and its headings
    "idf_passage",  # ... in the whole passage
    "similarity_gap",  # the unit's similarity below its passage's best unit
    "relevance",  # cosine of the question and the whole passage
    "bm25",  # the passage's BM25 score over the best retrieved one
    "inverse_rank",  # 1 / the passage's retrieval rank
    "kind_match",  # the unit holds the kind of answer asked for
    "kind_mismatch",  # a typed question whose kind the unit lacks
    "extended",  # the unit grew past its sentence
    "code_share",  # share of the unit's lines that look like code
    "log_words",  # log(1 + words)
    "leading",  # the passage's first sentence
    "similarity_x_overlap",
)
#: Signals whose distance below the best unit of the question is a signal too
#: (a unit is judged against its rivals, not alone).
LISTWISE = (
    "similarity",
    "overlap",
    "idf_overlap",
    "idf_heading",
    "idf_passage",
    "relevance",
    "bm25",
    "similarity_x_overlap",
)
#: Every signal the ranker weighs: each unit's own, then the listwise ones
#: (ranker.json names them; both engines refuse a ranker trained on others).
FEATURES = (
    *UNIT_FEATURES,
    *(f"{name}_below_best" for name in LISTWISE),
    "similarity_rank",  # 1 / (1 + the unit's place by similarity)
)

# -- the ranker's choice -----------------------------------------------------

#: Question kinds no unit lacking their kind of answer may answer. Who-questions
#: only: the one kind where a wrong-kind best unit was never right on the dev
#: sets (quantities and dates are written in too many ways; see
#: benchmarks/README.md).
STRICT_KINDS = frozenset({"who"})
#: Units after the best that may be its second (set by hand; how close a second
#: must be is the trained ``Ranker.second``).
SECOND_CANDIDATES = 3
#: Passages the "passages" outcome shows at most.
SHOWN_PASSAGES = 3

# -- verification ------------------------------------------------------------

#: Weights of sentence similarity and content-word coverage in support: set
#: by hand, equal; the threshold below is calibrated over them.
SUPPORT_SIMILARITY = 0.5
SUPPORT_OVERLAP = 0.5
#: Calibrated on example_book/qa.jsonl (tools/calibrate_grounding.py).
SUPPORT_THRESHOLD = 0.65
#: How much less a selection's twin passage may support a claim and be cited
#: (set by hand).
TWIN_MARGIN = 0.02
#: The markers a generator writes: ``[2]``, ``[1, 3]``, ``[ch3-sec2-p4]``,
#: ``[Source: water.html]`` and ``Chapter 3, Section 3.2``.
BRACKET = re.compile(r"\[([^\[\]\n]{1,80})\]")
SOURCE = re.compile(r"^source\s*:\s*(.+)$", re.IGNORECASE)
CHAPTER = re.compile(
    r"\bChapter\s+(\d+)(?:\s*,?\s*Section\s+(\d+(?:\.\d+)*))?", re.IGNORECASE
)
#: Between the references of one bracket (``[1, 3]``).
REFERENCE_SEPARATOR = re.compile(r"\s*[,;]\s*")
#: ``x[0]`` in quoted code, which would read as a citation marker.
BRACKETED_NUMBER = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")

# -- confidence --------------------------------------------------------------

#: Weights of ``answer_fit``: a sentence's similarity to the question and
#: its share of the question's content words. The first answer engine's
#: sentence score, chosen by grid search on example_book/qa.jsonl; the curve
#: below is fitted over it, so a change to them needs a refit.
FIT_SIMILARITY = 0.55
FIT_OVERLAP = 0.35
#: The citation confidence curve, fitted by tools/calibrate_grounding.py
#: (see answer/confidence.py).
BIAS = -2.18
W_FIT = 1.98
W_RELEVANCE = 1.59
W_SUPPORT = 1.0

# -- selection mode ----------------------------------------------------------
# The first answer engine's numbers (see answer/selection.py): the weights by
# a grid search, the floor calibrated; the rest set by hand.

#: Characters of a selection the sentences are ranked against, with the
#: question (set by hand: a long selection's opening says what it is about).
SELECTION_CONTEXT = 1000
#: BM25 hits searched for the passages a selection lies in, and the length
#: of the word runs that must match for one to hold it (set by hand).
HOLDING_SEARCH = 10
HOLDING_WORDS = 5
#: Weight of a sentence's passage relevance beside its fit (grid search).
PASSAGE_WEIGHT = 0.5
#: A sentence shorter than this says nothing on its own (set by hand).
SELECTION_MIN_WORDS = 4
#: A sentence after the best is quoted only when its fit plus this bonus over
#: its passage's retrieval rank reaches :data:`SECOND_FLOOR`: the first
#: engine's abstention rule (both chosen on the QA set for abstention), which
#: selection mode, never abstaining, keeps for a second sentence.
RANK_BONUS = 0.1
SECOND_FLOOR = 0.54
#: Sentences quoted at most, and their words (set by hand: an answer is short).
SELECTION_MAX_SENTENCES = 2
SELECTION_MAX_WORDS = 80
#: A second sentence needs this share of the best one's score, and this share
#: when it comes from another passage, whose citation it adds (set by hand).
SECOND_SHARE = 0.9
OTHER_PASSAGE_SHARE = 0.95
#: A sentence more similar than this to one already quoted adds nothing
#: (set by hand).
REDUNDANT = 0.85

# -- the answer --------------------------------------------------------------

NOT_FOUND = "I could not find an answer to this in the book."
#: The answer text of the ``passages`` outcome (no claim is made).
MAYBE_HERE = "I am not sure; the book may answer this in these passages."
#: Nearest passages an abstention lists.
SEE_ALSO = 3
#: What a shown passage keeps of its record.
SHOWN_FIELDS: tuple[str, ...] = (
    *("passage_id", "url", "chapter", "section", "heading_path", "snippet"),
    *("site", "version"),
)
#: What a see-also entry keeps of a record (site/version: several sites served).
SEE_ALSO_FIELDS: tuple[str, ...] = (
    *("passage_id", "url", "chapter", "section", "snippet"),
    *("site", "version"),
)

# -- the index files the browser reads ---------------------------------------

#: The static index file is ``<STATIC_PREFIX><JSON>;`` (a script, for file://).
STATIC_PREFIX = static.PREFIX.decode("ascii")
STATIC_FORMAT = static.FORMAT_VERSION
#: The sharded static index's root (``search-root.<h>.json``) and shards.
SEARCH_FORMAT = search_shards.FORMAT_VERSION
#: A big book's approximate dense index: its root's and shards' first bytes
#: and their format (``formats/dense_index.py``).
DENSE_ROOT_MAGIC = dense_index.ROOT_MAGIC.decode("ascii")
DENSE_SHARD_MAGIC = dense_index.SHARD_MAGIC.decode("ascii")
DENSE_FORMAT = dense_index.FORMAT_VERSION
MANIFEST_FORMAT = manifest.FORMAT_VERSION
MAX_MANIFEST_BYTES = manifest.MAX_MANIFEST_BYTES
#: A shard file's first bytes, and the format of shards and their listing.
SHARD_MAGIC = shards.MAGIC.decode("ascii")
SHARD_FORMAT = shards.FORMAT_VERSION
