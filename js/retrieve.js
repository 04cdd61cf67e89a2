// @ts-check
/**
 * Question -> the passages an answer is chosen from: the JS twin of the
 * server's retrieval for answers (`retrieval/site.py`, `retrieval/dense.py`,
 * `retrieval/searchable.py`, fused linearly by `fusion.js`).
 *
 * BM25 scores come from the static index (`search.js`, bm25s's to the bit).
 * Dense scores are computed from the int8 passage vectors and their scales
 * exactly as numpy computes them in float32 (`code * scale * q`, summed
 * pairwise), but only for the rows that may rank: every row gets a quick
 * float64 score first, and the rows within a rounding margin of the `depth`-th
 * best are scored exactly, as `DenseVectors.top` does with its integer pass.
 * Without a question vector (no encoder) or with vectors that do not rank
 * passages (`embedding.search` false: an English encoder on a CJK book) BM25
 * ranks alone, as on the server.
 *
 * Classic script: provides `retrieve` (see `lib.js`).
 */

/** @typedef {import("./fusion.js").Candidates} Candidates */

/**
 * A retrieved passage: its row, fused score, and its score on each side.
 * @typedef {{row: number, score: number, bm25: number, dense: number | null}} RetrievedHit
 */

/**
 * The passage vectors: `codes[row * dim + d] * scales[row]`.
 * @typedef {{codes: Int8Array, scales: Float32Array, dim: number, rows: number}} PassageVectors
 */

