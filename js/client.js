// @ts-check
/**
 * The answer server as the widget sees it: is it up (`/api/health`), a
 * streamed answer (`POST /api/ask/stream`, server-sent events read through
 * `fetch`), and a reader's vote on an answer (`POST /api/feedback`, when
 * health says the server takes them). Also the widget's one error type,
 * whose message is what the reader is shown.
 *
 * Classic script, after `sse.js`: registers on
 * `globalThis.ragcite_lib.client`, and on `module.exports` under Node.
 */

/** @typedef {import("./types").Answer} Answer */
/** @typedef {import("./types").AskRequest} AskRequest */
/** @typedef {import("./types").FeedbackRequest} FeedbackRequest */
/** @typedef {"invalid" | "busy" | "rate" | "server" | "network" | "static" | "aborted"} ErrorKind */

/**
 * @typedef {object} Client
 * @property {() => Promise<boolean>} available whether the server answers
 *   `/api/health` within 1.5 s; an answer that is up is trusted from then
 *   on, one that is down is asked again after 30 s
 * @property {() => void} forget ask `/api/health` again next time
 * @property {() => string[] | null} sites the names of the sites the server
 *   serves when it serves several (`/api/health`), else null
 * @property {(body: AskRequest, signal: AbortSignal, onEvent: (event: string, data: any) => void) => Promise<Answer>} stream
 *   stream an answer; `onEvent` sees the retrieval and token events
 * @property {() => boolean} feedback whether the server takes votes on its
 *   answers (`/api/health`'s `feedback`; false until health was read)
 * @property {(body: FeedbackRequest) => Promise<void>} sendFeedback vote on
 *   an answer; rejects with a WidgetError
 */

