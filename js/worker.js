// @ts-check
/**
 * The Web Worker that answers questions in the reader's browser when no
 * answer server runs: the page's main thread stays free while the engine
 * loads (tens of MB) and while it answers.
 *
 * Messages from the page (`browser.js`; `WorkerRequest` of `types.d.ts`):
 * - `{type: "load", manifest: url}`: check that WebAssembly may run here,
 *   read the manifest, load the engine's scripts (`CORE_SCRIPTS`: `SCRIPTS.worker`
 *   of `spec.js`, in order, from this script's folder; `files.js` and
 *   `store.js` first), the runtime, the model (its SHA-256
 *   checked first), the tokenizer and what every question needs, then say
 *   `ready`. Progress comes as `progress` messages.
 * - `{type: "ask", id, question, k?, selection?}`: answer (about the
 *   reader's `selection` when given: selection mode); `answer` (the JSON of
 *   `/api/ask`) or `error` with the same `id`.
 * - `{type: "search", id, question, k}`: the static search's best passages,
 *   `hits` with the same `id`, as soon as the static index is in (before the
 *   model): the page's thread never parses a large book's index.
 * - `{type: "cancel"}`: stop loading (the page also terminates the worker).
 *
 * Messages to the page (`WorkerReply`): `{type: "progress", loaded, total, files}` (bytes,
 * per file by role), `{type: "phase", phase: "starting"}` (every file is in;
 * the runtime compiles and the model's session starts: seconds with a full
 * progress bar), `{type: "ready", seconds, bytes, timings}` (`timings`: ms
 * per step, for benchmarks/engine_start.py), `{type: "answer",
 * id, answer}`, `{type: "hits", id, hits}`, `{type: "error", id?, kind, message}`
 * where `kind` says why:
 * "off" (the site ships no engine), "wasm" (no WebAssembly), "csp" (the
 * Content-Security-Policy forbids compiling it), "memory", "integrity" (a
 * file does not match its checksum), "missing", "network", "engine", "start" (a load that failed for no known reason),
 * "invalid" (a question the engine refuses, as the server's 400 would),
 * "aborted".
 *
 * Nothing here touches the DOM or sends the question anywhere: the only
 * requests are GETs of the site's own files.
 *
 * Classic worker script. Under Node it exports `createWorkerHost` (tests
 * inject the engine's factories); in a worker it starts itself.
 */

/** @typedef {import("./types").Answer} Answer */
/** @typedef {import("./types").WorkerRequest} WorkerRequest */
/** @typedef {import("./types").WorkerReply} WorkerReply */
/** @typedef {import("./types").WorkerErrorKind} WorkerErrorKind */
/** @typedef {import("./types").FileBytes} FileBytes */
/** @typedef {import("./types").StartTimings} StartTimings */
/** @typedef {import("./types").BrowserEngine} BrowserEngine */
/** @typedef {import("./types").QuestionEncoder} QuestionEncoder */
/** @typedef {import("./store.js").ShardStore} ShardStore */
/** @typedef {import("./search.js").ShardedSearch} ShardedSearch */

/**
 * What the host needs from its surroundings (a worker's globals, or fakes).
 * @typedef {object} WorkerEnv
 * @property {(message: WorkerReply) => void} post postMessage to the page
 * @property {(...urls: string[]) => void} importScripts
 * @property {import("./types").RagciteLib} lib where the engine's scripts register (`lib.js`)
 * @property {() => import("./types").OrtRuntime | undefined} ort the
 *   onnxruntime-web module once its script ran
 * @property {string} base this script's URL: the engine's scripts are beside it
 * @property {typeof fetch} [fetch]
 * @property {{compile(bytes: BufferSource): Promise<unknown>} | null} [WebAssembly]
 * @property {import("./store.js").StoreOptions["subtle"]} [subtle]
 * @property {() => number} [now]
 */

/**
 * A loaded engine, and what `ready` says of its start.
 * @typedef {object} Loaded
 * @property {BrowserEngine} engine
 * @property {QuestionEncoder} encoder
 * @property {ShardStore} store
 * @property {number} seconds
 * @property {number} bytes
 * @property {StartTimings} timings
 */

