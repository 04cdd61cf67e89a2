// @ts-check
"use strict";

/**
 * The browser engine's store (`store.js`): formats, checksums, names, and
 * what it fetches. Part of it reads a real built site when
 * `RAGCITE_TEST_SITE` names one (tests/test_browser_build.py runs it so).
 */

const test = require("node:test");
const assert = require("node:assert/strict");
const crypto = require("node:crypto");
const fs = require("node:fs");
const path = require("node:path");

require("../search.js");
const store = require("../store.js");

const { StoreError, createShardStore, resolveName, sha256, sha256Js } = store;
const { parseNpy, parseShard } = require("../files.js");

const { BASE, fakeFetch, fakeSite, hex, npy, shardBytes } = require("./fake_site.js");

// -- checksums -------------------------------------------------------------------

test("the JS SHA-256 agrees with node's on every length around a block", () => {
  for (const n of [0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 128, 1000, 100003]) {
    const data = new Uint8Array(crypto.randomBytes(n));
    assert.equal(sha256Js(data), hex(data), `length ${n}`);
    // a view into a larger buffer reads only its own bytes
    const padded = new Uint8Array(n + 7);
    padded.set(data, 3);
    assert.equal(sha256Js(padded.subarray(3, 3 + n)), hex(data), `view of length ${n}`);
  }
});

test("crypto.subtle and the JS SHA-256 give the same digest", async () => {
  const data = new Uint8Array(crypto.randomBytes(70000));
  assert.equal(await sha256(data, crypto.webcrypto.subtle), hex(data));
  assert.equal(await sha256(data, null), hex(data));
});

// -- formats --------------------------------------------------------------------

test(".npy files of int8 and float32 read as typed arrays of their shape", () => {
  const codes = parseNpy(npy("|i1", [2, 3], Int8Array.from([1, -2, 3, -4, 5, -6])), "x");
  assert.deepEqual(codes.shape, [2, 3]);
  assert.ok(codes.data instanceof Int8Array);
  assert.deepEqual(Array.from(codes.data), [1, -2, 3, -4, 5, -6]);
  const scales = parseNpy(npy("<f4", [2], Float32Array.from([0.5, 2])), "x");
  assert.ok(scales.data instanceof Float32Array);
  assert.deepEqual(Array.from(scales.data), [0.5, 2]);
  for (const bad of [new Uint8Array(20), npy("<f8", [1], Float64Array.from([1])), npy("|i1", [2, 3], Int8Array.from([1]))]) {
    assert.throws(() => parseNpy(bad, "x"), (/** @type {any} */ e) => e instanceof StoreError && e.kind === "format");
  }
});

test("a shard gives each row its fields and its own sentence vectors", () => {
  const scales = Float32Array.from([1, 2, 3]);
  const codes = Int8Array.from([1, 2, 3, 4, 5, 6]);
  const data = shardBytes(
    [
      ["ch1-sec0-p1", "One. Two.", 0, 9, "aa", 2],
      ["ch1-sec0-p2", "Three.", 11, 17, "bb", 1],
    ],
    2,
    scales,
    codes,
  );
  const shard = parseShard(data, "s");
  assert.equal(shard.dim, 2);
  const [a, b] = shard.rows;
  assert.deepEqual([a.passage_id, a.text, a.char_start, a.char_end, a.content_hash], ["ch1-sec0-p1", "One. Two.", 0, 9, "aa"]);
  assert.deepEqual(Array.from(/** @type {any} */ (a.sentences).codes), [1, 2, 3, 4]);
  assert.deepEqual(Array.from(/** @type {any} */ (a.sentences).scales), [1, 2]);
  assert.deepEqual(Array.from(/** @type {any} */ (b.sentences).codes), [5, 6]);
  assert.deepEqual(Array.from(/** @type {any} */ (b.sentences).scales), [3]);
  // without vectors (a build without sentence vectors)
  const bare = parseShard(shardBytes([["ch1-sec0-p1", "One.", 0, 4, "aa", -1]], 0, new Float32Array(0), new Int8Array(0)), "s");
  assert.equal(bare.rows[0].sentences, null);
  for (const bad of [data.subarray(0, data.length - 1), new Uint8Array([...data, 0]), Uint8Array.from([82, 67, 83, 72, 2, 0, 0, 0, 0, 0, 0, 0])]) {
    assert.throws(() => parseShard(bad, "s"), (/** @type {any} */ e) => e instanceof StoreError && e.kind === "format");
  }
});

