// @ts-check
/**
 * The BM25 tokenizer of sphinx_ragcite, run in the browser.
 *
 * It follows the spec the index carries (`index.tokenizer`, written by
 * `sphinx_ragcite/text.py`'s `spec_for(language)`): Unicode-normalise,
 * lower-case, find the runs of letters and numbers, drop stop words, stem
 * with the book's Snowball stemmer; in Chinese, Japanese and Korean books
 * (`segment: "cjk-bigrams"`) each run of CJK characters gives its overlapping
 * character bigrams instead. Python and JS must give the same tokens for the
 * same text; `tests/test_static_parity.py` checks it on the shared case file
 * `tests/golden/tokenizer_cases.json`.
 *
 * Classic script: registers `tokenize` and `words` on `globalThis.ragcite_lib`
 * (load `stemmer.js` first, and `snowball/<language>.js` for a book in another
 * Snowball language), and on `module.exports` under Node.
 */

/**
 * The tokenizer spec stored in the static index.
 * @typedef {object} TokenizerSpec
 * @property {string} [normalize] Unicode normalisation form, e.g. "NFKC"
 * @property {boolean} [lowercase]
 * @property {string} [pattern] a word, as a JS regex source (flag `u`)
 * @property {string[]} [stopwords] dropped before stemming
 * @property {string | null} [stemmer] "snowball-english", "snowball-german"...,
 *   or null for none
 * @property {string} [language] the book's search language ("de", "zh"...)
 * @property {string} [segment] "cjk-bigrams": CJK runs become bigrams
 * @property {[number, number][]} [cjk_ranges] inclusive code point ranges
 * @property {boolean} [cjk_unigrams] single characters besides the bigrams
 * @property {string[]} [cjk_stopwords] words that cut a CJK run in two
 *   (question words: no bigram spans them), longest first where two overlap
 */

