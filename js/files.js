// @ts-check
/**
 * The site's file formats, read: what the build writes under `_ragcite/`
 * and the browser reads, in the page (static search) and in the engine's
 * worker. Data from the network is `unknown` until a reader here has
 * checked it, and typed after (`types.d.ts`):
 *
 * - the manifest (`formats/manifest.py`): `checkManifest`, and which of its
 *   files the engine fetches (`ENGINE_ROLES`, `FIRST_ANSWER_ROLES`, `sizeOf`);
 * - the static search index (`formats/static.py`): `readStaticFile` takes
 *   the JSON out of `search.js` (`STATIC_PREFIX<JSON>;`; `parseStaticIndex`
 *   for the engine's store), `checkStaticIndex` checks it for the searcher,
 *   `snowballLanguage` says which stemmer its tokenizer needs;
 * - `.npy` arrays, the passage vectors and their scales: `parseNpy`;
 * - the shard listing and a shard (`formats/shards.py`): `checkListing`,
 *   `passageMetas` (each row's record but its text), `parseShard`.
 *
 * The store's errors (`StoreError`) are defined here, so a format the engine
 * cannot read says so in the reader's sentence for it ("format").
 *
 * A check covers the structure (the containers, the fields every reader
 * relies on), as Python's readers do; the values inside are as the build
 * wrote them.
 *
 * Classic script, DOM-free: provides `files` (see `lib.js`).
 */

/** @typedef {import("./types").Manifest} Manifest */
/** @typedef {import("./types").StaticIndex} StaticIndex */
/** @typedef {import("./types").PassageMeta} PassageMeta */
/** @typedef {import("./types").ShardListing} ShardListing */
/** @typedef {import("./types").ShardRow} ShardRow */
/** @typedef {import("./types").Shard} Shard */

