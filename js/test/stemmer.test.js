// @ts-check
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");

const { stem } = require("../stemmer.js");

/**
 * Pairs checked against PyStemmer 3.1 (`Stemmer.Stemmer("english")`), the
 * stemmer the Python side builds the index with.
 * @type {Record<string, string>}
 */
const PAIRS = {
  // the classic Porter2 examples
  consign: "consign",
  consigned: "consign",
  consigning: "consign",
  consignment: "consign",
  consist: "consist",
  consistency: "consist",
  consistently: "consist",
  generously: "generous",
  knightly: "knight",
  // step 1a
  caresses: "caress",
  ponies: "poni",
  ties: "tie",
  cries: "cri",
  cried: "cri",
  tied: "tie",
  gas: "gas",
  gaps: "gap",
  kiwis: "kiwi",
  // step 1b: undoubling, "e" restored, eed
  running: "run",
  hopping: "hop",
  hoped: "hope",
  hoping: "hope",
  filing: "file",
  luxuriating: "luxuri",
  agreed: "agre",
  feed: "feed",
  bled: "bled",
  controlling: "control",
  added: "add",
  eggs: "egg",
  // exceptional forms
  dying: "die",
  lying: "lie",
  tying: "tie",
  skies: "sky",
  skis: "ski",
  sky: "sky",
  news: "news",
  idly: "idl",
  gently: "gentl",
  ugly: "ugli",
  early: "earli",
  only: "onli",
  singly: "singl",
  atlas: "atlas",
  cosmos: "cosmos",
  bias: "bias",
  andes: "andes",
  howe: "howe",
  succeed: "succeed",
  succeeded: "succeed",
  proceed: "proceed",
  exceed: "exceed",
  inning: "inning",
  outing: "outing",
  canning: "canning",
  herring: "herring",
  earring: "earring",
  evening: "evening",
  // steps 2 to 5
  relational: "relat",
  conditional: "condit",
  rational: "ration",
  electrical: "electr",
  electricity: "electr",
  hopefulness: "hope",
  callousness: "callous",
  decisiveness: "decis",
  formalize: "formal",
  sensitivity: "sensit",
  sensibility: "sensibl",
  adjustable: "adjust",
  adjustment: "adjust",
  defensible: "defens",
  replacement: "replac",
  adoption: "adopt",
  biology: "biolog",
  geologist: "geolog",
  happily: "happili",
  happiness: "happi",
  // R1 prefixes (gener, commun, arsen, and Snowball 3's additions)
  generate: "generat",
  generation: "generat",
  communism: "communism",
  communication: "communic",
  arsenal: "arsenal",
  organization: "organiz",
  universal: "universal",
  university: "universiti",
  international: "internat",
  emergency: "emergenc",
  past: "past",
  pasted: "paste",
  // y -> Y
  youth: "youth",
  yes: "yes",
  eying: "eye",
  enjoying: "enjoy",
  sayyid: "sayyid",
  abbey: "abbey",
  // the book's vocabulary
  coffee: "coffe",
  coffees: "coffe",
  brewing: "brew",
  grinding: "grind",
  roasted: "roast",
  extraction: "extract",
  espressos: "espresso",
  acidity: "acid",
  bitterness: "bitter",
};

test("known Porter2 / Snowball English pairs", () => {
  for (const [word, expected] of Object.entries(PAIRS)) {
    assert.equal(stem(word), expected, word);
  }
});

test("apostrophes", () => {
  assert.equal(stem("dog's"), "dog");
  assert.equal(stem("dogs'"), "dog");
  assert.equal(stem("'tis"), "tis");
  assert.equal(stem("o'neill's"), "o'neil");
  assert.equal(stem("it's"), "it");
  assert.equal(stem("'"), "'");
  assert.equal(stem("''"), "''");
});

test("short words and non-letters are left alone", () => {
  assert.equal(stem(""), "");
  assert.equal(stem("y"), "y");
  assert.equal(stem("yy"), "yy");
  assert.equal(stem("yyy"), "yyy");
  assert.equal(stem("is"), "is");
  assert.equal(stem("9"), "9");
  assert.equal(stem("2024s"), "2024s");
  assert.equal(stem("abc123ing"), "abc123");
});

test("non-ASCII letters count as consonants, one per code point", () => {
  assert.equal(stem("café"), "café");
  assert.equal(stem("cafés"), "café");
  assert.equal(stem("naïve"), "naïv");
  assert.equal(stem("crèmes"), "crèmes");
  assert.equal(stem("µm"), "µm");
  assert.equal(stem("straße"), "straße");
  assert.equal(stem("πολλούς"), "πολλούς");
  // U+1D51E is two UTF-16 units but one character: "hop 3" must see 4 characters.
  assert.equal(stem("\u{1D51E}ing"), "\u{1D51E}ing");
  assert.equal(stem("b\u{1D51E}"), "b\u{1D51E}");
});

test("stem rejects non-strings", () => {
  assert.throws(() => stem(/** @type {any} */ (42)), TypeError);
});

