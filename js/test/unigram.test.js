// @ts-check
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");

const { Unigram, questionTokenizer, graphemes } = require("../unigram.js");
const { WordPiece } = require("../wordpiece.js");

const REPO = path.join(__dirname, "..", "..");
/** Written by tools/write_unigram_cases.py from Python's `tokenizers`: a
 * pruned tokenizer.json, the full id of each of its pieces, and the cases'
 * full-vocabulary ids. */
const GOLDEN = JSON.parse(fs.readFileSync(path.join(REPO, "tests", "golden", "unigram_cases.json"), "utf8"));
/** @type {number[]} */
const FULL_ID = GOLDEN.vocab_ids;
const unigram = Unigram.fromJSON(GOLDEN.tokenizer);

/**
 * The full-vocabulary ids of `text`, as the case file stores them.
 * @param {string} text
 * @param {number} maxTokens
 */
const fullIds = (text, maxTokens) => unigram.encode(text, maxTokens).ids.map((id) => FULL_ID[id]);

/** The cases the JS cuts otherwise than Python, described. */
function disagreements() {
  const wrong = [];
  for (const c of GOLDEN.cases) {
    const got = unigram.encode(c.text, c.max_tokens);
    assert.equal(got.attentionMask.length, got.ids.length);
    assert.ok(got.attentionMask.every((x) => x === 1));
    assert.ok(got.typeIds.every((x) => x === 0) && got.typeIds.length === got.ids.length);
    const ids = got.ids.map((id) => FULL_ID[id]);
    if (JSON.stringify(ids) !== JSON.stringify(c.ids)) {
      wrong.push(`${c.about}: ${JSON.stringify(c.text.slice(0, 60))}\n  py ${c.ids}\n  js ${ids}`);
    }
  }
  return wrong;
}

test("every golden case: the ids of Python's tokenizers", () => {
  const wrong = disagreements();
  assert.equal(wrong.length, 0, wrong.join("\n"));
  assert.ok(GOLDEN.cases.length > 500, "the case file holds the dev-set questions");
});

test("without Intl.Segmenter (Firefox before 125), the same ids", () => {
  const intl = /** @type {any} */ (Intl);
  const Segmenter = intl.Segmenter;
  // the stand-in really runs: it cuts a flag into its two letters, ICU does not
  assert.deepEqual([...graphemes("🇫🇷")], ["🇫🇷"]);
  intl.Segmenter = undefined;
  try {
    assert.deepEqual([...graphemes("🇫🇷")], ["🇫", "🇷"]);
    assert.deepEqual([...graphemes("a\r\nÅ\u0301\u200d\t\u0301")], ["a", "\r\n", "Å\u0301\u200d", "\t", "\u0301"]);
    const wrong = disagreements();
    assert.equal(wrong.length, 0, wrong.join("\n"));
  } finally {
    intl.Segmenter = Segmenter;
  }
});

test("the case file covers what it must", () => {
  const about = GOLDEN.cases.map((/** @type {{about: string}} */ c) => c.about).join("\n");
  for (const what of [
    "empty", "Chinese", "half-width kana", "full-width ASCII", "Korean", "accents", "combining marks",
    "grapheme rule", "emoji ZWJ", "control", "CRLF", "runs of spaces", "tabs", "unknown characters fused",
    "long input truncated at 192", "max_tokens 2", "dev-set question: xuance_zh",
    "dev-set question: rqalpha_zh", "dev-set question: network_ja", "dev-set question: requests",
  ]) {
    assert.ok(about.includes(what), what);
  }
  const unk = GOLDEN.tokenizer.model.unk_id;
  assert.ok(GOLDEN.cases.some((/** @type {{ids: number[]}} */ c) => c.ids.includes(FULL_ID[unk])), "an unknown piece");
  assert.ok(GOLDEN.cases.filter((/** @type {{ids: number[]}} */ c) => c.ids.length === 192).length >= 3, "truncation");
});

test("the grapheme rule: a replaced character takes its marks with it, under 6 bytes", () => {
  // U+00A0 and U+FF21 are replaced (" ", "A"); the mark after them is dropped
  // with them when the grapheme is under 6 UTF-8 bytes, kept when it is not
  assert.equal(unigram.normalize("\u00a0\u0301x"), " x");
  assert.equal(unigram.normalize("Ａ\u0301"), "A");
  assert.equal(unigram.normalize("Ａ\u0301\u0301"), "A\u0301\u0301");
  assert.equal(unigram.normalize("a\r\nb"), "a b");
  assert.equal(unigram.normalize("a \t\t b"), "a b");
});

