// @ts-check
/**
 * Answers in the reader's browser, seen from the page: decides whether they
 * can run here, starts the engine's worker (`worker.js`) only when asked to
 * (the reader opened the panel with no answer server), passes on its
 * download progress, lets the reader cancel it, and asks it questions.
 *
 * Where answers cannot run, `why()` gives the one sentence the panel shows
 * above the search results: a page opened from disk (file://), a browser
 * without Web Workers or WebAssembly, a Content-Security-Policy without
 * 'wasm-unsafe-eval', a device out of memory, a file that does not match
 * its checksum, or a download the reader stopped.
 *
 * Nothing is fetched here, and nothing the reader types leaves the page:
 * questions go to the worker, which only GETs the site's own files.
 *
 * Classic script, loaded by `widget.js` when static mode needs it, DOM-free
 * apart from `Worker` (injected in tests): provides `browser` (see `lib.js`).
 */

/** @typedef {import("./types").Answer} Answer */
/** @typedef {import("./types").StaticHit} StaticHit */
/** @typedef {import("./types").WorkerRequest} WorkerRequest */
/** @typedef {import("./types").WorkerReply} WorkerReply */

/**
 * The download as the worker reports it: bytes (uncompressed) of the whole
 * and per file (by the manifest's role).
 * @typedef {object} LoadProgress
 * @property {number} loaded
 * @property {number} total
 * @property {import("./types").FileBytes} files
 * @property {"download" | "starting"} [phase] "starting" once every file is
 *   in and the runtime compiles and the model's session starts (seconds with
 *   nothing more to download)
 */

/** @typedef {"idle" | "loading" | "ready" | "failed" | "cancelled"} EngineState */

/**
 * @typedef {object} BrowserAnswers
 * @property {() => string | null} unavailable why answers cannot run on this
 *   page at all (known without loading anything; "" when the usual static
 *   note says it), or null when they may
 * @property {() => boolean} prepare start loading the engine unless it is
 *   loading, loaded, or cannot load; whether it is (or will be) usable
 * @property {(question: string, signal?: AbortSignal, selection?: string | null) => Promise<Answer>} ask
 *   (about the reader's `selection`, when given: selection mode)
 *   rejects with a BrowserAnswerError whose `why` is the sentence to show
 * @property {(query: string, k: number) => Promise<import("./types").StaticHit[]>} search
 *   the static search, run in the worker (rejects when it is not running)
 * @property {() => void} cancel stop the download (the reader's choice)
 * @property {() => EngineState} state
 * @property {() => string | null} why the sentence of the last failure
 * @property {(listener: (progress: LoadProgress) => void) => () => void} onProgress
 * @property {(listener: (state: EngineState) => void) => () => void} onState
 */

/**
 * @typedef {object} BrowserEnv
 * @property {new (url: string | URL, options?: WorkerOptions) => Worker} [Worker]
 * @property {string} protocol the page's `location.protocol`
 * @property {boolean} wasm whether `WebAssembly` exists on the page
 * @property {(message: string) => void} [log] where a failure's details go
 *   for the site's author (the page's console); the reader sees `why()`
 * @property {() => boolean} [refused] whether the page's Content-Security-Policy
 *   refused a worker (`securitypolicyviolation`, `worker-src`): a worker that
 *   does not start is then the CSP's doing, not a missing file
 */

