// @ts-check
"use strict";
/**
 * The answer engine's modules on their own (their parity with Python on
 * real books is `parity.test.js`'s, through tests/test_browser_parity.py).
 */

const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");
const vm = require("node:vm");

const S = require("../sentences.js");
const F = require("../fusion.js");
const RT = require("../retrieve.js");
const R = require("../ranker.js");
const U = require("../units.js");
const { createEngine } = require("../engine.js");

const RANKER = JSON.parse(
  fs.readFileSync(path.join(__dirname, "..", "..", "sphinx_ragcite", "answer", "ranker.json"), "utf8"),
);

test("pyRegExp gives \\w, \\b and \\d Python's Unicode meaning", () => {
  assert.deepEqual("café naïve_x 42".match(S.pyRegExp("\\w+", "g")), ["café", "naïve_x", "42"]);
  assert.ok(S.pyRegExp("\\bnaïve\\b").test("a naïve b"));
  assert.ok(!S.pyRegExp("\\bcaf\\b").test("café"), "é is a word character, so no boundary after caf");
  assert.deepEqual("٣٤ and 12".match(S.pyRegExp("\\d+", "g")), ["٣٤", "12"]);
  assert.ok(!S.pyRegExp("^a.b$").test("a\nb"), ". stops at a newline");
  assert.ok(S.pyRegExp("^a.b$").test("a\rb"), "but not at a carriage return");
  assert.ok(S.pyRegExp("^ab$").test("ab\n"), "$ matches before a final newline");
  assert.ok(S.pyRegExp('[\\"”]').test('"'), "an escaped quote is a quote");
  assert.throws(() => S.pyRegExp("\\A"), /not translated/);
});

test("splitSentences: abbreviations, initials, CJK, lines; offsets in the text", () => {
  const text = "See e.g. Dr. Smith. J. R. R. Tolkien wrote it. 茶很好。咖啡也好！\n- a list item\nEnd";
  const got = S.splitSentences(text);
  assert.deepEqual(
    got.map((s) => s.text),
    // as Python: no boundary before 茶, a sentence starts with a capital or digit
    ["See e.g. Dr. Smith.", "J. R. R. Tolkien wrote it. 茶很好。", "咖啡也好！", "- a list item", "End"],
  );
  for (const s of got) assert.equal(text.slice(s.start, s.end), s.text);
});

test("code points, not UTF-16 units, are what Python counts", () => {
  assert.equal(S.codePoints("𠮷a"), 2);
  assert.equal(S.pythonOffset("𠮷ab", 3), 2);
  assert.ok(S.compareStrings("\uffff", "𠮷") < 0, "U+FFFF sorts before U+20BB7 in Python");
  assert.ok("\uffff" > "𠮷", "(JS's < compares UTF-16 units)");
  assert.equal(S.wordCount("安装XuanCe的方法"), 4); // 安装 1, xuance 1, 的方法 2
});

test("pyRound rounds like Python: ties of the exact binary value to even", () => {
  assert.equal(R.pyRound(0.03125, 4), 0.0312); // exactly representable: a tie
  assert.equal(R.pyRound(0.8555, 4), 0.8555);
  assert.equal(R.pyRound(2.5, 0), 2);
  assert.equal(R.pyRound(3.5, 0), 4);
  assert.equal(R.pyRound(1.00005, 4), 1.0001); // 1.00005 is a little above in binary
});

test("interp follows numpy.interp at and beyond the ends", () => {
  const xp = [0.1, 0.5, 0.5, 0.9];
  const fp = [0.0, 0.4, 0.6, 1.0];
  assert.equal(R.interp(0.0, xp, fp), 0.0);
  assert.equal(R.interp(2.0, xp, fp), 1.0);
  assert.equal(R.interp(0.9, xp, fp), 1.0);
  assert.ok(Math.abs(R.interp(0.3, xp, fp) - 0.2) < 1e-12);
  assert.equal(R.interp(0.5, xp, fp), 0.6); // the last of equal x
});

test("parseRanker reads ranker.json and refuses other features", () => {
  const ranker = R.parseRanker(RANKER);
  assert.equal(ranker.answerAt, RANKER.outcomes.answer);
  assert.equal(ranker.passagesAt, RANKER.outcomes.passages);
  assert.equal(ranker.second, RANKER.second);
  assert.throws(() => R.parseRanker({ ...RANKER, features: ["similarity"] }), /trained on features/);
  const { outcomes, ...old } = RANKER;
  assert.equal(R.parseRanker(old).passagesAt, RANKER.threshold / 2);
});

