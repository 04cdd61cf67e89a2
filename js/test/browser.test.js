// @ts-check
"use strict";

/**
 * Answers in the browser, apart from the engine: the worker's host
 * (`worker.js`, with the engine's factories injected) and the page's side
 * (`browser.js`, with a stand-in Worker).
 */

const test = require("node:test");
const assert = require("node:assert/strict");
const crypto = require("node:crypto");

const store = require("../store.js");
const files = require("../files.js");
const { createRegistry } = require("../lib.js");
const { CORE_SCRIPTS, createWorkerHost } = require("../worker.js");
const { WHY, createBrowserAnswers } = require("../browser.js");
const { BASE, fakeFetch, fakeSite } = require("./fake_site.js");

const SCRIPTS = "https://books.example/guide/_static/ragcite/";

/**
 * A worker host over the fake site, with stand-ins for the engine's modules.
 * @param {{files?: (site: ReturnType<typeof fakeSite>) => Record<string, any>, wasm?: any, scripts?: string[], engine?: any}} [options]
 *   `files`: what to serve instead of some of the site's files
 */
function host(options = {}) {
  const site = fakeSite();
  const { fetcher, asked } = fakeFetch(options.files ? { ...site.files, ...options.files(site) } : site.files);
  /** @type {any[]} */
  const posted = [];
  const lib = createRegistry();
  /** Stand-ins register as the real scripts do (`lib.js`). */
  const provide = (/** @type {string} */ name, /** @type {any} */ api) => lib.provide(/** @type {any} */ (name), api);
  provide("files", files);
  provide("store", store);
  provide("tokenize", { tokenize: () => [] });
  provide("search", require("../search.js")); // the real searcher: DOM-free
  const calls = { encoder: /** @type {any} */ (null), imported: /** @type {string[]} */ ([]), asked: /** @type {string[]} */ ([]) };
  const ort = { env: { wasm: /** @type {Record<string, any>} */ ({}) } };
  let ortLoaded = false;
  const available = new Set(options.scripts || CORE_SCRIPTS);
  const modules = /** @type {Record<string, () => void>} */ ({
    "wordpiece.js": () => {
      provide("wordpiece", { WordPiece: { fromJSON: (/** @type {any} */ json) => ({ json }) } });
    },
    "unigram.js": () => {
      provide("unigram", { questionTokenizer: (/** @type {any} */ json) => lib.need("wordpiece").WordPiece.fromJSON(json) });
    },
    "encode.js": () => {
      provide("encode", {
        createEncoder: async (/** @type {any} */ opts) => {
          calls.encoder = { ...opts, wasmBinary: opts.ort.env.wasm.wasmBinary };
          return { dim: 4, embed: async (/** @type {string} */ text) => Float32Array.from([text.length, 0, 0, 0]) };
        },
      });
    },
    "engine.js": () => {
      provide("engine", {
        createEngine: async (/** @type {any} */ s) =>
          options.engine || {
            answer: async (/** @type {string} */ question, /** @type {Float32Array} */ qvec) => {
              calls.asked.push(question);
              const [p] = await s.passages([2]);
              return { question, answer: `${p.record.text} [1]`, citations: [], metadata: { qlen: qvec[0] } };
            },
          },
      });
    },
  });
  const env = {
    post: (/** @type {any} */ m) => posted.push(m),
    importScripts: (/** @type {string[]} */ ...urls) => {
      for (const url of urls) {
        calls.imported.push(url);
        const name = url.startsWith(SCRIPTS) ? url.slice(SCRIPTS.length) : url;
        if (url.startsWith(BASE) && url.includes("ort.")) {
          ortLoaded = true;
          continue;
        }
        if (!available.has(name)) throw new Error(`NetworkError: ${url}`);
        if (modules[name]) modules[name]();
      }
    },
    lib,
    ort: () => (ortLoaded ? ort : undefined),
    base: `${SCRIPTS}worker.js`,
    fetch: fetcher,
    WebAssembly: options.wasm === undefined ? { compile: async () => ({}) } : options.wasm,
    subtle: crypto.webcrypto.subtle,
  };
  const h = createWorkerHost(env);
  return { h, posted, calls, ort, site, asked, lib };
}

const LOAD = { type: "load", manifest: `${BASE}manifest.json` };
const last = (/** @type {any[]} */ posted) => posted[posted.length - 1];

