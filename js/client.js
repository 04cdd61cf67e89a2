// @ts-check
/**
 * The answer server as the widget sees it: is it up (`/api/health`), a
 * streamed answer (`POST /api/ask/stream`, server-sent events read through
 * `fetch`), and a reader's vote on an answer (`POST /api/feedback`, when
 * health says the server takes them). Also the widget's one error type,
 * whose message is what the reader is shown.
 *
 * Classic script: provides `client` (see `lib.js`).
 */

/** @typedef {import("./types").Answer} Answer */
/** @typedef {import("./types").AskRequest} AskRequest */
/** @typedef {import("./types").FeedbackRequest} FeedbackRequest */
/**
 * What went wrong; "unserved": the `site` asked is not served (any more),
 * e.g. the server restarted without that version while the page was open.
 * @typedef {"invalid" | "unserved" | "busy" | "rate" | "server" | "network" | "static" | "aborted"} ErrorKind
 */

/**
 * One of several sites served together, as `/api/health` lists it.
 * @typedef {{name: string, url: string, project: string, version: string, release: string}} SiteInfo
 */

/**
 * A version the reader can ask (the version picker): a site of the page's
 * own project.
 * @typedef {object} VersionChoice
 * @property {string} name the site's name, what a question's `site` says
 * @property {string} version its conf.py `version` ("" when it has none)
 * @property {string} label for people: "2.0", "2.0 (latest)", "1.0 (this page)";
 *   a version that is not plain ASCII between U+2068 and U+2069 (`isolate`)
 * @property {boolean} own whether it is the page's own site
 */

