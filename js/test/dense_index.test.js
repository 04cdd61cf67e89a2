// @ts-check
"use strict";
/**
 * `dense_index.js`: the approximate dense search over a root and its cluster
 * shards. Probing every cluster is exact search (`denseScorer.top`, numpy's
 * float32 scores); ADC scores are the products with the codes' centroids;
 * shards are fetched in parallel, once; damaged files are refused.
 * Python's search of the same files is compared in tests/test_dense_index.py.
 */

const test = require("node:test");
const assert = require("node:assert/strict");
const crypto = require("node:crypto");

const { createApproxDense, readRoot } = require("../dense_index.js");
const { denseScorer } = require("../retrieve.js");

/** A seeded generator (mulberry32), for vectors and queries. */
function random(seed = 1) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A root and its shards in the format `build_dense_index` writes, from given
 * codes: what the reader and the search see, without the k-means.
 * @param {{dim: number, m: number, centroids: number, probe: number, codebook: Float32Array,
 *   pq: Uint8Array, cluster: number[], codes: Int8Array, scales: Float32Array}} spec
 */
function writeIndex(spec) {
  const { dim, m, centroids, probe, codebook, pq, cluster, codes, scales } = spec;
  const rows = cluster.length;
  const count = Math.max(-1, ...cluster) + 1;
  /** @type {Map<string, Uint8Array>} */
  const shards = new Map();
  /** @type {Array<[number, string]>} */
  const listed = [];
  for (let c = 0; c < count; c++) {
    const members = cluster.flatMap((k, r) => (k === c ? [r] : []));
    const head = new Uint32Array([0, 1, members.length, dim]);
    const bytes = new Uint8Array(16 + members.length * (8 + dim));
    bytes.set(new Uint8Array(head.buffer));
    bytes.set([..."RCDS"].map((ch) => ch.charCodeAt(0)));
    bytes.set(new Uint8Array(Uint32Array.from(members).buffer), 16);
    bytes.set(new Uint8Array(Float32Array.from(members, (r) => scales[r]).buffer), 16 + 4 * members.length);
    members.forEach((r, i) => bytes.set(new Uint8Array(codes.buffer, r * dim, dim), 16 + 8 * members.length + i * dim));
    const name = `dense/${crypto.createHash("sha256").update(bytes).digest("hex").slice(0, 16)}.bin`;
    shards.set(name, bytes);
    listed.push([members.length, name]);
  }
  const json = JSON.stringify({ format_version: 1, rows, dim, m, centroids, probe, cluster_bytes: 2, clusters: listed });
  let head = new TextEncoder().encode(json + " ".repeat((4 - ((12 + json.length) % 4)) % 4));
  const root = new Uint8Array(12 + head.length + codebook.byteLength + 2 * rows + pq.length);
  root.set([..."RCDI"].map((ch) => ch.charCodeAt(0)));
  root.set(new Uint8Array(new Uint32Array([1, head.length]).buffer), 4);
  root.set(head, 12);
  let at = 12 + head.length;
  root.set(new Uint8Array(codebook.buffer), at);
  at += codebook.byteLength;
  root.set(new Uint8Array(Uint16Array.from(cluster).buffer), at);
  root.set(pq, at + 2 * rows);
  return { root, shards };
}

/**
 * A book of `rows` random int8 vectors in `clusters` clusters (consecutive
 * runs), quantised with random centroids: the codes need not be good for
 * the search to be defined.
 */
function makeBook(rows = 120, dim = 16, m = 4, centroids = 8, clusters = 6, probe = 2) {
  const rand = random(7);
  const codes = Int8Array.from({ length: rows * dim }, () => Math.round(rand() * 254 - 127));
  const scales = Float32Array.from({ length: rows }, () => Math.fround(0.001 + rand() * 0.01));
  const codebook = Float32Array.from({ length: centroids * dim }, () => rand() - 0.5);
  const pq = Uint8Array.from({ length: m * rows }, () => Math.floor(rand() * centroids));
  const cluster = Array.from({ length: rows }, (_, r) => Math.floor((r * clusters) / rows));
  return { dim, m, centroids, probe, codebook, pq, cluster, codes, scales };
}

/** @param {number} dim @param {number} seed */
function query(dim, seed) {
  const rand = random(seed);
  const q = Array.from({ length: dim }, () => rand() - 0.5);
  const norm = Math.hypot(...q);
  return Float32Array.from(q, (v) => v / norm);
}

/** @param {Map<string, Uint8Array>} shards @param {string[]} [log] */
function fetcher(shards, log = []) {
  return async (/** @type {string} */ name) => {
    log.push(name);
    const bytes = shards.get(name);
    if (!bytes) throw new Error(`no shard ${name}`);
    return bytes;
  };
}

