// @ts-check
/**
 * Search the static index in the browser, as `search_static` does in Python
 * (`sphinx_ragcite/formats/static.py`): a term's weight in a passage is
 * computed from its count there as bm25s computes it (float64, rounded to
 * float32), a passage's score is the float32 sum of the query's tokens'
 * weights in query order (a repeated token counts each time), so the scores
 * are bm25s's to the bit; ties go to the passage that comes first in the book.
 * The answer engine (`retrieve.js`) takes its BM25 scores from here too.
 *
 * Classic script: provides `search` (see `lib.js`).
 */

/** @typedef {import("./tokenize.js").TokenizerSpec} TokenizerSpec */
/** @typedef {import("./types").StaticIndex} StaticIndex */

/**
 * @typedef {object} Hit
 * @property {string} passage_id
 * @property {string} url
 * @property {string} chapter
 * @property {string} section
 * @property {string} snippet
 * @property {number} score the BM25 score (float32, as bm25s's)
 */

/**
 * @typedef {object} StaticSearch
 * @property {(query: string, k?: number) => Hit[]} search
 * @property {(tokens: string[]) => Map<number, number>} scores every
 *   passage's score for the tokens (passages that hold none left out)
 * @property {(query: string) => string[]} tokens the query's BM25 tokens
 * @property {(term: string) => number} df how many passages hold the term
 */

(function () {
  "use strict";

  const lib = typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib;

  /** @returns {(text: string, spec: TokenizerSpec) => string[]} */
  function tokenizer() {
    return lib.need("tokenize").tokenize;
  }

  /**
   * A searcher over one static index; the term lookup is built once, a
   * term's weights the first time a query has it.
   * @param {unknown} data the parsed `_ragcite/` static index JSON, checked
   *   here (`files.checkStaticIndex`)
   * @returns {StaticSearch}
   */
  function createStaticSearch(data) {
    const index = lib.need("files").checkStaticIndex(data);
    const tokenize = tokenizer();
    const spec = index.tokenizer;
    tokenize("", spec); // an unknown stemmer or form fails here, not at the first query
    /** @type {Map<string, number>} */
    const lookup = new Map();
    index.terms.forEach((term, i) => lookup.set(term, i));
    const { postings, passages, pages, headings, lengths } = index;
    const { k1, b } = index.bm25;
    const n = lengths.length;
    let sum = 0;
    for (const length of lengths) sum += length;
    const average = sum / n;
    /** @type {Map<number, {docs: Int32Array, weights: Float32Array}>} */
    const cache = new Map();

    /**
     * A term's passages and its weight in each: bm25s's lucene weight,
     * operation for operation (see `weights` in formats/static.py).
     * @param {number} i the term's index
     */
    function weightsOf(i) {
      const hit = cache.get(i);
      if (hit) return hit;
      const flat = postings[i];
      const df = flat.length >> 1;
      const idf = Math.fround(Math.log(1 + (n - df + 0.5) / (df + 0.5)));
      const docs = new Int32Array(df);
      const weights = new Float32Array(df);
      let doc = 0;
      for (let j = 0; j < df; j++) {
        doc += flat[2 * j];
        const tf = flat[2 * j + 1];
        docs[j] = doc;
        weights[j] = idf * (tf / (k1 * (1 - b + (b * lengths[doc]) / average) + tf));
      }
      const made = { docs, weights };
      cache.set(i, made);
      return made;
    }

    /**
     * @param {string[]} tokens
     * @returns {Map<number, number>}
     */
    function scores(tokens) {
      /** @type {Map<number, number>} */
      const totals = new Map();
      for (const token of tokens) {
        const i = lookup.get(token);
        if (i === undefined) continue;
        const { docs, weights } = weightsOf(i);
        for (let j = 0; j < docs.length; j++) {
          totals.set(docs[j], Math.fround((totals.get(docs[j]) || 0) + weights[j]));
        }
      }
      return totals;
    }

    /**
     * The `k` best passages for `query`, best first.
     * @param {string} query
     * @param {number} [k]
     * @returns {Hit[]}
     */
    function search(query, k = 10) {
      const ranked = [...scores(tokenize(query, spec))].sort((a, b) => b[1] - a[1] || a[0] - b[0]);
      return ranked.slice(0, k).map(([doc, total]) => {
        const [passage_id, page, chapter, section, snippet] = passages[doc];
        return {
          passage_id,
          url: `${pages[page]}#${passage_id}`,
          chapter: headings[chapter],
          section: headings[section],
          snippet,
          score: total,
        };
      });
    }

    return {
      search,
      scores,
      tokens: (query) => tokenize(query, spec),
      df: (term) => {
        const i = lookup.get(term);
        return i === undefined ? 0 : postings[i].length >> 1;
      },
    };
  }

  const api = { createStaticSearch };
  lib.provide("search", api);
  if (typeof module === "object") module.exports = api;
})();