test("the worker loads the runtime, the checked model and the engine, then answers", async () => {
  const { h, posted, calls, ort, site, asked } = host();
  await h.onMessage({ data: LOAD });
  assert.equal(last(posted).type, "ready", JSON.stringify(last(posted)));
  // onnxruntime-web: one thread, the checked WebAssembly bytes, the glue by URL
  assert.equal(ort.env.wasm.numThreads, 1);
  assert.equal(ort.env.wasm.proxy, false);
  assert.equal(crypto.createHash("sha256").update(calls.encoder.wasmBinary).digest("hex"), site.manifest.sha256.ort_wasm);
  assert.equal(ort.env.wasm.wasmBinary, undefined, "let go once the runtime has it");
  assert.equal(ort.env.wasm.wasmPaths.mjs, `${BASE}${site.manifest.files.ort_mjs}`);
  assert.equal(crypto.createHash("sha256").update(calls.encoder.model).digest("hex"), site.manifest.sha256.model);
  assert.equal(calls.encoder.maxTokens, 256);
  assert.equal(calls.encoder.tokenizer.json.model.type, "WordPiece");
  // progress: the total is what the first answer needs, and it is reached
  const progress = posted.filter((m) => m.type === "progress");
  const total = files.FIRST_ANSWER_ROLES.reduce((n, role) => n + (site.manifest.bytes[role] || 0), 0);
  assert.ok(progress.every((m) => m.total === total));
  assert.equal(progress.at(-1).loaded, total);
  assert.ok(!asked.some((u) => u.includes("shards/")), "no shard before a question");

  await h.onMessage({ data: { type: "ask", id: 7, question: "What is beta?" } });
  const reply = last(posted);
  assert.equal(reply.type, "answer");
  assert.equal(reply.id, 7);
  assert.equal(reply.answer.answer, "Beta. Gamma. Delta. [1]");
  assert.equal(reply.answer.metadata.engine, "browser");
  assert.equal(reply.answer.metadata.generator, "extractive");
  assert.equal(reply.answer.metadata.qlen, "What is beta?".length);
  assert.ok(reply.answer.metadata.fetched_bytes > 0, "the shard was fetched for this question");
  await h.onMessage({ data: { type: "ask", id: 8, question: "Again?" } });
  assert.equal(last(posted).answer.metadata.fetched_bytes, 0, "and came from memory the second time");
});

test("without WebAssembly, or with a CSP that forbids it, the worker says which", async () => {
  const noWasm = host({ wasm: null });
  await noWasm.h.onMessage({ data: LOAD });
  assert.deepEqual([last(noWasm.posted).type, last(noWasm.posted).kind], ["error", "wasm"]);
  const csp = host({
    wasm: {
      compile: async () => {
        throw new Error("WebAssembly.compile(): Refused to compile or instantiate WebAssembly module because 'wasm-unsafe-eval' is not an allowed source of script in the following Content Security Policy directive");
      },
    },
  });
  await csp.h.onMessage({ data: LOAD });
  assert.deepEqual([last(csp.posted).type, last(csp.posted).kind], ["error", "csp"]);
  assert.deepEqual(csp.asked, [], "nothing fetched");
});

test("missing engine scripts stop the load before the model is fetched", async () => {
  const { h, posted, asked } = host({ scripts: CORE_SCRIPTS.filter((n) => n !== "engine.js") });
  await h.onMessage({ data: LOAD });
  assert.equal(last(posted).kind, "missing");
  assert.match(last(posted).message, /engine\.js/);
  assert.ok(!asked.some((u) => /model|ort|shards/.test(u)), asked.join(" "));
});

test("a site built without answers in the browser costs one manifest fetch", async () => {
  const without = (/** @type {ReturnType<typeof fakeSite>} */ site) => {
    const manifest = JSON.parse(Buffer.from(site.files["manifest.json"]).toString());
    for (const role of ["model", "tokenizer", "ort_js", "ort_mjs", "ort_wasm", "shards"]) delete manifest.files[role];
    return { "manifest.json": Buffer.from(JSON.stringify(manifest)) };
  };
  const { h, posted, asked, calls } = host({ files: without });
  await h.onMessage({ data: LOAD });
  assert.equal(last(posted).kind, "off");
  assert.deepEqual(asked, [`${BASE}manifest.json`]);
  assert.equal(calls.imported.length, 0);
});

