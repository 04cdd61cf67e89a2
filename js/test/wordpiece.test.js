// @ts-check
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");

const { WordPiece } = require("../wordpiece.js");

const REPO = path.join(__dirname, "..", "..");
/** Written by tools/write_wordpiece_cases.py from Python's `tokenizers`. */
const GOLDEN = JSON.parse(
  fs.readFileSync(path.join(REPO, "tests", "golden", "wordpiece_cases.json"), "utf8"),
);
const TOKENIZER_JSON = JSON.parse(fs.readFileSync(path.join(REPO, GOLDEN.tokenizer), "utf8"));
const wordpiece = WordPiece.fromJSON(TOKENIZER_JSON);

test("every golden case: the ids of Python's tokenizers", () => {
  const wrong = [];
  for (const c of GOLDEN.cases) {
    const got = wordpiece.encode(c.text, c.max_tokens);
    assert.equal(got.attentionMask.length, got.ids.length);
    assert.ok(got.attentionMask.every((x) => x === 1));
    assert.ok(got.typeIds.every((x) => x === 0) && got.typeIds.length === got.ids.length);
    try {
      assert.deepEqual(got.ids, c.ids);
    } catch {
      wrong.push(`${c.about}: ${JSON.stringify(c.text.slice(0, 60))}\n  py ${c.ids}\n  js ${got.ids}`);
    }
  }
  assert.equal(wrong.length, 0, wrong.join("\n"));
  assert.ok(GOLDEN.cases.length > 500, "the case file holds the dev-set questions");
});

test("the case file covers what it must", () => {
  const about = GOLDEN.cases.map((/** @type {{about: string}} */ c) => c.about).join("\n");
  for (const what of [
    "empty", "accents", "Chinese", "Japanese kana", "Korean", "is [UNK]", "added tokens",
    "punctuation", "control", "emoji", "combining marks", "whitespace oddities",
    "257 tokens cut to 256",
  ]) {
    assert.ok(about.includes(what), what);
  }
});

test("[CLS] and [SEP] around the pieces; maxTokens counts them", () => {
  const full = wordpiece.encode("What does a 1:16 brew ratio mean?", 256).ids;
  assert.equal(full[0], 101);
  assert.equal(full.at(-1), 102);
  assert.deepEqual(wordpiece.encode("What does a 1:16 brew ratio mean?", 5).ids, [
    ...full.slice(0, 4), 102,
  ]);
  assert.deepEqual(wordpiece.encode("", 256).ids, [101, 102]);
  assert.throws(() => wordpiece.encode("x", 1), RangeError);
  assert.throws(() => wordpiece.encode("x", 2.5), RangeError);
});

test("a word-final sigma is lower-cased as one code point, as Rust does", () => {
  assert.equal(wordpiece.normalize("ΟΔΥΣΣΕΥΣ"), "οδυσσευσ");
});

test("lone surrogates, which Python cannot hold, are dropped", () => {
  assert.deepEqual(
    wordpiece.encode("a\uD800b \uDC00", 256).ids,
    wordpiece.encode("ab", 256).ids,
  );
});

test("fromJSON refuses what it cannot reproduce, naming it", () => {
  /** @param {(json: any) => void} change */
  const variant = (change) => {
    const json = structuredClone(TOKENIZER_JSON);
    change(json);
    return json;
  };
  assert.throws(() => WordPiece.fromJSON(null), /not a JSON object/);
  assert.throws(
    () => WordPiece.fromJSON(variant((j) => { j.model.type = "BPE"; })),
    /model "BPE" is not supported/,
  );
  assert.throws(
    () => WordPiece.fromJSON(variant((j) => { j.normalizer = { type: "NFKC" }; })),
    /normalizer "NFKC"/,
  );
  assert.throws(
    () => WordPiece.fromJSON(variant((j) => { j.pre_tokenizer = { type: "Whitespace" }; })),
    /pre_tokenizer "Whitespace"/,
  );
  assert.throws(
    () => WordPiece.fromJSON(variant((j) => { j.added_tokens[0].normalized = true; })),
    /added token "\[PAD\]"/,
  );
  assert.throws(
    () => WordPiece.fromJSON(variant((j) => { j.post_processor.single.pop(); })),
    /post_processor/,
  );
  // BertProcessing, as older tokenizer.json files have it, gives the same ids
  const bert = WordPiece.fromJSON(
    variant((j) => { j.post_processor = { type: "BertProcessing", sep: ["[SEP]", 102], cls: ["[CLS]", 101] }; }),
  );
  assert.deepEqual(bert.encode("Café crème", 256).ids, wordpiece.encode("Café crème", 256).ids);
});
