// @ts-check
/**
 * A stand-in for the browser engine's modules (the tokenizer, the encoder
 * and the engine of issue 35), for the shipping tests of
 * tests/test_browser_answers.py while those modules are not on this branch:
 * the test serves it as `engine.js` (and empty files under the other
 * names), so the worker, the store, the runtime and the model run for real
 * and only the answering is simple.
 *
 * The encoder runs the real model in onnxruntime-web (so WebAssembly, the
 * page's Content-Security-Policy and the runtime's files are exercised); its
 * tokenizer looks whole lower-cased words up in the real vocabulary. The
 * engine ranks passages by the question vector over the passage vectors,
 * fetches the best six through the store (their shards) and cites the first.
 */
(function () {
  "use strict";
  const g = /** @type {any} */ (globalThis);
  const lib = (g.ragcite_lib = g.ragcite_lib || {});
  if (lib.engine) return;

  lib.wordpiece = {
    WordPiece: {
      /** @param {any} json */
      fromJSON(json) {
        const vocab = json.model.vocab;
        return {
          /** @param {string} text @param {number} max */
          encode(text, max) {
            const words = text.toLowerCase().match(/[a-z0-9]+|[^\sa-z0-9]/g) || [];
            const ids = [101, ...words.map((w) => (w in vocab ? vocab[w] : 100)).slice(0, max - 2), 102];
            return { ids, attentionMask: ids.map(() => 1), typeIds: ids.map(() => 0) };
          },
        };
      },
    },
  };

  lib.encode = {
    /** @param {{ort: any, model: Uint8Array, tokenizer: any, maxTokens: number}} opts */
    async createEncoder({ ort, model, tokenizer, maxTokens }) {
      const session = await ort.InferenceSession.create(model, { executionProviders: ["wasm"] });
      return {
        dim: 384,
        /** @param {string} text */
        async embed(text) {
          const { ids } = tokenizer.encode(text, maxTokens);
          const n = ids.length;
          const big = (/** @type {number[]} */ a) => new ort.Tensor("int64", BigInt64Array.from(a.map(BigInt)), [1, n]);
          const feeds = /** @type {Record<string, any>} */ ({ input_ids: big(ids), attention_mask: big(ids.map(() => 1)) });
          if (session.inputNames.includes("token_type_ids")) feeds.token_type_ids = big(ids.map(() => 0));
          const out = await session.run(feeds);
          const hidden = out[session.outputNames[0]];
          const dim = hidden.dims[2];
          const vec = new Float32Array(dim);
          for (let t = 0; t < n; t++) for (let d = 0; d < dim; d++) vec[d] += hidden.data[t * dim + d] / n;
          const norm = Math.hypot(...vec) || 1;
          return vec.map((x) => x / norm);
        },
      };
    },
  };

  lib.engine = {
    /** @param {import("../js/types").EngineStore} store */
    async createEngine(store) {
      const core = await store.core();
      const { codes, scales, dim, rows } = core.passageVectors;
      return {
        /** @param {string} question @param {Float32Array | null} qvec */
        async answer(question, qvec) {
          const scored = [];
          for (let r = 0; r < rows; r++) {
            let s = 0;
            for (let d = 0; d < dim; d++) s += codes[r * dim + d] * (qvec ? qvec[d] : 0);
            scored.push([s * scales[r], r]);
          }
          scored.sort((a, b) => b[0] - a[0]);
          const top = scored.slice(0, 6).map(([, r]) => r);
          const full = await store.passages(top);
          const best = full[0].record;
          const quote = best.text.split(/(?<=[.!?])\s+/)[0];
          return {
            question,
            mode: "book",
            outcome: "answer",
            answer: `${quote} [1]`,
            citations: [
              {
                n: 1,
                passage_id: best.passage_id,
                url: best.url,
                chapter: best.chapter,
                section: best.section,
                heading_path: best.heading_path,
                page: null,
                snippet: best.snippet,
                quote,
                quote_spans: [[0, quote.length]],
                similarity_score: 0.5,
                confidence_score: 0.95,
                grounded: true,
                source_type: "book",
                citation_date: "2026-01-01T00:00:00Z",
              },
            ],
            passages: [],
            confidence: 0.95,
            confidence_level: "high",
            grounded: true,
            metadata: { generator: "extractive", retrieved: full.map((p) => p.record.passage_id), see_also: [] },
          };
        },
      };
    },
  };
})();
