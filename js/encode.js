// @ts-check
/**
 * The question's vector, computed in the reader's browser with the very
 * ONNX model the build embedded the passages with.
 *
 * onnxruntime-web's WASM backend runs the model on one thread (threads need
 * cross-origin isolation, which the big free static hosts do not let an
 * author turn on); the vector is pooled as Python's encoder pools it
 * (`sphinx_ragcite/encoder.py`): the mean of the last hidden states
 * over the attention mask, scaled to length 1. `js/test/encode.test.js`
 * holds it to Python's vectors (cosine >= 0.9999) on
 * `tests/golden/question_vectors.json`.
 *
 * Classic script: provides `encode` (see `lib.js`). Load `wordpiece.js` and
 * onnxruntime-web's `ort.wasm.min.js` first; they are passed in, not looked up.
 */

(function () {
  "use strict";

  const g = /** @type {any} */ (globalThis);
  const lib = typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib;

  /** Python's floor under a norm and a mask sum (`embed.py`'s `_unit`, `_run`). */
  const MIN_NORM = 1e-12;
  const MIN_MASK = 1e-9;

  /**
   * Load the model and make a question encoder.
   *
   * Sets `ort.env.wasm.numThreads = 1` before the session starts. Set
   * `ort.env.wasm.wasmPaths` (or `wasmBinary`) before calling.
   * @param {import("./types").EncoderOptions} opts
   * @returns {Promise<import("./types").QuestionEncoder>}
   */
  async function createEncoder({ ort, model, tokenizer, maxTokens, dim: knownDim = 0, prefixes = {} }) {
    if (!Number.isInteger(maxTokens) || maxTokens < 2) {
      throw new RangeError(`maxTokens must be an integer >= 2, not ${maxTokens}`);
    }
    ort.env.wasm.numThreads = 1;
    const clock = () => (g.performance ? g.performance.now() : Date.now());
    const started = clock();
    const bytes = model instanceof Uint8Array ? model : new Uint8Array(model);
    const session = await ort.InferenceSession.create(bytes, {
      executionProviders: ["wasm"],
      // No graph optimisation: folding an int8 model's Cast and Mul turned
      // its 23 MB of weights into 90 MB of float32 at session start (1-2 s
      // of every page's start, ~100 MiB), and the fusions cost more time at
      // start than they saved on a page's first questions (issue 42,
      // benchmarks/engine_start.py). The same numbers; the vectors as well.
      graphOptimizationLevel: "disabled",
    });
    const opened = clock();
    /** @type {string[]} */
    const inputs = session.inputNames;
    for (const name of ["input_ids", "attention_mask"]) {
      if (!inputs.includes(name)) {
        throw new Error(`the model has no ${name} input (it has ${inputs.join(", ")})`);
      }
    }
    const output = session.outputNames[0];
    /** One run at a time: a session is not re-entrant. */
    let queue = Promise.resolve();

    /**
     * @param {string} text
     * @returns {Promise<Float32Array>}
     */
    async function run(text) {
      const { ids, attentionMask, typeIds } = tokenizer.encode(text, maxTokens);
      const shape = [1, ids.length];
      /** @param {number[]} values */
      const int64 = (values) => new ort.Tensor("int64", BigInt64Array.from(values, BigInt), shape);
      /** @type {Record<string, any>} */
      const feeds = { input_ids: int64(ids), attention_mask: int64(attentionMask) };
      if (inputs.includes("token_type_ids")) feeds.token_type_ids = int64(typeIds);
      const result = await session.run(feeds);
      const hidden = result[output];
      try {
        const vector = pool(/** @type {Float32Array} */ (hidden.data), hidden.dims, attentionMask);
        if (knownDim > 0 && vector.length !== knownDim) {
          throw new Error(`the model gives vectors of ${vector.length} numbers, the index's have ${knownDim}`);
        }
        return vector;
      } finally {
        for (const name of Object.keys(result)) result[name].dispose?.();
      }
    }

    /** What goes before a text of each kind (the manifest's `query_prefix`
     * and `passage_prefix`: e5 was trained with them; MiniLM has none). */
    const before = { query: prefixes.query || "", passage: prefixes.passage || "" };
    /**
     * @param {string} text
     * @param {"query" | "passage"} [kind] a question (or what stands for
     *   one), else a passage, sentence or selection compared with them
     */
    const embed = (text, kind = "passage") => {
      const next = queue.then(() => run(before[kind] + text));
      queue = next.then(
        () => undefined,
        () => undefined,
      );
      return next;
    };

    // The width of a vector: the manifest's, checked on every vector, or
    // as Python finds it, one probe run (a run is a tenth of a second on a
    // page that just started the runtime: not spent when the width is known)
    const dim = knownDim > 0 ? knownDim : (await embed("dimension probe")).length;
    return {
      embed,
      dim,
      release: () => session.release(),
      timings: { session: opened - started, probe: clock() - opened },
    };
  }

  /**
   * Mean of the hidden states over the attention mask, scaled to length 1.
   * @param {Float32Array} hidden [1, tokens, dim], row-major
   * @param {readonly number[]} dims
   * @param {number[]} mask one per token
   * @returns {Float32Array}
   */
  function pool(hidden, dims, mask) {
    const [batch, tokens, dim] = dims;
    if (dims.length !== 3 || batch !== 1 || tokens !== mask.length) {
      throw new Error(`unexpected model output of shape [${dims.join(", ")}]`);
    }
    const sum = new Float64Array(dim);
    let weight = 0;
    for (let t = 0; t < tokens; t++) {
      if (!mask[t]) continue;
      weight += mask[t];
      const row = t * dim;
      for (let d = 0; d < dim; d++) sum[d] += hidden[row + d] * mask[t];
    }
    const denominator = Math.max(weight, MIN_MASK);
    let norm = 0;
    for (let d = 0; d < dim; d++) {
      sum[d] /= denominator;
      norm += sum[d] * sum[d];
    }
    const scale = 1 / Math.max(Math.sqrt(norm), MIN_NORM);
    return Float32Array.from(sum, (x) => x * scale);
  }

  const api = { createEncoder, pool };
  lib.provide("encode", api);
  if (typeof module === "object") module.exports = api;
})();
