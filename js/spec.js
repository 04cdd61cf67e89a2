// @ts-check
// Written by tools/write_js_spec.py from sphinx_ragcite: do not edit.
// Change the Python side (answer/spec.py, extension/assets.py), then run
// `python tools/write_js_spec.py`; tests/test_js_spec.py fails when stale.
//
// Read it as `const spec = lib.need("spec");`, then take names from `spec`
// (destructuring the call itself sends tsc round a circle when the module
// provides one of them); compile a pattern with `pyPattern` (sentences.js).
(function () {
  "use strict";

  const lib = typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib;
  const api = /** @type {const} */ ({
    // -- the scripts, by module name, in load order
    SCRIPTS: {
      page: [
        "lib", "spec", "citations", "sse", "settings", "dom", "client", "files", "static",
        "quotes", "deeplinks", "selection", "render", "previews", "feedback", "panel", "widget",
      ],
      search: ["stemmer", "tokenize", "search", "store"],
      worker: [
        "files", "stemmer", "tokenize", "search", "store", "sentences", "fusion", "dense_index",
        "retrieve", "units", "evidence", "ranker", "verify", "answer", "selection_answer",
        "engine", "wordpiece", "unigram", "encode",
      ],
    },

    // -- the text contract (text.py)
    STOPWORDS: [
      "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is",
      "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there",
      "these", "they", "this", "to", "was", "will", "with",
    ],
    CJK_RANGES: [
      [4352, 4607], [12293, 12295], [12352, 12543], [12592, 12687], [12784, 12799], [13312, 19903],
      [19968, 40959], [43360, 43391], [44032, 55295], [63744, 64255], [131072, 201551],
    ],
    CJK_SCHEME: "cjk-bigrams",
    SNOWBALL_STEMMERS: [
      "danish", "dutch", "finnish", "french", "german", "hungarian", "italian", "norwegian",
      "portuguese", "romanian", "russian", "spanish", "swedish", "turkish",
    ],
    ENGLISH_SPEC: {
      normalize: "NFKC",
      lowercase: true,
      pattern: "[\\p{L}\\p{N}]+",
      stopwords: [
        "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is",
        "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there",
        "these", "they", "this", "to", "was", "will", "with",
      ],
      stemmer: "snowball-english",
      max_token_length: 255,
    },
    MIXED_SPEC: {
      normalize: "NFKC",
      lowercase: true,
      pattern: "[\\p{L}\\p{N}]+",
      stopwords: [
        "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is",
        "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there",
        "these", "they", "this", "to", "was", "will", "with",
      ],
      stemmer: "snowball-english",
      max_token_length: 255,
      language: "zh",
      segment: "cjk-bigrams",
      cjk_ranges: [
        [4352, 4607], [12293, 12295], [12352, 12543], [12592, 12687], [12784, 12799],
        [13312, 19903], [19968, 40959], [43360, 43391], [44032, 55295], [63744, 64255],
        [131072, 201551],
      ],
      cjk_stopwords: [],
    },
    ABBREVIATIONS: [
      "al", "approx", "ca", "cf", "dr", "e.g", "eq", "etc", "fig", "i.e", "mr", "mrs", "ms", "no",
      "st", "vs",
    ],
    BOUNDARY: {
      source: "(?<=[.!?…])[\\\"”’)]*\\s+(?=\\[|[\\\"“(]?[A-Z0-9])|(?<=[。！？．｡])[」』）】〕”’\\\")]*\\s*(?=\\S)",
      flags: "",
    },
    CLOSERS: "\"”’)",

    // -- sentences, words, numbers (answer/sentences.py)
    FILLER_WORDS: [
      "what", "which", "who", "whom", "whose", "when", "where", "why", "how", "do", "does", "did",
      "should", "would", "could", "can", "may", "might", "must", "i", "you", "we", "my", "your",
      "our", "me", "us", "about", "much", "many", "long", "so", "than", "too", "very", "just",
      "also", "any", "some", "all", "each", "other", "more", "most", "use", "used", "using",
      "make", "makes", "made", "get", "gets", "one", "ones", "way", "ways",
    ],
    NUMBER: { source: "\\d+(?:[.,]\\d+)*", flags: "" },
    MARKER: {
      source: "\\s*(?:\\[[^\\[\\]\\n]{1,80}\\]|\\((?:chapter|section|source)\\b[^()\\n]{0,80}\\))",
      flags: "i",
    },
    LEADING_MARKERS: {
      source: "^(?:(?:\\[[^\\[\\]\\n]{1,80}\\]|\\((?:chapter|section|source)\\b[^()\\n]{0,80}\\))\\s*)+",
      flags: "i",
    },

    // -- answer units and their signals (answer/units.py)
    MAX_FOLLOW_LINES: 6,
    MAX_UNIT_WORDS: 80,
    MIN_UNIT_WORDS: 3,
    CODE_SYMBOLS: 0.15,
    CJK_PROSE: "、。，．；：？！（）「」『』《》〈〉【】〔〕～・",
    PROSE_MARKS: ".,;:'\"()-%°",
    BACK_REFERENCE: {
      source: "^(this|that|these|those|it|they|such|then|otherwise|however|instead)\\b",
      flags: "i",
    },
    YEAR: { source: "\\b(1[0-9]{3}|20[0-9]{2})\\b", flags: "" },
    KIND_NUMBER: { source: "\\d+(?:[.,]\\d+)?", flags: "" },
    NUMBER_WORD: {
      source: "\\b(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|(thir|four|fif|six|seven|eigh|nine)teen|(twen|thir|for|fif|six|seven|eigh|nine)ty|hundreds?|thousands?|millions?|billions?|dozens?|half|twice|double|triple|several|zero|none)\\b",
      flags: "i",
    },
    MONTH: {
      source: "\\b(January|February|March|April|May|June|July|August|September|October|November|December|century|centuries|decades?)\\b",
      flags: "",
    },
    CAPITALISED: { source: "\\b[A-Z][\\w'’-]*", flags: "" },
    OPENER_WORDS: [
      "its", "his", "her", "he", "she", "we", "you", "our", "your", "my", "those", "after",
      "before", "when", "while", "although", "however", "during", "since", "until", "once", "here",
      "today", "many", "some", "most", "each", "every", "all", "both", "also", "thus", "so",
      "what", "which", "who", "how", "why", "where", "one", "two", "three", "other", "another",
      "first", "later", "finally", "instead", "historically", "typically", "usually",
    ],
    CAUSE: {
      source: "\\b(because|since|so that|in order to|to avoid|to prevent|to make sure|reason|due to|thus|therefore|otherwise|so you|which means|allows?|lets?)\\b",
      flags: "i",
    },
    DEFINITION: { source: "\\b(is|are|means|refers to|stands for|describes)\\b", flags: "" },
    CODE_TOKEN: {
      source: "(--?[a-z][\\w-]*|\\w+\\(|\\w+=\\S|\\w+\\.\\w+\\(|`|\\$ |>>> |/\\w+|\\w+_\\w+|\\.\\w{2,4}\\b)",
      flags: "",
    },
    CODE_LINE: {
      source: "^(@[\\w.]+|def |class |import |from [\\w.]+ import |\\$ |>>> |\\.\\.\\. |return\\b|[\\w.]+\\(.*\\)$|[\\w.]+ = |\\S+=\\S+,?$|\\\"[^\\\"]*\\\",|[\\])}]+[,:]?$)",
      flags: "",
    },
    QUESTION_KINDS: [
      ["when", { source: "^(when|what year|which year|in what year|what date)\\b", flags: "" }],
      ["who", { source: "^(who|whom|whose)\\b", flags: "" }],
      ["why", { source: "^why\\b", flags: "" }],
      ["howto", { source: "^(how (do|can|should|would) (i|you|we)|how to)\\b", flags: "" }],
      ["where", { source: "^where\\b", flags: "" }],
      [
        "quantity",
        {
          source: "\\b(how (many|much|long|often|far|old|large|big|high|fast|hot)|percentage|proportion|temperature|ratio|what (size|amount|number))\\b",
          flags: "",
        },
      ],
      ["who", { source: "\\bwhich (person|people|company)\\b", flags: "" }],
      ["why", { source: "\\bwhat is the (reason|point|purpose)\\b", flags: "" }],
      [
        "howto",
        {
          source: "\\b(what|which) (command|option|flag|argument|parameter|function|file|setting|decorator|method|class|key|field|tool)\\b",
          flags: "",
        },
      ],
      ["definition", { source: "^what (is|are|does)\\b", flags: "" }],
      ["yesno", { source: "^(is|are|can|could|does|do|did|should|will|must|may)\\b", flags: "" }],
    ],
    UNIT_FEATURES: [
      "similarity", "overlap", "heading_overlap", "idf_overlap", "idf_heading", "idf_passage",
      "similarity_gap", "relevance", "bm25", "inverse_rank", "kind_match", "kind_mismatch",
      "extended", "code_share", "log_words", "leading", "similarity_x_overlap",
    ],
    LISTWISE: [
      "similarity", "overlap", "idf_overlap", "idf_heading", "idf_passage", "relevance", "bm25",
      "similarity_x_overlap",
    ],
    FEATURES: [
      "similarity", "overlap", "heading_overlap", "idf_overlap", "idf_heading", "idf_passage",
      "similarity_gap", "relevance", "bm25", "inverse_rank", "kind_match", "kind_mismatch",
      "extended", "code_share", "log_words", "leading", "similarity_x_overlap",
      "similarity_below_best", "overlap_below_best", "idf_overlap_below_best",
      "idf_heading_below_best", "idf_passage_below_best", "relevance_below_best",
      "bm25_below_best", "similarity_x_overlap_below_best", "similarity_rank",
    ],

    // -- the ranker's choice (answer/ranker.py)
    STRICT_KINDS: ["who"],
    SECOND_CANDIDATES: 3,
    SHOWN_PASSAGES: 3,

    // -- verification (answer/grounding.py, answer/citations.py)
    SUPPORT_SIMILARITY: 0.5,
    SUPPORT_OVERLAP: 0.5,
    SUPPORT_THRESHOLD: 0.65,
    TWIN_MARGIN: 0.02,
    BRACKET: { source: "\\[([^\\[\\]\\n]{1,80})\\]", flags: "" },
    SOURCE: { source: "^source\\s*:\\s*(.+)$", flags: "i" },
    CHAPTER: {
      source: "\\bChapter\\s+(\\d+)(?:\\s*,?\\s*Section\\s+(\\d+(?:\\.\\d+)*))?",
      flags: "i",
    },
    REFERENCE_SEPARATOR: { source: "\\s*[,;]\\s*", flags: "" },
    BRACKETED_NUMBER: { source: "\\[(\\d+(?:\\s*,\\s*\\d+)*)\\]", flags: "" },
    PASSAGE_ID: { source: "^ch(?P<c>[0-9]+)-sec(?P<s>[0-9]+)-p(?P<p>[0-9]+)$", flags: "" },
    USER_SELECTION: "user-selection",

    // -- confidence (answer/confidence.py, contracts.py)
    FIT_SIMILARITY: 0.55,
    FIT_OVERLAP: 0.35,
    BIAS: -2.18,
    W_FIT: 1.98,
    W_RELEVANCE: 1.59,
    W_SUPPORT: 1.0,
    HIGH_CONFIDENCE: 0.9,
    MEDIUM_CONFIDENCE: 0.7,

    // -- selection mode (answer/selection.py)
    SELECTION_CONTEXT: 1000,
    HOLDING_SEARCH: 10,
    HOLDING_WORDS: 5,
    PASSAGE_WEIGHT: 0.5,
    SELECTION_MIN_WORDS: 4,
    RANK_BONUS: 0.1,
    SECOND_FLOOR: 0.54,
    SELECTION_MAX_SENTENCES: 2,
    SELECTION_MAX_WORDS: 80,
    SECOND_SHARE: 0.9,
    OTHER_PASSAGE_SHARE: 0.95,
    REDUNDANT: 0.85,

    // -- the answer (answer/engine.py, contracts.py)
    NOT_FOUND: "I could not find an answer to this in the book.",
    MAYBE_HERE: "I am not sure; the book may answer this in these passages.",
    SEE_ALSO: 3,
    SHOWN_FIELDS: [
      "passage_id", "url", "chapter", "section", "heading_path", "snippet", "site", "version",
    ],
    SEE_ALSO_FIELDS: ["passage_id", "url", "chapter", "section", "snippet", "site", "version"],
    SNIPPET_SPACES: { source: "[ \\t\\r\\f\\v\\n]+", flags: "" },
    SNIPPET_CHARS: 200,
    SNIPPET_MIN_CHARS: 50,

    // -- requests (contracts.py)
    DEFAULT_K: 6,
    MAX_K: 20,
    MAX_QUESTION: 2000,
    MAX_SELECTION: 20000,
    MAX_REASON: 500,
    SITE_NAME: { source: "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$", flags: "" },

    // -- retrieval (retrieval/)
    LINEAR_ALPHA: 0.5,
    DEPTH: 50,

    // -- the index files the browser reads (formats/)
    STATIC_PREFIX: "globalThis.ragcite_static_index=",
    STATIC_FORMAT: 2,
    SEARCH_FORMAT: 3,
    DENSE_ROOT_MAGIC: "RCDI",
    DENSE_SHARD_MAGIC: "RCDS",
    DENSE_FORMAT: 1,
    MANIFEST_FORMAT: 1,
    MAX_MANIFEST_BYTES: 1048576,
    SHARD_MAGIC: "RCSH",
    SHARD_FORMAT: 1,
  });

  lib.provide("spec", api);
  if (typeof module === "object") module.exports = api;
})();
