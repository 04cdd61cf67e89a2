// @ts-check
/**
 * The BM25 tokenizer of sphinx_ragcite, run in the browser.
 *
 * It follows the spec the index carries (`index.tokenizer`, written by
 * `sphinx_ragcite/index/tokenize.py`): Unicode-normalise, lower-case, find the
 * runs of letters and numbers, drop stop words, stem. Python and JS must give
 * the same tokens for the same text; `tests/test_static_parity.py` checks it.
 *
 * Classic script: registers `tokenize` and `words` on `globalThis.ragcite_lib`
 * (load `stemmer.js` first), and on `module.exports` under Node.
 */

/**
 * The tokenizer spec stored in the static index.
 * @typedef {object} TokenizerSpec
 * @property {string} [normalize] Unicode normalisation form, e.g. "NFKC"
 * @property {boolean} [lowercase]
 * @property {string} [pattern] a word, as a JS regex source (flag `u`)
 * @property {string[]} [stopwords] dropped before stemming
 * @property {string | null} [stemmer] "snowball-english", or null for none
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
   */

  const DEFAULT_PATTERN = "[\\p{L}\\p{N}]+";
  const NORMAL_FORMS = new Set(["NFC", "NFD", "NFKC", "NFKD"]);
  const STEMMERS = new Set(["snowball-english"]);

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
      stem: name === null ? null : snowballEnglish(),
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
    return stem ? kept.map((w) => stem(w)) : kept;
  }

  const api = { tokenize, words };
  lib.tokenize = tokenize;
  lib.words = words;
  if (typeof module === "object" && module.exports) {
    module.exports = api;
  }
})();
