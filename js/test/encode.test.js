// @ts-check
"use strict";

/**
 * The question encoder in Node: onnxruntime-web's CPU-only WASM build (the
 * very `ort.wasm.min.js` a site ships) running the build's `model.onnx`.
 *
 * Needs `npm ci` (node_modules/onnxruntime-web) and the model's path in
 * RAGCITE_MODEL_ONNX, which `tests/test_browser_encoder.py` sets (its
 * `question_model_files()`); without either the tests are skipped, saying why.
 */

const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");

const { WordPiece } = require("../wordpiece.js");
const { createEncoder, pool } = require("../encode.js");

const REPO = path.join(__dirname, "..", "..");
const ORT = path.join(REPO, "node_modules", "onnxruntime-web", "dist", "ort.wasm.min.js");
const MODEL = process.env.RAGCITE_MODEL_ONNX || "";
/** Written by tools/write_wordpiece_cases.py from Python's encoder. */
const GOLDEN = JSON.parse(
  fs.readFileSync(path.join(REPO, "tests", "golden", "question_vectors.json"), "utf8"),
);
const MIN_COSINE = 0.9999;

const skip = !fs.existsSync(ORT)
  ? "onnxruntime-web is not installed: run `npm ci`"
  : !MODEL
    ? "RAGCITE_MODEL_ONNX is not set (tests/test_browser_encoder.py sets it)"
    : false;

/**
 * @param {ArrayLike<number>} a
 * @param {ArrayLike<number>} b
 */
function cosine(a, b) {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return dot / Math.sqrt(na * nb);
}

/** @type {Promise<import("../types").QuestionEncoder> | null} */
let loading = null;
function encoder() {
  if (!loading) {
    const ort = require(ORT);
    const tokenizer = WordPiece.fromJSON(
      JSON.parse(fs.readFileSync(path.join(REPO, GOLDEN.tokenizer), "utf8")),
    );
    loading = createEncoder({
      ort,
      model: fs.readFileSync(MODEL),
      tokenizer,
      maxTokens: GOLDEN.max_tokens,
    });
  }
  return loading;
}

test("every golden question: Python's vector, cosine >= 0.9999", { skip }, async (t) => {
  const enc = await encoder();
  assert.equal(enc.dim, GOLDEN.dim);
  const low = [];
  let worst = 1;
  for (const c of GOLDEN.cases) {
    const vector = await enc.embed(c.text);
    assert.ok(vector instanceof Float32Array);
    assert.equal(vector.length, GOLDEN.dim);
    const cos = cosine(vector, c.vector);
    worst = Math.min(worst, cos);
    if (!(cos >= MIN_COSINE)) low.push(`${cos.toFixed(6)} ${JSON.stringify(c.text.slice(0, 60))}`);
  }
  assert.equal(low.length, 0, low.join("\n"));
  assert.equal(GOLDEN.cases.length, 50);
  t.diagnostic(`worst cosine: 1 - ${(1 - worst).toExponential(2)} over ${GOLDEN.cases.length} questions`);
});

test("vectors have length 1, and calls made at once queue", { skip }, async () => {
  const enc = await encoder();
  const texts = ["How fine should I grind?", "", "日本語のテキスト"];
  const together = await Promise.all(texts.map((t) => enc.embed(t)));
  for (const [i, text] of texts.entries()) {
    const alone = await enc.embed(text);
    assert.deepEqual(together[i], alone);
    assert.ok(Math.abs(cosine(alone, alone) - 1) < 1e-6);
    let norm = 0;
    for (const x of alone) norm += x * x;
    assert.ok(Math.abs(norm - 1) < 1e-5, String(norm));
  }
});

test("createEncoder refuses a bad maxTokens and a model that is not ONNX", { skip }, async () => {
  const ort = require(ORT);
  const tokenizer = /** @type {any} */ ({ encode: () => ({ ids: [], attentionMask: [], typeIds: [] }) });
  await assert.rejects(
    createEncoder({ ort, model: new Uint8Array(8), tokenizer, maxTokens: 1 }),
    RangeError,
  );
  await assert.rejects(createEncoder({ ort, model: new Uint8Array(64), tokenizer, maxTokens: 256 }));
});

test("with the index's width given, no probe run, and a vector of another width is refused", { skip }, async () => {
  const ort = require(ORT);
  const tokenizer = WordPiece.fromJSON(JSON.parse(fs.readFileSync(path.join(REPO, GOLDEN.tokenizer), "utf8")));
  const model = fs.readFileSync(MODEL);
  const right = await createEncoder({ ort, model, tokenizer, maxTokens: GOLDEN.max_tokens, dim: GOLDEN.dim });
  assert.equal(right.dim, GOLDEN.dim);
  assert.equal((await right.embed("bloom")).length, GOLDEN.dim);
  const wrong = await createEncoder({ ort, model, tokenizer, maxTokens: GOLDEN.max_tokens, dim: GOLDEN.dim + 1 });
  await assert.rejects(wrong.embed("bloom"), /vectors of 384 numbers, the index's have 385/);
});

test("pool: the mean over the mask, then length 1", () => {
  // two tokens of dim 2, the second masked out
  const v = pool(new Float32Array([3, 4, 100, 100]), [1, 2, 2], [1, 0]);
  assert.deepEqual(Array.from(v, (x) => Math.round(x * 1e6) / 1e6), [0.6, 0.8]);
  const w = pool(new Float32Array([1, 0, 0, 1]), [1, 2, 2], [1, 1]);
  assert.ok(Math.abs(w[0] - Math.SQRT1_2) < 1e-7 && Math.abs(w[1] - Math.SQRT1_2) < 1e-7);
  // all zeros stays zero (Python's floor under the norm), never NaN
  assert.deepEqual(Array.from(pool(new Float32Array(4), [1, 2, 2], [1, 1])), [0, 0]);
  assert.throws(() => pool(new Float32Array(4), [2, 1, 2], [1]), /shape/);
});
