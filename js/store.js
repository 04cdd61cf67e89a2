// @ts-check
/**
 * The browser engine's files, fetched from the site's `_ragcite/`: the
 * `EngineStore` of the browser answer engine (see `types.d.ts`, "Browser
 * engine") over `fetch`, with the manifest's names.
 *
 * What every question needs is loaded once (`core()`): the static search
 * index, the passage vectors, the ranker and the shard listing. What one
 * question needs is fetched for its passages only (`passages(rows)`): the
 * shards holding them (`sphinx_ragcite/formats/shards.py`), each a small
 * file named by its digest, so the browser's HTTP cache serves it to later
 * questions and visits. No Range requests: some static hosts answer them
 * with the whole file.
 *
 * Every file is checked against the manifest's SHA-256 (a shard against the
 * digest in its name) before it is used: a model that does not match is
 * never run. `crypto.subtle` does it where the page is a secure context
 * (HTTPS, localhost); elsewhere (an intranet over plain HTTP) a JS SHA-256.
 * Every name is resolved inside the manifest's folder, on its origin.
 *
 * The manifest's files (content-addressed: a new build gives new names) are
 * also kept in Cache Storage, one cache per index folder, once checked: a
 * private window's HTTP cache keeps nothing as large as the model, so
 * without it every page of a visit downloaded the 37 MB again. A file read
 * back from it is checked again; entries the current manifest no longer
 * names are deleted, so the cache holds one build's files at most. Where
 * Cache Storage is missing or refuses (a page over plain HTTP is no secure
 * context; storage turned off), the HTTP cache is all there is.
 *
 * The files' formats are read and checked by `files.js`; this file
 * fetches, checks digests, caches, and finds a passage's shard.
 *
 * Classic script, DOM-free (it runs in the worker): provides `store` (see `lib.js`).
 */

/** @typedef {import("./types").EngineCore} EngineCore */
/** @typedef {import("./types").PassageMeta} PassageMeta */
/** @typedef {import("./types").PassageFull} PassageFull */
/** @typedef {import("./types").EngineStore} EngineStore */
/** @typedef {import("./types").Manifest} Manifest */
/** @typedef {import("./types").Shard} Shard */

/**
 * Bytes loaded of one file, as `onProgress` hears it.
 * @typedef {object} FileProgress
 * @property {string} role the manifest's role ("model", "ort_wasm", ...)
 * @property {number} loaded
 * @property {number} total the manifest's size of it
 */

/**
 * @typedef {object} StoreOptions
 * @property {string | URL} manifestUrl `.../_ragcite/manifest.json`
 * @property {typeof fetch} [fetch] injected in tests
 * @property {(progress: FileProgress) => void} [onProgress] while a file loads
 * @property {AbortSignal} [signal] stops every fetch (the reader cancelled)
 * @property {{digest(algorithm: string, data: BufferSource): Promise<ArrayBuffer>} | null} [subtle]
 *   `crypto.subtle`, or null for the JS SHA-256 (injected in tests)
 * @property {boolean} [anyManifest] read a manifest of another format
 *   version (keyword search, whose files check their own formats)
 * @property {CacheStorage | null} [caches] Cache Storage, where the engine's
 *   files are kept between the pages of a visit (null: none; default: the
 *   global `caches` of a secure context)
 */

/**
 * @typedef {object} ShardStore
 * @property {() => Promise<Manifest>} manifest the manifest (fetched once)
 * @property {() => Promise<EngineCore>} core
 * @property {() => Promise<import("./search.js").ShardedSearch>} search the
 *   sharded static index's searcher alone (its root fetched once; `core()`
 *   shares it): keyword search needs nothing else
 * @property {(rows: number[]) => Promise<PassageFull[]>} passages
 * @property {(role: string, keep?: boolean) => Promise<Uint8Array>} bytes a file's
 *   checked bytes; `keep` false: not kept for a second call (a model, read once)
 * @property {(role: string) => Promise<unknown>} json a JSON file, checked
 *   against its digest and parsed (what it holds is for its reader to check)
 * @property {(role: string) => Promise<string>} url where a file is (checked name)
 * @property {(roles: string[]) => Promise<number>} size the manifest's bytes of these
 * @property {() => number} fetched bytes fetched so far (over the wire before gzip)
 * @property {() => number} checkedMs milliseconds spent on checksums so far
 */