test("a model that does not match its checksum is never handed to the runtime", async () => {
  const tamper = (/** @type {ReturnType<typeof fakeSite>} */ site) => {
    const name = site.manifest.files.model;
    const tampered = Uint8Array.from(site.files[name]);
    tampered[5] ^= 1;
    return { [name]: tampered };
  };
  const { h, posted, calls } = host({ files: tamper });
  await h.onMessage({ data: LOAD });
  assert.deepEqual([last(posted).type, last(posted).kind], ["error", "integrity"]);
  assert.equal(calls.encoder, null);
});

test("cancel stops the load; an index on another origin is refused", async () => {
  const { h, posted } = host();
  const loading = h.onMessage({ data: LOAD });
  await h.onMessage({ data: { type: "cancel" } });
  await loading;
  assert.equal(last(posted).kind, "aborted");
  const other = host();
  await other.h.onMessage({ data: { type: "load", manifest: "https://elsewhere.example/_ragcite/manifest.json" } });
  assert.equal(last(other.posted).kind, "off");
  assert.deepEqual(other.asked, []);
});

test("the static search runs in the worker, from the index the engine loads anyway", async () => {
  const { h, posted } = host();
  const loading = h.onMessage({ data: LOAD });
  await h.onMessage({ data: { type: "search", id: 4, question: "alpha", k: 2 } });
  const hits = posted.find((m) => m.type === "hits");
  assert.deepEqual(
    [hits.id, hits.hits.map((/** @type {any} */ h) => h.passage_id)],
    [4, ["ch1-sec1-p1", "ch1-sec0-p1"]], // the shorter passage first, as bm25s ranks
  );
  await loading;
  // where the engine cannot load, a search says so (the page searches itself)
  const refused = host({ wasm: null });
  await refused.h.onMessage({ data: LOAD });
  await refused.h.onMessage({ data: { type: "search", id: 5, question: "alpha", k: 2 } });
  assert.deepEqual([last(refused.posted).type, last(refused.posted).id], ["error", 5]);
});

test("questions are answered one at a time, in order", async () => {
  /** @type {string[]} */
  const log = [];
  const engine = {
    answer: async (/** @type {string} */ q) => {
      log.push(`start ${q}`);
      await new Promise((r) => setTimeout(r, q === "slow" ? 30 : 1));
      log.push(`end ${q}`);
      return { question: q, answer: q, citations: [], metadata: {} };
    },
  };
  const { h, posted } = host({ engine });
  await h.onMessage({ data: LOAD });
  await Promise.all([h.onMessage({ data: { type: "ask", id: 1, question: "slow" } }), h.onMessage({ data: { type: "ask", id: 2, question: "fast" } })]);
  assert.deepEqual(log, ["start slow", "end slow", "start fast", "end fast"]);
  assert.deepEqual(
    posted.filter((m) => m.type === "answer").map((m) => m.id),
    [1, 2],
  );
});

test("an engine that runs out of memory is reported as such", async () => {
  const engine = {
    answer: async () => {
      throw new RangeError("WebAssembly.Memory(): could not allocate memory");
    },
  };
  const { h, posted } = host({ engine });
  await h.onMessage({ data: LOAD });
  await h.onMessage({ data: { type: "ask", id: 3, question: "q" } });
  assert.deepEqual([last(posted).type, last(posted).kind, last(posted).id], ["error", "memory", 3]);
});

// -- the page's side ----------------------------------------------------------------

class StandInWorker extends EventTarget {
  /** @type {StandInWorker[]} */
  static made = [];

  /** @param {string | URL} url @param {WorkerOptions} [options] */
  constructor(url, options) {
    super();
    this.url = String(url);
    this.options = options;
    /** @type {any[]} */
    this.sent = [];
    this.terminated = false;
    StandInWorker.made.push(this);
  }

  /** @param {any} message */
  postMessage(message) {
    this.sent.push(message);
  }

  terminate() {
    this.terminated = true;
  }

  /** @param {any} data */
  reply(data) {
    this.dispatchEvent(Object.assign(new Event("message"), { data }));
  }
}

const WHERE = { workerUrl: `${SCRIPTS}worker.js`, manifestUrl: `${BASE}manifest.json` };
const HTTP = { Worker: /** @type {any} */ (StandInWorker), protocol: "https:", wasm: true };
const tick = () => new Promise((r) => setTimeout(r, 0));