(function () {
  "use strict";

  const lib = typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib;

  const SEARCH = "these are the passages that best match your question";

  /** The sentence the reader sees for each reason the engine cannot answer. */
  const WHY = /** @type {Record<string, string | null>} */ ({
    file:
      "This page was opened from disk (file://), where the browser cannot load the answer engine, so " +
      `${SEARCH}. Serve the built site (e.g. python -m http.server) to get answers.`,
    worker: `This browser cannot run the answer engine in the background (no Web Workers), so ${SEARCH}.`,
    wasm: `This browser cannot run WebAssembly, which answers in the browser need, so ${SEARCH}.`,
    csp:
      "This site's Content-Security-Policy does not allow WebAssembly ('wasm-unsafe-eval') or the engine's " +
      `worker, which answers in the browser need, so ${SEARCH}.`,
    memory: `This device ran out of memory loading the answer model, so ${SEARCH}.`,
    integrity:
      "A file of the answer engine does not match the site's index, so it was not run and " +
      `${SEARCH}. Reload the page; if this persists, the site needs a rebuild.`,
    missing: `The answer engine's files are missing from this site, so ${SEARCH}.`,
    // a manifest, shard listing or file this engine does not read: the page
    // and the index come from different builds, or the index is damaged
    format:
      "This site's index was written by another version of sphinx-ragcite, so the answer engine cannot read it and " +
      `${SEARCH}. Reload the page; if this persists, the site needs a rebuild.`,
    network: `The answer engine could not be downloaded, so ${SEARCH}.`,
    engine: `The answer engine failed on this question, so ${SEARCH}.`,
    start:
      "The answer engine could not start on this site's index, so " +
      `${SEARCH}. Reload the page; if this persists, the site needs a rebuild.`,
    // a question the engine refuses as the server would (the widget checks
    // the reader's first, so this is a caller's question)
    invalid: `The answer engine cannot take this question, so ${SEARCH}.`,
    cancelled: `You stopped the download of the answer engine, so ${SEARCH}.`,
    aborted: `You stopped the download of the answer engine, so ${SEARCH}.`,
    // built without answers in the browser: the usual static-mode note
    off: null,
  });
  /** How long a worker that did not start waits for the CSP's report. */
  const CSP_REPORT_MS = 50;
  /** Failures the next question may try again (the network may come back). */
  const RETRY = new Set(["network", "engine"]);

  /**
   * A request to the worker, as `worker.js` reads it.
   * @param {Worker} target
   * @param {WorkerRequest} request
   */
  const send = (target, request) => target.postMessage(request);

  class BrowserAnswerError extends Error {
    /**
     * @param {string} kind a key of WHY, or "replaced" (a newer question)
     * @param {string} [detail] what the worker said, for the console
     */
    constructor(kind, detail) {
      super(detail || kind);
      this.name = "BrowserAnswerError";
      this.kind = kind;
      /** @type {string | null} the sentence shown above the search results */
      this.why = kind in WHY ? WHY[kind] : WHY.engine;
    }
  }

  /**
   * @param {{workerUrl: URL | string, manifestUrl: URL | string | null}} where
   * @param {BrowserEnv} env
   * @returns {BrowserAnswers}
   */
  function createBrowserAnswers(where, env) {
    /** @type {EngineState} */
    let state = "idle";
    /** @type {string | null} */
    let failure = null;
    /** @type {Worker | null} */
    let worker = null;
    /** @type {Promise<void> | null} */
    let ready = null;
    let nextId = 1;
    /** A request's reply: an answer to an ask, hits to a search. */
    /** @type {Map<number, {resolve: (reply: Answer | StaticHit[]) => void, reject: (e: Error) => void}>} */
    const pending = new Map();
    /** @type {Set<(p: LoadProgress) => void>} */
    const progressListeners = new Set();
    /** @type {Set<(s: EngineState) => void>} */
    const stateListeners = new Set();
    /** @type {((error: BrowserAnswerError | null) => void) | null} */
    let settleReady = null;
    /** @type {LoadProgress | null} the last download figures */
    let lastProgress = null;

    /** Why the engine cannot run on this page at all (a key of WHY), or null. */
    function blocked() {
      if (env.protocol === "file:") return "file";
      if (where.manifestUrl === null) return "off";
      if (typeof env.Worker !== "function") return "worker";
      if (!env.wasm) return "wasm";
      return null;
    }

    function unavailable() {
      const kind = blocked();
      return kind === null ? null : WHY[kind] || "";
    }

    /** @param {EngineState} next */
    function setState(next) {
      if (state === next) return;
      state = next;
      for (const listener of stateListeners) listener(next);
    }

    /** @param {BrowserAnswerError} error */
    function fail(error) {
      failure = error.kind;
      if (env.log && error.kind !== "cancelled") env.log(`ragcite: the answer engine cannot run (${error.kind}): ${error.message}`);
      if (worker) worker.terminate();
      worker = null;
      ready = null;
      setState(error.kind === "cancelled" ? "cancelled" : "failed");
      for (const { reject } of pending.values()) reject(error);
      pending.clear();
      if (settleReady) settleReady(error);
      settleReady = null;
    }

    /** @param {MessageEvent} event */
    function onMessage(event) {
      /** @type {WorkerReply | null | undefined} the worker's (`worker.js`) */
      const data = event.data;
      if (!data || typeof data !== "object") return;
      if (data.type === "progress") {
        /** @type {LoadProgress} */
        const progress = { loaded: Number(data.loaded) || 0, total: Number(data.total) || 0, files: data.files || {}, phase: "download" };
        lastProgress = progress;
        for (const listener of progressListeners) listener(progress);
      } else if (data.type === "phase" && data.phase === "starting" && state === "loading") {
        const all = lastProgress ? lastProgress.total : 0;
        /** @type {LoadProgress} */
        const progress = { loaded: all, total: all, files: lastProgress ? lastProgress.files : {}, phase: "starting" };
        for (const listener of progressListeners) listener(progress);
      } else if (data.type === "ready") {
        setState("ready");
        if (settleReady) settleReady(null);
        settleReady = null;
      } else if (data.type === "answer" || data.type === "hits" || data.type === "error") {
        const id = data.id;
        const waiting = id !== undefined ? pending.get(id) : undefined;
        if (id !== undefined && waiting) {
          pending.delete(id);
          if (data.type === "answer") waiting.resolve(data.answer);
          else if (data.type === "hits") waiting.resolve(data.hits);
          else waiting.reject(new BrowserAnswerError(String(data.kind || "engine"), String(data.message || "")));
        } else if (data.type === "error" && state === "loading") {
          fail(new BrowserAnswerError(String(data.kind || "engine"), String(data.message || "")));
        }
      }
    }

    function prepare() {
      if (state === "loading" || state === "ready") return true;
      if (state === "cancelled") return false;
      if (state === "failed" && !(failure && RETRY.has(failure))) return false;
      const reason = blocked();
      if (reason !== null || !env.Worker) {
        failure = reason || "worker";
        setState("failed");
        return false;
      }
      failure = null;
      setState("loading");
      ready = new Promise((resolve, reject) => {
        settleReady = (error) => (error ? reject(error) : resolve());
      });
      ready.catch(() => {});
      try {
        worker = new env.Worker(String(where.workerUrl), { name: "ragcite-engine" });
      } catch (error) {
        // a CSP without worker-src 'self' (or script-src) refuses the worker
        fail(new BrowserAnswerError("csp", String(/** @type {Error} */ (error).message || error)));
        return false;
      }
      worker.addEventListener("message", onMessage);
      const started = worker;
      worker.addEventListener("error", (event) => {
        event.preventDefault();
        if (state !== "loading" || worker !== started) return;
        const detail = event.message || "the worker did not start";
        // the CSP's violation report reaches the page in a task of its own
        setTimeout(() => {
          if (state !== "loading" || worker !== started) return;
          fail(new BrowserAnswerError(env.refused && env.refused() ? "csp" : "missing", detail));
        }, CSP_REPORT_MS);
      });
      send(worker, { type: "load", manifest: String(where.manifestUrl) });
      return true;
    }

    /**
     * @param {string} question
     * @param {AbortSignal} [signal]
     * @param {string | null} [selection] the reader's, asked about
     * @returns {Promise<Answer>}
     */
    async function ask(question, signal, selection) {
      if (!prepare() || !ready) throw new BrowserAnswerError(failure || "off");
      await ready;
      if (signal && signal.aborted) throw new BrowserAnswerError("replaced");
      const running = worker;
      if (!running) throw new BrowserAnswerError(failure || "engine");
      const id = nextId++;
      return new Promise((resolve, reject) => {
        // the worker answers an ask with an answer
        pending.set(id, { resolve: (reply) => resolve(/** @type {Answer} */ (reply)), reject });
        if (signal) {
          signal.addEventListener(
            "abort",
            () => {
              if (pending.delete(id)) reject(new BrowserAnswerError("replaced"));
            },
            { once: true },
          );
        }
        send(running, { type: "ask", id, question, selection: selection || null });
      });
    }

    /**
     * @param {string} query
     * @param {number} k
     * @returns {Promise<import("./types").StaticHit[]>}
     */
    function search(query, k) {
      const running = worker;
      if (!running || (state !== "loading" && state !== "ready")) {
        return Promise.reject(new BrowserAnswerError(failure || "off"));
      }
      const id = nextId++;
      return new Promise((resolve, reject) => {
        // and a search with hits
        pending.set(id, { resolve: (reply) => resolve(/** @type {StaticHit[]} */ (reply)), reject });
        send(running, { type: "search", id, question: query, k });
      });
    }

    function cancel() {
      if (state !== "loading") return;
      fail(new BrowserAnswerError("cancelled"));
    }

    return {
      unavailable,
      prepare,
      ask,
      search,
      cancel,
      state: () => state,
      why: () => (failure && failure in WHY ? WHY[failure] : null),
      onProgress: (listener) => {
        progressListeners.add(listener);
        return () => progressListeners.delete(listener);
      },
      onState: (listener) => {
        stateListeners.add(listener);
        return () => stateListeners.delete(listener);
      },
    };
  }

  /**
   * "12.3 of 24.9 MB": megabytes (10^6 bytes) with one decimal.
   * @param {number} loaded
   * @param {number} total
   */
  function megabytes(loaded, total) {
    const mb = (/** @type {number} */ n) => (n / 1e6).toFixed(1);
    return `${mb(Math.min(loaded, total))} of ${mb(total)} MB`;
  }

  const api = { BrowserAnswerError, WHY, createBrowserAnswers, megabytes };
  lib.provide("browser", api);
  if (typeof module === "object") module.exports = api;
})();