(function () {
  "use strict";

  /**
   * A spec checked and turned into what tokenizing needs.
   * @typedef {object} CompiledSpec
   * @property {string | null} normalize
   * @property {boolean} lowercase
   * @property {RegExp} pattern global, unicode
   * @property {Set<string>} stopwords
   * @property {((word: string) => string) | null} stem
   * @property {RegExp | null} cjkRun global, unicode: a run of CJK characters
   * @property {RegExp | null} cjkChar sticky-free test of one CJK character
   * @property {boolean} unigrams
   * @property {RegExp | null} cut global, unicode: a word that cuts a CJK run
   */

  const DEFAULT_PATTERN = "[\\p{L}\\p{N}]+";
  const NORMAL_FORMS = new Set(["NFC", "NFD", "NFKC", "NFKD"]);
  /** Snowball stemmers besides English, each in `snowball/<name>.js`. */
  const SNOWBALL = new Set([
    "danish", "dutch", "finnish", "french", "german", "hungarian", "italian",
    "norwegian", "portuguese", "romanian", "russian", "spanish", "swedish", "turkish",
  ]);
  const STEMMERS = new Set(["snowball-english", ...[...SNOWBALL].map((n) => "snowball-" + n)]);
  const CJK_SCHEME = "cjk-bigrams";

  const g = /** @type {any} */ (globalThis);
  /** @type {Record<string, any>} */
  const lib = (g.ragcite_lib = g.ragcite_lib || {});

  /** @type {((word: string) => string) | null} */
  let nodeStem = null;
  if (typeof module === "object" && module.exports) {
    nodeStem = require("./stemmer.js").stem;
  }

  /** @returns {(word: string) => string} */
  function snowballEnglish() {
    const stem = nodeStem || lib.stem;
    if (typeof stem !== "function") {
      throw new Error("ragcite tokenize: stemmer.js must be loaded before tokenize.js");
    }
    return stem;
  }

  /**
   * @param {string} name "snowball-english", "snowball-german", ...
   * @returns {(word: string) => string}
   */
  function snowball(name) {
    const language = name.slice("snowball-".length);
    if (language === "english") return snowballEnglish();
    let stem = lib.snowball && lib.snowball[language];
    if (typeof stem !== "function" && typeof module === "object" && module.exports) {
      stem = require(`./snowball/${language}.js`).stem;
    }
    if (typeof stem !== "function") {
      throw new Error(`ragcite tokenize: snowball/${language}.js must be loaded before searching`);
    }
    return stem;
  }

  /**
   * @param {unknown} ranges
   * @returns {string} the ranges as the inside of a `u` character class
   */
  function charClass(ranges) {
    if (!Array.isArray(ranges) || !ranges.length) {
      throw new Error("ragcite tokenize: cjk_ranges must be a non-empty list");
    }
    /** @param {number} c */
    const hex = (c) => `\\u{${c.toString(16)}}`;
    return ranges
      .map((r) => {
        if (!Array.isArray(r) || r.length !== 2 || !r.every(Number.isInteger) || r[0] > r[1]) {
          throw new Error("ragcite tokenize: a cjk_ranges entry must be [low, high]");
        }
        return `${hex(r[0])}-${hex(r[1])}`;
      })
      .join("");
  }

  /**
   * @param {string} word
   * @returns {string} the word as a literal in a regex
   */
  function escapeRegExp(word) {
    return word.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
  }

  /** @type {WeakMap<object, CompiledSpec>} */
  const compiled = new WeakMap();

  /**
   * @param {TokenizerSpec} spec
   * @returns {CompiledSpec}
   */
  function compile(spec) {
    if (spec === null || typeof spec !== "object") {
      throw new Error("ragcite tokenize: the tokenizer spec must be an object");
    }
    const cached = compiled.get(spec);
    if (cached) return cached;
    const normalize = spec.normalize || null;
    if (normalize !== null && !NORMAL_FORMS.has(normalize)) {
      throw new Error(`ragcite tokenize: unknown normalization form ${JSON.stringify(normalize)}`);
    }
    const name = spec.stemmer == null ? null : spec.stemmer;
    const segment = spec.segment == null ? null : spec.segment;
    if (segment !== null && segment !== CJK_SCHEME) {
      throw new Error(`ragcite tokenize: unknown segmentation ${JSON.stringify(segment)}`);
    }
    const cls = segment === null ? null : charClass(spec.cjk_ranges);
    const cuts = spec.cjk_stopwords == null ? [] : spec.cjk_stopwords;
    if (!Array.isArray(cuts) || !cuts.every((w) => typeof w === "string" && w)) {
      throw new Error("ragcite tokenize: cjk_stopwords must be a list of words");
    }
    // longest first: an alternation takes the first word that matches, as
    // Python's re does
    const longest = [...cuts].sort((a, b) => Array.from(b).length - Array.from(a).length);
    if (name !== null && !STEMMERS.has(name)) {
      throw new Error(
        `ragcite tokenize: unknown stemmer ${JSON.stringify(name)} ` +
          `(this version knows ${[...STEMMERS].map((s) => JSON.stringify(s)).join(", ")})`,
      );
    }
    /** @type {CompiledSpec} */
    const result = {
      normalize,
      lowercase: Boolean(spec.lowercase),
      pattern: new RegExp(spec.pattern || DEFAULT_PATTERN, "gu"),
      stopwords: new Set(spec.stopwords || []),
      stem: name === null ? null : snowball(name),
      cjkRun: cls === null ? null : new RegExp(`[${cls}]+`, "gu"),
      cjkChar: cls === null ? null : new RegExp(`^[${cls}]`, "u"),
      unigrams: Boolean(spec.cjk_unigrams),
      cut: longest.length ? new RegExp(longest.map(escapeRegExp).join("|"), "gu") : null,
    };
    compiled.set(spec, result);
    return result;
  }

  /**
   * @param {string} text
   * @param {CompiledSpec} c
   * @returns {string[]}
   */
  function wordsOf(text, c) {
    let s = String(text);
    if (c.normalize) s = s.normalize(c.normalize);
    if (c.lowercase) s = s.toLowerCase();
    if (c.cjkRun) s = s.replace(c.cjkRun, " $& ");
    return s.match(c.pattern) || [];
  }

  /**
   * Normalised, lower-cased words, before stop-word removal and stemming.
   * @param {string} text
   * @param {TokenizerSpec} spec
   * @returns {string[]}
   */
  function words(text, spec) {
    return wordsOf(text, compile(spec));
  }

  /**
   * The BM25 tokens of `text`: what the index's terms are made of.
   * @param {string} text
   * @param {TokenizerSpec} spec
   * @returns {string[]}
   */
  function tokenize(text, spec) {
    const c = compile(spec);
    const kept = wordsOf(text, c).filter((w) => !c.stopwords.has(w));
    const stem = c.stem;
    const cjk = c.cjkChar;
    if (!cjk) return stem ? kept.map((w) => stem(w)) : kept;
    /** @type {string[]} */
    const out = [];
    for (const w of kept) {
      if (!cjk.test(w)) {
        out.push(stem ? stem(w) : w);
        continue;
      }
      for (const part of c.cut ? w.split(c.cut) : [w]) {
        if (part) grams(part, c.unigrams, out);
      }
    }
    return out;
  }

  /**
   * A CJK run's bigrams (and characters, with `unigrams`) appended to `out`.
   * @param {string} run
   * @param {boolean} unigrams
   * @param {string[]} out
   */
  function grams(run, unigrams, out) {
    // code points, as Python's str counts them (Han extensions are astral)
    const chars = Array.from(run);
    if (chars.length === 1) {
      out.push(run);
      return;
    }
    if (unigrams) out.push(...chars);
    for (let i = 0; i + 1 < chars.length; i++) out.push(chars[i] + chars[i + 1]);
  }

  const api = { tokenize, words };
  lib.tokenize = tokenize;
  lib.words = words;
  if (typeof module === "object" && module.exports) {
    module.exports = api;
  }
})();