test("pairwiseSum is numpy's float32 pairwise summation", () => {
  const a = Float32Array.from({ length: 384 }, (_, i) => Math.sin(i) * 0.1);
  // 384 -> 192 + 192 -> (96 + 96) each; blocks of 8 accumulators
  let plain = 0;
  for (const x of a) plain = Math.fround(plain + x);
  const pairwise = RT.pairwiseSum(a, 0, 384);
  assert.equal(pairwise, Math.fround(pairwise));
  assert.ok(Math.abs(pairwise - plain) < 1e-5);
  assert.equal(RT.pairwiseSum(a, 0, 5), [...a.slice(0, 5)].reduce((s, x) => Math.fround(s + x), 0));
});

test("linear fusion: min-max per side in float32, ties to the smaller row", () => {
  const candidates = {
    lexical: [3, 1],
    semantic: [2, 1],
    bm25: new Map([
      [1, 2.0],
      [2, 0.0],
      [3, 4.0],
    ]),
    dense: new Map([
      [1, 0.5],
      [2, 0.7],
      [3, 0.3],
    ]),
  };
  const fused = F.linear(candidates);
  assert.equal(fused.get(3), 0.5); // best BM25, worst dense
  assert.equal(fused.get(2), 0.5); // the other way round
  assert.equal(fused.get(1), Math.fround(0.25 + 0.25));
  assert.deepEqual(
    F.fuse(candidates, 2, "hybrid").map(([row]) => row),
    [1, 2],
  );
  assert.deepEqual(F.fuse(candidates, 1, "bm25"), [[3, 4.0]]);
});

test("question kinds and answer kinds", () => {
  assert.equal(U.questionKind("How many grams of coffee?"), "quantity");
  assert.equal(U.questionKind("How can I count how often -v was given?"), "howto");
  assert.equal(U.questionKind("Who invented the French press?"), "who");
  assert.equal(U.kindMatch("who", "The French press is a jug.", "Who invented the French press?"), 0);
  assert.equal(U.kindMatch("who", "Attilio Calimani patented it.", "Who invented the French press?"), 1);
  assert.equal(U.kindMatch("when", "It opened in 1890.", "When did it open?"), 1);
  assert.equal(U.kindMatch("other", "anything"), 0.5);
});

/**
 * A book of three passages with two-dimensional vectors, in memory.
 * @returns {import("../types").EngineStore}
 */
