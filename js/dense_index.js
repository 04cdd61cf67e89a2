// @ts-check
/**
 * Dense search without every passage vector: the JS twin of
 * `sphinx_ragcite/formats/dense_index.py` (`ApproxDense`), to the bit.
 *
 * The root (fetched once) holds each row's product-quantised code and its
 * cluster; a question reads the few cluster shards its search probes, each
 * holding its rows' int8 vectors as `embeddings.npy` stores them:
 *
 * 1. `T[j][c]`: the query's product with centroid `c` of subspace `j`,
 *    float64 products summed in order;
 * 2. each row's ADC score: `sum_j T[j][code[j][row]]`, in order (float64);
 * 3. rows by ADC score (best first, ties by row) are walked until their
 *    clusters number `probe`;
 * 4. those clusters' rows get their exact score (`denseScorer.exact`:
 *    float32 `code * scale * q`, summed as numpy sums); the others keep
 *    their ADC score;
 * 5. the `k` best, ties by row.
 *
 * Which shards are probed depends on the question alone, so a row's score
 * is the same whichever rows are asked for (lexical candidates too), and
 * `shardNames` can say what to prefetch before the search runs.
 *
 * Classic script, DOM-free: provides `dense_index` (see `lib.js`).
 */

/**
 * A checked root (`formats/dense_index.DenseRoot`).
 * @typedef {object} DenseRoot
 * @property {number} rows
 * @property {number} dim
 * @property {number} m subspaces
 * @property {number} centroids per subspace
 * @property {number} probe clusters a search reads
 * @property {Float32Array} codebook [m][centroids][dim / m]
 * @property {Uint8Array} codes [m][rows] (subspace-major)
 * @property {Uint16Array | Uint32Array} cluster each row's cluster
 * @property {Array<[number, string]>} clusters each cluster's rows and shard name
 */

/**
 * One cluster's exact vectors, in its rows' order.
 * @typedef {{codes: Int8Array, scales: Float32Array}} DenseShard
 */