test("a name from the manifest stays inside its folder, on its origin", () => {
  const folder = new URL(BASE);
  assert.equal(resolveName("shards/0123456789abcdef.bin", folder), `${BASE}shards/0123456789abcdef.bin`);
  assert.equal(resolveName("model.0123.onnx", folder), `${BASE}model.0123.onnx`);
  for (const name of ["../x.js", "/x.js", "https://evil.example/x.js", "//evil.example/x", "a//b", "./a", "%2e%2e/x", "a?b", "a#b", "a\\b", "", null]) {
    assert.throws(() => resolveName(/** @type {any} */ (name), folder), StoreError, String(name));
  }
});

// -- the store over fetch ----------------------------------------------------------

test("core() loads the search root and the vectors; a row's metadata comes from its passage shard", async () => {
  const site = fakeSite();
  const { fetcher, asked } = fakeFetch(site.files);
  const s = createShardStore({ manifestUrl: `${BASE}manifest.json`, fetch: fetcher, subtle: null });
  const core = await s.core();
  assert.equal(core.rows, 3);
  assert.ok(!asked.some((u) => u.includes("search/")), "no search shard before a query");
  const [{ meta, answer }] = await core.lexical.metas([1]);
  assert.equal(answer && answer.index, 1);
  assert.deepEqual(meta, {
    passage_id: "ch1-sec1-p1",
    docname: "a",
    url: "a.html#ch1-sec1-p1",
    chapter: "A",
    section: "A one",
    heading_path: ["A", "A one"],
    snippet: "Alpha second.",
  });
  assert.ok(core.passageVectors);
  assert.equal(core.passageVectors.rows, 3);
  assert.equal(core.passageVectors.dim, 4);
  assert.deepEqual(Array.from(core.passageVectors.scales), Array.from(Float32Array.from([0.1, 0.2, 0.3])));
  assert.deepEqual(core.ranker, { weights: [1] });
  assert.ok(!asked.some((u) => u.includes("shards/")), "no answer shard before a question");
  assert.ok(!asked.some((u) => u.includes("model")), "no model for the core");
  assert.ok(!asked.some((u) => u.includes("shards.")), "no shard listing: the passage shards name them");
  const hits = await core.lexical.search("beta");
  assert.deepEqual(
    hits.map((h) => h.passage_id),
    ["ch2-sec0-p1"],
  );
  assert.equal(asked.filter((u) => u.includes("search/")).length, 3, "the term shard and two passage shards");
});

test("passages(rows) fetches only the shards of those rows, once", async () => {
  const site = fakeSite();
  const { fetcher, asked } = fakeFetch(site.files);
  const s = createShardStore({ manifestUrl: `${BASE}manifest.json`, fetch: fetcher, subtle: null });
  await s.core();
  const before = asked.length;
  const [beta] = await s.passages([2]);
  assert.equal(asked.length, before + 2, "its passage shard and its answer shard");
  assert.equal(beta.row, 2);
  assert.equal(beta.record.text, "Beta. Gamma. Delta.");
  assert.equal(beta.record.url, "b.html#ch2-sec0-p1");
  assert.deepEqual(beta.record.heading_path, ["B"]);
  const want = site.vectors(2, 3);
  assert.deepEqual(Array.from(/** @type {any} */ (beta.sentences).codes), Array.from(want.codes));
  assert.deepEqual(Array.from(/** @type {any} */ (beta.sentences).scales), Array.from(want.scales));
  const again = await s.passages([2, 0, 1]);
  assert.equal(asked.length, before + 4, "the other shards once; row 2's again from memory");
  assert.deepEqual(
    again.map((p) => p.record.passage_id),
    ["ch2-sec0-p1", "ch1-sec0-p1", "ch1-sec1-p1"],
  );
  await assert.rejects(s.passages([3]), RangeError);
});

test("a model that does not match the manifest's checksum is refused", async () => {
  const site = fakeSite();
  const name = site.manifest.files.model;
  const tampered = Uint8Array.from(site.files[name]);
  tampered[1000] ^= 1;
  for (const subtle of [null, crypto.webcrypto.subtle]) {
    const { fetcher } = fakeFetch({ ...site.files, [name]: tampered });
    const s = createShardStore({ manifestUrl: `${BASE}manifest.json`, fetch: fetcher, subtle });
    await assert.rejects(s.bytes("model"), (/** @type {any} */ e) => e.kind === "integrity" && /checksum/.test(e.message));
  }
  // the right bytes pass, through either digest
  const { fetcher } = fakeFetch(site.files);
  const s = createShardStore({ manifestUrl: `${BASE}manifest.json`, fetch: fetcher, subtle: crypto.webcrypto.subtle });
  assert.equal(hex(await s.bytes("model")), site.manifest.sha256.model);
});

