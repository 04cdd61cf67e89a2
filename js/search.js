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

/**
 * @typedef {object} ShardedSearch
 * @property {number} rows the book's passages
 * @property {(query: string, k?: number) => Promise<Hit[]>} search
 * @property {(tokens: string[]) => Promise<Map<number, number>>} scores
 * @property {(terms: Iterable<string>) => Promise<Map<string, {docs: Int32Array, weights: Float32Array} | null>>} prepare
 *   fetch these terms' shards (`df` needs it); their weights (null: no passage has it)
 * @property {(rows: number[]) => Promise<import("./types").RowMeta[]>} metas
 * @property {(term: string) => number} df how many passages hold a prepared term
 * @property {(query: string) => string[]} tokens the query's BM25 tokens
 */

(function () {
  "use strict";

  const lib = typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib;

  /**
   * A term's passages and its weight in each: bm25s's lucene weight,
   * operation for operation (`term_weights` in formats/static.py).
   * @param {number[]} flat the term's postings, `[doc_delta, tf, ...]`
   * @param {ArrayLike<number>} lengths every passage's length
   * @param {number} average their mean
   * @param {number} k1
   * @param {number} b
   */
  function termWeights(flat, lengths, average, k1, b) {
    const n = lengths.length;
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
    return { docs, weights };
  }

  /**
   * Add each posting's weight to its passage's total, in float32 as bm25s adds.
   * @param {Map<number, number>} totals
   * @param {{docs: Int32Array, weights: Float32Array}} term
   */
  function addTerm(totals, { docs, weights }) {
    for (let j = 0; j < docs.length; j++) {
      totals.set(docs[j], Math.fround((totals.get(docs[j]) || 0) + weights[j]));
    }
  }

  /** Ranked best first, ties to the passage that comes first in the book. @param {Map<number, number>} totals */
  const ranked = (totals) => [...totals].sort((a, b) => b[1] - a[1] || a[0] - b[0]);

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
    let sum = 0;
    for (const length of lengths) sum += length;
    const average = sum / lengths.length;
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
      const made = termWeights(postings[i], lengths, average, k1, b);
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
        addTerm(totals, weightsOf(i));
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
      return ranked(scores(tokenize(query, spec))).slice(0, k).map(([doc, total]) => {
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

  /** Parsed shards and terms' weights kept between queries, at most (a
   * later query needing one dropped fetches it again, from the HTTP cache). */
  const KEEP_TERM_SHARDS = 64;
  const KEEP_PASSAGE_SHARDS = 256;
  const KEEP_TERMS = 2048;

  /**
   * The first index whose value is greater than `x` in a sorted array, minus one.
   * @template T
   * @param {T[]} sorted
   * @param {T} x
   */
  function floorIndex(sorted, x) {
    let lo = 0;
    let hi = sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (sorted[mid] <= x) lo = mid + 1;
      else hi = mid;
    }
    return lo - 1;
  }

  /**
   * A searcher over the sharded static index (`formats/search_shards.py`):
   * the root is loaded, a term's shard the first time a query has the
   * term, a passage shard the first time a result needs its rows. Scores
   * are `createStaticSearch`'s, to the bit.
   * @param {unknown} data the parsed `search-root.<h>.json` (checked here)
   * @param {(name: string) => Promise<unknown>} load a shard's parsed JSON,
   *   checked against the digest in its name
   * @returns {ShardedSearch}
   */
  function createShardedSearch(data, load) {
    const F = lib.need("files");
    const root = F.checkSearchRoot(data);
    const tokenize = tokenizer();
    const spec = root.tokenizer;
    tokenize("", spec); // an unknown stemmer or form fails here, not at the first query
    const { lengths } = root;
    const { k1, b } = root.bm25;
    let sum = 0;
    for (const length of lengths) sum += length;
    const average = sum / lengths.length;
    const firsts = root.terms.map(([first]) => first);
    /** @type {number[]} */
    const starts = [];
    let start = 0;
    for (const [count] of root.passages) {
      starts.push(start);
      start += count;
    }
    if (start !== root.rows || lengths.length !== root.rows) {
      throw new F.StoreError(`The search index's shards do not cover its passages. ${F.REBUILD}`, "format");
    }
    /** @type {Map<string, Promise<import("./types").TermShard>>} */
    const termShards = new Map();
    /** @type {Map<string, Promise<import("./types").PassageShard>>} */
    const passageShards = new Map();
    /** @type {Map<string, {docs: Int32Array, weights: Float32Array} | null>} */
    const terms = new Map();

    /** @param {string} name */
    function termShard(name) {
      let promise = termShards.get(name);
      if (!promise) {
        promise = load(name).then((json) => F.checkTermShard(json, name));
        F.remember(termShards, name, promise, KEEP_TERM_SHARDS);
        promise.catch(() => termShards.delete(name));
      }
      return promise;
    }

    /**
     * Fetch the shards of these terms (once each) and keep their weights.
     * @param {Iterable<string>} wanted
     */
    async function prepare(wanted) {
      /** @type {Map<string, {docs: Int32Array, weights: Float32Array} | null>} */
      const found = new Map();
      const missing = [];
      for (const term of new Set(wanted)) {
        const held = terms.get(term);
        if (held === undefined) {
          missing.push(term);
        } else {
          found.set(term, held);
          F.remember(terms, term, held, KEEP_TERMS); // used again: kept longest
        }
      }
      await Promise.all(
        missing.map(async (term) => {
          const at = floorIndex(firsts, term);
          let weights = null;
          if (at >= 0) {
            const shard = await termShard(root.terms[at][1]);
            const i = floorIndex(shard.terms, term);
            if (i >= 0 && shard.terms[i] === term) weights = termWeights(shard.postings[i], lengths, average, k1, b);
          }
          found.set(term, weights);
          F.remember(terms, term, weights, KEEP_TERMS);
        }),
      );
      return found;
    }

    /**
     * @param {string[]} tokens
     * @returns {Promise<Map<number, number>>}
     */
    async function scores(tokens) {
      // the weights this query prepared (another query may evict them meanwhile)
      const found = await prepare(tokens);
      /** @type {Map<number, number>} */
      const totals = new Map();
      for (const token of tokens) {
        const term = found.get(token);
        if (term) addTerm(totals, term);
      }
      return totals;
    }

    /** @param {number} at */
    function passageShard(at) {
      const name = root.passages[at][1];
      let promise = passageShards.get(name);
      if (!promise) {
        promise = load(name).then((json) => F.checkPassageShard(json, root.passages[at][0], name));
        F.remember(passageShards, name, promise, KEEP_PASSAGE_SHARDS);
        promise.catch(() => passageShards.delete(name));
      }
      return promise;
    }

    /**
     * Each row's display fields and where its text is (the answer shard
     * holding it, when the engine ships), in the order asked.
     * @param {number[]} rows
     * @returns {Promise<import("./types").RowMeta[]>}
     */
    async function metas(rows) {
      return Promise.all(
        rows.map(async (row) => {
          if (!Number.isInteger(row) || row < 0 || row >= root.rows) throw new RangeError(`passage row ${row} out of range`);
          const at = floorIndex(starts, row);
          const shard = await passageShard(at);
          const offset = row - starts[at];
          const [passage_id, page, chapter, section, snippet, doc, path] = shard.rows[offset];
          /** @type {{name: string, index: number} | null} */
          let answer = null;
          let first = 0;
          for (const [count, name] of shard.shards || []) {
            if (offset < first + count) {
              answer = { name, index: offset - first };
              break;
            }
            first += count;
          }
          return {
            row,
            meta: {
              passage_id,
              docname: shard.docnames[doc],
              url: `${shard.pages[page]}#${passage_id}`,
              chapter: shard.headings[chapter],
              section: shard.headings[section],
              heading_path: path.map((t) => shard.titles[t]),
              snippet,
            },
            answer,
          };
        }),
      );
    }

    /**
     * The `k` best passages for `query`, best first.
     * @param {string} query
     * @param {number} [k]
     * @returns {Promise<Hit[]>}
     */
    async function search(query, k = 10) {
      const best = ranked(await scores(tokenize(query, spec))).slice(0, k);
      const found = await metas(best.map(([row]) => row));
      return found.map(({ meta }, i) => ({
        passage_id: meta.passage_id,
        url: meta.url,
        chapter: meta.chapter,
        section: meta.section,
        snippet: meta.snippet,
        score: best[i][1],
      }));
    }

    /** @param {string} term a term whose shard `prepare` fetched */
    function df(term) {
      const found = terms.get(term);
      if (found === undefined) throw new Error(`ragcite search: the term ${JSON.stringify(term)} was not prepared`);
      return found ? found.docs.length : 0;
    }

    return { rows: root.rows, search, scores, prepare, metas, df, tokens: (query) => tokenize(query, spec) };
  }

  const api = { createStaticSearch, createShardedSearch, termWeights };
  lib.provide("search", api);
  if (typeof module === "object") module.exports = api;
})();
