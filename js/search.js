// @ts-check
/**
 * Search the static index in the browser, as `search_static` does in Python
 * (`sphinx_ragcite/index/static.py`): a passage's score is the sum of the
 * integer weights of the query's tokens (a repeated token counts each time),
 * ties go to the passage that comes first in the book.
 *
 * Classic script: registers `createStaticSearch` on `globalThis.ragcite_lib`
 * (load `stemmer.js` and `tokenize.js` first), and on `module.exports` under
 * Node.
 */

/** @typedef {import("./tokenize.js").TokenizerSpec} TokenizerSpec */

/**
 * The static index, `format_version` 1.
 * @typedef {object} StaticIndex
 * @property {number} format_version
 * @property {TokenizerSpec} tokenizer
 * @property {number} weight_scale weights are round(bm25 weight * scale)
 * @property {string[]} terms sorted; terms[i] owns postings[i]
 * @property {number[][]} postings [doc_delta, weight, doc_delta, weight, ...]
 * @property {string[]} pages page URLs, each once
 * @property {string[]} headings chapter and section titles, each once
 * @property {Array<[string, number, number, number, string]>} passages
 *   [passage_id, page, chapter, section, snippet]: page indexes `pages`,
 *   chapter and section index `headings`; the URL is `page#passage_id`
 */

/**
 * @typedef {object} Hit
 * @property {string} passage_id
 * @property {string} url
 * @property {string} chapter
 * @property {string} section
 * @property {string} snippet
 * @property {number} score the summed weights over `weight_scale`
 */

/**
 * @typedef {object} StaticSearch
 * @property {(query: string, k?: number) => Hit[]} search
 */

(function () {
  "use strict";

  const FORMAT_VERSION = 1;

  const g = /** @type {any} */ (globalThis);
  /** @type {Record<string, any>} */
  const lib = (g.ragcite_lib = g.ragcite_lib || {});

  /** @type {((text: string, spec: TokenizerSpec) => string[]) | null} */
  let nodeTokenize = null;
  if (typeof module === "object" && module.exports) {
    nodeTokenize = require("./tokenize.js").tokenize;
  }

  /** @returns {(text: string, spec: TokenizerSpec) => string[]} */
  function tokenizer() {
    const tokenize = nodeTokenize || lib.tokenize;
    if (typeof tokenize !== "function") {
      throw new Error("ragcite search: tokenize.js must be loaded before search.js");
    }
    return tokenize;
  }

  /**
   * @param {unknown} index
   * @returns {asserts index is StaticIndex}
   */
  function validate(index) {
    if (index === null || typeof index !== "object") {
      throw new Error("ragcite search: the static index must be a JSON object");
    }
    const ix = /** @type {Record<string, unknown>} */ (index);
    if (ix.format_version !== FORMAT_VERSION) {
      throw new Error(
        `ragcite search: unsupported static index format_version ` +
          `${JSON.stringify(ix.format_version)} (this script reads ${FORMAT_VERSION}); ` +
          `rebuild the book with a matching sphinx-ragcite`,
      );
    }
    for (const key of ["terms", "postings", "pages", "headings", "passages"]) {
      if (!Array.isArray(ix[key])) {
        throw new Error(`ragcite search: the static index has no "${key}" list`);
      }
    }
    if (/** @type {unknown[]} */ (ix.terms).length !== /** @type {unknown[]} */ (ix.postings).length) {
      throw new Error("ragcite search: the static index must have one postings list per term");
    }
    if (typeof ix.weight_scale !== "number" || !(ix.weight_scale > 0)) {
      throw new Error("ragcite search: the static index has no positive weight_scale");
    }
    if (ix.tokenizer === null || typeof ix.tokenizer !== "object") {
      throw new Error("ragcite search: the static index has no tokenizer spec");
    }
  }

  /**
   * A searcher over one static index; the term lookup is built once.
   * @param {StaticIndex} index the parsed `_ragcite/` static index JSON
   * @returns {StaticSearch}
   */
  function createStaticSearch(index) {
    validate(index);
    const tokenize = tokenizer();
    const spec = index.tokenizer;
    tokenize("", spec); // an unknown stemmer or form fails here, not at the first query
    /** @type {Map<string, number>} */
    const lookup = new Map();
    index.terms.forEach((term, i) => lookup.set(term, i));
    const { postings, passages, pages, headings, weight_scale: scale } = index;

    /**
     * The `k` best passages for `query`, best first.
     * @param {string} query
     * @param {number} [k]
     * @returns {Hit[]}
     */
    function search(query, k = 10) {
      /** @type {Map<number, number>} */
      const totals = new Map();
      for (const token of tokenize(query, spec)) {
        const i = lookup.get(token);
        if (i === undefined) continue;
        const flat = postings[i];
        let doc = 0;
        for (let j = 0; j + 1 < flat.length; j += 2) {
          doc += flat[j];
          totals.set(doc, (totals.get(doc) || 0) + flat[j + 1]);
        }
      }
      const ranked = [...totals].sort((a, b) => b[1] - a[1] || a[0] - b[0]);
      return ranked.slice(0, k).map(([doc, total]) => {
        const [passage_id, page, chapter, section, snippet] = passages[doc];
        return {
          passage_id,
          url: `${pages[page]}#${passage_id}`,
          chapter: headings[chapter],
          section: headings[section],
          snippet,
          score: total / scale,
        };
      });
    }

    return { search };
  }

  const api = { createStaticSearch, FORMAT_VERSION };
  lib.createStaticSearch = createStaticSearch;
  if (typeof module === "object" && module.exports) {
    module.exports = api;
  }
})();
