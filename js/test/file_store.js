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
const F = require("../files.js");

/**
 * @param {string} folder the site's output folder (or its `_ragcite/`)
 * @returns {import("../types").EngineStore & {dir: string, manifest: import("../types").Manifest}}
 */
function fileStore(folder) {
  const dir = fs.existsSync(path.join(folder, "_ragcite")) ? path.join(folder, "_ragcite") : folder;
  const manifest = F.checkManifest(JSON.parse(fs.readFileSync(path.join(dir, "manifest.json"), "utf8")));
  const files = manifest.files;
  /** @param {string} role */
  const file = (role) => fs.readFileSync(path.join(dir, files[role]));
  /** The array of a `.npy` file (`files.parseNpy`). @param {string} role */
  const npy = (role) => F.parseNpy(file(role), role);
  /** @type {import("../types").PassageRecord[] | null} */
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
        const codes = npy("sentence_embeddings");
        sentences = {
          offsets: Array.from(/** @type {BigInt64Array} */ (npy("sentence_offsets").data), Number),
          codes: /** @type {Int8Array} */ (codes.data),
          scales: /** @type {Float32Array} */ (npy("sentence_scales").data),
          dim: codes.shape[1],
        };
      }
    }
    return sentences;
  };

  /** A content-addressed file under `_ragcite/`, read from disk. @param {string} name */
  const addressed = async (name) => new Uint8Array(fs.readFileSync(path.join(dir, name)));

  /** @returns {Promise<import("../types").EngineCore>} */
  async function core() {
    require("../search.js");
    const lexical = require("../search.js").createShardedSearch(JSON.parse(file("search_root").toString("utf8")), async (name) =>
      JSON.parse(Buffer.from(await addressed(name)).toString("utf8")),
    );
    const ranker = JSON.parse(files.ranker ? file("ranker").toString("utf8") : fs.readFileSync(PACKAGE_RANKER, "utf8"));
    let passageVectors = null;
    let dense = null;
    if (files.dense) {
      dense = require("../dense_index.js").createApproxDense(new Uint8Array(file("dense")), addressed);
    } else if (files.embeddings) {
      const codes = npy("embeddings");
      passageVectors = {
        codes: /** @type {Int8Array} */ (codes.data),
        scales: /** @type {Float32Array} */ (npy("embedding_scales").data),
        dim: codes.shape[1],
        rows: codes.shape[0],
      };
    }
    return { manifest, ranker, rows: lexical.rows, lexical, passageVectors, dense };
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

module.exports = { fileStore, PACKAGE_RANKER };