(function () {
  "use strict";

  const lib = typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib;
  const search = lib.need("search");
  const fusion = lib.need("fusion");

  /** `SearchRequest.depth`: how many of each ranking hybrid search fuses. */
  const DEPTH = lib.need("spec").DEPTH;
  /**
   * How far a float64 score may lie from numpy's float32 one: float32
   * rounding of 384 products and their pairwise sum moves a cosine of unit
   * vectors by well under 1e-6; the margin keeps ten times that, and more.
   */
  const MARGIN = 1e-5;
  const f32 = Math.fround;

  /**
   * numpy's float32 pairwise sum (`pairwise_sum_FLOAT`) of `a[start, start + n)`.
   * @param {Float32Array} a
   * @param {number} start
   * @param {number} n
   * @returns {number}
   */
  function pairwiseSum(a, start, n) {
    if (n < 8) {
      let res = 0;
      for (let i = 0; i < n; i++) res = f32(res + a[start + i]);
      return res;
    }
    if (n <= 128) {
      const r = [a[start], a[start + 1], a[start + 2], a[start + 3], a[start + 4], a[start + 5], a[start + 6], a[start + 7]];
      let i = 8;
      for (; i < n - (n % 8); i += 8) {
        for (let j = 0; j < 8; j++) r[j] = f32(r[j] + a[start + i + j]);
      }
      let res = f32(f32(f32(r[0] + r[1]) + f32(r[2] + r[3])) + f32(f32(r[4] + r[5]) + f32(r[6] + r[7])));
      for (; i < n; i++) res = f32(res + a[start + i]);
      return res;
    }
    let half = Math.floor(n / 2);
    half -= half % 8;
    return f32(pairwiseSum(a, start, half) + pairwiseSum(a, start + half, n - half));
  }

  /**
   * A dense scorer over the passage vectors.
   * @param {PassageVectors} vectors
   */
  function denseScorer(vectors) {
    const { codes, scales, dim, rows } = vectors;
    const products = new Float32Array(dim);

    /**
     * `DenseVectors.scores` of one row: float32 `code * scale * q`, summed as numpy sums.
     * @param {Float32Array} q
     * @param {number} row
     */
    function exact(q, row) {
      const scale = scales[row];
      const base = row * dim;
      for (let d = 0; d < dim; d++) products[d] = f32(codes[base + d] * scale) * q[d];
      return pairwiseSum(products, 0, dim);
    }

    /**
     * A row's score in float64: within MARGIN of the exact one.
     * @param {Float32Array} q
     * @param {number} row
     */
    function quick(q, row) {
      const base = row * dim;
      let sum = 0;
      for (let d = 0; d < dim; d++) sum += codes[base + d] * q[d];
      return sum * scales[row];
    }

    /**
     * `DenseVectors.top`: the rows of the `k` best exact scores (ties by row)
     * and every score computed exactly on the way.
     * @param {Float32Array} q
     * @param {number} k
     * @returns {{rows: number[], scores: Map<number, number>}}
     */
    function top(q, k) {
      /** @type {Map<number, number>} */
      const scores = new Map();
      if (k <= 0 || rows === 0) return { rows: [], scores };
      /** @type {number[]} */
      let candidates;
      if (rows <= k) {
        candidates = Array.from({ length: rows }, (_, i) => i);
      } else {
        const approx = new Float64Array(rows);
        for (let r = 0; r < rows; r++) approx[r] = quick(q, r);
        const kth = Float64Array.from(approx).sort()[rows - k];
        candidates = [];
        for (let r = 0; r < rows; r++) if (approx[r] >= kth - MARGIN) candidates.push(r);
      }
      for (const r of candidates) scores.set(r, exact(q, r));
      const ranked = candidates
        .sort((a, b) => /** @type {number} */ (scores.get(b)) - /** @type {number} */ (scores.get(a)) || a - b)
        .slice(0, k);
      return { rows: ranked, scores };
    }

    /**
     * A row's vector as float32 (`code * scale`).
     * @param {number} row
     * @returns {Float32Array}
     */
    function vector(row) {
      const out = new Float32Array(dim);
      const scale = scales[row];
      for (let d = 0; d < dim; d++) out[d] = codes[row * dim + d] * scale;
      return out;
    }

    return { exact, top, vector };
  }

  /**
   * The rows of the `k` best positive scores, best first, ties by row (`site._top`).
   * @param {Map<number, number>} scores
   * @param {number} k
   */
  function topScores(scores, k) {
    let found = [...scores].filter(([, s]) => s > 0);
    if (found.length > k) {
      // the k-th best score; every row scoring it stays, so ties go by row
      const kth = Float64Array.from(found, ([, s]) => s).sort()[found.length - k];
      found = found.filter(([, s]) => s >= kth);
    }
    return found
      .sort((a, b) => b[1] - a[1] || a[0] - b[0])
      .slice(0, k)
      .map(([row]) => row);
  }

  /**
   * A retriever over one site's sharded static index and its passage
   * vectors: every vector (a small book, searched exactly), or the
   * approximate search of `dense_index.js` (a big one), as the server reads them.
   * @param {Pick<import("./types").EngineCore, "manifest" | "lexical" | "passageVectors" | "dense" | "rows">} core
   */
  function createRetriever(core) {
    const searcher = core.lexical;
    const embedding = core.manifest && core.manifest.embedding;
    const vectors = core.passageVectors;
    const exact = vectors ? denseScorer(vectors) : null;
    const approximate = core.dense;
    /** Dense vectors rank passages (`Site.dense_search`). */
    const denseSearch = Boolean((exact || approximate) && embedding && embedding.search !== false);
    const n = core.rows;

    /**
     * The `k` passages an answer is chosen from (`FusedSearch.search` with
     * linear fusion), each with its BM25 and dense scores.
     * @param {string} question
     * @param {Float32Array | null} qvec
     * @param {number} k
     * @returns {Promise<RetrievedHit[]>}
     */
    async function retrieve(question, qvec, k) {
      const mode = denseSearch && qvec !== null ? "hybrid" : "bm25";
      const wanted = mode === "hybrid" ? DEPTH : k;
      const bm25 = await searcher.scores(searcher.tokens(question));
      /** @type {Candidates} */
      const found = { lexical: topScores(bm25, wanted), semantic: [], bm25: new Map(), dense: new Map() };
      if (mode === "hybrid" && qvec && exact) {
        const { rows, scores } = exact.top(qvec, wanted);
        found.semantic = rows;
        for (const r of rows) found.dense.set(r, /** @type {number} */ (scores.get(r)));
        for (const r of found.lexical) {
          if (!found.dense.has(r)) found.dense.set(r, scores.has(r) ? /** @type {number} */ (scores.get(r)) : exact.exact(qvec, r));
        }
      } else if (mode === "hybrid" && qvec && approximate) {
        const { rows, scores } = await approximate.search(qvec, wanted, found.lexical);
        found.semantic = rows;
        for (const r of [...rows, ...found.lexical]) found.dense.set(r, /** @type {number} */ (scores.get(r)));
      }
      for (const r of new Set([...found.lexical, ...found.semantic])) found.bm25.set(r, bm25.get(r) || 0.0);
      return fusion.fuse(found, k, mode).map(([row, score]) => ({
        row,
        score,
        bm25: found.bm25.get(row) || 0.0,
        dense: mode === "bm25" ? null : /** @type {number} */ (found.dense.get(row)),
      }));
    }

    /**
     * `Site.idf`: Lucene's idf of a term (a term no passage has weighs as the
     * rarest would); `prepare` fetched its shard.
     * @param {string} term
     */
    function idf(term) {
      const df = searcher.df(term);
      return Math.log1p(df ? (n - df + 0.5) / (df + 0.5) : n + 0.5);
    }

    /**
     * A row's passage vector (float32), for its relevance to the question.
     * @param {number} row
     * @returns {Promise<Float32Array>}
     */
    async function vector(row) {
      if (exact) return exact.vector(row);
      if (approximate) return approximate.vector(row);
      throw new Error("this index has no passage vectors");
    }

    return { retrieve, idf, prepare: searcher.prepare, vector: exact || approximate ? vector : null, denseSearch };
  }

  const api = { pairwiseSum, denseScorer, topScores, createRetriever };
  lib.provide("retrieve", api);
  if (typeof module === "object") module.exports = api;
})();
