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
 * Four passages of 10 tokens each (so every length is the average and a
 * weight is idf * tf / (1.5 + tf)); every term is in two passages, so its
 * idf is log(1 + 2.5 / 2.5) = log 2. Postings hold [doc delta, tf, ...]:
 *   bean:  doc 0 tf 3 (0.4621), doc 2 tf 2 (0.3961)
 *   brew:  doc 1 tf 6 (0.5545), doc 2 tf 1 (0.2773)
 *   grind: doc 0 tf 1 (0.2773), doc 3 tf 4 (0.5041)
 * @returns {import("../search.js").StaticIndex}
 */
function makeIndex() {
  return {
    format_version: 2,
    tokenizer: SPEC,
    bm25: { method: "lucene", k1: 1.5, b: 0.75 },
    lengths: [10, 10, 10, 10],
    terms: ["bean", "brew", "grind"],
    postings: [
      [0, 3, 2, 2],
      [1, 6, 1, 1],
      [0, 1, 3, 4],
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
/** A lucene weight at the average length, rounded to float32 as bm25s stores it. */
const weight = (/** @type {number} */ tf) => Math.fround(Math.fround(Math.LN2) * (tf / (1.5 + tf)));

test("one term: bm25s's lucene weights, as float32", () => {
  const hits = createStaticSearch(makeIndex()).search("Beans", 10);
  assert.deepEqual(ids(hits), ["ch0-sec0-p0", "ch0-sec0-p2"]);
  assert.deepEqual(hits[0], {
    passage_id: "ch0-sec0-p0",
    url: "index.html#ch0-sec0-p0",
    chapter: "1. Coffee",
    section: "1.0. Part 0",
    snippet: "Snippet 0",
    score: weight(3),
  });
  assert.ok(Math.abs(hits[0].score - 0.4621) < 1e-4, String(hits[0].score));
  assert.ok(Math.abs(hits[1].score - 0.3961) < 1e-4, String(hits[1].score));
});

test("a longer passage weighs a term less", () => {
  const index = makeIndex();
  index.lengths = [30, 10, 10, 10]; // average 15: doc 0 above it, the rest below
  const [first] = createStaticSearch(index).search("bean");
  assert.equal(first.passage_id, "ch0-sec0-p2"); // tf 2 at length 10 beats tf 3 at 30
});

test("weights add up over terms, in float32", () => {
  const search = createStaticSearch(makeIndex()).search;
  // doc 0: 0.4621 + 0.2773, doc 3: 0.5041, doc 2: 0.3961
  const hits = search("grinding beans");
  assert.deepEqual(ids(hits), ["ch0-sec0-p0", "ch0-sec0-p3", "ch0-sec0-p2"]);
  assert.equal(hits[0].score, Math.fround(weight(1) + weight(3)));
  // doc 2: 0.2773 + 0.3961, doc 1: 0.5545, doc 0: 0.4621
  assert.deepEqual(ids(search("brewed beans")), ["ch0-sec0-p2", "ch0-sec0-p1", "ch0-sec0-p0"]);
});

test("ties go to the earlier passage", () => {
  const index = makeIndex();
  index.postings[0] = [0, 2, 2, 2]; // bean: the same weight in docs 0 and 2
  assert.deepEqual(ids(createStaticSearch(index).search("bean")), ["ch0-sec0-p0", "ch0-sec0-p2"]);
});

test("a repeated query token counts each time", () => {
  const search = createStaticSearch(makeIndex()).search;
  const once = search("brew beans");
  const twice = search("brew brewing beans");
  assert.deepEqual(ids(once), ["ch0-sec0-p2", "ch0-sec0-p1", "ch0-sec0-p0"]);
  // doc 1: 2 x 0.5545, doc 2: 2 x 0.2773 + 0.3961, doc 0: 0.4621
  assert.deepEqual(ids(twice), ["ch0-sec0-p1", "ch0-sec0-p2", "ch0-sec0-p0"]);
  assert.equal(twice[0].score, Math.fround(weight(6) + weight(6)));
});

test("scores() gives every passage holding a token; tokens() and df()", () => {
  const searcher = createStaticSearch(makeIndex());
  assert.deepEqual(searcher.tokens("Grinding the beans"), ["grind", "bean"]);
  const scores = searcher.scores(["grind", "bean"]);
  assert.deepEqual([...scores.keys()].sort(), [0, 2, 3]);
  assert.equal(scores.get(3), weight(4));
  assert.equal(searcher.df("bean"), 2);
  assert.equal(searcher.df("kettle"), 0);
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
  index.lengths = new Array(12).fill(10);
  index.terms = ["bean"];
  index.postings = [Array.from({ length: 12 }, (_, i) => [i === 0 ? 0 : 1, 1 + i]).flat()];
  const hits = createStaticSearch(index).search("bean");
  assert.equal(hits.length, 10);
  assert.deepEqual(ids(hits).slice(0, 3), ["p11", "p10", "p9"]);
});

test("an index without BM25 parameters or lengths is a clear error", () => {
  const index = /** @type {any} */ (makeIndex());
  delete index.bm25;
  assert.throws(() => createStaticSearch(index), /lucene BM25 parameters/);
  const short = /** @type {any} */ ({ ...makeIndex(), lengths: [10] });
  assert.throws(() => createStaticSearch(short), /one length per passage/);
});

test("an unknown format_version is a clear error", () => {
  const index = /** @type {any} */ ({ ...makeIndex(), format_version: 1 });
  assert.throws(() => createStaticSearch(index), /unsupported static index format_version 1/);
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