test("<s> and </s> around the pieces; maxTokens counts them", () => {
  const text = "玄策支持哪些算法？";
  const full = unigram.encode(text, 192).ids;
  assert.equal(full[0], 0);
  assert.equal(full.at(-1), 2);
  assert.ok(full.length > 5);
  assert.deepEqual(unigram.encode(text, 5).ids, [...full.slice(0, 4), 2]);
  assert.deepEqual(unigram.encode(text, 2).ids, [0, 2]);
  assert.deepEqual(unigram.encode("", 192).ids, [0, 2]);
  assert.throws(() => unigram.encode("x", 1), RangeError);
  assert.throws(() => unigram.encode("x", 2.5), RangeError);
});

test("runs of unknown characters are one unknown piece", () => {
  const unk = FULL_ID[GOLDEN.tokenizer.model.unk_id];
  // U+F0000 (private use) and U+0378 (unassigned): no piece; U+E000 has one
  assert.deepEqual(fullIds("x\u{f0000}\u{f0001}\u0378y", 192), [0, 1022, unk, 53, 2]);
  assert.deepEqual(fullIds("\u{f0000} \u0378", 192), [0, 6, unk, 6, unk, 2]);
  assert.deepEqual(fullIds("\ue000\u{f0000}", 192), [0, 6, 244343, unk, 2]);
});

test("lone surrogates, which Python cannot hold, are dropped", () => {
  assert.deepEqual(unigram.encode("a\uD800b \uDC00", 192).ids, unigram.encode("ab ", 192).ids);
});

test("questionTokenizer picks the model the tokenizer.json names", () => {
  assert.ok(questionTokenizer(GOLDEN.tokenizer) instanceof Unigram);
  const cases = JSON.parse(fs.readFileSync(path.join(REPO, "tests", "golden", "wordpiece_cases.json"), "utf8"));
  const bert = JSON.parse(fs.readFileSync(path.join(REPO, cases.tokenizer), "utf8"));
  const picked = questionTokenizer(bert);
  assert.ok(picked instanceof WordPiece);
  assert.deepEqual(picked.encode(cases.cases[1].text, cases.cases[1].max_tokens).ids, cases.cases[1].ids);
  assert.throws(() => questionTokenizer({ model: { type: "BPE" } }), /model "BPE" is not supported/);
});

test("fromJSON refuses what it cannot reproduce, naming it", () => {
  /** @param {(json: any) => void} change */
  const variant = (change) => {
    const json = structuredClone(GOLDEN.tokenizer);
    change(json);
    return json;
  };
  assert.throws(() => Unigram.fromJSON(null), /not a JSON object/);
  assert.throws(() => Unigram.fromJSON(variant((j) => { j.model.type = "WordPiece"; })), /model "WordPiece"/);
  assert.throws(() => Unigram.fromJSON(variant((j) => { j.model.byte_fallback = true; })), /byte_fallback/);
  assert.throws(() => Unigram.fromJSON(variant((j) => { j.model.unk_id = null; })), /unk_id null/);
  assert.throws(
    () => Unigram.fromJSON(variant((j) => { j.added_tokens = [{ id: 0, content: "<s>" }]; })),
    /added tokens \("<s>"\)/,
  );
  assert.throws(() => Unigram.fromJSON(variant((j) => { j.normalizer = { type: "NFKC" }; })), /normalizer "NFKC"/);
  assert.throws(
    () => Unigram.fromJSON(variant((j) => { j.normalizer.normalizers[1].pattern = { Regex: "\\s+" }; })),
    /Replace pattern/,
  );
  assert.throws(
    () => Unigram.fromJSON(variant((j) => { j.pre_tokenizer.prepend_scheme = "first"; })),
    /prepend_scheme "first"/,
  );
  assert.throws(() => Unigram.fromJSON(variant((j) => { j.pre_tokenizer = { type: "Whitespace" }; })), /pre_tokenizer "Whitespace"/);
  assert.throws(() => Unigram.fromJSON(variant((j) => { j.post_processor.single.pop(); })), /post_processor/);
  assert.throws(
    () => Unigram.fromJSON(variant((j) => { j.normalizer.normalizers[0].precompiled_charsmap = "AAAA"; })),
    /precompiled_charsmap is too short|cut short/,
  );
});