test("nothing starts until prepare(); then one worker, told where the index is", () => {
  StandInWorker.made = [];
  const answers = createBrowserAnswers(WHERE, HTTP);
  assert.equal(answers.unavailable(), null);
  assert.equal(answers.state(), "idle");
  assert.equal(StandInWorker.made.length, 0);
  assert.equal(answers.prepare(), true);
  assert.equal(answers.prepare(), true);
  assert.equal(StandInWorker.made.length, 1);
  const [worker] = StandInWorker.made;
  assert.equal(worker.url, WHERE.workerUrl);
  assert.deepEqual(worker.sent, [{ type: "load", manifest: WHERE.manifestUrl }]);
  assert.equal(answers.state(), "loading");
});

test("where answers cannot run, one sentence says why, and no worker starts", () => {
  StandInWorker.made = [];
  const cases = /** @type {const} */ ([
    [{ ...HTTP, protocol: "file:" }, WHY.file, /file:\/\//],
    [{ ...HTTP, Worker: undefined }, WHY.worker, /Web Workers/],
    [{ ...HTTP, wasm: false }, WHY.wasm, /WebAssembly/],
  ]);
  for (const [env, why, words] of cases) {
    const answers = createBrowserAnswers(WHERE, env);
    assert.equal(answers.unavailable(), why);
    assert.match(String(why), words);
    assert.match(String(why), /passages that best match/);
    assert.equal(answers.prepare(), false);
    assert.equal(answers.why(), why);
  }
  assert.equal(StandInWorker.made.length, 0);
});

test("progress passes through; a question waits for the engine, then gets its answer", async () => {
  StandInWorker.made = [];
  const answers = createBrowserAnswers(WHERE, HTTP);
  /** @type {any[]} */
  const seen = [];
  answers.onProgress((p) => seen.push(p));
  const asking = answers.ask("How long?");
  const [worker] = StandInWorker.made;
  worker.reply({ type: "progress", loaded: 5e6, total: 25e6, files: { model: { loaded: 5e6, total: 23e6 } } });
  const files = { model: { loaded: 5e6, total: 23e6 } };
  assert.deepEqual(seen, [{ loaded: 5e6, total: 25e6, files, phase: "download" }]);
  // every file in: the engine starts, which the panel says (issue 42)
  worker.reply({ type: "phase", phase: "starting" });
  assert.deepEqual(seen[1], { loaded: 25e6, total: 25e6, files, phase: "starting" });
  await tick();
  assert.equal(worker.sent.length, 1, "asked only once ready");
  worker.reply({ type: "ready", seconds: 3, bytes: 25e6 });
  await tick();
  const ask = worker.sent[1];
  assert.deepEqual([ask.type, ask.question], ["ask", "How long?"]);
  worker.reply({ type: "answer", id: ask.id, answer: { answer: "Thirty seconds [1]." } });
  assert.deepEqual(await asking, { answer: "Thirty seconds [1]." });
  assert.equal(answers.state(), "ready");
});

test("a search goes to the worker while it runs, and fails over when it does not", async () => {
  StandInWorker.made = [];
  const answers = createBrowserAnswers(WHERE, HTTP);
  await assert.rejects(answers.search("bloom", 5), (/** @type {any} */ e) => e instanceof Error);
  answers.prepare();
  const searching = answers.search("bloom", 5);
  const [worker] = StandInWorker.made;
  const sent = worker.sent[1];
  assert.deepEqual([sent.type, sent.question, sent.k], ["search", "bloom", 5]);
  worker.reply({ type: "hits", id: sent.id, hits: [{ passage_id: "ch1-sec0-p1" }] });
  assert.deepEqual(await searching, [{ passage_id: "ch1-sec0-p1" }]);
  const failing = answers.search("bloom", 5);
  worker.reply({ type: "error", kind: "csp", message: "refused" });
  await assert.rejects(failing, (/** @type {any} */ e) => e.kind === "csp");
});

test("the reader cancels the download: the worker ends, the question gets its sentence", async () => {
  StandInWorker.made = [];
  const answers = createBrowserAnswers(WHERE, HTTP);
  const asking = answers.ask("How long?");
  answers.cancel();
  const [worker] = StandInWorker.made;
  assert.equal(worker.terminated, true);
  await assert.rejects(asking, (/** @type {any} */ e) => e.kind === "cancelled" && e.why === WHY.cancelled);
  assert.equal(answers.state(), "cancelled");
  assert.equal(answers.prepare(), false, "not started again behind the reader's back");
  assert.equal(StandInWorker.made.length, 1);
});

test("a CSP failure is final; a network failure is tried again by the next question", async () => {
  StandInWorker.made = [];
  const answers = createBrowserAnswers(WHERE, HTTP);
  const first = answers.ask("q");
  StandInWorker.made[0].reply({ type: "error", kind: "csp", message: "refused" });
  await assert.rejects(first, (/** @type {any} */ e) => e.why === WHY.csp && /wasm-unsafe-eval/.test(e.why));
  assert.equal(answers.prepare(), false);
  assert.equal(StandInWorker.made.length, 1);

  const flaky = createBrowserAnswers(WHERE, HTTP);
  const again = flaky.ask("q");
  StandInWorker.made[1].reply({ type: "error", kind: "network", message: "offline" });
  await assert.rejects(again, (/** @type {any} */ e) => e.kind === "network");
  assert.equal(flaky.prepare(), true);
  assert.equal(StandInWorker.made.length, 3);
});

test("a Worker the page's CSP refuses, or one that never starts, falls back", async () => {
  const refusing = class {
    constructor() {
      throw new DOMException("Failed to construct 'Worker': Access to the script at ... violates worker-src", "SecurityError");
    }
  };
  const answers = createBrowserAnswers(WHERE, { ...HTTP, Worker: /** @type {any} */ (refusing) });
  await assert.rejects(answers.ask("q"), (/** @type {any} */ e) => e.why === WHY.csp);
  StandInWorker.made = [];
  const broken = createBrowserAnswers(WHERE, HTTP);
  const asking = broken.ask("q");
  StandInWorker.made[0].dispatchEvent(Object.assign(new Event("error", { cancelable: true }), { message: "404" }));
  await assert.rejects(asking, (/** @type {any} */ e) => e.why === WHY.missing);
});

test("a newer question replaces one still waiting", async () => {
  StandInWorker.made = [];
  const answers = createBrowserAnswers(WHERE, HTTP);
  const controller = new AbortController();
  const asking = answers.ask("old", controller.signal);
  StandInWorker.made[0].reply({ type: "ready" });
  await tick();
  controller.abort();
  await assert.rejects(asking, (/** @type {any} */ e) => e.kind === "replaced");
});

test("a question about a selection reaches the engine with the selection and the encoder", async () => {
  /** @type {any[]} */
  const seen = [];
  const engine = {
    answer: async (/** @type {string} */ question, /** @type {Float32Array} */ qvec, /** @type {any} */ opts) => {
      const vectors = opts.embed ? await opts.embed(["ab", "abcd"]) : [];
      seen.push({ question, qlen: qvec[0], selection: opts.selection, embedded: vectors.map((/** @type {Float32Array} */ v) => v[0]) });
      return { question, answer: "x [1]", citations: [], metadata: {} };
    },
  };
  const { h, posted } = host({ engine });
  await h.onMessage({ data: LOAD });
  await h.onMessage({ data: { type: "ask", id: 1, question: "What does this mean?", selection: "Beta." } });
  assert.equal(last(posted).type, "answer", JSON.stringify(last(posted)));
  assert.deepEqual(seen, [{ question: "What does this mean?", qlen: 20, selection: "Beta.", embedded: [2, 4] }]);
  await h.onMessage({ data: { type: "ask", id: 2, question: "Plain?" } });
  assert.deepEqual(seen[1], { question: "Plain?", qlen: 6, selection: undefined, embedded: [] });
});

test("a worker the page's CSP refused (worker-src) gets the CSP sentence, not 'missing'", async () => {
  StandInWorker.made = [];
  let refused = false;
  const answers = createBrowserAnswers(WHERE, { ...HTTP, refused: () => refused });
  const asking = answers.ask("q");
  StandInWorker.made[0].dispatchEvent(Object.assign(new Event("error", { cancelable: true }), { message: "" }));
  refused = true; // the violation report comes in a task after the error
  await assert.rejects(asking, (/** @type {any} */ e) => e.why === WHY.csp);
});

test("an index of another format is named as such, not as a failed question", async () => {
  StandInWorker.made = [];
  const answers = createBrowserAnswers(WHERE, HTTP);
  const asking = answers.ask("q");
  StandInWorker.made[0].reply({ type: "error", kind: "format", message: "The book's index has a format this widget does not read." });
  await assert.rejects(asking, (/** @type {any} */ e) => e.why === WHY.format && /another version/.test(e.why));
  assert.match(String(answers.why()), /Reload the page/);
});
