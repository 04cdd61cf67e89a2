// @ts-check
/**
 * The extractive answer engine in the browser: retrieve -> choose -> verify
 * -> assemble, the path `POST /api/ask` takes in book mode with the
 * extractive generator (`AnswerEngine.stream`). Python is the reference; the
 * parity test (`js/test/parity.test.js`) holds the two together.
 *
 * `createEngine(store)` loads what every question needs once
 * (`store.core()`: manifest, ranker.json, static index, passage vectors) and
 * asks the store per question for the few passages it retrieved
 * (`store.passages(rows)`: texts and sentence vectors). The question vector
 * comes from the caller (`encode.js` in the browser); null means no encoder,
 * and BM25 ranks alone.
 *
 * Classic script: provides `engine` (see `lib.js`).
 */

/** @typedef {import("./types").Answer} Answer */
/** @typedef {import("./types").EngineStore} EngineStore */
/** @typedef {import("./types").EngineCore} EngineCore */
/** @typedef {import("./types").BrowserEngine} BrowserEngine */

(function () {
  "use strict";

  const lib = typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib;
  const S = lib.need("sentences");
  const retrieval = lib.need("retrieve");
  const U = lib.need("units");
  const R = lib.need("ranker");
  const E = lib.need("evidence");
  const V = lib.need("verify");
  const A = lib.need("answer");
  const SA = lib.need("selection_answer");

  // `AnswerEngine.k`, passages retrieved (the ranker is trained on this many),
  // and the limits of a request (`contracts.py`)
  const spec = lib.need("spec");
  const { DEFAULT_K, MAX_K, MAX_QUESTION, MAX_SELECTION } = spec;
  /** Half a UTF-16 surrogate pair (`schemas._valid_text` refuses it). */
  const LONE_SURROGATE = /[\ud800-\udfff]/u;

  /** A request the engine refuses, in the words of the server's 400. */
  class RefusedError extends RangeError {
    /** @param {string} message "field: must ..." */
    constructor(message) {
      super(message);
      this.name = "RefusedError";
      /** the worker's kind of failure (`worker.js`) */
      this.kind = "invalid";
    }
  }

  /**
   * `schemas._valid_text`: JSON may carry lone surrogates; no tokenizer or
   * encoder can take them.
   * @param {string} field
   * @param {string} text
   */
  function validText(field, text) {
    if (LONE_SURROGATE.test(text)) throw new RefusedError(`${field}: must be valid Unicode text (no lone surrogates)`);
    return text;
  }

  const now = () => (typeof performance === "object" ? performance.now() : Date.now());
  /** @param {number} since */
  const ms = (since) => R.pyRound(now() - since, 2);

  /**
   * `contracts.timestamp(citation_time())`: now in UTC to the second.
   * @param {Date} moment
   */
  const timestamp = (moment) => moment.toISOString().replace(/\.\d{3}Z$/, "Z");

  /**
   * The engine over one site.
   * @param {EngineStore} store
   * @param {{clock?: () => Date}} [options] `clock` gives the citation date
   * @returns {Promise<BrowserEngine>}
   */
  async function createEngine(store, options = {}) {
    const core = await store.core();
    const ranker = R.parseRanker(core.ranker);
    const vectors = core.passageVectors;
    const embedding = core.manifest.embedding;
    const dim = vectors ? vectors.dim : embedding ? embedding.dim : 0;
    if (vectors && (vectors.codes.length !== vectors.rows * dim || vectors.scales.length !== vectors.rows)) {
      throw new Error("the passage vectors do not fit their shape; rebuild the documentation");
    }
    if (vectors && embedding && embedding.dim !== dim) {
      throw new Error(`the passage vectors have ${dim} numbers each, the manifest says ${embedding.dim}`);
    }
    if (vectors && vectors.rows !== core.rows) {
      throw new Error("the passage vectors and the static index hold different passages; rebuild the documentation");
    }
    const retriever = retrieval.createRetriever(core);

    /**
     * The evidence of these passages (`evidence.build_evidence`), their
     * vectors fetched first where the book's are not all loaded.
     * @param {number[]} rows
     * @param {Float32Array | null} qvec
     */
    async function evidenceOf(rows, qvec) {
      const [full, own] = await Promise.all([
        store.passages(rows),
        retriever.vector && qvec !== null ? Promise.all(rows.map(retriever.vector)) : null,
      ]);
      const byRow = new Map(own ? rows.map((row, i) => [row, own[i]]) : []);
      const passageVector = own ? (/** @type {number} */ row) => /** @type {Float32Array} */ (byRow.get(row)) : null;
      return E.buildEvidence(full, qvec, passageVector, dim);
    }
    const sha = core.manifest.sha256 && core.manifest.sha256.passages;
    const indexVersion = typeof sha === "string" ? sha.slice(0, 16) : "";
    const clock = options.clock || (() => new Date());

    /**
     * The answer JSON of `POST /api/ask` (book mode, extractive generator).
     * @param {string} asked the question (1 to 2000 characters, trimmed)
     * @param {Float32Array | null} qvec its vector, or null without an encoder
     * @param {{k?: number, selection?: string, embed?: (texts: string[], kind?: "query" | "passage") => Promise<Float32Array[]>}} [opts]
     *   `k`: passages retrieved (default 6, at most 20); `selection`: the
     *   reader's selected text, asked about in selection mode, which needs
     *   `embed` (the encoder: selection mode embeds more than the question)
     * @returns {Promise<Answer>}
     */
    async function answer(asked, qvec, opts = {}) {
      // checked in the server's order (schemas.AskRequest), with its words
      const raw = validText("question", String(asked));
      // pydantic's own words for "" (Field(min_length=1)), then _question's
      if (!raw) throw new RefusedError("question: String should have at least 1 character");
      const question = S.pyStrip(raw);
      if (!question) throw new RefusedError("question: must not be empty");
      if (S.codePoints(question) > MAX_QUESTION) {
        throw new RefusedError(`question: must be at most ${MAX_QUESTION} characters`);
      }
      // trimmed, then measured (schemas._selection); a selection given
      // that is blank is refused (answering.py), as in selection mode
      const given = validText("selection", opts.selection || "");
      const selection = S.pyStrip(given);
      if (S.codePoints(selection) > MAX_SELECTION) {
        throw new RefusedError(`selection: must be at most ${MAX_SELECTION} characters`);
      }
      const k = opts.k ?? DEFAULT_K;
      if (!Number.isInteger(k) || k < 1 || k > MAX_K) throw new RefusedError(`k: must be 1 to ${MAX_K}`);
      if (given && !selection) throw new RefusedError("selection: is required when mode is 'selection'");
      if (qvec !== null && dim && qvec.length !== dim) {
        throw new RangeError(`the question vector has ${qvec.length} numbers, the index ${dim}`);
      }
      if (selection) {
        if (!opts.embed) throw new RangeError("selection mode needs the encoder (embed)");
        if (!dim) throw new RangeError("selection mode needs a site with vectors");
      }
      const embed = /** @type {(texts: string[]) => Promise<Float32Array[]>} */ (opts.embed);
      const mode = selection ? "selection" : "book";
      const started = now();
      const hits = await retriever.retrieve(question, qvec, k);
      const evidence = selection
        ? await aboutSelection(selection, qvec, k, hits, embed)
        : await evidenceOf(hits.map((h) => h.row), qvec);
      /** @type {Record<string, unknown>} */
      const timings = { retrieval_ms: ms(started) };

      // what may be quoted: the units the ranker chose, or (about a
      // selection) the sentences ranked against it, which never abstain
      const generating = now();
      /** @type {Record<string, unknown>} */
      const meta = { generator: "extractive", model: "extractive", engine: "browser" };
      /** @type {import("./types").EngineCandidate[]} */
      let units = [];
      /** @type {import("./types").EngineCandidate[]} */
      let chosen = [];
      let ranked = /** @type {Awaited<ReturnType<typeof SA.rankSentences>>} */ ([]);
      let confidence = 0.0;
      if (selection) {
        ranked = await SA.rankSentences(question, selection, evidence, embed);
      } else {
        const bm25 = hits.map((h) => h.bm25 || 0.0);
        await retriever.prepare(S.contentWords(question));
        units = R.rankUnits(question, qvec, evidence, bm25, retriever.idf, ranker);
        const answerable = R.answerability(units, ranker);
        confidence = units.length ? R.calibrate(ranker, answerable) : 0.0;
        if (units.length) meta.answerability = R.pyRound(answerable, 4);
        chosen = R.choose(units, ranker, confidence, U.questionKind(question));
      }
      const retrieved = { retrieved: evidence.map((e) => e.key), index_version: indexVersion };
      const problems = evidence.filter((e) => e.problem).map((e) => e.problem);
      if (problems.length) meta.problems = problems;
      timings.generation_ms = ms(generating);
      if (!chosen.length && !ranked.length) {
        return A.abstain({
          question,
          evidence,
          candidates: units,
          confidence,
          ranker,
          meta: { ...meta, ...timings, ...retrieved },
          mode,
        });
      }
      const verifying = now();
      const verified = selection
        ? await V.verify(SA.compose(ranked, evidence), evidence, embed)
        : V.quoteUnits(chosen, evidence);
      timings.verification_ms = ms(verifying);
      const result = A.assemble({
        question,
        qvec,
        evidence,
        verified,
        confidence,
        meta: { ...meta, ...retrieved },
        stamp: timestamp(clock()),
        mode,
      });
      Object.assign(result.metadata, timings);
      return result;
    }

    /**
     * `AnswerEngine._retrieve` in selection mode: the reader's selection,
     * then the passages it lies in, then the question's (`k` in all).
     * @param {string} selection
     * @param {Float32Array | null} qvec
     * @param {number} k
     * @param {Array<{row: number}>} hits the question's passages
     * @param {(texts: string[]) => Promise<Float32Array[]>} embed
     * @returns {Promise<import("./types").EngineEvidence[]>}
     */
    async function aboutSelection(selection, qvec, k, hits, embed) {
      const bm25 = async (/** @type {string} */ query, /** @type {number} */ n) =>
        (await retriever.retrieve(query, null, n)).map((h) => h.row);
      const holding = await SA.passagesHolding(selection, bm25, store.passages);
      const rows = [...new Set([...holding, ...hits.map((h) => h.row)])].slice(0, k);
      return [
        await SA.selectionEvidence(selection, qvec, dim, embed),
        ...(await evidenceOf(rows, qvec)),
      ];
    }

    return { answer };
  }

  const api = { RefusedError, createEngine };
  lib.provide("engine", api);
  if (typeof module === "object") module.exports = api;
})();
