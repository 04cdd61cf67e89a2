// @ts-check
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");

const { createStaticSearch } = require("../search.js");

const SPEC = {
  normalize: "NFKC",
  lowercase: true,
  pattern: "[\\p{L}\\p{N}]+",
  stopwords: ["a", "and", "the", "of"],
  stemmer: "snowball-english",
};

/**
 * Four passages; postings hold [doc delta, weight, ...]:
 *   bean:  doc 0 -> 500, doc 2 -> 300
 *   brew:  doc 1 -> 700, doc 2 -> 200
 *   grind: doc 0 -> 200, doc 3 -> 700
 * @returns {import("../search.js").StaticIndex}
 */
function makeIndex() {
  return {
    format_version: 1,
    tokenizer: SPEC,
    weight_scale: 1000,
    terms: ["bean", "brew", "grind"],
    postings: [
      [0, 500, 2, 300],
      [1, 700, 1, 200],
      [0, 200, 3, 700],
    ],
    pages: ["index.html"],
    headings: ["1. Coffee", "1.0. Part 0", "1.1. Part 1", "1.2. Part 2", "1.3. Part 3"],
    passages: [0, 1, 2, 3].map((i) => /** @type {[string, number, number, number, string]} */ ([
      `ch0-sec0-p${i}`,
      0,
      0,
      i + 1,
      `Snippet ${i}`,
    ])),
  };
}

/** @param {Array<{passage_id: string}>} hits */
const ids = (hits) => hits.map((h) => h.passage_id);

test("one term: postings order, scores over weight_scale", () => {
  const hits = createStaticSearch(makeIndex()).search("Beans", 10);
  assert.deepEqual(ids(hits), ["ch0-sec0-p0", "ch0-sec0-p2"]);
  assert.deepEqual(hits[0], {
    passage_id: "ch0-sec0-p0",
    url: "index.html#ch0-sec0-p0",
    chapter: "1. Coffee",
    section: "1.0. Part 0",
    snippet: "Snippet 0",
    score: 0.5,
  });
  assert.equal(hits[1].score, 0.3);
});

test("weights add up over terms; ties go to the earlier passage", () => {
  const search = createStaticSearch(makeIndex()).search;
  // doc 0: 500 + 200, doc 3: 700, doc 2: 300
  assert.deepEqual(ids(search("grinding beans")), ["ch0-sec0-p0", "ch0-sec0-p3", "ch0-sec0-p2"]);
  // doc 1: 700, doc 0: 500, doc 2: 200 + 300
  assert.deepEqual(ids(search("brewed beans")), ["ch0-sec0-p1", "ch0-sec0-p0", "ch0-sec0-p2"]);
});

test("a repeated query token counts each time", () => {
  const search = createStaticSearch(makeIndex()).search;
  const once = search("grind beans");
  const twice = search("grind grinding beans");
  assert.deepEqual(ids(once), ["ch0-sec0-p0", "ch0-sec0-p3", "ch0-sec0-p2"]);
  // doc 3: 1400, doc 0: 900, doc 2: 300
  assert.deepEqual(ids(twice), ["ch0-sec0-p3", "ch0-sec0-p0", "ch0-sec0-p2"]);
  assert.equal(twice[0].score, 1.4);
});

test("k limits the hits; no known term gives none", () => {
  const search = createStaticSearch(makeIndex()).search;
  assert.deepEqual(ids(search("grinding beans", 1)), ["ch0-sec0-p0"]);
  assert.deepEqual(search("grinding beans", 0), []);
  assert.equal(search("bean brew grind").length, 4);
  assert.deepEqual(search("the and of"), []);
  assert.deepEqual(search("kettle"), []);
  assert.deepEqual(search(""), []);
});

test("the default k is 10", () => {
  const index = makeIndex();
  index.passages = Array.from({ length: 12 }, (_, i) => /** @type {[string, number, number, number, string]} */ ([
    `p${i}`, 0, 0, 0, "",
  ]));
  index.terms = ["bean"];
  index.postings = [Array.from({ length: 12 }, (_, i) => [i === 0 ? 0 : 1, 100 + i]).flat()];
  const hits = createStaticSearch(index).search("bean");
  assert.equal(hits.length, 10);
  assert.deepEqual(ids(hits).slice(0, 3), ["p11", "p10", "p9"]);
});

test("an unknown format_version is a clear error", () => {
  const index = /** @type {any} */ ({ ...makeIndex(), format_version: 2 });
  assert.throws(() => createStaticSearch(index), /unsupported static index format_version 2/);
  const old = /** @type {any} */ ({ ...makeIndex() });
  delete old.format_version;
  assert.throws(() => createStaticSearch(old), /format_version/);
  assert.throws(() => createStaticSearch(/** @type {any} */ (null)), /JSON object/);
});

test("an unknown stemmer fails when the search is created", () => {
  const index = makeIndex();
  index.tokenizer = { ...SPEC, stemmer: "lancaster" };
  assert.throws(() => createStaticSearch(index), /unknown stemmer "lancaster"/);
});

test("registers on globalThis.ragcite_lib", () => {
  const lib = /** @type {any} */ (globalThis).ragcite_lib;
  assert.equal(lib.createStaticSearch, createStaticSearch);
});

test("the three files work as classic browser scripts, in load order", () => {
  const fs = require("node:fs");
  const path = require("node:path");
  const vm = require("node:vm");
  /** @type {any} */
  const context = vm.createContext({});
  for (const name of ["stemmer.js", "tokenize.js", "search.js"]) {
    const file = path.join(__dirname, "..", name);
    vm.runInContext(fs.readFileSync(file, "utf8"), context, { filename: file });
  }
  const lib = context.ragcite_lib;
  assert.deepEqual(Object.keys(lib).sort(), ["createStaticSearch", "stem", "tokenize", "words"]);
  const hits = lib.createStaticSearch(makeIndex()).search("grinding beans");
  // (spread: arrays made in the vm context have that context's prototype)
  assert.deepEqual([...ids(hits)], ["ch0-sec0-p0", "ch0-sec0-p3", "ch0-sec0-p2"]);
});