test("a file of another size, a shard not matching its name, a 404: clear errors", async () => {
  const site = fakeSite();
  const model = site.manifest.files.model;
  const short = { ...site.files, [model]: site.files[model].subarray(0, 1000) };
  const long = { ...site.files, [model]: new Uint8Array([...site.files[model], 1, 2, 3]) };
  for (const [files, kind] of /** @type {const} */ ([
    [short, "integrity"],
    [long, "integrity"],
    [{ ...site.files, [model]: undefined }, "missing"],
  ])) {
    const { fetcher } = fakeFetch(/** @type {any} */ (files));
    const s = createShardStore({ manifestUrl: `${BASE}manifest.json`, fetch: fetcher, subtle: null });
    await assert.rejects(s.bytes("model"), (/** @type {any} */ e) => e instanceof StoreError && e.kind === kind);
  }
  const shard = site.manifest && Object.keys(site.files).find((n) => n.startsWith("shards/"));
  const swapped = Uint8Array.from(site.files[/** @type {string} */ (shard)]);
  swapped[20] ^= 1;
  const { fetcher } = fakeFetch({ ...site.files, [/** @type {string} */ (shard)]: swapped });
  const s = createShardStore({ manifestUrl: `${BASE}manifest.json`, fetch: fetcher, subtle: null });
  await assert.rejects(s.passages([0]), (/** @type {any} */ e) => e.kind === "integrity");
});

test("progress counts each file's bytes up to its size; a cancelled load stops", async () => {
  const site = fakeSite();
  const { fetcher } = fakeFetch(site.files);
  /** @type {{role: string, loaded: number, total: number}[]} */
  const seen = [];
  const s = createShardStore({ manifestUrl: `${BASE}manifest.json`, fetch: fetcher, subtle: null, onProgress: (p) => seen.push(p) });
  await s.bytes("model");
  const model = seen.filter((p) => p.role === "model");
  assert.equal(model[0].loaded, 0);
  assert.equal(model.at(-1)?.loaded, site.manifest.bytes.model);
  assert.ok(model.length >= 5, "reported while it loads, not only at the end");
  assert.ok(model.every((p, i) => p.total === site.manifest.bytes.model && (i === 0 || p.loaded >= model[i - 1].loaded)));
  assert.equal(await s.size(["model", "ranker"]), site.manifest.bytes.model + site.manifest.bytes.ranker);
  assert.ok(s.fetched() >= site.manifest.bytes.model);

  const controller = new AbortController();
  const cancelled = createShardStore({ manifestUrl: `${BASE}manifest.json`, fetch: fetcher, subtle: null, signal: controller.signal });
  await cancelled.manifest();
  controller.abort();
  await assert.rejects(cancelled.bytes("model"), (/** @type {any} */ e) => e.kind === "aborted");
});

test("a manifest of another format is refused", async () => {
  const site = fakeSite();
  const manifest = JSON.parse(Buffer.from(site.files["manifest.json"]).toString());
  manifest.format_version = 99;
  const { fetcher } = fakeFetch({ ...site.files, "manifest.json": Buffer.from(JSON.stringify(manifest)) });
  const s = createShardStore({ manifestUrl: `${BASE}manifest.json`, fetch: fetcher, subtle: null });
  await assert.rejects(s.core(), (/** @type {any} */ e) => e.kind === "format" && /format/.test(e.message));
});

// -- a real site (tests/test_browser_build.py sets RAGCITE_TEST_SITE) -----------------

const SITE = process.env.RAGCITE_TEST_SITE || "";