(function () {
  "use strict";

  const lib = typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib;

  // the formats' marks and versions, from Python (`formats/`, through `spec.js`)
  const { STATIC_PREFIX, STATIC_FORMAT, SEARCH_FORMAT, MANIFEST_FORMAT, SHARD_MAGIC, SHARD_FORMAT } = lib.need("spec");
  /** The shard listing's version is the shards' (`formats/shards.FORMAT_VERSION`). */
  const LISTING_FORMAT = SHARD_FORMAT;
  const REBUILD = "Rebuild the documentation with sphinx-ragcite.";

  /** The runtime's files: its script, the emscripten glue, the WebAssembly. */
  const RUNTIME_ROLES = ["ort_js", "ort_mjs", "ort_wasm"];
  /** The engine's large files (the model, its tokenizer, the runtime): what a
   * reader on a metered connection is asked about before the download. */
  const ENGINE_ROLES = ["model", "tokenizer", ...RUNTIME_ROLES];
  /** Everything the worker fetches before the first answer (its progress
   * total), of the files a manifest lists: every passage vector only where
   * there is no approximate dense search (`dense`). */
  const FIRST_ANSWER_ROLES = [
    "model",
    "tokenizer",
    ...["ranker", "search_root", "dense", "embeddings", "embedding_scales"],
    ...RUNTIME_ROLES,
  ];

  /**
   * The roles of `FIRST_ANSWER_ROLES` this manifest's engine fetches.
   * @param {Manifest} manifest
   */
  function firstAnswerRoles(manifest) {
    const approximate = "dense" in manifest.files;
    return FIRST_ANSWER_ROLES.filter(
      (role) => role in manifest.files && !(approximate && (role === "embeddings" || role === "embedding_scales")),
    );
  }

  /** Why loading a file stopped; `kind` chooses the sentence the reader sees. */
  class StoreError extends Error {
    /**
     * @param {string} message
     * @param {"integrity" | "missing" | "network" | "format" | "aborted"} kind
     */
    constructor(message, kind) {
      super(message);
      this.name = "StoreError";
      this.kind = kind;
    }
  }

  /**
   * A JSON object (or array): what a reader may look into.
   * @param {unknown} value
   * @returns {value is Record<string, unknown>}
   */
  const isObject = (value) => typeof value === "object" && value !== null;

  // -- the manifest ---------------------------------------------------------------

  /**
   * The parsed `manifest.json`, if it is one of the format this reads.
   * @param {unknown} data
   * @returns {Manifest}
   */
  function checkManifest(data) {
    if (!isObject(data) || data.format_version !== MANIFEST_FORMAT || !isObject(data.files)) {
      throw new StoreError(`The book's index has a format this widget does not read. ${REBUILD}`, "format");
    }
    return /** @type {Manifest} */ (data);
  }

  /**
   * The manifest's bytes of these files (0 for a file it does not list).
   * @param {unknown} manifest
   * @param {readonly string[]} roles
   */
  function sizeOf(manifest, roles) {
    const bytes = isObject(manifest) && isObject(manifest.bytes) ? manifest.bytes : {};
    return roles.reduce((n, role) => n + (Number(bytes[role]) || 0), 0);
  }

  // -- the static search index ------------------------------------------------------

  /**
   * The JSON inside the static index file's text (`search.<hash>.js`), or
   * what is wrong with it: "frame" (not `STATIC_PREFIX...;`) or "json".
   * @param {string} text
   * @returns {{ok: true, value: unknown} | {ok: false, problem: "frame" | "json"}}
   */
  function readStaticFile(text) {
    const body = text.trimEnd();
    if (!body.startsWith(STATIC_PREFIX) || !body.endsWith(";")) return { ok: false, problem: "frame" };
    try {
      return { ok: true, value: JSON.parse(body.slice(STATIC_PREFIX.length, -1)) };
    } catch {
      return { ok: false, problem: "json" };
    }
  }

  /**
   * The static index file's JSON object, or a StoreError.
   * @param {string} text
   * @returns {Record<string, unknown>}
   */
  function parseStaticIndex(text) {
    const read = readStaticFile(text);
    if (!read.ok || !isObject(read.value) || Array.isArray(read.value)) {
      throw new StoreError(`The book's search index is damaged. ${REBUILD}`, "format");
    }
    return read.value;
  }

  /**
   * The static index, if the searcher can read it (format 2).
   * @param {unknown} index
   * @returns {StaticIndex}
   */
  function checkStaticIndex(index) {
    if (index === null || typeof index !== "object") {
      throw new Error("ragcite search: the static index must be a JSON object");
    }
    const ix = /** @type {Record<string, unknown>} */ (index);
    if (ix.format_version !== STATIC_FORMAT) {
      throw new Error(
        `ragcite search: unsupported static index format_version ` +
          `${JSON.stringify(ix.format_version)} (this script reads ${STATIC_FORMAT}); ` +
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
    const bm25 = /** @type {Record<string, unknown>} */ (ix.bm25 || {});
    if (bm25.method !== "lucene" || typeof bm25.k1 !== "number" || typeof bm25.b !== "number") {
      throw new Error("ragcite search: the static index has no lucene BM25 parameters");
    }
    if (!Array.isArray(ix.lengths) || ix.lengths.length !== /** @type {unknown[]} */ (ix.passages).length) {
      throw new Error("ragcite search: the static index must have one length per passage");
    }
    if (ix.tokenizer === null || typeof ix.tokenizer !== "object") {
      throw new Error("ragcite search: the static index has no tokenizer spec");
    }
    return /** @type {StaticIndex} */ (index);
  }

  /**
   * The Snowball stemmer besides English a tokenizer spec names ("german"
   * for `snowball-german`), or null; `snowball/<name>.js` has it.
   * @param {unknown} tokenizer the index's or the manifest's `tokenizer`
   * @returns {string | null}
   */
  function snowballLanguage(tokenizer) {
    const name = isObject(tokenizer) ? tokenizer.stemmer : undefined;
    const match = typeof name === "string" ? /^snowball-([a-z_]+)$/.exec(name) : null;
    return match && match[1] !== "english" ? match[1] : null;
  }

  // -- caches ---------------------------------------------------------------------

  /**
   * Keep `value` under `key` in `map`, dropping the entries kept longest
   * ago beyond `limit` (a Map iterates in insertion order): what a long
   * visit to a big book fetched must not all stay in memory.
   * @template K, V
   * @param {Map<K, V>} map
   * @param {K} key
   * @param {V} value
   * @param {number} limit
   */
  function remember(map, key, value, limit) {
    map.delete(key);
    map.set(key, value);
    while (map.size > limit) map.delete(/** @type {K} */ (map.keys().next().value));
    return value;
  }

  // -- the sharded static index ---------------------------------------------------

  /** @param {unknown} e */
  const isPair = (e) => Array.isArray(e) && e.length === 2 && typeof e[1] === "string";

  /**
   * `search-root.<h>.json` (`formats/search_shards.py`), if the searcher can read it.
   * @param {unknown} data
   * @returns {import("./types").SearchRoot}
   */
  function checkSearchRoot(data) {
    const damaged = () => new StoreError(`The book's search index is damaged. ${REBUILD}`, "format");
    if (!isObject(data) || data.format_version !== SEARCH_FORMAT) {
      throw new StoreError(`The book's search index has a format this widget does not read. ${REBUILD}`, "format");
    }
    const bm25 = isObject(data.bm25) ? data.bm25 : {};
    if (bm25.method !== "lucene" || typeof bm25.k1 !== "number" || typeof bm25.b !== "number") throw damaged();
    if (!Number.isInteger(data.rows) || !Array.isArray(data.lengths) || !isObject(data.tokenizer)) throw damaged();
    const terms = data.terms;
    const passages = data.passages;
    if (!Array.isArray(terms) || !terms.every((e) => isPair(e) && typeof e[0] === "string")) throw damaged();
    if (!Array.isArray(passages) || !passages.every((e) => isPair(e) && Number.isInteger(e[0]) && e[0] > 0)) throw damaged();
    return /** @type {import("./types").SearchRoot} */ (/** @type {unknown} */ (data));
  }

  /**
   * A term shard: sorted terms, one postings list each.
   * @param {unknown} data
   * @param {string} where
   * @returns {import("./types").TermShard}
   */
  function checkTermShard(data, where) {
    if (
      !isObject(data) ||
      !Array.isArray(data.terms) ||
      !Array.isArray(data.postings) ||
      data.terms.length !== data.postings.length ||
      !data.postings.every(Array.isArray)
    ) {
      throw new StoreError(`${where} is damaged. ${REBUILD}`, "format");
    }
    return /** @type {import("./types").TermShard} */ (/** @type {unknown} */ (data));
  }

  /**
   * A passage shard of `count` rows.
   * @param {unknown} data
   * @param {number} count
   * @param {string} where
   * @returns {import("./types").PassageShard}
   */
  function checkPassageShard(data, count, where) {
    const row = (/** @type {unknown} */ r) =>
      Array.isArray(r) && r.length === 7 && typeof r[0] === "string" && typeof r[4] === "string" && Array.isArray(r[6]);
    if (
      !isObject(data) ||
      !["pages", "headings", "docnames", "titles"].every((k) => Array.isArray(data[k])) ||
      !Array.isArray(data.rows) ||
      data.rows.length !== count ||
      !data.rows.every(row) ||
      (data.shards !== undefined &&
        !(Array.isArray(data.shards) && data.shards.every((e) => isPair(e) && Number.isInteger(e[0]))))
    ) {
      throw new StoreError(`${where} is damaged. ${REBUILD}`, "format");
    }
    return /** @type {import("./types").PassageShard} */ (/** @type {unknown} */ (data));
  }

  // -- .npy ---------------------------------------------------------------------

  /** The dtypes the build writes: int8 codes, float32 scales, int64 offsets. */
  const NPY_TYPES = { "|i1": Int8Array, "<f4": Float32Array, "<i8": BigInt64Array };

  /**
   * A `.npy` file (version 1-3, C order) as a typed array and its shape.
   * @param {Uint8Array} bytes
   * @param {string} where
   * @returns {{data: Int8Array | Float32Array | BigInt64Array, shape: number[]}}
   */
  function parseNpy(bytes, where) {
    const magic = String.fromCharCode(...bytes.subarray(1, 6));
    if (bytes[0] !== 0x93 || magic !== "NUMPY") throw new StoreError(`${where} is not a .npy file. ${REBUILD}`, "format");
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const major = bytes[6];
    const size = major === 1 ? view.getUint16(8, true) : view.getUint32(8, true);
    const start = major === 1 ? 10 : 12;
    const header = new TextDecoder().decode(bytes.subarray(start, start + size));
    const descr = /'descr':\s*'([^']+)'/.exec(header);
    const shape = /'shape':\s*\(([^)]*)\)/.exec(header);
    if (!descr || !shape || /'fortran_order':\s*True/.test(header)) {
      throw new StoreError(`${where} has a header this reader does not know. ${REBUILD}`, "format");
    }
    const dims = shape[1]
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean)
      .map(Number);
    const count = dims.reduce((a, b) => a * b, 1);
    const body = start + size;
    const Type = Object.hasOwn(NPY_TYPES, descr[1]) ? NPY_TYPES[/** @type {keyof typeof NPY_TYPES} */ (descr[1])] : null;
    if (!Type || body + count * Type.BYTES_PER_ELEMENT !== bytes.byteLength) {
      throw new StoreError(`${where} holds ${descr[1]} data of the wrong size. ${REBUILD}`, "format");
    }
    // a copy when the body is not aligned for the type (a view when it is)
    const at = bytes.byteOffset + body;
    const buffer = /** @type {ArrayBuffer} */ (bytes.buffer);
    const data =
      at % Type.BYTES_PER_ELEMENT === 0
        ? new Type(buffer, at, count)
        : new Type(bytes.slice(body).buffer, 0, count);
    return { data, shape: dims };
  }

  // -- shards ---------------------------------------------------------------------

  /**
   * The parsed `shards.<hash>.json`, if it is of the format this reads and
   * its `shards` are `[rows, name]` pairs.
   * @param {unknown} data
   * @returns {ShardListing}
   */
  function checkListing(data) {
    if (!isObject(data) || data.format_version !== LISTING_FORMAT) {
      throw new StoreError(`The shard listing has a format this widget does not read. ${REBUILD}`, "format");
    }
    const entry = (/** @type {unknown} */ e) =>
      Array.isArray(e) && e.length === 2 && Number.isInteger(e[0]) && e[0] >= 0 && typeof e[1] === "string";
    if (!Array.isArray(data.shards) || !data.shards.every(entry)) {
      throw new StoreError(`The shard listing is damaged. ${REBUILD}`, "format");
    }
    return /** @type {ShardListing} */ (/** @type {unknown} */ (data));
  }

  /**
   * Each row's `PassageMeta`, from the static index and the shard listing.
   * @param {Record<string, unknown>} index the static search index
   * @param {ShardListing} listing
   * @returns {PassageMeta[]}
   */
  function passageMetas(index, listing) {
    const { pages, headings, passages } = index;
    const { docnames, titles, paths } = listing;
    const flat = listing.passages;
    const disagree = () =>
      new StoreError(`The search index and the shard listing disagree on the passages. ${REBUILD}`, "format");
    if (
      !Array.isArray(pages) ||
      !Array.isArray(headings) ||
      !Array.isArray(passages) ||
      ![docnames, titles, paths, flat].every(Array.isArray) ||
      passages.length !== listing.rows ||
      flat.length !== 2 * listing.rows
    ) {
      throw disagree();
    }
    return passages.map((/** @type {unknown} */ entry, /** @type {number} */ row) => {
      const path = paths[flat[2 * row + 1]];
      if (!Array.isArray(entry) || typeof entry[0] !== "string" || !Array.isArray(path)) throw disagree();
      const [passage_id, page, chapter, section, snippet] = entry;
      return {
        passage_id,
        docname: docnames[flat[2 * row]],
        url: `${pages[page]}#${passage_id}`,
        chapter: headings[chapter],
        section: headings[section],
        heading_path: path.map((t) => titles[t]),
        snippet,
      };
    });
  }

  /**
   * One shard: its rows (without row numbers) and their sentence vectors.
   * @param {Uint8Array} bytes
   * @param {string} where
   * @returns {Shard}
   */
  function parseShard(bytes, where) {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    if (bytes.byteLength < 12 || String.fromCharCode(...bytes.subarray(0, 4)) !== SHARD_MAGIC) {
      throw new StoreError(`${where} is not a passage shard. ${REBUILD}`, "format");
    }
    if (view.getUint32(4, true) !== SHARD_FORMAT) {
      throw new StoreError(`${where} has shard format ${view.getUint32(4, true)}, this widget reads ${SHARD_FORMAT}. ${REBUILD}`, "format");
    }
    const size = view.getUint32(8, true);
    /** @type {unknown} */
    let head = null;
    try {
      head = JSON.parse(new TextDecoder().decode(bytes.subarray(12, 12 + size)));
    } catch {
      // damaged: said below
    }
    // [passage_id, text, char_start, char_end, content_hash, sentences]
    /** @type {(r: unknown) => r is ShardRow} */
    const row = (r) =>
      Array.isArray(r) && r.length === 6 && typeof r[0] === "string" && typeof r[1] === "string" && Number.isInteger(r[5]);
    if (!isObject(head) || !Array.isArray(head.rows) || !head.rows.every(row) || 12 + size > bytes.byteLength) {
      throw new StoreError(`${where} is damaged. ${REBUILD}`, "format");
    }
    const dim = Number.isInteger(head.dim) && Number(head.dim) > 0 ? Number(head.dim) : 0;
    /** @type {ShardRow[]} */
    const rows = head.rows;
    const total = rows.reduce((n, r) => n + Math.max(r[5], 0), 0);
    const start = 12 + size;
    if (start + (4 + dim) * total !== bytes.byteLength) {
      throw new StoreError(`${where} is truncated or padded. ${REBUILD}`, "format");
    }
    const copy = bytes.slice(start); // aligned, and apart from the fetch buffer
    const scales = new Float32Array(copy.buffer, 0, total);
    const codes = new Int8Array(copy.buffer, 4 * total, total * dim);
    let at = 0;
    return {
      dim,
      rows: rows.map(([passage_id, text, char_start, char_end, content_hash, n]) => {
        let sentences = null;
        if (n >= 0 && dim) {
          sentences = { codes: codes.subarray(at * dim, (at + n) * dim), scales: scales.subarray(at, at + n) };
          at += n;
        }
        return { passage_id, text, char_start, char_end, content_hash, sentences };
      }),
    };
  }

  const api = {
    ENGINE_ROLES,
    FIRST_ANSWER_ROLES,
    firstAnswerRoles,
    REBUILD,
    RUNTIME_ROLES,
    StoreError,
    checkListing,
    checkManifest,
    checkPassageShard,
    checkSearchRoot,
    checkStaticIndex,
    checkTermShard,
    isObject,
    parseNpy,
    parseShard,
    parseStaticIndex,
    passageMetas,
    readStaticFile,
    remember,
    sizeOf,
    snowballLanguage,
  };
  lib.provide("files", api);
  if (typeof module === "object") module.exports = api;
})();
