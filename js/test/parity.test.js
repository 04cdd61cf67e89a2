// @ts-check
"use strict";
/**
 * The browser engine answers as the Python engine does: on each parity case
 * file (`tools/write_parity_cases.py`), the same outcome and cited passage
 * IDs for >= 0.99 of the questions, with the confidence within 0.02. A
 * case with a `selection` is asked about it (selection mode), given the
 * vectors Python embedded (`embedded`: every text it embedded).
 *
 * The case files are named by `RAGCITE_PARITY_CASES` (files or folders,
 * separated by the path delimiter); each names the built site it was written
 * from, which `RAGCITE_PARITY_SITE` overrides (for a committed case file).
 * `tests/test_browser_parity.py` builds the sites, writes the case files and
 * runs this; without the variable there is nothing to compare and it skips.
 * Every mismatch is printed with what differed first (retrieval, the
 * ranker's answerability, the choice) and the set's figures as one
 * `PARITY {json}` line, also appended to the file `RAGCITE_PARITY_OUT` names.
 */

const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");

const { createEngine } = require("../engine.js");
const { fileStore } = require("./file_store.js");

/** The share of a set's questions that must match. */
const MIN_PARITY = 0.99;
/** How far the confidences may differ. */
const CONFIDENCE = 0.02;

/** @returns {string[]} */
function caseFiles() {
  const named = process.env.RAGCITE_PARITY_CASES;
  if (!named) return [];
  return named
    .split(path.delimiter)
    .filter(Boolean)
    .flatMap((p) =>
      fs.statSync(p).isDirectory()
        ? fs
            .readdirSync(p)
            .filter((f) => f.endsWith(".json"))
            .sort()
            .map((f) => path.join(p, f))
        : [p],
    );
}

/** @param {string} text base64 of little-endian float32 */
function vectorOf(text) {
  const bytes = Buffer.from(text, "base64");
  const copy = new Uint8Array(bytes);
  return new Float32Array(copy.buffer, 0, copy.length / 4);
}

/**
 * @param {number[]} values
 * @param {number} q
 */
function percentile(values, q) {
  const sorted = [...values].sort((a, b) => a - b);
  if (!sorted.length) return null;
  const at = (sorted.length - 1) * q;
  const lo = Math.floor(at);
  const hi = Math.ceil(at);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (at - lo);
}

/**
 * What differed first, for a mismatching question.
 * @param {any} expected the case
 * @param {any} got the JS answer
 */
function cause(expected, got) {
  const retrieved = got.metadata.retrieved;
  if (JSON.stringify(retrieved) !== JSON.stringify(expected.retrieved)) {
    return `retrieval: python ${JSON.stringify(expected.retrieved)} js ${JSON.stringify(retrieved)}`;
  }
  const problems = got.metadata.problems ? ` (${got.metadata.problems.join("; ")})` : "";
  if (expected.answerability !== (got.metadata.answerability ?? null)) {
    return `answerability: python ${expected.answerability} js ${got.metadata.answerability}${problems}`;
  }
  return `choice: python ${expected.outcome} ${JSON.stringify(expected.cited)} js ${got.outcome} ${JSON.stringify(
    got.citations.map((/** @type {any} */ c) => c.passage_id),
  )}${problems}`;
}

const files = caseFiles();

test("parity with the Python engine", { skip: files.length ? false : "RAGCITE_PARITY_CASES is not set" }, async (t) => {
  for (const file of files) {
    const data = JSON.parse(fs.readFileSync(file, "utf8"));
    await t.test(`parity: ${data.set}`, async () => {
      const site = process.env.RAGCITE_PARITY_SITE || path.resolve(__dirname, "..", "..", data.site);
      const store = fileStore(site);
      const loading = performance.now();
      const engine = await createEngine(store);
      const loadMs = performance.now() - loading;
      /** @type {string[]} */
      const mismatches = [];
      /** @type {number[]} */
      const times = [];
      let same = 0;
      let exactConfidence = 0;
      let worst = 0;
      const outcomes = { answer: 0, passages: 0, not_found: 0 };
      for (const item of data.cases) {
        const qvec = vectorOf(item.vector);
        /** @type {{selection?: string, embed?: (texts: string[], kind?: "query" | "passage") => Promise<Float32Array[]>}} */
        const options = {};
        if (item.selection) {
          // selection mode embeds more than the question: Python's vectors,
          // by kind (e5 embeds a question and a passage apart)
          options.selection = item.selection;
          options.embed = async (texts, kind = "passage") => {
            const embedded = kind === "query" ? item.embedded_queries || {} : item.embedded;
            return texts.map((text) => {
              if (!(text in embedded)) throw new Error(`${item.id}: Python embedded no ${kind} ${JSON.stringify(text)}`);
              return vectorOf(embedded[text]);
            });
          };
        }
        const started = performance.now();
        const got = await engine.answer(item.question, qvec, options);
        times.push(performance.now() - started);
        const cited = got.citations.map((c) => c.passage_id);
        const shown = (got.passages || []).map((p) => p.passage_id);
        const delta = Math.abs(got.confidence - item.confidence);
        worst = Math.max(worst, delta);
        if (got.confidence === item.confidence) exactConfidence++;
        outcomes[/** @type {"answer"} */ (item.outcome)]++;
        const ok =
          got.outcome === item.outcome &&
          JSON.stringify(cited) === JSON.stringify(item.cited) &&
          JSON.stringify(shown) === JSON.stringify(item.shown) &&
          delta <= CONFIDENCE;
        if (ok) {
          same++;
          if (got.answer !== item.answer) mismatches.push(`${item.id}: same citations, other answer text`);
        } else {
          mismatches.push(
            `${item.id} ${JSON.stringify(item.question)}: confidence python ${item.confidence} js ${got.confidence}; ${cause(item, got)}`,
          );
        }
      }
      const n = data.cases.length;
      const summary = {
        set: data.set,
        questions: n,
        same,
        parity: n ? same / n : 1,
        exact_confidence: exactConfidence,
        max_confidence_delta: Number(worst.toFixed(6)),
        outcomes,
        load_ms: Number(loadMs.toFixed(1)),
        p50_ms: Number((percentile(times, 0.5) || 0).toFixed(2)),
        p90_ms: Number((percentile(times, 0.9) || 0).toFixed(2)),
        mismatches,
      };
      console.log(`PARITY ${JSON.stringify(summary)}`);
      // node --test escapes what a test prints; a file keeps the JSON whole
      const out = process.env.RAGCITE_PARITY_OUT;
      if (out) fs.appendFileSync(out, `${JSON.stringify(summary)}\n`);
      for (const line of mismatches) console.log(`  mismatch ${data.set} ${line}`);
      assert.ok(n > 0, `${file} has no cases`);
      assert.ok(
        same >= MIN_PARITY * n,
        `${data.set}: ${same} of ${n} questions match (${MIN_PARITY} needed):\n${mismatches.join("\n")}`,
      );
    });
  }
});
