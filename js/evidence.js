// @ts-check
/**
 * Retrieved passages -> evidence: each passage's sentences with their
 * vectors, words and numbers, and its relevance to the question. The JS twin
 * of `sphinx_ragcite/answer/evidence.py` (book mode).
 *
 * The sentence vectors are the build's (`sentence_embeddings`), used when the
 * build split the passage into as many sentences as `splitSentences` does,
 * as the server uses them. When they do not match, the server embeds the
 * sentences itself; the browser cannot (it embeds only the question), so such
 * a passage is judged without sentence similarity and says so (`problem`).
 *
 * Classic script: provides `evidence` (see `lib.js`).
 */

/** @typedef {import("./types").EngineEvidence} Evidence */
/** @typedef {import("./types").PassageFull} PassageFull */

(function () {
  "use strict";

  const lib = typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib;
  const S = lib.need("sentences");

  /**
   * float32 `codes * scale` per row, as `formats.embeddings.dequantize`.
   * @param {Int8Array} codes rows x dim
   * @param {Float32Array} scales one per row
   * @param {number} dim
   * @returns {Float32Array}
   */
  function dequantize(codes, scales, dim) {
    const out = new Float32Array(codes.length);
    for (let r = 0; r < scales.length; r++) {
      const scale = scales[r];
      for (let d = 0; d < dim; d++) out[r * dim + d] = codes[r * dim + d] * scale;
    }
    return out;
  }

  /**
   * The cosine of two float32 vectors (a float32 result, as numpy's `@`).
   * @param {Float32Array} a
   * @param {number} offset where `a`'s vector starts
   * @param {Float32Array} b
   */
  function dot(a, offset, b) {
    let sum = 0;
    for (let d = 0; d < b.length; d++) sum += a[offset + d] * b[d];
    return Math.fround(sum);
  }

  /**
   * The question's cosine with each sentence of an item (0 without vectors).
   * @param {Evidence} item
   * @param {Float32Array | null} qvec
   * @returns {number[]}
   */
  function sentenceSims(item, qvec) {
    const n = item.sentences.length;
    if (qvec === null || item.vectors === null) return new Array(n).fill(0);
    const out = new Array(n);
    for (let s = 0; s < n; s++) out[s] = dot(item.vectors, s * item.dim, qvec);
    return out;
  }

  /**
   * `evidence.build_evidence` (book mode): evidence in citation order.
   * @param {PassageFull[]} passages the retrieved passages, by rank
   * @param {Float32Array | null} qvec
   * @param {((row: number) => Float32Array) | null} passageVector the
   *   float32 vector of a row, when the index has passage vectors
   * @param {number} dim
   * @returns {Evidence[]}
   */
  function buildEvidence(passages, qvec, passageVector, dim) {
    return passages.map((passage, i) => {
      const record = passage.record;
      const text = String(record.text);
      const sentences = S.splitSentences(text);
      /** @type {Float32Array | null} */
      let vectors = null;
      let problem = null;
      const built = passage.sentences;
      if (built && built.scales.length === sentences.length && built.codes.length === sentences.length * dim) {
        vectors = dequantize(built.codes, built.scales, dim);
      } else if (sentences.length) {
        problem = built
          ? `the build split ${record.passage_id} into ${built.scales.length} sentences, this script into ${sentences.length}`
          : `${record.passage_id} has no sentence vectors`;
      }
      let relevance = 0.0;
      if (qvec !== null && passageVector !== null) {
        relevance = dot(passageVector(passage.row), 0, qvec);
      } else if (qvec !== null && vectors !== null && sentences.length) {
        // a BM25-only index: its best sentence stands in for the passage
        relevance = -Infinity;
        for (let s = 0; s < sentences.length; s++) relevance = Math.max(relevance, dot(vectors, s * dim, qvec));
      }
      return {
        key: record.passage_id,
        record,
        text,
        sentences,
        vectors,
        dim,
        words: S.contentWords(text),
        numbers: S.numbers(text),
        relevance,
        rank: i + 1,
        problem,
      };
    });
  }

  const api = { dequantize, dot, sentenceSims, buildEvidence };
  lib.provide("evidence", api);
  if (typeof module === "object") module.exports = api;
})();
