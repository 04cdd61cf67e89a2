// @ts-check
"use strict";
/**
 * A Node `EngineStore` over a built site's `_ragcite/` folder, for tests and
 * tools: it reads the manifest's files directly (the browser reads shard
 * files instead). The ranker is the manifest's `files["ranker"]` when the
 * build ships one, else the package's `sphinx_ragcite/answer/ranker.json`.
 */

const fs = require("node:fs");
const path = require("node:path");

const REPO = path.join(__dirname, "..", "..");
const PACKAGE_RANKER = path.join(REPO, "sphinx_ragcite", "answer", "ranker.json");
const STATIC_PREFIX = "globalThis.ragcite_static_index=";

/**
 * The array in a `.npy` file (format 1.0-3.0, little-endian, C order).
 * @param {Buffer} data
 * @returns {{shape: number[], dtype: string, array: Int8Array | Float32Array | Float64Array | BigInt64Array | Int32Array | Int16Array}}
 */
function readNpy(data) {
  if (data.subarray(0, 6).toString("latin1") !== "\x93NUMPY") throw new Error("not a .npy file");
  const major = data[6];
  const headerLength = major === 1 ? data.readUInt16LE(8) : data.readUInt32LE(8);
  const start = (major === 1 ? 10 : 12) + headerLength;
  const header = data.subarray(major === 1 ? 10 : 12, start).toString("latin1");
  const descr = /'descr':\s*'([^']+)'/.exec(header);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (!descr || !shape || /'fortran_order':\s*True/.test(header)) throw new Error(`unreadable .npy header ${header}`);
  const dims = shape[1]
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)
    .map(Number);
  const count = dims.reduce((a, b) => a * b, 1);
  const types = /** @type {const} */ ({
    "|i1": [Int8Array, 1],
    "<f4": [Float32Array, 4],
    "<f8": [Float64Array, 8],
    "<i8": [BigInt64Array, 8],
    "<i4": [Int32Array, 4],
    "<i2": [Int16Array, 2],
  });
  const type = types[/** @type {keyof typeof types} */ (descr[1])];
  if (!type) throw new Error(`unsupported .npy dtype ${descr[1]}`);
  const [Kind, size] = type;
  const body = data.subarray(start, start + count * size);
  if (body.length !== count * size) throw new Error(".npy file truncated");
  const copy = new Uint8Array(body); // aligned
  return { shape: dims, dtype: descr[1], array: new Kind(copy.buffer, 0, count) };
}

/**
 * @param {string} folder the site's output folder (or its `_ragcite/`)
 * @returns {import("../types").EngineStore & {dir: string, manifest: any}}
 */
function fileStore(folder) {
  const dir = fs.existsSync(path.join(folder, "_ragcite")) ? path.join(folder, "_ragcite") : folder;
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, "manifest.json"), "utf8"));
  const files = manifest.files;
  /** @param {string} role */
  const file = (role) => fs.readFileSync(path.join(dir, files[role]));
  /** @type {any[] | null} */
  let records = null;
  const allRecords = () => {
    if (records === null) {
      records = file("passages")
        .toString("utf8")
        .split("\n")
        .filter((line) => line.trim())
        .map((line) => JSON.parse(line));
    }
    return records;
  };
  /** @type {{offsets: number[], codes: Int8Array, scales: Float32Array, dim: number} | null | undefined} */
  let sentences;
  const sentenceMatrix = () => {
    if (sentences === undefined) {
      if (!files.sentence_embeddings) {
        sentences = null;
      } else {
        const codes = readNpy(file("sentence_embeddings"));
        sentences = {
          offsets: Array.from(/** @type {BigInt64Array} */ (readNpy(file("sentence_offsets")).array), Number),
          codes: /** @type {Int8Array} */ (codes.array),
          scales: /** @type {Float32Array} */ (readNpy(file("sentence_scales")).array),
          dim: codes.shape[1],
        };
      }
    }
    return sentences;
  };

  async function core() {
    const text = file("static").toString("utf8").trimEnd();
    if (!text.startsWith(STATIC_PREFIX) || !text.endsWith(";")) throw new Error("not a static index file");
    const staticIndex = JSON.parse(text.slice(STATIC_PREFIX.length, -1));
    const ranker = JSON.parse(files.ranker ? file("ranker").toString("utf8") : fs.readFileSync(PACKAGE_RANKER, "utf8"));
    let passageVectors = null;
    if (files.embeddings) {
      const codes = readNpy(file("embeddings"));
      passageVectors = {
        codes: /** @type {Int8Array} */ (codes.array),
        scales: /** @type {Float32Array} */ (readNpy(file("embedding_scales")).array),
        dim: codes.shape[1],
        rows: codes.shape[0],
      };
    }
    const passages = allRecords().map((r) => ({
      passage_id: r.passage_id,
      docname: r.docname,
      url: r.url,
      chapter: r.chapter,
      section: r.section,
      heading_path: r.heading_path,
      snippet: r.snippet,
    }));
    return { manifest, ranker, staticIndex, passageVectors, passages };
  }

  /** @param {number[]} rows */
  async function passages(rows) {
    const all = allRecords();
    const matrix = sentenceMatrix();
    return rows.map((row) => {
      let vectors = null;
      if (matrix) {
        const [from, to] = [matrix.offsets[row], matrix.offsets[row + 1]];
        vectors = {
          codes: matrix.codes.subarray(from * matrix.dim, to * matrix.dim),
          scales: matrix.scales.subarray(from, to),
        };
      }
      return { row, record: all[row], sentences: vectors };
    });
  }

  return { dir, manifest, core, passages };
}

module.exports = { readNpy, fileStore, PACKAGE_RANKER };