(function () {
  "use strict";

  /** The page's or the worker's globals (what may be missing is checked). */
  const g = globalThis;
  const lib = typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib;

  const F = lib.need("files");
  const { REBUILD, StoreError } = F;
  /** A manifest lists a few dozen files; anything near this is not one. */
  const MAX_MANIFEST = lib.need("spec").MAX_MANIFEST_BYTES;

  // -- SHA-256 ------------------------------------------------------------------

  const K = new Uint32Array([
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
    0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
    0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
    0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2,
  ]);

  /**
   * SHA-256 in JS, for pages that are no secure context (no `crypto.subtle`).
   * ~100 MB/s in V8: a 23 MB model takes a few tenths of a second.
   * @param {Uint8Array} data
   * @returns {string} hex
   */
  function sha256Js(data) {
    const h = new Uint32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
    const w = new Uint32Array(64);
    const bits = data.length * 8;
    const tail = new Uint8Array(((data.length + 9 + 63) >> 6) * 64 - (data.length & ~63));
    tail.set(data.subarray(data.length & ~63));
    tail[data.length & 63] = 0x80;
    const view = new DataView(tail.buffer);
    view.setUint32(tail.length - 8, Math.floor(bits / 0x100000000));
    view.setUint32(tail.length - 4, bits >>> 0);
    const whole = data.length & ~63;
    const main = new DataView(data.buffer, data.byteOffset, whole);
    /** @param {DataView} v @param {number} at */
    const block = (v, at) => {
      for (let i = 0; i < 16; i++) w[i] = v.getUint32(at + 4 * i);
      for (let i = 16; i < 64; i++) {
        const a = w[i - 15];
        const b = w[i - 2];
        const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
        const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
        w[i] = (w[i - 16] + s0 + w[i - 7] + s1) | 0;
      }
      let [a, b, c, d, e, f, gg, hh] = h;
      for (let i = 0; i < 64; i++) {
        const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
        const ch = (e & f) ^ (~e & gg);
        const t1 = (hh + S1 + ch + K[i] + w[i]) | 0;
        const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
        const maj = (a & b) ^ (a & c) ^ (b & c);
        const t2 = (S0 + maj) | 0;
        hh = gg;
        gg = f;
        f = e;
        e = (d + t1) | 0;
        d = c;
        c = b;
        b = a;
        a = (t1 + t2) | 0;
      }
      h[0] += a;
      h[1] += b;
      h[2] += c;
      h[3] += d;
      h[4] += e;
      h[5] += f;
      h[6] += gg;
      h[7] += hh;
    };
    for (let at = 0; at < whole; at += 64) block(main, at);
    for (let at = 0; at < tail.length; at += 64) block(view, at);
    return Array.from(h, (x) => x.toString(16).padStart(8, "0")).join("");
  }

  /**
   * @param {Uint8Array} data
   * @param {StoreOptions["subtle"]} subtle
   * @returns {Promise<string>} hex SHA-256
   */
  async function sha256(data, subtle) {
    if (!subtle) return sha256Js(data);
    const digest = await subtle.digest("SHA-256", /** @type {BufferSource} */ (data));
    return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
  }

  /** Cache Storage where there is one (secure contexts only), else null. */
  function defaultCaches() {
    try {
      return g.isSecureContext !== false && g.caches && typeof g.caches.open === "function" ? g.caches : null;
    } catch {
      return null; // a sandboxed or storage-less context throws on access
    }
  }

  /** Parsed answer shards kept between questions, at most. */
  const KEEP_SHARDS = 128;

  /** The cache of one index folder's files. */
  const CACHE_PREFIX = "ragcite-engine ";

  /** `crypto.subtle` where there is one (secure contexts only). */
  function defaultSubtle() {
    const c = g.crypto;
    return c && c.subtle && typeof c.subtle.digest === "function" ? c.subtle : null;
  }

  // -- names ------------------------------------------------------------------

  /**
   * Where a name the manifest gives lies: inside the manifest's folder, or
   * an error (the site may come from anywhere; a name is no URL).
   * @param {string} name
   * @param {URL} folder
   */
  function resolveName(name, folder) {
    if (typeof name !== "string" || !name || /[\\?#%:]/.test(name) || name.startsWith("/")) {
      throw new StoreError(`The index names a file ${JSON.stringify(name)}. ${REBUILD}`, "format");
    }
    if (name.split("/").some((part) => part === "" || part === "." || part === "..")) {
      throw new StoreError(`The index names ${JSON.stringify(name)}, outside its folder. ${REBUILD}`, "format");
    }
    const url = new URL(name, folder);
    if (url.origin !== folder.origin || !url.pathname.startsWith(folder.pathname)) {
      throw new StoreError(`The index names ${JSON.stringify(name)}, outside its folder. ${REBUILD}`, "format");
    }
    return url.href;
  }

  // -- Cache Storage ----------------------------------------------------------------

  /**
   * The checked files of one index folder kept in Cache Storage: every
   * failure means "not cached", never an error.
   * @param {CacheStorage | null} storage
   * @param {URL} folder
   */
  function createFileCache(storage, folder) {
    /** @type {Promise<Cache | null> | null} */
    let opened = null;
    function cache() {
      if (!opened) {
        opened = storage
          ? Promise.resolve()
              .then(() => storage.open(CACHE_PREFIX + folder.href))
              .catch(() => null)
          : Promise.resolve(null);
      }
      return opened;
    }
    /** @param {string} url */
    async function cachedResponse(url) {
      const c = await cache();
      if (!c) return null;
      try {
        const found = await c.match(url);
        return found && found.ok ? found : null;
      } catch {
        return null;
      }
    }
    /**
     * @param {string} url
     * @param {Uint8Array} data checked
     */
    async function cachePut(url, data) {
      const c = await cache();
      if (!c) return;
      try {
        const type = url.endsWith(".wasm") ? "application/wasm" : "application/octet-stream";
        await c.put(url, new Response(/** @type {BodyInit} */ (data), { headers: { "Content-Type": type } }));
      } catch {
        // full (a private window's quota) or refused: the HTTP cache remains
      }
    }
    /** @param {string} url */
    async function forget(url) {
      const c = await cache();
      if (c) await c.delete(url).catch(() => false);
    }
    /**
     * Delete what the manifest no longer names: the cache keeps one build.
     * @param {Manifest} m
     */
    async function evict(m) {
      const c = await cache();
      if (!c) return;
      try {
        const named = new Set();
        for (const name of Object.values(m.files || {})) {
          try {
            named.add(resolveName(name, folder));
          } catch {
            // not a file of ours: nothing to keep
          }
        }
        for (const request of await c.keys()) {
          if (!named.has(request.url)) await c.delete(request);
        }
      } catch {
        // the cache is a help, not a need
      }
    }
    return { cachedResponse, cachePut, forget, evict };
  }

  // -- the network ------------------------------------------------------------------

  /**
   * GETs of the site's files, and their bodies read with a size limit.
   * @param {typeof fetch} doFetch
   * @param {AbortSignal | undefined} signal
   */
  function createFetcher(doFetch, signal) {
    let fetched = 0;

    /**
     * @param {string} url
     * @param {RequestCache} cache
     */
    async function get(url, cache) {
      if (signal && signal.aborted) throw new StoreError("Loading was cancelled.", "aborted");
      let response;
      try {
        response = await doFetch(url, { credentials: "same-origin", cache, signal });
      } catch (error) {
        if (signal && signal.aborted) throw new StoreError("Loading was cancelled.", "aborted");
        throw new StoreError(`Could not load ${url} (${/** @type {Error} */ (error).message}).`, "network");
      }
      if (!response.ok) {
        throw new StoreError(`The site has no ${url} (HTTP ${response.status}). ${REBUILD}`, "missing");
      }
      return response;
    }

    /**
     * A response's body, at most *limit* bytes, reporting progress.
     * @param {Response} response
     * @param {number} limit
     * @param {(loaded: number) => void} [progress]
     * @param {boolean} [local] from Cache Storage: not counted as fetched
     * @returns {Promise<Uint8Array>}
     */
    async function body(response, limit, progress, local = false) {
      const wire = local ? 0 : 1;
      const reader = response.body && typeof response.body.getReader === "function" ? response.body.getReader() : null;
      if (!reader) {
        const all = new Uint8Array(await response.arrayBuffer());
        fetched += wire * all.byteLength;
        if (progress) progress(all.byteLength);
        return all;
      }
      // the whole file at once where its size is known (a manifest's file:
      // the limit is its size), else the response's length, else 64 KB that
      // grows: tens of shards in flight must not each hold 64 MB
      const declared = Number(response.headers && response.headers.get && response.headers.get("Content-Length"));
      const first = local || limit < 64 << 20 ? limit : declared > 0 ? declared : 64 << 10;
      let out = new Uint8Array(Math.min(limit, first) || 1024);
      let loaded = 0;
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          if (loaded + value.byteLength > out.length) {
            if (loaded + value.byteLength > limit) {
              throw new StoreError(`${response.url} is larger than the index says. ${REBUILD}`, "integrity");
            }
            const bigger = new Uint8Array(Math.min(limit, Math.max(2 * out.length, loaded + value.byteLength)));
            bigger.set(out.subarray(0, loaded));
            out = bigger;
          }
          out.set(value, loaded);
          loaded += value.byteLength;
          fetched += wire * value.byteLength;
          if (progress) progress(loaded);
        }
      } catch (error) {
        if (error instanceof StoreError) throw error;
        if (signal && signal.aborted) throw new StoreError("Loading was cancelled.", "aborted");
        throw new StoreError(`Loading ${response.url} failed (${/** @type {Error} */ (error).message}).`, "network");
      }
      return loaded === out.length ? out : out.subarray(0, loaded);
    }

    return { get, body, fetched: () => fetched };
  }

  // -- the store ------------------------------------------------------------------

  /**
   * @param {StoreOptions} options
   * @returns {ShardStore}
   */
  function createShardStore(options) {
    const subtle = options.subtle === undefined ? defaultSubtle() : options.subtle;
    const manifestUrl = new URL(String(options.manifestUrl));
    const folder = new URL("./", manifestUrl);
    const { get, body, fetched } = createFetcher(options.fetch || g.fetch.bind(g), options.signal);
    const { cachedResponse, cachePut, forget, evict } = createFileCache(
      options.caches === undefined ? defaultCaches() : options.caches,
      folder,
    );
    let checkedMs = 0;
    const clock = () => (g.performance && typeof g.performance.now === "function" ? g.performance.now() : Date.now());
    /** @param {Uint8Array} data */
    const checksum = async (data) => {
      const started = clock();
      try {
        return await sha256(data, subtle);
      } finally {
        checkedMs += clock() - started;
      }
    };

    /** @type {Promise<Manifest> | null} */
    let manifestPromise = null;

    function manifest() {
      if (!manifestPromise) {
        manifestPromise = (async () => {
          // revalidated: the one name that stays when the site is rebuilt
          const response = await get(manifestUrl.href, "no-cache");
          const text = new TextDecoder().decode(await body(response, MAX_MANIFEST));
          /** @type {unknown} */
          let read;
          try {
            read = JSON.parse(text);
          } catch {
            throw new StoreError(`The book's index manifest is not JSON. ${REBUILD}`, "format");
          }
          // the page's keyword search reads a manifest of another version
          // too: the search root it names checks its own format
          const data =
            options.anyManifest && F.isObject(read) && F.isObject(read.files)
              ? /** @type {Manifest} */ (read)
              : F.checkManifest(read);
          evict(data); // in the background
          return data;
        })();
        manifestPromise.catch(() => {
          manifestPromise = null;
        });
      }
      return manifestPromise;
    }

    /** @type {Map<string, Promise<Uint8Array>>} */
    const files = new Map();

    /**
     * @param {string} role
     * @param {boolean} [keep] false: the caller takes the only reference
     * @returns {Promise<Uint8Array>}
     */
    function bytes(role, keep = true) {
      let promise = files.get(role);
      if (!promise) {
        promise = (async () => {
          const m = await manifest();
          const name = m.files[role];
          const size = m.bytes && m.bytes[role];
          const digest = m.sha256 && m.sha256[role];
          if (typeof name !== "string" || typeof size !== "number" || typeof digest !== "string") {
            throw new StoreError(`The book's index lists no ${role} file. ${REBUILD}`, "missing");
          }
          const url = resolveName(name, folder);
          const report = options.onProgress;
          if (report) report({ role, loaded: 0, total: size });
          const progress = report && ((/** @type {number} */ loaded) => report({ role, loaded, total: size }));
          // a copy kept by an earlier page: checked as a download is
          const kept = await cachedResponse(url);
          if (kept) {
            const data = await body(kept, size, progress, true).catch(() => null);
            if (data && data.byteLength === size && (await checksum(data)) === digest) return data;
            await forget(url); // damaged: the network's copy replaces it
          }
          const data = await body(await get(url, "default"), size, progress);
          if (data.byteLength !== size) {
            throw new StoreError(`${url} has ${data.byteLength} bytes, the index says ${size}. ${REBUILD}`, "integrity");
          }
          if ((await checksum(data)) !== digest) {
            throw new StoreError(`${url} does not match the index's checksum, so it is not used. ${REBUILD}`, "integrity");
          }
          await cachePut(url, data);
          return data;
        })();
        if (keep) {
          files.set(role, promise);
          promise.catch(() => files.delete(role));
        }
      }
      return promise;
    }

    /** @param {string} role */
    async function json(role) {
      const data = await bytes(role, false);
      try {
        return JSON.parse(new TextDecoder().decode(data));
      } catch {
        throw new StoreError(`The book's ${role} file is not JSON. ${REBUILD}`, "format");
      }
    }

    /** @param {string} role */
    async function url(role) {
      const m = await manifest();
      return resolveName(m.files[role], folder);
    }

    /** @param {string[]} roles */
    async function size(roles) {
      const m = await manifest();
      return roles.reduce((n, role) => n + (Number(m.bytes && m.bytes[role]) || 0), 0);
    }

    /** @type {Map<string, Promise<Uint8Array>>} */
    const named = new Map();

    /**
     * A file the manifest does not list but a listed file names
     * (`search/<h>.json`, `shards/<h>.bin`): its name says its digest,
     * which its bytes must match.
     * @param {string} name
     * @returns {Promise<Uint8Array>}
     */
    function addressed(name) {
      let promise = named.get(name);
      if (!promise) {
        promise = (async () => {
          const address = resolveName(name, folder);
          const data = await body(await get(address, "default"), 64 << 20);
          const digest = await checksum(data);
          const base = name.slice(name.lastIndexOf("/") + 1).split(".")[0];
          if (!/^[0-9a-f]{8,64}$/.test(base) || !digest.startsWith(base)) {
            throw new StoreError(`${address} does not match its name's checksum, so it is not used. ${REBUILD}`, "integrity");
          }
          return data;
        })();
        // shared while in flight only: the readers keep what they parsed
        named.set(name, promise);
        promise.then(
          () => named.delete(name),
          () => named.delete(name),
        );
      }
      return promise;
    }

    /** @param {string} name */
    async function addressedJson(name) {
      const data = await addressed(name);
      try {
        return JSON.parse(new TextDecoder().decode(data));
      } catch {
        throw new StoreError(`${name} is not JSON. ${REBUILD}`, "format");
      }
    }

    /** @type {Promise<import("./search.js").ShardedSearch> | null} */
    let searchPromise = null;

    /** The sharded static index's searcher (its root fetched once). */
    function search() {
      if (!searchPromise) {
        searchPromise = json("search_root").then((root) => lib.need("search").createShardedSearch(root, addressedJson));
        searchPromise.catch(() => {
          searchPromise = null;
        });
      }
      return searchPromise;
    }

    /** @type {Promise<EngineCore> | null} */
    let corePromise = null;

    function core() {
      if (!corePromise) {
        corePromise = (async () => {
          const m = await manifest();
          const approximate = typeof m.files.dense === "string";
          const [lexical, ranker, vectors, dense] = await Promise.all([
            search(),
            json("ranker"),
            approximate || typeof m.files.embeddings !== "string" ? null : passageVectors(),
            approximate ? bytes("dense", false).then((data) => lib.need("dense_index").createApproxDense(data, addressed)) : null,
          ]);
          if (vectors && vectors.rows !== lexical.rows) {
            throw new StoreError(`The passage vectors and the search index hold different passages. ${REBUILD}`, "format");
          }
          return { manifest: m, ranker, rows: lexical.rows, lexical, passageVectors: vectors, dense };
        })();
        corePromise.catch(() => {
          corePromise = null;
        });
      }
      return corePromise;
    }

    /** Every passage's vector (a book small enough to search exactly). */
    async function passageVectors() {
      const [codesBytes, scalesBytes] = await Promise.all([bytes("embeddings"), bytes("embedding_scales")]);
      const codes = F.parseNpy(codesBytes, "embeddings");
      const scales = F.parseNpy(scalesBytes, "embedding_scales");
      const [rows, dim] = codes.shape;
      if (!(codes.data instanceof Int8Array) || !(scales.data instanceof Float32Array) || scales.shape[0] !== rows) {
        throw new StoreError(`The passage vectors do not match their scales. ${REBUILD}`, "format");
      }
      return { codes: codes.data, scales: scales.data, dim, rows };
    }

    /** @type {Map<string, Promise<Shard>>} */
    const shards = new Map();

    /** @param {string} name */
    function shard(name) {
      let promise = shards.get(name);
      if (!promise) {
        promise = addressed(name).then((data) => F.parseShard(data, resolveName(name, folder)));
        F.remember(shards, name, promise, KEEP_SHARDS);
        promise.catch(() => shards.delete(name));
      }
      return promise;
    }

    /**
     * @param {number[]} rows
     * @returns {Promise<PassageFull[]>}
     */
    async function passages(rows) {
      const { lexical } = await core();
      const found = await lexical.metas(rows);
      return Promise.all(
        found.map(async ({ row, meta, answer }) => {
          if (!answer) throw new StoreError(`The book's index ships no text of ${meta.passage_id}. ${REBUILD}`, "missing");
          const held = (await shard(answer.name)).rows[answer.index];
          if (!held || held.passage_id !== meta.passage_id) {
            throw new StoreError(`The shard of ${meta.passage_id} holds another passage. ${REBUILD}`, "integrity");
          }
          const { sentences, ...own } = held;
          return { row, record: { ...meta, ...own }, sentences };
        }),
      );
    }

    return {
      manifest,
      core,
      search,
      passages,
      bytes,
      json,
      url,
      size,
      fetched,
      checkedMs: () => checkedMs,
    };
  }

  const api = {
    StoreError,
    createShardStore,
    resolveName,
    sha256,
    sha256Js,
  };
  lib.provide("store", api);
  if (typeof module === "object") module.exports = api;
})();
