// @ts-check
"use strict";

/**
 * A tiny built site in memory, as the Python writers make its files
 * (`sphinx_ragcite/formats/shards.py`, `.npy`, the manifest), and a fetch
 * that serves it: for js/test/store.test.js and js/test/browser.test.js.
 * (Node's runner runs this file too; it holds no tests.)
 */

const crypto = require("node:crypto");

const { STATIC_PREFIX } = require("../spec.js");

const hex = (/** @type {Uint8Array} */ data) => crypto.createHash("sha256").update(data).digest("hex");
const BASE = "https://books.example/guide/_ragcite/";


/**
 * A version 1 `.npy` file.
 * @param {string} descr
 * @param {number[]} shape
 * @param {ArrayBufferView} body
 */
function npy(descr, shape, body) {
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${shape.join(", ")}${shape.length === 1 ? "," : ""}), }`;
  const pad = 64 - ((10 + header.length + 1) % 64);
  header = header + " ".repeat(pad % 64) + "\n";
  const out = new Uint8Array(10 + header.length + body.byteLength);
  out.set([0x93, ...Buffer.from("NUMPY"), 1, 0]);
  new DataView(out.buffer).setUint16(8, header.length, true);
  out.set(Buffer.from(header, "latin1"), 10);
  out.set(new Uint8Array(body.buffer, body.byteOffset, body.byteLength), 10 + header.length);
  return out;
}

/**
 * A shard (`sphinx_ragcite/formats/shards.py`).
 * @param {any[][]} rows [passage_id, text, start, end, hash, sentences]
 * @param {number} dim
 * @param {Float32Array} scales
 * @param {Int8Array} codes
 */
function shardBytes(rows, dim, scales, codes) {
  let head = Buffer.from(JSON.stringify({ dim, rows }));
  head = Buffer.concat([head, Buffer.from(" ".repeat((4 - ((12 + head.length) % 4)) % 4))]);
  const fixed = Buffer.alloc(12);
  fixed.write("RCSH", 0, "latin1");
  fixed.writeUInt32LE(1, 4);
  fixed.writeUInt32LE(head.length, 8);
  return new Uint8Array(Buffer.concat([fixed, head, Buffer.from(scales.buffer), Buffer.from(codes.buffer)]));
}

/** A tiny site: two documents, three passages, shards of at most two rows,
 * and stand-ins for the model and the runtime. */
function fakeSite() {
  const dim = 4;
  const passages = [
    ["ch1-sec0-p1", 0, 0, 0, "Alpha first."],
    ["ch1-sec1-p1", 0, 0, 1, "Alpha second."],
    ["ch2-sec0-p1", 1, 2, 2, "Beta."],
  ];
  const staticIndex = {
    format_version: 2,
    tokenizer: {},
    bm25: { method: "lucene", k1: 1.5, b: 0.75 },
    lengths: [3, 2, 4],
    terms: [],
    postings: [],
    pages: ["a.html", "b.html"],
    headings: ["A", "A one", "B"],
    passages,
  };
  const texts = ["Alpha first. More.", "Alpha second.", "Beta. Gamma. Delta."];
  const sentences = [2, 1, 3];
  /** @type {Record<string, Uint8Array>} */
  const files = {};
  const rows = (/** @type {number} */ from, /** @type {number} */ to) => {
    const out = [];
    for (let r = from; r < to; r++) out.push([passages[r][0], texts[r], 10 * r, 10 * r + texts[r].length, `h${r}`, sentences[r]]);
    return out;
  };
  const vectors = (/** @type {number} */ from, /** @type {number} */ to) => {
    const n = sentences.slice(from, to).reduce((a, b) => a + b, 0);
    const before = sentences.slice(0, from).reduce((a, b) => a + b, 0);
    return {
      scales: Float32Array.from({ length: n }, (_, i) => 0.5 + before + i),
      codes: Int8Array.from({ length: n * dim }, (_, i) => ((before * dim + i) % 250) - 125),
    };
  };
  /** @type {[number, string][]} */
  const listed = [];
  for (const [from, to] of [
    [0, 2],
    [2, 3],
  ]) {
    const v = vectors(from, to);
    const data = shardBytes(rows(from, to), dim, v.scales, v.codes);
    const name = `shards/${hex(data).slice(0, 16)}.bin`;
    files[name] = data;
    listed.push([to - from, name]);
  }
  // the sharded static index: one term shard, a passage shard per answer shard
  const termShard = Buffer.from(JSON.stringify({ terms: ["alpha", "beta"], postings: [[0, 1, 1, 1], [2, 1]] }));
  const termName = `search/${hex(termShard).slice(0, 16)}.json`;
  files[termName] = new Uint8Array(termShard);
  const docnames = ["a", "a", "b"];
  const paths = [["A"], ["A", "A one"], ["B"]];
  /** @type {[number, string][]} */
  const passageTable = [];
  for (const [i, [from, to]] of [
    [0, 2],
    [2, 3],
  ].entries()) {
    const shard = {
      pages: ["a.html", "b.html"],
      headings: staticIndex.headings,
      docnames: ["a", "b"],
      titles: ["A", "A one", "B"],
      rows: passages.slice(from, to).map(([id, page, chapter, section, snippet], j) => [
        id,
        page,
        chapter,
        section,
        snippet,
        docnames[from + j] === "a" ? 0 : 1,
        paths[from + j].map((t) => ["A", "A one", "B"].indexOf(t)),
      ]),
      shards: [listed[i]],
    };
    const data = Buffer.from(JSON.stringify(shard));
    const name = `search/${hex(data).slice(0, 16)}.json`;
    files[name] = new Uint8Array(data);
    passageTable.push([to - from, name]);
  }
  const searchRoot = {
    format_version: 3,
    tokenizer: {},
    bm25: staticIndex.bm25,
    rows: 3,
    lengths: staticIndex.lengths,
    terms: [["alpha", termName]],
    passages: passageTable,
  };
  const listing = {
    format_version: 1,
    rows: 3,
    dim,
    docnames: ["a", "b"],
    titles: ["A", "A one", "B"],
    paths: [[0], [0, 1], [2]],
    passages: [0, 0, 0, 1, 1, 2],
    shards: listed,
  };
  /** @type {Record<string, [string, Uint8Array]>} */
  const roles = {
    static: ["search.js", Buffer.from(`${STATIC_PREFIX}${JSON.stringify(staticIndex)};\n`)],
    search_root: ["search-root.json", Buffer.from(JSON.stringify(searchRoot))],
    embeddings: ["embeddings.npy", npy("|i1", [3, dim], Int8Array.from({ length: 3 * dim }, (_, i) => i - 6))],
    embedding_scales: ["embedding_scales.npy", npy("<f4", [3], Float32Array.from([0.1, 0.2, 0.3]))],
    ranker: ["ranker.json", Buffer.from('{"weights": [1]}')],
    shards: ["shards.json", Buffer.from(JSON.stringify(listing))],
    model: ["model.onnx", crypto.randomBytes(300000)],
    tokenizer: ["tokenizer.json", Buffer.from('{"model": {"type": "WordPiece", "vocab": {"[UNK]": 0}}}')],
    ort_js: ["ort.wasm.min.js", Buffer.from("// the runtime's script\n")],
    ort_mjs: ["ort-wasm-simd-threaded.js", Buffer.from("// its glue\n")],
    ort_wasm: ["ort-wasm-simd-threaded.wasm", crypto.randomBytes(50000)],
  };
  /** @type {any} */
  const manifest = { format_version: 1, files: {}, sha256: {}, bytes: {}, embedding: { max_tokens: 256 } };
  for (const [role, [name, data]] of Object.entries(roles)) {
    const stored = `${name.split(".")[0]}.${hex(data).slice(0, 16)}.${name.split(".").slice(1).join(".")}`;
    files[stored] = new Uint8Array(data);
    manifest.files[role] = stored;
    manifest.sha256[role] = hex(data);
    manifest.bytes[role] = data.length;
  }
  files["manifest.json"] = Buffer.from(JSON.stringify(manifest));
  return { files, manifest, texts, vectors, dim, staticIndex };
}

/**
 * A fetch over a map of files below BASE; it counts what it serves.
 * @param {Record<string, Uint8Array>} files
 */
function fakeFetch(files) {
  /** @type {string[]} */
  const asked = [];
  /** @type {typeof fetch} */
  const fetcher = async (input, init) => {
    const url = String(input);
    asked.push(url);
    if (init && init.signal && init.signal.aborted) throw new DOMException("aborted", "AbortError");
    const name = url.startsWith(BASE) ? url.slice(BASE.length) : null;
    const data = name === null ? undefined : files[name];
    if (!data) return new Response("not found", { status: 404 });
    // in small chunks, as a network delivers a large file
    /** @type {Uint8Array[]} */
    /** @type {Uint8Array[]} */
    const chunks = [];
    for (let i = 0; i < data.length; i += 65536) chunks.push(data.subarray(i, i + 65536));
    const stream = new ReadableStream({
      pull(controller) {
        const next = chunks.shift();
        if (next) controller.enqueue(next);
        else controller.close();
      },
    });
    return new Response(stream, { status: 200 });
  };
  return { fetcher, asked };
}

module.exports = { BASE, fakeFetch, fakeSite, hex, npy, shardBytes };
