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
 * Classic script: provides `tokenize` (see `lib.js`).
 */

/**
 * The tokenizer spec stored in the static index.
 * @typedef {object} TokenizerSpec
 * @property {string} [normalize] Unicode normalisation form, e.g. "NFKC"
 * @property {boolean} [lowercase]
 * @property {string} [pattern] a word, as a JS regex source (flag `u`)
 * @property {readonly string[]} [stopwords] dropped before stemming
 * @property {string | null} [stemmer] "snowball-english", "snowball-german"...,
 *   or null for none
 * @property {string} [language] the book's search language ("de", "zh"...)
 * @property {string} [segment] "cjk-bigrams": CJK runs become bigrams
 * @property {ReadonlyArray<readonly [number, number]>} [cjk_ranges] inclusive
 *   code point ranges
 * @property {boolean} [cjk_unigrams] single characters besides the bigrams
 * @property {readonly string[]} [cjk_stopwords] words that cut a CJK run in two
 *   (question words: no bigram spans them), longest first where two overlap
 * @property {number} [max_token_length] a word of more code points is no
 *   token (`text.MAX_TOKEN_LENGTH`); absent in indexes written before the cap
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
   * @property {number} longest code points of the longest word kept
   */

  const lib = typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib;
  // the text contract's names (`text.py`, through `spec.js`)
  const shared = lib.need("spec");
  const { ENGLISH_SPEC, SNOWBALL_STEMMERS, CJK_SCHEME } = shared;
  const DEFAULT_PATTERN = ENGLISH_SPEC.pattern;
  const NORMAL_FORMS = new Set(["NFC", "NFD", "NFKC", "NFKD"]);
  /** Snowball stemmers: English, and those in `snowball/<name>.js`. */
  const STEMMERS = new Set(["snowball-english", ...SNOWBALL_STEMMERS.map((n) => "snowball-" + n)]);

  /** @returns {(word: string) => string} */
  function snowballEnglish() {
    return lib.need("stemmer").stem;
  }

  /**
   * @param {string} name "snowball-english", "snowball-german", ...
   * @returns {(word: string) => string}
   */
  function snowball(name) {
    const language = name.slice("snowball-".length);
    if (language === "english") return snowballEnglish();
    return lib.need(`snowball/${language}`).stem;
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
    const byLength = [...cuts].sort((a, b) => Array.from(b).length - Array.from(a).length);
    const longest = spec.max_token_length == null ? Infinity : spec.max_token_length;
    if (longest !== Infinity && !(Number.isInteger(longest) && longest >= 1)) {
      throw new Error(`ragcite tokenize: max_token_length must be a positive integer, got ${JSON.stringify(longest)}`);
    }
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
      cut: byLength.length ? new RegExp(byLength.map(escapeRegExp).join("|"), "gu") : null,
      longest,
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
   * Whether `word` has more than `longest` code points (as Python's `len`
   * counts; `length` counts UTF-16 units, two for an astral character).
   * @param {string} word
   * @param {number} longest
   */
  function tooLong(word, longest) {
    if (word.length <= longest) return false;
    let n = 0;
    for (let i = 0; i < word.length; i++) {
      const unit = word.charCodeAt(i);
      // a low surrogate after a high one ends the pair counted already
      if (!(unit >= 0xdc00 && unit <= 0xdfff && i > 0 && (word.charCodeAt(i - 1) & 0xfc00) === 0xd800)) n++;
      if (n > longest) return true;
    }
    return false;
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
    const longest = c.longest;
    if (!cjk) {
      // a word over the cap is no token (as `text.Tokenizer.tokenize`)
      const short = longest === Infinity ? kept : kept.filter((w) => !tooLong(w, longest));
      return stem ? short.map((w) => stem(w)) : short;
    }
    /** @type {string[]} */
    const out = [];
    for (const w of kept) {
      if (!cjk.test(w)) {
        // a CJK run is never over the cap: its bigrams are two characters
        if (!tooLong(w, longest)) out.push(stem ? stem(w) : w);
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
  lib.provide("tokenize", api);
  if (typeof module === "object") module.exports = api;
})();