(function () {
  "use strict";

  const lib = typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib;

  // the format's marks and version, from Python (`formats/dense_index.py`, through `spec.js`)
  const { DENSE_ROOT_MAGIC: ROOT_MAGIC, DENSE_SHARD_MAGIC: CLUSTER_MAGIC, DENSE_FORMAT: FORMAT_VERSION } = lib.need("spec");
  const SHARD_NAME = /^dense\/[0-9a-f]{16}\.bin$/;
  /** Parsed shards kept (the least recently used go first). */
  const KEEP_SHARDS = 256;

  /**
   * A `StoreError` of kind "format": the store's word for a damaged file.
   * @param {string} where
   * @param {string} what
   */
  function damaged(where, what) {
    const files = lib.need("files");
    return new files.StoreError(`${where} is damaged: ${what}. ${files.REBUILD}`, "format");
  }

  /**
   * `n` bytes at `offset` as a fresh, aligned copy.
   * @param {Uint8Array} bytes
   * @param {number} offset
   * @param {number} n
   */
  function copy(bytes, offset, n) {
    return bytes.slice(offset, offset + n).buffer;
  }

  /**
   * `read_dense_root`: the root's arrays, after its sizes were checked.
   * @param {Uint8Array} bytes
   * @param {string} [where]
   * @returns {DenseRoot}
   */
  function readRoot(bytes, where = "The book's dense index") {
    if (bytes.byteLength < 12 || String.fromCharCode(...bytes.subarray(0, 4)) !== ROOT_MAGIC) {
      throw damaged(where, "it is not a dense index");
    }
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    if (view.getUint32(4, true) !== FORMAT_VERSION) {
      throw damaged(where, `it has format ${view.getUint32(4, true)}, this widget reads ${FORMAT_VERSION}`);
    }
    const size = view.getUint32(8, true);
    /** @type {any} */
    let head = null;
    try {
      head = JSON.parse(new TextDecoder().decode(bytes.subarray(12, 12 + size)));
    } catch {
      // said below
    }
    const int = (/** @type {unknown} */ v) => typeof v === "number" && Number.isInteger(v) && v >= 0;
    if (
      !head ||
      !["rows", "dim", "m", "centroids", "probe", "cluster_bytes"].every((key) => int(head[key])) ||
      !Array.isArray(head.clusters) ||
      !head.clusters.every(
        (/** @type {unknown} */ c) => Array.isArray(c) && c.length === 2 && int(c[0]) && typeof c[1] === "string" && SHARD_NAME.test(c[1]),
      )
    ) {
      throw damaged(where, "its head cannot be read");
    }
    const { rows, dim, m, centroids, probe } = head;
    const width = head.cluster_bytes;
    if (m === 0 || dim % m || centroids < 1 || centroids > 256 || probe === 0 || (width !== 2 && width !== 4) || (12 + size) % 4) {
      throw damaged(where, "its head gives impossible sizes");
    }
    const bookBytes = 4 * centroids * dim;
    const expected = 12 + size + bookBytes + width * rows + m * rows;
    if (bytes.byteLength !== expected) throw damaged(where, `${bytes.byteLength} bytes where its head implies ${expected}`);
    let at = 12 + size;
    const codebook = new Float32Array(copy(bytes, at, bookBytes));
    at += bookBytes;
    const cluster = width === 4 ? new Uint32Array(copy(bytes, at, 4 * rows)) : new Uint16Array(copy(bytes, at, 2 * rows));
    at += width * rows;
    const codes = bytes.slice(at, at + m * rows);
    if (!codebook.every(Number.isFinite)) throw damaged(where, "its codebook holds non-numbers");
    if (codes.some((c) => c >= centroids)) throw damaged(where, "a code names a centroid it does not have");
    /** @type {Array<[number, string]>} */
    const clusters = head.clusters.map((/** @type {[number, string]} */ c) => [c[0], c[1]]);
    if (clusters.some(([count]) => count < 1)) throw damaged(where, "it lists a cluster of no rows");
    const counts = new Array(clusters.length).fill(0);
    for (const c of cluster) {
      if (c >= clusters.length) throw damaged(where, "its clusters do not cover its rows");
      counts[c] += 1;
    }
    if (counts.some((n, c) => n !== clusters[c][0])) throw damaged(where, "its cluster sizes do not match its rows");
    return { rows, dim, m, centroids, probe, codebook, codes, cluster, clusters };
  }

  /**
   * `read_dense_shard` (the digest is the store's to check): the exact
   * vectors of `rows`, which the shard must hold in that order.
   * @param {Uint8Array} bytes
   * @param {string} name
   * @param {Uint32Array} rows
   * @param {number} dim
   * @returns {DenseShard}
   */
  function readShard(bytes, name, rows, dim) {
    const where = `The dense shard ${name}`;
    const count = rows.length;
    if (bytes.byteLength < 16 || String.fromCharCode(...bytes.subarray(0, 4)) !== CLUSTER_MAGIC) {
      throw damaged(where, "it is not a dense shard");
    }
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    if (view.getUint32(4, true) !== FORMAT_VERSION || view.getUint32(8, true) !== count || view.getUint32(12, true) !== dim) {
      throw damaged(where, "its format or sizes differ from the root's");
    }
    if (bytes.byteLength !== 16 + count * (8 + dim)) throw damaged(where, "it is truncated or padded");
    for (let i = 0; i < count; i++) {
      if (view.getUint32(16 + 4 * i, true) !== rows[i]) throw damaged(where, "it holds other rows than the root lists");
    }
    const scales = new Float32Array(copy(bytes, 16 + 4 * count, 4 * count));
    if (!scales.every(Number.isFinite)) throw damaged(where, "its scales hold non-numbers");
    const codes = new Int8Array(copy(bytes, 16 + 8 * count, count * dim));
    return { codes, scales };
  }

  /**
   * Dense search over a root and the shards each question probes.
   * @param {Uint8Array} rootBytes
   * @param {(name: string) => Promise<Uint8Array>} fetchShard the shard's bytes
   *   (checked against its digest by the caller, as every store file)
   */
  function createApproxDense(rootBytes, fetchShard) {
    const { pairwiseSum } = lib.need("retrieve");
    const root = readRoot(rootBytes);
    const { rows: n, dim, m, centroids, cluster, clusters } = root;
    const step = dim / m;
    // each cluster's rows, ascending (a counting sort by cluster)
    const starts = new Uint32Array(clusters.length + 1);
    clusters.forEach(([count], c) => (starts[c + 1] = starts[c] + count));
    const order = new Uint32Array(n);
    const filled = starts.slice(0, clusters.length);
    /** each row's place in its cluster's shard */
    const place = new Uint32Array(n);
    for (let r = 0; r < n; r++) {
      const c = cluster[r];
      place[r] = filled[c] - starts[c];
      order[filled[c]++] = r;
    }
    /** @param {number} c */
    const members = (c) => order.subarray(starts[c], starts[c + 1]);
    /** @type {Map<number, Promise<DenseShard>>} */
    const shards = new Map();
    const products = new Float32Array(dim);

    /**
     * @param {Float32Array} q
     */
    function checkQuery(q) {
      if (q.length !== dim || !q.every(Number.isFinite)) throw new Error(`a query vector must be ${dim} finite numbers`);
    }

    /**
     * Every row's ADC score (steps 1-2).
     * @param {Float32Array} q
     * @returns {Float64Array}
     */
    function adc(q) {
      checkQuery(q);
      const { codebook, codes } = root;
      const table = new Float64Array(m * centroids);
      for (let j = 0; j < m; j++) {
        for (let c = 0; c < centroids; c++) {
          const base = (j * centroids + c) * step;
          let sum = 0;
          for (let d = 0; d < step; d++) sum += q[j * step + d] * codebook[base + d];
          table[j * centroids + c] = sum;
        }
      }
      const scores = new Float64Array(n);
      for (let j = 0; j < m; j++) {
        const t = j * centroids;
        const at = j * n;
        for (let r = 0; r < n; r++) scores[r] += table[t + codes[at + r]];
      }
      return scores;
    }

    /**
     * The clusters a search probes, in the order found (step 3): the rows by
     * score are walked from the top, a prefix at a time.
     * @param {Float64Array} scores
     * @returns {number[]}
     */
    function probed(scores) {
      const wanted = Math.min(root.probe, clusters.length);
      /** @type {number[]} */
      const found = [];
      if (!wanted) return found;
      const sorted = Float64Array.from(scores).sort();
      const seen = new Set();
      let prefix = Math.min(n, 16 * wanted);
      for (;;) {
        // the rows scoring at least the prefix-th best are a prefix of the walk
        const kth = sorted[n - prefix];
        /** @type {number[]} */
        const head = [];
        for (let r = 0; r < n; r++) if (scores[r] >= kth) head.push(r);
        head.sort((a, b) => scores[b] - scores[a] || a - b);
        found.length = 0;
        seen.clear();
        for (const r of head) {
          const c = cluster[r];
          if (seen.has(c)) continue;
          seen.add(c);
          found.push(c);
          if (found.length === wanted) return found;
        }
        if (prefix === n) return found;
        prefix = Math.min(n, prefix * 4);
      }
    }

    /**
     * The names of the shards a search for `q` reads (what to prefetch).
     * @param {Float32Array} q
     */
    function shardNames(q) {
      return probed(adc(q)).map((c) => clusters[c][1]);
    }

    /**
     * A cluster's shard, fetched and read once (and kept while in use).
     * @param {number} c
     */
    function shard(c) {
      let found = shards.get(c);
      if (found) {
        shards.delete(c); // most recently used last
      } else {
        const name = clusters[c][1];
        found = fetchShard(name).then((bytes) => readShard(bytes, name, members(c), dim));
        found.catch(() => shards.delete(c)); // a failed fetch is tried again next time
      }
      shards.set(c, found);
      while (shards.size > KEEP_SHARDS) shards.delete(/** @type {number} */ (shards.keys().next().value));
      return found;
    }

    /**
     * Every row's score: exact in the probed clusters (steps 1-4).
     * @param {Float32Array} q
     * @returns {Promise<Float64Array>}
     */
    async function allScores(q) {
      const scores = adc(q);
      const chosen = probed(scores);
      const read = await Promise.all(chosen.map(shard));
      chosen.forEach((c, i) => {
        const { codes, scales } = read[i];
        members(c).forEach((row, s) => {
          const scale = scales[s];
          const base = s * dim;
          for (let d = 0; d < dim; d++) products[d] = Math.fround(codes[base + d] * scale) * q[d];
          scores[row] = pairwiseSum(products, 0, dim);
        });
      });
      return scores;
    }

    /**
     * `ApproxDense.top` (ties by row) with the scores of its rows and of
     * every row of `extraRows` (the lexical candidates), as `scores` gives them.
     * @param {Float32Array} q
     * @param {number} k
     * @param {Iterable<number>} [extraRows]
     * @returns {Promise<{rows: number[], scores: Map<number, number>}>}
     */
    async function search(q, k, extraRows = []) {
      const all = await allScores(q);
      /** @type {number[]} */
      let rows = [];
      if (k > 0 && n > 0) {
        const kth = n > k ? Float64Array.from(all).sort()[n - k] : -Infinity;
        for (let r = 0; r < n; r++) if (all[r] >= kth) rows.push(r);
        rows = rows.sort((a, b) => all[b] - all[a] || a - b).slice(0, k);
      }
      const scores = new Map();
      for (const r of [...rows, ...extraRows]) scores.set(r, all[r]);
      return { rows, scores };
    }

    /**
     * `ApproxDense.scores`: each row's score for `q`.
     * @param {Float32Array} q
     * @param {Iterable<number>} rows
     */
    async function scores(q, rows) {
      const all = await allScores(q);
      return Array.from(rows, (r) => all[r]);
    }

    /**
     * A row's exact vector (float32 `code * scale`), from its cluster's shard.
     * @param {number} row
     * @returns {Promise<Float32Array>}
     */
    async function vector(row) {
      if (!(row >= 0 && row < n)) throw new RangeError(`no row ${row}`);
      const { codes, scales } = await shard(cluster[row]);
      const at = place[row];
      const scale = scales[at];
      return Float32Array.from(codes.subarray(at * dim, (at + 1) * dim), (code) => code * scale);
    }

    return { rows: n, dim, probe: root.probe, adc, shardNames, search, scores, vector };
  }

  const api = { readRoot, readShard, createApproxDense };
  lib.provide("dense_index", api);
  if (typeof module === "object") module.exports = api;
})();