test("probing every cluster is exact search, as denseScorer.top", async () => {
  const book = makeBook(120, 16, 4, 8, 6, 6);
  const { root, shards } = writeIndex(book);
  const dense = createApproxDense(root, fetcher(shards));
  const exact = denseScorer({ codes: book.codes, scales: book.scales, dim: 16, rows: 120 });
  for (let seed = 1; seed <= 10; seed++) {
    const q = query(16, seed);
    const got = await dense.search(q, 10);
    const want = exact.top(q, 10);
    assert.deepEqual(got.rows, want.rows);
    for (const r of got.rows) assert.equal(got.scores.get(r), want.scores.get(r));
  }
});

test("ADC scores are the products with each code's centroid, in float64", () => {
  const book = makeBook();
  const dense = createApproxDense(writeIndex(book).root, fetcher(new Map()));
  const q = query(16, 3);
  const scores = dense.adc(q);
  const step = 4;
  for (const row of [0, 1, 57, 119]) {
    let want = 0;
    for (let j = 0; j < 4; j++) {
      const c = book.pq[j * 120 + row];
      let t = 0;
      for (let d = 0; d < step; d++) t += q[j * step + d] * book.codebook[(j * 8 + c) * step + d];
      want += t;
    }
    assert.equal(scores[row], want);
  }
});

test("a search reads its probe's shards, in parallel and once; other rows keep ADC scores", async () => {
  const book = makeBook();
  const { root, shards } = writeIndex(book);
  /** @type {string[]} */
  const log = [];
  /** @type {Array<() => void>} */
  const waiting = [];
  const dense = createApproxDense(root, async (name) => {
    log.push(name);
    await new Promise((resolve) => waiting.push(() => resolve(undefined)));
    return /** @type {Uint8Array} */ (shards.get(name));
  });
  const q = query(16, 5);
  const names = dense.shardNames(q);
  assert.equal(names.length, 2);
  const pending = dense.search(q, 5, [0, 119]);
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(log, names); // both asked for before either arrived
  waiting.forEach((go) => go());
  const { rows, scores } = await pending;
  assert.equal(rows.length, 5);
  assert.ok(scores.has(0) && scores.has(119));
  const adc = dense.adc(q);
  const exact = denseScorer({ codes: book.codes, scales: book.scales, dim: 16, rows: 120 });
  const probed = new Set(names.map((name) => [...shards.keys()].indexOf(name)));
  for (const [row, score] of scores) {
    assert.equal(score, probed.has(book.cluster[row]) ? exact.exact(q, row) : adc[row]);
  }
  // the same question again: no fetch, the same scores
  const again = dense.scores(q, [...scores.keys()]);
  waiting.forEach((go) => go());
  assert.deepEqual(await again, [...scores.values()]);
  assert.equal(log.length, 2);
});

test("a shard that failed to arrive is fetched again by the next search", async () => {
  const { root, shards } = writeIndex(makeBook());
  let fail = true;
  const dense = createApproxDense(root, async (name) => {
    if (fail) throw new Error("offline");
    return /** @type {Uint8Array} */ (shards.get(name));
  });
  const q = query(16, 9);
  await assert.rejects(dense.search(q, 3), /offline/);
  fail = false;
  assert.equal((await dense.search(q, 3)).rows.length, 3);
});

test("damaged roots and shards are refused as format errors", async () => {
  const book = makeBook();
  const { root, shards } = writeIndex(book);
  const cases = [
    root.subarray(0, root.length - 1),
    Uint8Array.from(root, (b, i) => (i === 0 ? 0x58 : b)),
    Uint8Array.from(root, (b, i) => (i === 4 ? 9 : b)),
    Uint8Array.from(root, (b, i) => (i === root.length - 1 ? 200 : b)),
  ];
  for (const bytes of cases) {
    assert.throws(() => readRoot(bytes), (/** @type {any} */ e) => e.kind === "format" && /damaged/.test(e.message));
  }
  const swapped = new Map([...shards].map(([name], i, all) => [name, all[(i + 1) % all.length][1]]));
  const dense = createApproxDense(root, fetcher(swapped));
  await assert.rejects(dense.search(query(16, 2), 3), (/** @type {any} */ e) => e.kind === "format");
});

test("a row's vector comes from its cluster's shard, as denseScorer.vector", async () => {
  const book = makeBook();
  const { root, shards } = writeIndex(book);
  /** @type {string[]} */
  const log = [];
  const dense = createApproxDense(root, fetcher(shards, log));
  const exact = denseScorer({ codes: book.codes, scales: book.scales, dim: 16, rows: 120 });
  for (const row of [0, 19, 20, 77, 119]) assert.deepEqual(await dense.vector(row), exact.vector(row));
  assert.equal(new Set(log).size, 4); // rows 0 and 19 share a shard
  await assert.rejects(dense.vector(120), RangeError);
});
