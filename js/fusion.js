// @ts-check
/**
 * Two rankings (BM25, dense) -> one: the JS twin of
 * `sphinx_ragcite/retrieval/fusion.py`'s linear fusion, which the answer
 * engine retrieves with (see docs/explanation/retrieval.md).
 *
 * Each side's scores are min-max normalised over the candidates and mixed
 * half and half, in float32 as numpy computes them, so a candidate's fused
 * score is the server's to the bit and ties break the same way (by row).
 *
 * Classic script: provides `fusion` (see `lib.js`).
 */

/**
 * One search's candidates (`fusion.Candidates`): each ranking best first,
 * and the score of every candidate on each side it was scored on.
 * @typedef {object} Candidates
 * @property {number[]} lexical rows with a positive BM25 score, best first
 * @property {number[]} semantic rows by dense score, best first
 * @property {Map<number, number>} bm25
 * @property {Map<number, number>} dense
 */

(function () {
  "use strict";

  const lib = typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib;

  /** `fusion.LINEAR_ALPHA`: the weight of BM25 in linear fusion. */
  const LINEAR_ALPHA = lib.need("spec").LINEAR_ALPHA;
  const f32 = Math.fround;

  /**
   * `fusion.linear`: each candidate's fused score.
   * @param {Candidates} candidates
   * @param {number} [alpha]
   * @returns {Map<number, number>}
   */
  function linear(candidates, alpha = LINEAR_ALPHA) {
    const keys = [...new Set([...candidates.lexical, ...candidates.semantic])].sort((a, b) => a - b);
    /** @type {Map<number, number>} */
    const fused = new Map();
    if (!keys.length) return fused;
    /**
     * numpy: float32 values minus a float32 low, over (high - low) taken as
     * a Python float and cast to float32 (a weak scalar).
     * @param {Map<number, number>} scores
     */
    const normalised = (scores) => {
      const values = keys.map((key) => f32(scores.get(key) || 0.0));
      const low = Math.min(...values);
      const high = Math.max(...values);
      if (!(high > low)) return values.map(() => 0);
      const span = f32(high - low);
      return values.map((v) => f32(f32(v - low) / span));
    };
    const lexical = normalised(candidates.bm25);
    const dense = normalised(candidates.dense);
    const a = f32(alpha);
    const rest = f32(1 - alpha);
    keys.forEach((key, i) => fused.set(key, f32(f32(a * lexical[i]) + f32(rest * dense[i]))));
    return fused;
  }

  /**
   * `fusion.fuse`: the `k` best rows and their scores; ties go to the smaller row.
   * @param {Candidates} candidates
   * @param {number} k
   * @param {"bm25" | "hybrid"} mode
   * @returns {Array<[number, number]>}
   */
  function fuse(candidates, k, mode) {
    if (mode === "bm25") {
      return candidates.lexical.slice(0, k).map((key) => [key, /** @type {number} */ (candidates.bm25.get(key))]);
    }
    return [...linear(candidates)].sort((a, b) => b[1] - a[1] || a[0] - b[0]).slice(0, k);
  }

  const api = { linear, fuse };
  lib.provide("fusion", api);
  if (typeof module === "object") module.exports = api;
})();