test("on a built site: every record and sentence vector as the build wrote them", { skip: SITE ? false : "RAGCITE_TEST_SITE names no built site" }, async () => {
  const folder = path.join(SITE, "_ragcite");
  /** @type {typeof fetch} */
  const fromDisk = async (input) => {
    const url = String(input);
    const name = decodeURIComponent(url.slice(BASE.length));
    const file = path.join(folder, name);
    if (!url.startsWith(BASE) || !fs.existsSync(file)) return new Response("", { status: 404 });
    return new Response(fs.readFileSync(file));
  };
  const s = createShardStore({ manifestUrl: `${BASE}manifest.json`, fetch: fromDisk, subtle: crypto.webcrypto.subtle });
  const manifest = await s.manifest();
  const core = await s.core();
  const records = fs
    .readFileSync(path.join(folder, manifest.files.passages), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line));
  assert.equal(core.rows, records.length);
  const all = await s.passages(records.map((_, i) => i));
  const offsets = parseNpy(fs.readFileSync(path.join(folder, manifest.files.sentence_offsets)), "offsets").data;
  const codes = parseNpy(fs.readFileSync(path.join(folder, manifest.files.sentence_embeddings)), "codes");
  const scales = parseNpy(fs.readFileSync(path.join(folder, manifest.files.sentence_scales)), "scales").data;
  const dim = codes.shape[1];
  for (const [row, passage] of all.entries()) {
    assert.deepEqual(passage.record, records[row]);
    const { passage_id, url, chapter, section, heading_path, snippet, docname } = records[row];
    const [{ meta }] = await core.lexical.metas([row]);
    assert.deepEqual(meta, { passage_id, url, chapter, section, heading_path, snippet, docname });
    const start = Number(offsets[row]);
    const end = Number(offsets[row + 1]);
    const sentences = /** @type {any} */ (passage.sentences);
    assert.deepEqual(Array.from(sentences.codes), Array.from(/** @type {Int8Array} */ (codes.data).subarray(start * dim, end * dim)));
    assert.deepEqual(Array.from(sentences.scales), Array.from(/** @type {Float32Array} */ (scales).subarray(start, end)));
  }
  const vectors = parseNpy(fs.readFileSync(path.join(folder, manifest.files.embeddings)), "embeddings");
  assert.ok(core.passageVectors);
  assert.deepEqual(Array.from(core.passageVectors.codes), Array.from(/** @type {Int8Array} */ (vectors.data)));
  // the model and the runtime's WebAssembly pass their checksums, both ways
  const model = await s.bytes("model");
  assert.equal(sha256Js(model), manifest.sha256.model);
  assert.equal((await s.bytes("ort_wasm")).length, manifest.bytes.ort_wasm);
  const tokenizer = /** @type {{model: {type: string}}} */ (await s.json("tokenizer"));
  assert.equal(tokenizer.model.type, "WordPiece");
});

// -- Cache Storage (issue 42) ---------------------------------------------------------

/** A Cache Storage in memory, as the worker's `caches` behaves. */
function memoryCaches() {
  /** @type {Map<string, Map<string, Uint8Array>>} */
  const stores = new Map();
  const api = {
    stores,
    /** @param {string} name */
    async open(name) {
      if (!stores.has(name)) stores.set(name, new Map());
      const entries = /** @type {Map<string, Uint8Array>} */ (stores.get(name));
      return {
        /** @param {string} url */
        async match(url) {
          const data = entries.get(url);
          return data ? new Response(/** @type {any} */ (data)) : undefined;
        },
        /** @param {string} url @param {Response} response */
        async put(url, response) {
          entries.set(url, new Uint8Array(await response.arrayBuffer()));
        },
        /** @param {any} request */
        async delete(request) {
          return entries.delete(typeof request === "string" ? request : request.url);
        },
        async keys() {
          return [...entries.keys()].map((url) => ({ url }));
        },
      };
    },
  };
  return api;
}

test("a file kept in Cache Storage is read from it, checked, and not fetched again", async () => {
  const site = fakeSite();
  const caches = memoryCaches();
  const first = fakeFetch(site.files);
  const s1 = createShardStore({ manifestUrl: `${BASE}manifest.json`, fetch: first.fetcher, subtle: null, caches: /** @type {any} */ (caches) });
  await s1.core();
  const kept = [...(caches.stores.values().next().value || new Map()).keys()];
  assert.ok(kept.length >= 4, kept.join(" "));
  // the next page: nothing but the manifest over the network
  const again = fakeFetch(site.files);
  const s2 = createShardStore({ manifestUrl: `${BASE}manifest.json`, fetch: again.fetcher, subtle: null, caches: /** @type {any} */ (caches) });
  await s2.core();
  assert.deepEqual(again.asked.map((u) => u.replace(BASE, "")), ["manifest.json"]);
  assert.equal(s2.fetched() < s1.fetched(), true, "bytes from the cache are not counted as fetched");
  // a damaged copy is not used: the network's replaces it
  const [store] = caches.stores.values();
  const url = kept[0];
  store.set(url, new TextEncoder().encode("damaged"));
  const third = fakeFetch(site.files);
  const s3 = createShardStore({ manifestUrl: `${BASE}manifest.json`, fetch: third.fetcher, subtle: null, caches: /** @type {any} */ (caches) });
  await s3.core();
  assert.ok(third.asked.includes(url), third.asked.join(" "));
  assert.notEqual(new TextDecoder().decode(store.get(url)), "damaged");
});

test("a Cache Storage that refuses leaves the store working over the network", async () => {
  const site = fakeSite();
  const refusing = { open: async () => Promise.reject(new Error("SecurityError")) };
  const { fetcher } = fakeFetch(site.files);
  const s = createShardStore({ manifestUrl: `${BASE}manifest.json`, fetch: fetcher, subtle: null, caches: /** @type {any} */ (refusing) });
  const core = await s.core();
  assert.equal(core.passageVectors && core.passageVectors.rows, 3);
});