function tinyStore() {
  const records = [
    ["Kettles", "A gooseneck kettle pours a slow, steady stream of water. It helps pour-over brewing."],
    ["Grinders", "A burr grinder crushes beans between two burrs. Blade grinders chop unevenly."],
    ["Water", "Soft water extracts coffee well. Hard water leaves scale in the kettle over time."],
  ].map(([section, text], i) => ({
    passage_id: `ch1-sec${i + 1}-p1`,
    docname: "gear",
    url: `gear.html#ch1-sec${i + 1}-p1`,
    chapter: "1. Gear",
    section: `1.${i + 1}. ${section}`,
    heading_path: ["Gear", section],
    snippet: text.slice(0, 50),
    text,
    char_start: 0,
    char_end: text.length,
    content_hash: "",
  }));
  const T = require("../tokenize.js");
  const corpus = records.map((r) => T.tokenize(`${r.heading_path.join(" ")}\n${r.text}`, S.ENGLISH));
  /** @type {Map<string, number[]>} */
  const postings = new Map();
  corpus.forEach((tokens, doc) => {
    const counts = new Map();
    for (const t of tokens) counts.set(t, (counts.get(t) || 0) + 1);
    for (const [t, tf] of counts) {
      const list = postings.get(t) || [];
      const last = list.length ? list.reduce((s, v, i) => (i % 2 === 0 ? s + v : s), 0) : 0;
      list.push(doc - last, tf);
      postings.set(t, list);
    }
  });
  const terms = [...postings.keys()].sort();
  /** @type {import("../types").StaticIndex} */
  const staticIndex = {
    format_version: 2,
    tokenizer: S.ENGLISH,
    bm25: { method: "lucene", k1: 1.5, b: 0.75 },
    lengths: corpus.map((c) => c.length),
    terms,
    postings: terms.map((t) => postings.get(t) || []),
    pages: ["gear.html"],
    headings: ["1. Gear", ...records.map((r) => r.section)],
    passages: records.map((r, i) => [r.passage_id, 0, 0, i + 1, r.snippet]),
  };
  const dirs = [
    [1, 0],
    [0, 1],
    [0.6, 0.8],
  ];
  const codes = Int8Array.from(dirs.flat().map((v) => Math.round(v * 127)));
  const scales = Float32Array.from([1 / 127, 1 / 127, 1 / 127]);
  // the same index, sharded: one term shard, one passage shard
  /** @type {Record<string, unknown>} */
  const shards = {
    "search/terms.json": { terms, postings: staticIndex.postings },
    "search/rows.json": {
      pages: staticIndex.pages,
      headings: staticIndex.headings,
      docnames: ["gear"],
      titles: [...new Set(records.flatMap((r) => r.heading_path))],
      rows: staticIndex.passages.map((p, i) => [...p, 0, records[i].heading_path.map((t) => [...new Set(records.flatMap((r) => r.heading_path))].indexOf(t))]),
    },
  };
  const root = {
    format_version: 3,
    tokenizer: S.ENGLISH,
    bm25: staticIndex.bm25,
    rows: 3,
    lengths: staticIndex.lengths,
    terms: [[terms[0], "search/terms.json"]],
    passages: [[3, "search/rows.json"]],
  };
  const lexical = require("../search.js").createShardedSearch(root, async (name) => shards[name]);
  return {
    async core() {
      return {
        // only what the engine reads of a manifest
        manifest: /** @type {import("../types").Manifest} */ (
          /** @type {unknown} */ ({ embedding: { dim: 2, search: true }, sha256: { passages: "0123456789abcdef0123" } })
        ),
        ranker: RANKER,
        rows: 3,
        lexical,
        passageVectors: { codes, scales, dim: 2, rows: 3 },
        dense: null,
      };
    },
    async passages(rows) {
      return rows.map((row) => {
        const n = S.splitSentences(records[row].text).length;
        return {
          row,
          record: records[row],
          sentences: { codes: Int8Array.from({ length: 2 * n }, () => codes[2 * row]), scales: new Float32Array(n).fill(1 / 127) },
        };
      });
    },
  };
}

test("createEngine answers with the /api/ask JSON, from a store", async () => {
  const engine = await createEngine(tinyStore(), { clock: () => new Date("2026-01-15T10:30:45.678Z") });
  const answer = await engine.answer("  What does a gooseneck kettle pour?  ", Float32Array.from([1, 0]));
  assert.equal(answer.question, "What does a gooseneck kettle pour?");
  assert.equal(answer.mode, "book");
  assert.deepEqual(Object.keys(answer), [
    "question", "mode", "answer", "citations", "confidence", "confidence_level",
    "grounded", "metadata", "outcome", "passages",
  ]);
  assert.equal(answer.metadata.generator, "extractive");
  assert.equal(answer.metadata.engine, "browser");
  assert.equal(answer.metadata.index_version, "0123456789abcdef");
  assert.equal(/** @type {string[]} */ (answer.metadata.retrieved)[0], "ch1-sec1-p1");
  assert.ok(["answer", "passages", "not_found"].includes(/** @type {string} */ (answer.outcome)));
  if (answer.outcome === "answer") {
    assert.equal(answer.citations[0].citation_date, "2026-01-15T10:30:45Z");
    assert.match(answer.answer, /\[1\]$/);
  } else {
    assert.ok(Array.isArray(answer.metadata.see_also));
  }
  const bm25Only = await engine.answer("burr grinder", null);
  assert.equal(/** @type {string[]} */ (bm25Only.metadata.retrieved)[0], "ch1-sec2-p1");
});

test("a bad question or k is a RangeError, as the server's 400", async () => {
  const engine = await createEngine(tinyStore());
  await assert.rejects(engine.answer("   ", null), RangeError);
  await assert.rejects(engine.answer("x".repeat(2001), null), /at most 2000/);
  await assert.rejects(engine.answer("kettle", null, { k: 0 }), RangeError);
  await assert.rejects(engine.answer("kettle", Float32Array.from([1, 0, 0])), /question vector/);
});