/**
 * @typedef {object} Client
 * @property {() => Promise<boolean>} available whether a ragcite server
 *   that serves this site answers `/api/health` within 1.5 s (`servesSite`),
 *   asked at each of `servers` in turn; the verdict is kept for the visit
 *   (sessionStorage), one that no answer settled is asked again after 30 s
 * @property {() => void} forget ask `/api/health` again next time
 * @property {() => string[] | null} sites the names of the sites the server
 *   serves when it serves several (`/api/health`), else null
 * @property {() => SiteInfo[] | null} siteList those sites with their
 *   project and version, else null
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
  const lib = typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib;

  const HEALTH_TIMEOUT_MS = 1500;
  const SERVER_RECHECK_MS = 30000;
  /** The visit's verdict, per site root: `{api: base | null, health}`. */
  const SERVER_KEY = "ragcite:server:";

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
    let field = "";
    try {
      const body = await response.json();
      const m = body && body.error && body.error.message;
      if (typeof m === "string") message = m;
      const f = body && body.error && body.error.field;
      if (typeof f === "string") field = f;
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
    // `ragcite serve` refuses a site it does not serve with 400
    // `invalid_request`, field `site` (see `server/sites.py`'s ScopeError)
    if (response.status === 400 && field === "site" && message) {
      return new WidgetError(message, "unserved");
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
   * Whether a `/api/health` body is a ragcite server that serves this site.
   * A JSON `{"status": "ok"}` is a common health format, so only a body that
   * says it is ragcite counts. A server the page names (`serverNamed`) is
   * enough; one found beside the site must serve it: one site at its own
   * root (the site root), or several, this site's name among them.
   * @param {any} body
   * @param {URL} base where it answered
   * @param {Place} place
   */
  function servesSite(body, base, place) {
    if (!body || typeof body !== "object" || body.service !== "ragcite") return false;
    if (place.serverNamed) return true;
    const names = namesOf(body.sites);
    if (names) return place.site !== "" && names.includes(place.site);
    return base.href === place.root;
  }

  /**
   * Where to look for the answer server (`Settings` has these).
   * @typedef {{servers: URL[], serverNamed: boolean, root: string, site: string}} Place
   */

  /**
   * @param {Place | URL | null} where the settings; a URL: that server
   *   (named); null: no server, static mode only
   * @returns {Client}
   */
  function createClient(where) {
    /** @type {Place} */
    const place =
      where instanceof URL
        ? { servers: [where], serverNamed: true, root: where.href, site: "" }
        : where || { servers: [], serverNamed: true, root: "", site: "" };
    const key = SERVER_KEY + place.root;
    /** @type {URL | null} the server found */
    let found = null;
    /** @type {string} a server this page took: asked again (`forget`), it
     * need only still be ragcite, e.g. restarted without this site */
    let known = "";
    /** @param {string} path */
    const api = (path) => new URL(`api/${path}`, /** @type {URL} */ (found)).href;

    /** @type {{at: number, ok: Promise<boolean>} | null} */
    let check = null;
    /** @type {string[] | null} */
    let siteNames = null;
    /** @type {SiteInfo[] | null} */
    let siteInfos = null;
    let takesFeedback = false;

    /**
     * Take the server at `base` with its health.
     * @param {URL} base
     * @param {any} body
     */
    function adopt(base, body) {
      found = base;
      known = base.href;
      siteNames = namesOf(body && body.sites);
      siteInfos = infosOf(body && body.sites);
      takesFeedback = Boolean(body && body.feedback === true);
    }

    /**
     * Ask one base's health.
     * @param {URL} base
     * @returns {Promise<"up" | "no" | "unsure">} "no": it answered, and is no
     *   ragcite server of this site; "unsure": no answer, a 5xx, or a ragcite
     *   server that is not ready
     */
    async function probe(base) {
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), HEALTH_TIMEOUT_MS);
      try {
        const response = await fetch(new URL("api/health", base).href, {
          headers: { Accept: "application/json" },
          cache: "no-store",
          credentials: "same-origin",
          signal: controller.signal,
        });
        /** @type {any} */
        let body = null;
        try {
          body = await response.json();
        } catch {
          // not JSON: no ragcite server
        }
        const ours = body && body.service === "ragcite" && known === base.href;
        if (ours || servesSite(body, base, place)) {
          if (response.ok && body.status === "ok") {
            adopt(base, body);
            return "up";
          }
          return "unsure";
        }
        return response.status >= 500 ? "unsure" : "no";
      } catch {
        return "unsure";
      } finally {
        clearTimeout(timer);
      }
    }

    /** The visit's verdict, if one was kept: true/false, or null. */
    function recall() {
      try {
        const kept = JSON.parse(sessionStorage.getItem(key) || "null");
        if (!kept || typeof kept !== "object") return null;
        if (kept.api === null) return false;
        const base = place.servers.find((u) => u.href === kept.api);
        if (!base) return null;
        adopt(base, kept.health);
        return true;
      } catch {
        return null; // storage off: ask
      }
    }

    /** @param {{api: string | null, health?: any} | null} verdict null: forget */
    function keep(verdict) {
      try {
        if (verdict) sessionStorage.setItem(key, JSON.stringify(verdict));
        else sessionStorage.removeItem(key);
      } catch {
        // storage off: asked again on the next page
      }
    }

    function available() {
      if (place.servers.length === 0) return Promise.resolve(false);
      const now = Date.now();
      if (check && now - check.at < SERVER_RECHECK_MS) return check.ok;
      let settled = true;
      const ok = (async () => {
        const kept = recall();
        if (kept !== null) return kept;
        for (const base of place.servers) {
          const verdict = await probe(base);
          if (verdict === "up") {
            keep({ api: base.href, health: { sites: siteInfos, feedback: takesFeedback } });
            return true;
          }
          if (verdict === "unsure") settled = false;
        }
        if (settled) keep({ api: null });
        return false;
      })();
      check = { at: now, ok };
      ok.then((up) => {
        // kept for the page once up, or once every base said no
        if (check && check.ok === ok && (up || settled)) check.at = Infinity;
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
      const parser = lib.need("sse").createSseParser();
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
        keep(null);
      },
      sites: () => siteNames,
      siteList: () => siteInfos,
      stream,
      feedback: () => found !== null && takesFeedback,
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

  /**
   * The sites of `/api/health`'s `sites` with their project and version, or
   * null (one site served).
   * @param {unknown} sites
   * @returns {SiteInfo[] | null}
   */
  function infosOf(sites) {
    if (!Array.isArray(sites)) return null;
    /** @param {unknown} v */
    const s = (v) => (typeof v === "string" ? v : "");
    /** @type {SiteInfo[]} */
    const out = [];
    for (const item of sites) {
      if (!item || typeof item !== "object") continue;
      const i = /** @type {Record<string, unknown>} */ (item);
      if (!s(i.name)) continue;
      out.push({ name: s(i.name), url: s(i.url), project: s(i.project), version: s(i.version), release: s(i.release) });
    }
    return out;
  }

  /**
   * Compare two version strings the way people read them, numbers as
   * numbers ("1.10" after "1.9"); words sort after numbers ("latest").
   * @param {string} a
   * @param {string} b
   * @returns {number} < 0 when a comes before b
   */
  function compareVersions(a, b) {
    const pa = a.match(/\d+|[^\d.\-_+ ]+/g) || [];
    const pb = b.match(/\d+|[^\d.\-_+ ]+/g) || [];
    for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
      const x = pa[i] === undefined ? "" : pa[i];
      const y = pb[i] === undefined ? "" : pb[i];
      if (x === y) continue;
      const nx = /^\d+$/.test(x);
      const ny = /^\d+$/.test(y);
      if (nx && ny) return Number(x) - Number(y);
      if (x === "") return -1; // "1.0" before "1.0.1"
      if (y === "") return 1;
      if (nx !== ny) return nx ? -1 : 1;
      return x < y ? -1 : 1;
    }
    return 0;
  }

  /**
   * The versions the version picker offers: the sites served whose
   * `project` is that of the page's own site, newest first. Empty (no
   * picker) unless the page's own site is among them and there are at
   * least two: a portal's other books are no versions of this one.
   * @param {string} own the page's own site (`settings.site`)
   * @param {SiteInfo[] | null} served `client.siteList()`
   * @returns {VersionChoice[]}
   */
  function versionChoices(own, served) {
    if (!own || !served) return [];
    const mine = served.find((s) => s.name === own);
    if (!mine) return [];
    const same = served.filter((s) => s.project === mine.project);
    if (same.length < 2) return [];
    same.sort((a, b) => compareVersions(b.version, a.version) || compareVersions(b.release, a.release) || (a.name < b.name ? -1 : 1));
    return same.map((s) => {
      const shown = shownOf(s);
      const twin = same.some((t) => t !== s && shownOf(t) === shown);
      const notes = [];
      // a word names the site ("latest"); a number ("v1.2") only repeats it
      if (s.name !== shown && (twin || !/^v?\d/i.test(s.name))) notes.push(s.name);
      if (s.name === own) notes.push("this page");
      return {
        name: s.name,
        version: s.version,
        label: notes.length ? `${isolate(shown)} (${notes.join(", ")})` : isolate(shown),
        own: s.name === own,
      };
    });
  }

  /**
   * How a site's version is shown: conf.py `version`, else `release`, else
   * the site's name.
   * @param {SiteInfo} s
   */
  function shownOf(s) {
    return s.version || s.release || s.name;
  }

  /**
   * A conf.py version as it goes into a label: plain ASCII as it is, anything
   * else between FIRST STRONG ISOLATE and POP DIRECTIONAL ISOLATE, so that a
   * right-to-left version or a stray U+202E reorders nothing after it. A
   * label also lands where no `<bdi>` can go (an `<option>`); site names
   * are ASCII (`contracts.SITE_NAME`).
   * @param {string} text
   */
  function isolate(text) {
    return /^[\x20-\x7e]*$/.test(text) ? text : `\u2068${text}\u2069`;
  }

  /**
   * The label of a served site, for the status line: its picker label, or
   * for a site the picker does not offer (the page's own, left alone, or
   * another book) its version, "(this page)" after the page's own; "" when
   * it is not served.
   * @param {string} own the page's own site
   * @param {SiteInfo[] | null} served `client.siteList()`
   * @param {string} site
   * @returns {string}
   */
  function versionLabel(own, served, site) {
    const choice = versionChoices(own, served).find((c) => c.name === site);
    if (choice) return choice.label;
    const s = served ? served.find((t) => t.name === site) : undefined;
    if (!s) return "";
    return site === own ? `${isolate(shownOf(s))} (this page)` : isolate(shownOf(s));
  }

  /**
   * The conf.py version of the page's own site, "" when unknown (one site
   * served, or the page's site is not among those served).
   * @param {string} own
   * @param {SiteInfo[] | null} served
   * @returns {string}
   */
  function pageVersion(own, served) {
    const mine = own && served ? served.find((s) => s.name === own) : undefined;
    return mine ? mine.version : "";
  }

  /**
   * The site the picker stands on: the one the reader chose, while it is
   * still offered, else the page's own.
   * @param {VersionChoice[]} choices
   * @param {string | null} stored the reader's choice (sessionStorage)
   * @param {string} own
   * @returns {string}
   */
  function chosenSite(choices, stored, own) {
    return stored && choices.some((c) => c.name === stored) ? stored : own;
  }

  /**
   * Whether a source's version is worth a badge: it is known, and not the
   * page's (itself known).
   * @param {unknown} version a citation's `version`
   * @param {string} page `pageVersion(...)`
   */
  function otherVersion(version, page) {
    return typeof version === "string" && version !== "" && page !== "" && version !== page;
  }

  /**
   * Where the picker remembers the reader's choice for the session
   * (sessionStorage), one key per site the reader is on.
   * @param {string} own
   */
  function versionKey(own) {
    return `ragcite:version:${own}`;
  }

  const api = {
    WidgetError,
    chosenSite,
    compareVersions,
    createClient,
    httpError,
    infosOf,
    isolate,
    namesOf,
    otherVersion,
    pageVersion,
    scopeSite,
    servesSite,
    versionChoices,
    versionKey,
    versionLabel,
  };
  lib.provide("client", api);
  if (typeof module === "object") module.exports = api;
})();
