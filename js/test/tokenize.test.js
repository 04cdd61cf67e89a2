// @ts-check
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");

const { tokenize, words } = require("../tokenize.js");

/** The spec `sphinx_ragcite/index/tokenize.py` writes into the index. */
const SPEC = {
  normalize: "NFKC",
  lowercase: true,
  pattern: "[\\p{L}\\p{N}]+",
  stopwords: [
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in",
    "into", "is", "it", "no", "not", "of", "on", "or", "such", "that", "the",
    "their", "then", "there", "these", "they", "this", "to", "was", "will",
    "with",
  ],
  stemmer: "snowball-english",
  max_token_length: 255,
};

test("words: normalise, lower-case, split on letters and numbers", () => {
  assert.deepEqual(words("The grinders are grinding the beans", SPEC), [
    "the", "grinders", "are", "grinding", "the", "beans",
  ]);
  assert.deepEqual(words("", SPEC), []);
  assert.deepEqual(words("  ,.;  ", SPEC), []);
});

test("tokenize: stop words dropped before stemming", () => {
  assert.deepEqual(tokenize("The grinders are grinding the beans", SPEC), [
    "grinder", "grind", "bean",
  ]);
  // "thes" is no stop word, though its stem would be "the".
  assert.deepEqual(tokenize("this is it", SPEC), []);
});

test("NFKC: ligatures, micro sign, fullwidth, superscripts, roman numerals", () => {
  assert.deepEqual(words("The \uFB01le is \uFB01ne", SPEC), ["the", "file", "is", "fine"]);
  assert.deepEqual(tokenize("The \uFB01le is \uFB01ne", SPEC), ["file", "fine"]);
  // U+00B5 MICRO SIGN becomes U+03BC GREEK SMALL LETTER MU.
  assert.deepEqual(tokenize("5 \u00B5m particles", SPEC), ["5", "\u03BCm", "particl"]);
  assert.deepEqual(words("\uFF26\uFF55\uFF4C\uFF4C \uFF21\uFF22\uFF23\uFF11\uFF12\uFF13", SPEC), [
    "full", "abc123",
  ]);
  assert.deepEqual(words("x\u00B2 and \u00BD cup, \u2460", SPEC), ["x2", "and", "1", "2", "cup", "1"]);
  assert.deepEqual(tokenize("\u216B chapters", SPEC), ["xii", "chapter"]);
});

test("accented letters stay in the word", () => {
  assert.deepEqual(tokenize("Caf\u00E9 cr\u00E8me", SPEC), ["caf\u00E9", "cr\u00E8me"]);
  // Decomposed input is composed by NFKC first.
  assert.deepEqual(words("Cafe\u0301", SPEC), ["caf\u00E9"]);
});

test("numbers, punctuation and underscores split words", () => {
  assert.deepEqual(tokenize("A 1:16 ratio at 9-bar, 20.2 %", SPEC), [
    "1", "16", "ratio", "9", "bar", "20", "2",
  ]);
  assert.deepEqual(words("snake_case_name", SPEC), ["snake", "case", "name"]);
  assert.deepEqual(words("CamelCaseWord", SPEC), ["camelcaseword"]);
  assert.deepEqual(words("it's the dog\u2019s bowl", SPEC), ["it", "s", "the", "dog", "s", "bowl"]);
});

test("non-Latin scripts", () => {
  assert.deepEqual(words("\u039F\u0394\u039F\u03A3 \u039A\u0391\u0399", SPEC), [
    "\u03BF\u03B4\u03BF\u03C2", "\u03BA\u03B1\u03B9",
  ]);
  assert.deepEqual(words("Stra\u00DFe STRASSE \u1E9E", SPEC), ["stra\u00DFe", "strasse", "\u00DF"]);
  // Combining marks (Mn, Mc) are neither letters nor numbers.
  assert.deepEqual(words("\u0939\u093F\u0928\u094D\u0926\u0940", SPEC), ["\u0939", "\u0928", "\u0926"]);
  assert.deepEqual(words("\u0130stanbul", SPEC), ["i", "stanbul"]);
  assert.deepEqual(words("\u65E5\u672C\u8A9E", SPEC), ["\u65E5\u672C\u8A9E"]);
});

test("spec switches are honoured", () => {
  const plain = { normalize: "NFC", lowercase: false, stopwords: [], stemmer: null };
  assert.deepEqual(tokenize("The \uFB01les", plain), ["The", "\uFB01les"]);
});

test("an unknown stemmer or normal form is a clear error", () => {
  assert.throws(() => tokenize("x", { ...SPEC, stemmer: "porter-klingon" }), /unknown stemmer "porter-klingon"/);
  assert.throws(() => words("x", { ...SPEC, normalize: "NFX" }), /unknown normalization form/);
});

/** The shared case file: Python (tests/test_languages.py) runs the same cases. */
const CASES = JSON.parse(
  require("node:fs").readFileSync(
    require("node:path").join(__dirname, "..", "..", "tests", "golden", "tokenizer_cases.json"),
    "utf-8",
  ),
);

test("every book language tokenizes as the shared case file says", () => {
  const languages = new Set();
  for (const { language, text, tokens } of CASES.cases) {
    assert.deepEqual(tokenize(text, CASES.specs[language]), tokens, `${language}: ${text}`);
    languages.add(language);
  }
  for (const lang of ["en", "de", "fr", "zh_CN", "ja", "ko"]) assert.ok(languages.has(lang), lang);
});

test("CJK books: bigrams of CJK runs, Latin words stemmed as in English", () => {
  const spec = CASES.specs.zh_CN;
  assert.deepEqual(tokenize("强化学习", spec), ["强化", "化学", "学习"]);
  assert.deepEqual(tokenize("安装Python", spec), ["安装", "python"]);
  assert.deepEqual(words("安装Python的方法", spec), ["安装", "python", "的方法"]);
  // astral Han characters are one character each, as in Python
  assert.deepEqual(tokenize("𠮷野家", CASES.specs.ja), ["𠮷野", "野家"]);
  assert.deepEqual(tokenize("强化学习", { ...spec, cjk_unigrams: true }), [
    "强", "化", "学", "习", "强化", "化学", "学习",
  ]);
  assert.throws(() => tokenize("x", { ...spec, segment: "jieba" }), /unknown segmentation/);
});

test("words over max_token_length code points are no token (issue 42)", () => {
  const astral = "\u{10300}".repeat(255); // 510 UTF-16 units, 255 code points
  assert.deepEqual(tokenize(`bloom ${"w".repeat(256)} ${astral}`, SPEC), ["bloom", astral]);
  // an index written before the cap kept them
  const { max_token_length: _, ...old } = SPEC;
  assert.deepEqual(tokenize(`bloom ${"w".repeat(256)}`, old), ["bloom", "w".repeat(256)]);
  assert.throws(() => tokenize("x", { ...SPEC, max_token_length: 0 }), /max_token_length/);
});