(function () {
  "use strict";

  /**
   * The worker's globals, as this script uses them.
   * @typedef {object} WorkerGlobals
   * @property {(...urls: string[]) => void} importScripts missing in a page
   *   or under Node (checked first)
   * @property {unknown} [document]
   * @property {{href: string}} location
   * @property {(message: WorkerReply) => void} postMessage
   * @property {((event: MessageEvent) => void) | null} onmessage
   * @property {import("./types").OrtRuntime} [ort] set by onnxruntime-web's script
   * @property {WorkerEnv["WebAssembly"]} [WebAssembly]
   * @property {{subtle?: SubtleCrypto}} [crypto]
   */
  const g = /** @type {WorkerGlobals} */ (/** @type {unknown} */ (globalThis));

  /** In a worker (not under Node, not in a page): the worker starts itself. */
  const inWorker = typeof module !== "object" && typeof g.importScripts === "function" && !g.document;
  if (inWorker) {
    // the registry and the shared spec first, from beside this script and
    // with its `?v=`: one build's scripts, never an old cached copy
    const self = new URL(String(g.location.href));
    for (const name of ["lib.js", "spec.js"]) {
      const url = new URL(name, self);
      url.search = self.search;
      g.importScripts(url.href);
    }
  }
  const lib = typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib;

  /** The engine's scripts, in dependency order (`assets.WORKER_SCRIPTS`). */
  const CORE_SCRIPTS = lib.need("spec").SCRIPTS.worker.map((name) => `${name}.js`);
  /** Loaded first (in that order): the store, and the formats it reads, say
   * from the manifest whether the site ships an engine at all. */
  /** @type {string[]} */
  const FIRST = CORE_SCRIPTS.filter((name) => name === "files.js" || name === "store.js");
  /** What the scripts must have provided (`lib.js`). */
  /** @type {(keyof import("./types").RagciteModules)[]} */
  const NEEDED = ["tokenize", "search", "wordpiece", "unigram", "encode", "engine", "store"];
  /** The smallest WebAssembly module: compiling it tells whether the page's
   * Content-Security-Policy allows WebAssembly at all. */
  const EMPTY_MODULE = new Uint8Array([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]);
  const PROGRESS_EVERY_MS = 100;

  class HostError extends Error {
    /**
     * @param {string} message
     * @param {WorkerErrorKind} kind
     */
    constructor(message, kind) {
      super(message);
      this.kind = kind;
    }
  }

  /**
   * What a thrown value says: its `kind` and `message`, where it has them.
   * @param {unknown} error
   * @returns {{kind?: unknown, message?: unknown}}
   */
  const fields = (error) => (typeof error === "object" && error !== null ? error : {});

  /**
   * The kind of an error thrown while loading or answering.
   * @param {unknown} error
   * @returns {string}
   */
  function kindOf(error) {
    const { kind, message } = fields(error);
    if (typeof kind === "string") return kind;
    const text = String(message || error);
    // not every RangeError: a bad value in the index is one too (found by
    // benchmarks/fuzz_engine.js), and "out of memory" would send the reader
    // the wrong way
    const memory = /out of memory|\bOOM\b|could not allocate|allocation failed|Cannot enlarge memory/i;
    const huge = /Invalid string length|Array buffer allocation/i;
    if (memory.test(text) || (error instanceof RangeError && huge.test(text))) {
      return "memory";
    }
    return "engine";
  }

  /**
   * Whether WebAssembly may be compiled here: "" when yes, else the kind.
   * @param {WorkerEnv["WebAssembly"]} wasm `WebAssembly`
   * @returns {Promise<"" | "wasm" | "csp">}
   */
  async function wasmAllowed(wasm) {
    if (!wasm || typeof wasm.compile !== "function") return "wasm";
    try {
      await wasm.compile(EMPTY_MODULE);
      return "";
    } catch (error) {
      const text = String(fields(error).message || error);
      return /Content.Security.Policy|unsafe-eval|CSP/i.test(text) ? "csp" : "wasm";
    }
  }

  /**
   * The worker's message handling, apart from the worker's globals.
   * @param {WorkerEnv} env
   */
  function createWorkerHost(env) {
    const now = env.now || (() => Date.now());
    /**
     * A script beside this one, with this one's `?v=<digest>`: the engine's
     * code is the build's that wrote the index, never an old cached copy.
     * @param {string} name
     */
    const own = (name) => {
      const base = new URL(env.base);
      const url = new URL(name, base);
      url.search = base.search;
      return url.href;
    };
    /** @type {AbortController | null} */
    let loading = null;
    /** @type {Promise<Loaded> | null} */
    let ready = null;
    /** @type {Promise<void>} */
    let queue = Promise.resolve();
    /** @type {(searcher: Promise<ShardedSearch>) => void} */
    let searcherIs = () => {};
    /** The static searcher, once the scripts and the search index's root are in. */
    /** @type {Promise<ShardedSearch>} */
    const searcher = new Promise((resolve) => {
      searcherIs = resolve;
    });
    searcher.catch(() => {}); // a search asked for reports it

    /**
     * @param {string} manifestUrl
     * @param {AbortSignal} signal
     * @returns {Promise<Loaded>}
     */
    async function load(manifestUrl, signal) {
      const started = now();
      const problem = await wasmAllowed(env.WebAssembly);
      if (problem) {
        throw new HostError(problem === "csp" ? "The page's Content-Security-Policy forbids WebAssembly." : "This browser cannot run WebAssembly.", problem);
      }
      const origin = new URL(env.base).origin;
      const manifestAddress = new URL(manifestUrl, env.base);
      if (manifestAddress.origin !== origin) {
        throw new HostError("The book's index is on another site.", "off");
      }
      // the store first: it is what tells whether the site ships an engine
      for (const name of FIRST) {
        if (!env.lib.has(name.slice(0, -3))) env.importScripts(own(name));
      }
      const F = env.lib.need("files");
      /** @type {FileBytes} */
      const files = {};
      let last = 0;
      let total = 0;
      /** Once every byte is in, the panel says the engine starts: no more figures. */
      let starting = false;
      const report = (/** @type {boolean} */ force) => {
        if (starting) return;
        const t = now();
        if (!force && t - last < PROGRESS_EVERY_MS) return;
        last = t;
        let loaded = 0;
        for (const f of Object.values(files)) loaded += f.loaded;
        env.post({ type: "progress", loaded, total, files });
      };
      const store = env.lib.need("store").createShardStore({
        manifestUrl: manifestAddress.href,
        fetch: env.fetch,
        signal,
        subtle: env.subtle,
        onProgress: (p) => {
          files[p.role] = { loaded: p.loaded, total: p.total };
          report(p.loaded === p.total);
        },
      });
      const manifest = await store.manifest();
      if (!manifest.files.model || !manifest.embedding) {
        throw new HostError("This site was built without answers in the browser (ragcite_browser_answers).", "off");
      }
      const roles = F.firstAnswerRoles(manifest);
      total = await store.size(roles);
      for (const role of roles) files[role] = { loaded: 0, total: Number(manifest.bytes[role]) || 0 };
      report(true);

      const missing = [];
      for (const name of CORE_SCRIPTS) {
        if (FIRST.includes(name)) continue; // loaded above
        try {
          env.importScripts(own(name));
        } catch {
          missing.push(name);
        }
      }
      const absent = NEEDED.filter((name) => !env.lib.has(name));
      if (missing.length || absent.length) {
        throw new HostError(`The answer engine's scripts are missing from this site (${[...missing, ...absent].join(", ")}).`, "missing");
      }
      const language = F.snowballLanguage(manifest.tokenizer);
      if (language && !env.lib.has(`snowball/${language}`)) {
        env.importScripts(own(`snowball/${language}.js`));
      }
      const opened = store.search();
      opened.catch(() => {});
      searcherIs(opened);

      // the runtime: its script by URL, its WebAssembly as checked bytes
      // read once and handed over: the store keeps no copy of these
      const fetching = now();
      const [wasmBytes, modelBytes, tokenizerFile] = await Promise.all([
        store.bytes("ort_wasm", false),
        store.bytes("model", false),
        store.json("tokenizer"),
        store.core(),
      ]);
      // dropped once handed over (below): tens of MB the worker need not keep
      /** @type {Uint8Array | null} */
      let wasm = wasmBytes;
      /** @type {Uint8Array | null} */
      let model = modelBytes;
      /** @type {unknown} */
      let tokenizerJson = tokenizerFile;
      /** Where the time went (ms), for the benchmark: `ready`'s `timings`. */
      const timings = { files: now() - fetching, checksums: store.checkedMs(), session: 0, probe: 0, engine: 0, total: 0 };
      // every byte is in: what remains is compiling and starting (seconds
      // with a full progress bar, so the panel says so)
      // the runtime's scripts come next, by URL (the HTTP cache has them)
      if (files.ort_js) files.ort_js.loaded = files.ort_js.total;
      if (files.ort_mjs) files.ort_mjs.loaded = files.ort_mjs.total;
      report(true);
      starting = true;
      env.post({ type: "phase", phase: "starting" });
      env.importScripts(await store.url("ort_js"));
      const ort = env.ort();
      if (!ort || !ort.env || !ort.env.wasm) throw new HostError("The onnxruntime-web script did not load.", "missing");
      ort.env.wasm.numThreads = 1; // threads need cross-origin isolation, which static hosts do not give
      ort.env.wasm.proxy = false;
      ort.env.wasm.wasmBinary = wasm;
      if ("ort_mjs" in manifest.files) {
        ort.env.wasm.wasmPaths = { mjs: await store.url("ort_mjs") };
      }
      // WordPiece (MiniLM) or Unigram (multilingual-e5), as the file's model.type says
      const tokenizer = env.lib.need("unigram").questionTokenizer(tokenizerJson);
      tokenizerJson = null;
      // the runtime compiles its WebAssembly (wasmBinary) and opens the session
      const encoder = await env.lib.need("encode").createEncoder({
        ort,
        model,
        tokenizer,
        maxTokens: Number(manifest.embedding.max_tokens) || 256,
        dim: Number(manifest.embedding.dim) || 0,
        prefixes: {
          query: String(manifest.embedding.query_prefix || ""),
          passage: String(manifest.embedding.passage_prefix || ""),
        },
      });
      Object.assign(timings, encoder.timings || {});
      // the runtime holds what it needs now: tens of MB the worker need not
      model = wasm = null;
      ort.env.wasm.wasmBinary = undefined;
      const opening = now();
      const engine = await env.lib.need("engine").createEngine(store);
      timings.engine = now() - opening;
      timings.total = now() - started;
      for (const [key, ms] of Object.entries(timings)) timings[/** @type {keyof typeof timings} */ (key)] = round(ms);
      return { engine, encoder, store, seconds: (now() - started) / 1000, bytes: store.fetched(), timings };
    }

    /** @param {unknown} message a MessageEvent, or its `data` */
    async function onMessage(message) {
      const data = readRequest(isObject(message) && message.data !== undefined ? message.data : message);
      if (!data) return;
      if (data.type === "load") {
        if (ready) return;
        loading = new AbortController();
        const signal = loading.signal;
        const started = load(data.manifest, signal);
        ready = started;
        try {
          const done = await started;
          env.post({ type: "ready", seconds: done.seconds, bytes: done.bytes, timings: done.timings });
        } catch (error) {
          ready = null;
          const failed = Promise.reject(error);
          failed.catch(() => {});
          searcherIs(failed);
          // an error of no known kind while loading: the engine could not
          // start on this index (no question failed yet)
          const known = signal.aborted ? "aborted" : kindOf(error);
          const kind = known === "engine" ? "start" : known;
          env.post({ type: "error", kind, message: messageOf(error) });
        }
      } else if (data.type === "search") {
        try {
          const search = await searcher;
          env.post({ type: "hits", id: data.id, hits: await search.search(data.question, data.k) });
        } catch (error) {
          env.post({ type: "error", id: data.id, kind: kindOf(error), message: messageOf(error) });
        }
      } else if (data.type === "cancel") {
        if (loading) loading.abort();
      } else if (data.type === "ask") {
        // one question at a time: the engine and the runtime are not reentrant
        const turn = queue.then(() => answer(data));
        queue = turn.catch(() => {});
        await turn;
      }
    }

    /** @param {Extract<WorkerRequest, {type: "ask"}>} data */
    async function answer(data) {
      const id = data.id;
      try {
        if (!ready) throw new HostError("The answer engine is not loaded.", "engine");
        const { engine, encoder, store } = await ready;
        const question = data.question;
        const before = store.fetched();
        const started = now();
        const vector = encoder ? await encoder.embed(question, "query") : null;
        const encoded = now();
        /** @type {{k?: number, selection?: string, embed?: (texts: string[], kind?: "query" | "passage") => Promise<Float32Array[]>}} */
        const options = {};
        if (data.k !== undefined) options.k = data.k;
        if (data.selection) {
          if (!encoder) throw new HostError("Questions about a selection need the encoder, which this site does not ship.", "engine");
          // selection mode embeds the selection, its sentences and the quotes
          options.selection = data.selection;
          options.embed = async (texts, kind = "passage") => {
            const out = [];
            for (const text of texts) out.push(await encoder.embed(text, kind));
            return out;
          };
        }
        /** @type {Answer} */
        const result = await engine.answer(question, vector, options);
        /** @type {Record<string, unknown>} */
        const meta = (result.metadata = result.metadata || {});
        meta.generator = meta.generator || "extractive";
        meta.engine = "browser";
        meta.encode_ms = round(encoded - started);
        meta.fetched_bytes = store.fetched() - before;
        env.post({ type: "answer", id, answer: result });
      } catch (error) {
        env.post({ type: "error", id, kind: kindOf(error), message: messageOf(error) });
      }
    }

    return { onMessage };
  }

  /**
   * @param {unknown} value
   * @returns {value is Record<string, unknown>}
   */
  const isObject = (value) => typeof value === "object" && value !== null;

  /**
   * A message from the page read into a request (null: none this host
   * knows): a string or a number where the host needs one (`k` of a search
   * is 5 unless given), and `id` back as it came.
   * @param {unknown} data
   * @returns {WorkerRequest | null}
   */
  function readRequest(data) {
    if (!isObject(data)) return null;
    const id = /** @type {number} */ (data.id);
    const question = String(data.question || "");
    if (data.type === "load") return { type: "load", manifest: String(data.manifest) };
    if (data.type === "search") return { type: "search", id, question, k: Number(data.k) || 5 };
    if (data.type === "cancel") return { type: "cancel" };
    if (data.type !== "ask") return null;
    const selection = typeof data.selection === "string" && data.selection ? data.selection : null;
    return data.k ? { type: "ask", id, question, selection, k: Number(data.k) } : { type: "ask", id, question, selection };
  }

  /** @param {number} ms */
  const round = (ms) => Math.round(ms * 10) / 10;

  /** @param {unknown} error */
  function messageOf(error) {
    return String(fields(error).message || error || "unknown error");
  }

  const api = { CORE_SCRIPTS, createWorkerHost, kindOf, wasmAllowed };
  if (typeof module === "object" && module.exports) {
    module.exports = api;
  } else if (inWorker) {
    const host = createWorkerHost({
      post: (message) => g.postMessage(message),
      importScripts: (...urls) => g.importScripts(...urls),
      lib,
      ort: () => g.ort,
      base: String(g.location.href),
      WebAssembly: g.WebAssembly,
      subtle: g.crypto && g.crypto.subtle ? g.crypto.subtle : null,
    });
    g.onmessage = (/** @type {MessageEvent} */ event) => {
      host.onMessage(event).catch(() => {
        // reported to the page already
      });
    };
  }
})();