(function () {
  "use strict";

  const g = /** @type {any} */ (globalThis);
  /** @type {Record<string, any>} */
  const lib = (g.ragcite_lib = g.ragcite_lib || {});

  const HEALTH_TIMEOUT_MS = 1500;
  const SERVER_RECHECK_MS = 30000;

  class WidgetError extends Error {
    /**
     * @param {string} message shown to the reader
     * @param {ErrorKind} kind
     * @param {number} [retryAfter] seconds
     */
    constructor(message, kind, retryAfter) {
      super(message);
      this.name = "RagciteError";
      this.kind = kind;
      this.retryAfter = retryAfter || 0;
    }
  }

  /**
   * The reader-facing error of a non-2xx API response.
   * @param {{status: number, headers: {get(name: string): string | null}, json(): Promise<any>}} response
   * @returns {Promise<WidgetError>}
   */
  async function httpError(response) {
    let message = "";
    try {
      const body = await response.json();
      const m = body && body.error && body.error.message;
      if (typeof m === "string") message = m;
    } catch {
      // not JSON: keep the generic message
    }
    const header = Number.parseInt(response.headers.get("Retry-After") || "", 10);
    const wait = Number.isFinite(header) && header > 0 ? Math.min(header, 3600) : 0;
    if (response.status === 503) {
      return new WidgetError("The answer server is busy.", "busy", wait || 2);
    }
    if (response.status === 429) {
      return new WidgetError(message || "Too many questions at once.", "rate", wait || 5);
    }
    if (response.status >= 400 && response.status < 500 && message) {
      return new WidgetError(message, "invalid");
    }
    return new WidgetError(
      message || `The answer server failed (HTTP ${response.status}); try again.`,
      "server",
    );
  }

  /**
   * @param {URL | null} apiBase null: no server, static mode only
   * @returns {Client}
   */
  function createClient(apiBase) {
    /** @param {string} path */
    const api = (path) => new URL(`api/${path}`, /** @type {URL} */ (apiBase)).href;

    /** @type {{at: number, ok: Promise<boolean>} | null} */
    let check = null;
    /** @type {string[] | null} */
    let siteNames = null;
    let takesFeedback = false;

    function available() {
      if (apiBase === null) return Promise.resolve(false);
      const now = Date.now();
      if (check && now - check.at < SERVER_RECHECK_MS) return check.ok;
      const ok = (async () => {
        const controller = new AbortController();
        const timer = setTimeout(() => controller.abort(), HEALTH_TIMEOUT_MS);
        try {
          const response = await fetch(api("health"), {
            headers: { Accept: "application/json" },
            cache: "no-store",
            credentials: "same-origin",
            signal: controller.signal,
          });
          if (!response.ok) return false;
          const body = await response.json();
          siteNames = namesOf(body && body.sites);
          takesFeedback = Boolean(body && body.feedback === true);
          return Boolean(body && body.status === "ok");
        } catch {
          return false;
        } finally {
          clearTimeout(timer);
        }
      })();
      check = { at: now, ok };
      ok.then((up) => {
        if (up && check) check.at = Infinity;
      });
      return ok;
    }

    /**
     * @param {AskRequest} body
     * @param {AbortSignal} signal
     * @param {(event: string, data: any) => void} onEvent
     * @returns {Promise<Answer>}
     */
    async function stream(body, signal, onEvent) {
      const response = await fetch(api("ask/stream"), {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
        body: JSON.stringify(body),
        credentials: "same-origin",
        cache: "no-store",
        signal,
      });
      if (!response.ok) throw await httpError(response);
      /** @type {Answer | null} */
      let final = null;
      const parser = lib.createSseParser();
      /** @param {import("./sse.js").SseEvent[]} events */
      const handle = (events) => {
        for (const { event, data } of events) {
          let parsed;
          try {
            parsed = JSON.parse(data);
          } catch {
            continue;
          }
          if (event === "final") final = parsed;
          else if (event === "error") {
            const m = parsed && parsed.error && parsed.error.message;
            throw new WidgetError(typeof m === "string" ? m : "The answer failed.", "server");
          } else onEvent(event, parsed);
        }
      };
      if (response.body && typeof response.body.getReader === "function") {
        const reader = response.body.getReader();
        const decoder = new TextDecoder();
        try {
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            handle(parser.push(decoder.decode(value, { stream: true })));
          }
        } finally {
          reader.releaseLock();
        }
        handle(parser.push(decoder.decode()));
      } else {
        handle(parser.push(await response.text()));
      }
      handle(parser.end());
      const answer = /** @type {Answer | null} */ (final);
      if (!answer || typeof answer !== "object" || typeof answer.answer !== "string" || !Array.isArray(answer.citations)) {
        throw new WidgetError("The answer stream ended before the answer; try again.", "server");
      }
      return answer;
    }

    /**
     * @param {FeedbackRequest} body
     * @returns {Promise<void>}
     */
    async function sendFeedback(body) {
      let response;
      try {
        response = await fetch(api("feedback"), {
          method: "POST",
          headers: { "Content-Type": "application/json", Accept: "application/json" },
          body: JSON.stringify(body),
          credentials: "same-origin",
          cache: "no-store",
        });
      } catch {
        throw new WidgetError("The answer server cannot be reached.", "network");
      }
      if (!response.ok) throw await httpError(response);
    }

    return {
      available,
      forget: () => {
        check = null;
      },
      sites: () => siteNames,
      stream,
      feedback: () => apiBase !== null && takesFeedback,
      sendFeedback,
    };
  }

  /**
   * The site names of `/api/health`'s `sites`, or null (one site served).
   * @param {unknown} sites
   * @returns {string[] | null}
   */
  function namesOf(sites) {
    if (!Array.isArray(sites)) return null;
    return sites
      .map((s) => (s && typeof s === "object" ? /** @type {{name?: unknown}} */ (s).name : null))
      .filter((n) => typeof n === "string" && n !== "")
      .map(String);
  }

  /**
   * The `site` a question asks: the page's own site when the server serves
   * it among several and the scope is "site"; else none (the server's
   * default: its one site, or all of several).
   * @param {{site: string, scope: "site" | "all"}} settings
   * @param {string[] | null} served `client.sites()`
   * @returns {string | null}
   */
  function scopeSite(settings, served) {
    if (settings.scope !== "site" || !settings.site || !served) return null;
    return served.includes(settings.site) ? settings.site : null;
  }

  const api = { WidgetError, createClient, httpError, namesOf, scopeSite };
  lib.client = api;
  if (typeof module === "object" && module.exports) {
    module.exports = api;
  }
})();
