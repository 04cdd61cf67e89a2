// @ts-check
/**
 * The chosen units -> verified claims: the JS twin of the extractive path of
 * `sphinx_ragcite/answer/grounding.py` and `engine.quote_units`.
 *
 * An extractive answer quotes the units the ranker chose, so each claim is
 * supported by construction and cites the passage it is quoted from; its
 * support by every passage is still computed, as for any claim, so that the
 * citation's confidence means what it means on the server.
 *
 * Classic script: registers on `globalThis.ragcite_lib.verify` (load
 * `sentences.js` and `evidence.js` first), and on `module.exports` under Node.
 */

/** @typedef {import("./types").EngineEvidence} Evidence */
/** @typedef {import("./types").EngineCandidate} Candidate */
/** @typedef {import("./types").EngineSupport} Support */
/** @typedef {import("./types").EngineClaim} Claim */

(function () {
  "use strict";

  const g = /** @type {any} */ (globalThis);
  /** @type {Record<string, any>} */
  const lib = (g.ragcite_lib = g.ragcite_lib || {});
  const need = (/** @type {string} */ name) =>
    typeof require === "function" ? require(`./${name}.js`) : null;
  /** @type {typeof import("./sentences.js")} */
  const S = lib.sentences || need("sentences");
  /** @type {typeof import("./evidence.js")} */
  const E = lib.evidence || need("evidence");

  /** `grounding.SUPPORT_SIMILARITY` and `SUPPORT_OVERLAP`: weights of support. */
  const SUPPORT_SIMILARITY = 0.5;
  const SUPPORT_OVERLAP = 0.5;

  /**
   * `grounding.support`: how well one evidence item supports a claim.
   * @param {string} claim
   * @param {Float32Array | null} vector the claim's
   * @param {Evidence} evidence
   * @returns {Support}
   */
  function support(claim, vector, evidence) {
    const words = S.contentWords(claim);
    let shared = 0;
    for (const w of words) if (evidence.words.has(w)) shared++;
    const overlap = words.size ? shared / words.size : 0.0;
    let numbersOk = true;
    for (const n of S.numbers(claim)) if (!evidence.numbers.has(n)) numbersOk = false;
    let best = -1;
    let similarity = 0.0;
    if (evidence.sentences.length) {
      best = 0;
      similarity = -Infinity;
      for (let s = 0; s < evidence.sentences.length; s++) {
        const sim = vector && evidence.vectors ? E.dot(evidence.vectors, s * evidence.dim, vector) : 0;
        if (sim > similarity) {
          similarity = sim;
          best = s;
        }
      }
    }
    const score = SUPPORT_SIMILARITY * Math.max(similarity, 0.0) + SUPPORT_OVERLAP * overlap;
    return { score: numbersOk ? score : 0.0, similarity, overlap, numbersOk, sentence: best };
  }

  /** `engine._BRACKETED_NUMBER`, the Python source. */
  const BRACKETED_NUMBER = "\\[(\\d+(?:\\s*,\\s*\\d+)*)\\]";

  /**
   * `engine.defuse_markers`: `x[0]` in quoted code would read as a citation
   * marker; a word joiner after the bracket keeps it out of the syntax.
   * @param {string} text
   */
  function defuseMarkers(text) {
    return text.replace(S.pyRegExp(BRACKETED_NUMBER, "g"), "[\u2060$1]");
  }

  /**
   * The mean of a unit's sentence vectors, normalised (float32).
   * @param {Evidence} item
   * @param {number} first
   * @param {number} last
   * @returns {Float32Array | null}
   */
  function unitVector(item, first, last) {
    if (!item.vectors) return null;
    const dim = item.dim;
    const out = new Float32Array(dim);
    for (let s = first; s <= last; s++) {
      for (let d = 0; d < dim; d++) out[d] = Math.fround(out[d] + item.vectors[s * dim + d]);
    }
    const count = last - first + 1;
    let norm = 0;
    for (let d = 0; d < dim; d++) {
      out[d] = out[d] / count;
      norm += out[d] * out[d];
    }
    const length = Math.max(Math.fround(Math.sqrt(norm)), 1e-12);
    for (let d = 0; d < dim; d++) out[d] = out[d] / length;
    return out;
  }

  /**
   * `engine.quote_units`: the chosen units as claims, each citing the passage
   * it is quoted from.
   * @param {Candidate[]} chosen
   * @param {Evidence[]} evidence
   * @returns {{claims: Claim[], removed: object[], reattributed: object[], unknown_markers: string[]}}
   */
  function quoteUnits(chosen, evidence) {
    const claims = chosen.map(({ unit }) => {
      const item = evidence[unit.evidence];
      const vector = unitVector(item, unit.first, unit.last);
      return {
        text: defuseMarkers(unit.text),
        sources: [unit.evidence],
        supports: evidence.map((e) => support(unit.text, vector, e)),
        vector,
        quote: { text: item.text.slice(unit.start, unit.end), start: unit.start, end: unit.end },
      };
    });
    return { claims, removed: [], reattributed: [], unknown_markers: [] };
  }

  const api = { SUPPORT_SIMILARITY, SUPPORT_OVERLAP, BRACKETED_NUMBER, support, defuseMarkers, unitVector, quoteUnits };
  lib.verify = api;
  if (typeof module === "object" && module.exports) {
    module.exports = api;
  }
})();
