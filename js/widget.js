// @ts-check
/**
 * The reader widget of sphinx-ragcite: an ask panel on every page, cited
 * answers streamed from the answer server, previews and deep links for each
 * citation, "Ask about this" for selected text, and a static mode that
 * searches the shipped index when no server answers.
 *
 * Classic script, loaded (deferred) after `citations.js` and `sse.js`.
 * Settings come from `data-ragcite-*` attributes on its own <script> tag:
 *
 * - `data-ragcite-server`: base URL of the answer server; "" means this
 *   site's own origin (`/api/...`), "none" means static mode only.
 * - `data-ragcite-index`: `_ragcite/manifest.json`, relative to the site root.
 * - `data-ragcite-root`: the site root; by default two folders above this
 *   script when the build copied it to `_static/ragcite/`, else the page's
 *   `<html data-content_root>` (set by Sphinx).
 * - `data-ragcite-shortcut`: e.g. "Mod+/" (Mod: Cmd on macOS, Ctrl elsewhere),
 *   "Alt+A", "/"; "" turns the shortcut off.
 *
 * Public API: `window.ragcite` (see `types.d.ts`): `open()`, `close()`,
 * `ask(question, {selection})`, `highlight(passageId)`. Each inline marker is
 * an `<a data-ragcite-n="n">` whose `href` is the cited passage's URL; the
 * highlighted passage carries the class `ragcite-highlight`. The document
 * receives a `ragcite:answer` event (detail: the result) after each render.
 *
 * Safety: every model, document and user string enters the page through
 * `textContent` or `createTextNode`; the only `href`s are index URLs that
 * passed `citations.resolveUrl`.
 */

/** @typedef {import("./types").Answer} Answer */
/** @typedef {import("./types").StaticHit} StaticHit */
/** @typedef {import("./types").StaticResult} StaticResult */
/** @typedef {import("./types").RagciteApi} RagciteApi */
/** @typedef {import("./citations.js").SourceModel} SourceModel */
/** @typedef {import("./citations.js").LinkModel} LinkModel */

(function () {
  "use strict";

  const VERSION = "0.1.0";
  const MAX_QUESTION = 2000;
  const MAX_SELECTION = 20000;
  const HEALTH_TIMEOUT_MS = 1500;
  const SERVER_RECHECK_MS = 30000;
  const HIGHLIGHT_MS = 3000;
  const STATIC_RESULTS = 5;
  const STORAGE_KEY = "ragcite:last";
  const HIGHLIGHT = "ragcite-highlight";

  const g = /** @type {any} */ (globalThis);
  if (g.ragcite && g.ragcite.version) return; // loaded twice
  const lib = g.ragcite_lib || {};
  /** @type {typeof import("./citations.js")} */
  const C = lib.citations;
  /** @type {typeof import("./sse.js").createSseParser} */
  const createSseParser = lib.createSseParser;
  if (!C || typeof createSseParser !== "function") {
    console.error("ragcite: load citations.js and sse.js before widget.js");
    return;
  }

  // -- settings ---------------------------------------------------------

  const script = /** @type {HTMLScriptElement | null} */ (
    document.currentScript ||
      document.querySelector('script[src*="ragcite/widget.js"], script[data-ragcite-index]')
  );

  /** @param {string} name */
  function attr(name) {
    return (script && script.getAttribute(`data-ragcite-${name}`)) || "";
  }

  /**
   * @param {string} value
   * @param {string | URL} base
   * @returns {URL | null}
   */
  function toUrl(value, base) {
    try {
      return new URL(value, base);
    } catch {
      return null;
    }
  }

  /** @param {URL} url */
  function asFolder(url) {
    const u = new URL(url.href);
    u.hash = "";
    u.search = "";
    if (!u.pathname.endsWith("/")) u.pathname += "/";
    return u;
  }

  const assetBase = toUrl("./", script && script.src ? script.src : location.href) || new URL(location.href);

  /** The site root: citation URLs are relative to it. */
  const root = (() => {
    const explicit = attr("root");
    const content = document.documentElement.getAttribute("data-content_root");
    const src = script && script.src ? script.src : "";
    // Copied by the build to <root>/_static/ragcite/: right on every page,
    // also a 404 page served at any depth (sphinx-notfound-page), whose
    // data-content_root is "./" wherever it is served.
    const copied = /\/_static\/ragcite\/widget\.js([?#]|$)/.test(src);
    const found =
      (explicit && toUrl(explicit, location.href)) ||
      (copied && toUrl("../../", src)) ||
      (content !== null && toUrl(content || "./", location.href)) ||
      (src && toUrl("../../", src)) ||
      new URL("./", location.href);
    return asFolder(found).href;
  })();

  const indexUrl = toUrl(attr("index") || "_ragcite/manifest.json", root);

  /** Base of the API (`<base>api/ask`), or null: static mode only. */
  const apiBase = (() => {
    const server = attr("server").trim();
    if (server.toLowerCase() === "none") return null;
    if (server) {
      const u = toUrl(server, location.href);
      return u && /^https?:$/.test(u.protocol) ? asFolder(u) : null;
    }
    return /^https?:$/.test(location.protocol) ? new URL("/", location.href) : null;
  })();

  const isMac = /Mac|iPhone|iPad|iPod/.test(
    (navigator.platform || "") + " " + (navigator.userAgent || ""),
  );

  /**
   * @typedef {object} Shortcut
   * @property {string} key lower-case `KeyboardEvent.key`
   * @property {boolean} ctrl
   * @property {boolean} alt
   * @property {boolean} meta
   * @property {boolean} shift
   * @property {string} label for people
   * @property {string} aria for `aria-keyshortcuts`
   */

  /**
   * @param {string} spec e.g. "Mod+/", "Alt+A", "/"
   * @returns {Shortcut | null}
   */
  function parseShortcut(spec) {
    const parts = spec.split("+").map((p) => p.trim());
    // "Ctrl++" names the plus key
    if (spec.endsWith("++")) parts.splice(parts.length - 2, 2, "+");
    const key = parts.pop();
    if (!key) return null;
    const mods = new Set(parts.map((p) => p.toLowerCase()));
    const mod = mods.has("mod");
    const s = {
      key: key.toLowerCase(),
      ctrl: mods.has("ctrl") || mods.has("control") || (mod && !isMac),
      alt: mods.has("alt") || mods.has("option"),
      meta: mods.has("meta") || mods.has("cmd") || (mod && isMac),
      shift: mods.has("shift"),
      label: "",
      aria: "",
    };
    const names = [];
    const aria = [];
    if (s.ctrl) names.push("Ctrl"), aria.push("Control");
    if (s.meta) names.push(isMac ? "⌘" : "Meta"), aria.push("Meta");
    if (s.alt) names.push(isMac ? "⌥" : "Alt"), aria.push("Alt");
    if (s.shift) names.push("Shift"), aria.push("Shift");
    const shown = key.length === 1 ? key.toUpperCase() : key;
    s.label = [...names, shown].join(isMac && names.length ? "" : "+");
    s.aria = [...aria, key.length === 1 ? key.toUpperCase() : key].join("+");
    return s;
  }

  const shortcutSpec = script && script.hasAttribute("data-ragcite-shortcut") ? attr("shortcut") : "Mod+/";
  const shortcut = shortcutSpec.trim() ? parseShortcut(shortcutSpec.trim()) : null;

  /**
   * @param {KeyboardEvent} event
   * @param {Shortcut} s
   */
  function matches(event, s) {
    const key = (event.key || "").toLowerCase();
    if (key !== s.key) {
      // Alt/Option changes event.key on macOS ("å" for Option+A): use the code
      if (!(s.key.length === 1 && /[a-z0-9]/.test(s.key) && event.code === (/\d/.test(s.key) ? "Digit" : "Key") + s.key.toUpperCase())) {
        return false;
      }
    }
    if (event.ctrlKey !== s.ctrl || event.altKey !== s.alt || event.metaKey !== s.meta) return false;
    // Shift matters for letters only: "/" or "?" may need it on some layouts
    return !/^[a-z]$/.test(s.key) || event.shiftKey === s.shift;
  }

  // -- small DOM helpers (no HTML strings anywhere) ---------------------

  /**
   * An element with attributes and children; strings become text nodes.
   * @template {keyof HTMLElementTagNameMap} K
   * @param {K} tag
   * @param {Record<string, string | number | boolean | null | undefined>} [attrs]
   * @param {...(Node | string | null | undefined | false)} children
   * @returns {HTMLElementTagNameMap[K]}
   */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = String(v);
      else if (k === "text") node.textContent = String(v);
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children) {
      if (c !== null && c !== undefined && c !== false) node.append(c);
    }
    return node;
  }

  /**
   * A link to a URL that passed `resolveUrl`, or a span when there is none.
   * @param {string | null} href
   * @param {Record<string, string | number | boolean | null | undefined>} attrs
   * @param {...(Node | string)} children
   */
  function link(href, attrs, ...children) {
    if (href === null) return el("span", attrs, ...children);
    return el("a", { ...attrs, href }, ...children);
  }

  /** An inline SVG icon, built node by node. */
  function icon() {
    const ns = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(ns, "svg");
    svg.setAttribute("viewBox", "0 0 24 24");
    svg.setAttribute("width", "18");
    svg.setAttribute("height", "18");
    svg.setAttribute("aria-hidden", "true");
    svg.setAttribute("focusable", "false");
    const path = document.createElementNS(ns, "path");
    path.setAttribute("fill", "currentColor");
    path.setAttribute(
      "d",
      "M4 4h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H9l-5 4v-4a2 2 0 0 1-2-2V6a2 2 0 0 1 2-2zm3 5v2h10V9H7zm0 4v2h7v-2H7z",
    );
    svg.append(path);
    return svg;
  }

  /** @param {Element} node */
  function clear(node) {
    node.replaceChildren();
  }

  // -- errors -----------------------------------------------------------

  class WidgetError extends Error {
    /**
     * @param {string} message shown to the reader
     * @param {"invalid" | "busy" | "rate" | "server" | "network" | "static" | "aborted"} kind
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
   * @param {Response} response
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

  // -- the server and the static index ------------------------------------

  /** @param {string} path */
  function api(path) {
    return new URL(`api/${path}`, /** @type {URL} */ (apiBase)).href;
  }

  /** @type {{at: number, ok: Promise<boolean>} | null} */
  let serverCheck = null;

  /** Whether the answer server answers `/api/health` within 1.5 s (cached). */
  function serverAvailable() {
    if (apiBase === null) return Promise.resolve(false);
    const now = Date.now();
    if (serverCheck && (now - serverCheck.at < SERVER_RECHECK_MS)) return serverCheck.ok;
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
        return Boolean(body && body.status === "ok");
      } catch {
        return false;
      } finally {
        clearTimeout(timer);
      }
    })();
    serverCheck = { at: now, ok };
    ok.then((up) => {
      // a server that is up stays trusted; one that is down is asked again later
      if (up && serverCheck) serverCheck.at = Infinity;
    });
    return ok;
  }

  /**
   * @param {string} src
   * @returns {Promise<void>}
   */
  function loadScript(src) {
    return new Promise((resolve, reject) => {
      const s = document.createElement("script");
      s.src = src;
      s.async = false;
      s.onload = () => resolve();
      s.onerror = () => reject(new WidgetError(`Could not load ${src}.`, "static"));
      document.head.append(s);
    });
  }

  /**
   * @param {string} url
   * @returns {Promise<any>}
   */
  async function fetchJson(url) {
    let response;
    try {
      response = await fetch(url, { credentials: "same-origin" });
    } catch {
      throw new WidgetError(
        location.protocol === "file:"
          ? "This page was opened from disk (file://), where the browser does not let " +
              "the widget read the book's search index. Serve the built site instead, " +
              "e.g. run python -m http.server in the build folder, or ragcite serve."
          : "Could not load the book's search index; check your connection.",
        "static",
      );
    }
    if (!response.ok) {
      throw new WidgetError(
        `The book's search index is missing (HTTP ${response.status} for ${url}); ` +
          "rebuild the documentation with sphinx-ragcite.",
        "static",
      );
    }
    try {
      return await response.json();
    } catch {
      throw new WidgetError("The book's search index is not valid JSON; rebuild the documentation.", "static");
    }
  }

  /** The static index file: `globalThis.ragcite_static_index=<JSON>;`. */
  const STATIC_FILE = "search.js";
  const STATIC_PREFIX = "globalThis.ragcite_static_index=";

  /** Over HTTP: the manifest names the file; it is fetched and parsed as JSON. */
  async function fetchIndex() {
    const manifest = await fetchJson(/** @type {URL} */ (indexUrl).href);
    const name = manifest && manifest.files && manifest.files.static;
    const staticUrl =
      typeof name === "string" ? C.resolveUrl(name, asFolder(new URL("./", /** @type {URL} */ (indexUrl)))) : null;
    if (staticUrl === null) {
      throw new WidgetError(
        "This book's index has no static search file; rebuild it with a newer sphinx-ragcite.",
        "static",
      );
    }
    let text;
    try {
      const response = await fetch(staticUrl, { credentials: "same-origin" });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      text = await response.text();
    } catch (error) {
      throw new WidgetError(
        `Could not load the book's search index (${/** @type {Error} */ (error).message}).`,
        "static",
      );
    }
    const body = text.trimEnd();
    if (!body.startsWith(STATIC_PREFIX) || !body.endsWith(";")) {
      throw new WidgetError("The book's search index is damaged; rebuild the documentation.", "static");
    }
    try {
      return JSON.parse(body.slice(STATIC_PREFIX.length, -1));
    } catch {
      throw new WidgetError("The book's search index is not valid JSON; rebuild the documentation.", "static");
    }
  }

  /**
   * From disk (file://) fetch is blocked, but a script next to the manifest
   * still loads: the file assigns the index to a global, nothing else.
   */
  async function loadIndexScript() {
    const src = new URL(STATIC_FILE, /** @type {URL} */ (indexUrl)).href;
    await loadScript(src);
    const index = g.ragcite_static_index;
    if (!index || typeof index !== "object") {
      throw new WidgetError("The book's search index did not load; rebuild the documentation.", "static");
    }
    return index;
  }

  /** @type {Promise<import("./search.js").StaticSearch> | null} */
  let staticSearch = null;

  /** The static index searcher, loaded once (scripts, manifest, index). */
  function loadStaticSearch() {
    if (staticSearch) return staticSearch;
    staticSearch = (async () => {
      for (const [name, ready] of [
        ["stemmer.js", () => typeof lib.stem === "function"],
        ["tokenize.js", () => typeof lib.tokenize === "function"],
        ["search.js", () => typeof lib.createStaticSearch === "function"],
      ]) {
        // @ts-ignore: ready is a function
        if (!ready()) await loadScript(new URL(/** @type {string} */ (name), assetBase).href);
      }
      if (indexUrl === null) throw new WidgetError("No search index is configured.", "static");
      const index = location.protocol === "file:" ? await loadIndexScript() : await fetchIndex();
      try {
        return lib.createStaticSearch(index);
      } catch (error) {
        throw new WidgetError(String(/** @type {Error} */ (error).message || error), "static");
      }
    })();
    staticSearch.catch(() => {
      staticSearch = null; // try again next time
    });
    return staticSearch;
  }

  /**
   * Stream an answer from `/api/ask/stream`.
   * @param {import("./types").AskRequest} body
   * @param {AbortSignal} signal
   * @param {(event: string, data: any) => void} onEvent retrieval and token events
   * @returns {Promise<Answer>}
   */
  async function streamAnswer(body, signal, onEvent) {
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
    const parser = createSseParser();
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

  // -- passage highlight ----------------------------------------------------

  /** @type {Element | null} */
  let highlighted = null;
  /** @type {number | undefined} */
  let highlightTimer;
  const reducedMotion = () =>
    typeof matchMedia === "function" && matchMedia("(prefers-reduced-motion: reduce)").matches;

  /**
   * Highlight the passage with this id for a few seconds and bring it into view.
   * @param {string} id
   * @param {{smooth?: boolean, focus?: boolean}} [options]
   * @returns {boolean} false when the page has no such passage
   */
  function highlight(id, options = {}) {
    return highlightElement(id ? document.getElementById(id) : null, options);
  }

  /**
   * @param {Element | null} target
   * @param {{smooth?: boolean, focus?: boolean}} [options]
   */
  function highlightElement(target, options = {}) {
    if (!target || (widget && widget.root.contains(target))) return false;
    if (highlighted) highlighted.classList.remove(HIGHLIGHT);
    window.clearTimeout(highlightTimer);
    target.classList.add(HIGHLIGHT);
    highlighted = target;
    highlightTimer = window.setTimeout(() => {
      target.classList.remove(HIGHLIGHT);
      if (highlighted === target) highlighted = null;
    }, HIGHLIGHT_MS);
    const tall = target.getBoundingClientRect().height > window.innerHeight * 0.8;
    target.scrollIntoView({
      behavior: options.smooth && !reducedMotion() ? "smooth" : "auto",
      block: tall ? "start" : "center",
    });
    if (options.focus) {
      if (!target.hasAttribute("tabindex")) target.setAttribute("tabindex", "-1");
      /** @type {HTMLElement} */ (target).focus({ preventScroll: true });
    }
    return true;
  }

  // -- links made before an edit -----------------------------------------
  //
  // Passage IDs are positions, so after an edit an old link's ID may name
  // other text or nothing. `_ragcite/moved.js` (written by the build from its
  // link history) maps such links (page and ID) to where their text is now.

  const MOVED_FILE = "moved.js";
  /** The URL the widget itself opened: current, never redirected. */
  const DIRECT_KEY = "ragcite:direct";
  /** `{from, to}` of a redirect, explained on the page it lands on. */
  const MOVED_KEY = "ragcite:moved";

  /** @type {Promise<Record<string, string>> | null} */
  let movedMap = null;

  /** The moved-passage map; empty when the build wrote none. */
  function loadMoved() {
    if (!movedMap) {
      movedMap = (async () => {
        if (indexUrl === null) return {};
        try {
          await loadScript(new URL(MOVED_FILE, indexUrl).href);
        } catch {
          return {}; // built without a link history, or by an older version
        }
        const map = g.ragcite_moved;
        return map && typeof map === "object" && !Array.isArray(map) ? map : {};
      })();
    }
    return movedMap;
  }

  /** @param {string} key */
  function takeStored(key) {
    try {
      const value = sessionStorage.getItem(key);
      sessionStorage.removeItem(key);
      return value;
    } catch {
      return null;
    }
  }

  /** @param {string} key @param {string} value */
  function store(key, value) {
    try {
      sessionStorage.setItem(key, value);
    } catch {
      // storage off: the next page just does not explain itself
    }
  }

  /** @param {string} href */
  function idOf(href) {
    try {
      return decodeURIComponent(new URL(href).hash.slice(1));
    } catch {
      return "";
    }
  }

  /**
   * Where an old link to *id* should go now, or null to stay. `start` is the
   * opening of the text's first block when that block is inside the passage.
   * @param {string} id
   * @returns {Promise<{url: string, start: string} | null>}
   */
  async function movedTarget(id) {
    const moved = await loadMoved();
    const key = linkKey(location.href, id);
    const entry = key !== null && Object.prototype.hasOwnProperty.call(moved, key) ? moved[key] : null;
    const [to, start] = Array.isArray(entry) ? entry : [entry, ""];
    const url = typeof to === "string" ? C.resolveUrl(to, root) : null;
    if (!url || !C.isPassageHash(new URL(url).hash)) return null;
    return { url, start: typeof start === "string" ? start : "" };
  }

  /**
   * This page's link to *id* as the build keys the moved map: the page's path
   * below the site root, `dir/index.html` written `dir/` (see links.py).
   * @param {string} href
   * @param {string} id
   * @returns {string | null} null when the page is not below the root
   */
  function linkKey(href, id) {
    // Both sides stay percent-encoded, as Sphinx writes page URLs.
    let path;
    try {
      path = new URL(href).pathname;
    } catch {
      return null;
    }
    const base = new URL(root).pathname;
    if (!path.startsWith(base)) return null;
    let page = path.slice(base.length);
    if (page === "index.html" || page.endsWith("/index.html")) page = page.slice(0, -"index.html".length);
    return `${page}#${id}`;
  }

  /** @param {string} text */
  const squash = (text) => text.replace(/\s+/g, " ").trim().toLowerCase();

  /**
   * The element of a passage whose text begins with *start*: walks from the
   * passage's anchor in document order and stops at the next passage.
   * @param {string} id
   * @param {string} start
   * @returns {Element | null}
   */
  function blockIn(id, start) {
    const anchor = document.getElementById(id);
    const want = squash(start);
    if (!anchor || !want) return null;
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_ELEMENT);
    walker.currentNode = anchor;
    for (let n = 0, node = walker.nextNode(); node && n < 500; n++, node = walker.nextNode()) {
      const el = /** @type {Element} */ (node);
      if (el.id && C.isPassageHash(`#${el.id}`)) break; // the next passage
      if (widget && widget.root.contains(el)) break;
      if (squash(el.textContent || "").startsWith(want)) return el;
    }
    return null;
  }

  /**
   * Highlight where an old link's text is on this page: the block it began
   * with when that is inside the passage, else the passage.
   * @param {string} id
   * @param {string} start
   */
  function highlightMoved(id, start) {
    const block = start ? blockIn(id, start) : null;
    return block ? highlightElement(block) : highlight(id);
  }

  /**
   * Whether the page was opened from another page of this site: its links are
   * this build's, so their anchors already name the right text.
   */
  function openedFromSite() {
    try {
      return document.referrer !== "" && document.referrer.startsWith(root);
    } catch {
      return false;
    }
  }

  /**
   * Highlight the passage the address names. On page load, a link from
   * outside the site (bookmark, another site) may predate an edit: follow the
   * moved map. A hash changed within the page is this build's: no redirect.
   * @param {Event} [event]
   */
  async function highlightFromHash(event) {
    if (!C.isPassageHash(location.hash)) return;
    const here = location.href;
    const id = idOf(here);
    if (!id) return;
    const direct = takeStored(DIRECT_KEY) === here;
    let note = null;
    try {
      note = JSON.parse(takeStored(MOVED_KEY) || "null");
    } catch {
      // a damaged note is no note
    }
    if (note && note.to === here && typeof note.from === "string") {
      if (highlightMoved(id, typeof note.start === "string" ? note.start : "")) showMoved(note.from);
      return;
    }
    const current = direct || (event && event.type === "hashchange") || openedFromSite();
    const target = current ? null : await movedTarget(id);
    if (target && C.samePage(target.url, here)) {
      if (target.url !== here) history.replaceState(history.state, "", new URL(target.url).hash);
      if (highlightMoved(idOf(target.url), target.start)) showMoved(here);
      return;
    }
    if (target) {
      store(MOVED_KEY, JSON.stringify({ from: here, to: target.url, start: target.start }));
      location.replace(target.url);
      return;
    }
    highlight(id);
  }

  /** @type {HTMLDivElement | null} */
  let movedNote = null;

  /**
   * Say that the link was followed to moved text, with a way back to what the
   * old anchor names now (the link may have been made after the edit).
   * @param {string} from the URL the reader opened
   */
  function showMoved(from) {
    if (movedNote) movedNote.remove();
    const old = idOf(from);
    const back = el("a", { href: from, class: "ragcite-moved-back", text: `what #${old} shows now` });
    back.addEventListener("click", (event) => {
      if (back.href !== location.href) return; // another anchor: hashchange highlights it
      event.preventDefault();
      highlight(old, { smooth: true });
    });
    const dismiss = el("button", { type: "button", class: "ragcite-moved-close", "aria-label": "Dismiss", text: "×" });
    const note = el(
      "div",
      { class: "ragcite-moved", role: "status" },
      el("span", { text: "This page has changed since the link was made: you are at the passage it pointed to. See " }),
      back,
      el("span", { text: "." }),
      dismiss,
    );
    dismiss.addEventListener("click", () => note.remove());
    ensure().root.append(note);
    movedNote = note;
  }

  /**
   * Follow a citation link: on this page scroll and highlight, else navigate.
   * @param {MouseEvent | KeyboardEvent} event
   * @param {HTMLAnchorElement} anchor
   */
  function follow(event, anchor) {
    const href = anchor.href;
    if (!href || ("button" in event && event.button !== 0)) return;
    if (event.ctrlKey || event.metaKey || event.shiftKey || event.altKey) return;
    if (!C.samePage(href, location.href)) {
      remember(); // the answer is there again when the next page opens
      store(DIRECT_KEY, href); // a citation of this build: no redirect there
      return; // a normal navigation
    }
    const hash = new URL(href).hash;
    let id = hash.slice(1);
    try {
      id = decodeURIComponent(id);
    } catch {
      return;
    }
    if (!document.getElementById(id)) return;
    event.preventDefault();
    if (location.hash !== hash) history.pushState(null, "", hash);
    // The panel would hide the passage: step aside (the launcher brings the
    // answer back) and give the passage the focus.
    const covered = isOpen() && overlapsPanel(/** @type {Element} */ (document.getElementById(id)));
    if (covered) close(false);
    highlight(id, { smooth: true, focus: covered });
  }

  /**
   * Whether the open panel shares columns with an element of the page.
   * @param {Element} target
   */
  function overlapsPanel(target) {
    if (!widget) return false;
    const p = widget.panel.getBoundingClientRect();
    const t = target.getBoundingClientRect();
    return t.left < p.right && t.right > p.left;
  }

  // -- the widget's DOM ---------------------------------------------------

  /**
   * @typedef {object} Widget
   * @property {HTMLDivElement} root
   * @property {HTMLButtonElement} launcher
   * @property {HTMLDivElement} panel
   * @property {HTMLDivElement} modeNote
   * @property {HTMLDivElement} selectionBox
   * @property {HTMLElement} selectionText
   * @property {HTMLFormElement} form
   * @property {HTMLTextAreaElement} question
   * @property {HTMLSpanElement} counter
   * @property {HTMLButtonElement} submit
   * @property {HTMLDivElement} body
   * @property {HTMLDivElement} status
   * @property {HTMLDivElement} error
   * @property {HTMLDivElement} output
   * @property {HTMLDivElement} preview
   * @property {HTMLButtonElement} askSelection
   */

  /** @type {Widget | null} */
  let widget = null;

  /** @returns {Widget} */
  function build() {
    const launcherLabel = el("span", { class: "ragcite-launcher-label", text: "Ask the book" });
    const launcher = el(
      "button",
      {
        type: "button",
        class: "ragcite-launcher",
        "aria-haspopup": "dialog",
        "aria-expanded": "false",
        "aria-controls": "ragcite-panel",
        "aria-keyshortcuts": shortcut ? shortcut.aria : null,
        title: shortcut ? `Ask the book (${shortcut.label})` : "Ask the book",
      },
      icon(),
      launcherLabel,
    );

    const closeButton = el("button", {
      type: "button",
      class: "ragcite-close",
      "aria-label": "Close",
      title: "Close (Esc)",
      text: "×",
    });
    const header = el(
      "div",
      { class: "ragcite-header" },
      el("h2", { class: "ragcite-title", id: "ragcite-title", text: "Ask this book" }),
      shortcut ? el("kbd", { class: "ragcite-kbd", text: shortcut.label, title: "Keyboard shortcut" }) : null,
      closeButton,
    );

    const modeNote = el("div", { class: "ragcite-mode-note", hidden: true });
    const selectionText = el("q", { class: "ragcite-selection-text" });
    const selectionClear = el("button", {
      type: "button",
      class: "ragcite-selection-clear",
      text: "Ask the whole book instead",
    });
    const selectionBox = el(
      "div",
      { class: "ragcite-selection", hidden: true },
      el("span", { class: "ragcite-selection-label", text: "About your selection: " }),
      selectionText,
      selectionClear,
    );

    const question = el("textarea", {
      id: "ragcite-question",
      class: "ragcite-question",
      rows: 3,
      maxlength: MAX_QUESTION,
      placeholder: "Ask a question about this book…",
      "aria-describedby": "ragcite-count ragcite-hint",
      autocomplete: "off",
      spellcheck: "true",
    });
    const counter = el("span", { id: "ragcite-count", class: "ragcite-count", text: `0 / ${MAX_QUESTION}` });
    const submit = el("button", { type: "submit", class: "ragcite-submit", text: "Ask" });
    const form = el(
      "form",
      { class: "ragcite-form", novalidate: true },
      el("label", { for: "ragcite-question", class: "ragcite-visually-hidden", text: "Your question" }),
      question,
      el(
        "div",
        { class: "ragcite-form-row" },
        el("span", { id: "ragcite-hint", class: "ragcite-hint", text: "Enter to ask · Shift+Enter for a new line" }),
        counter,
        submit,
      ),
    );

    const status = el("div", { class: "ragcite-status", role: "status", "aria-live": "polite" });
    const error = el("div", { class: "ragcite-error", role: "alert", hidden: true });
    const output = el("div", { class: "ragcite-output", "aria-live": "polite", "aria-busy": "false" });
    const body = el("div", { class: "ragcite-body" }, status, error, output);

    const panel = el(
      "div",
      {
        id: "ragcite-panel",
        class: "ragcite-panel",
        role: "dialog",
        "aria-modal": "false",
        "aria-labelledby": "ragcite-title",
        hidden: true,
      },
      header,
      modeNote,
      selectionBox,
      form,
      body,
    );
    const preview = el("div", { id: "ragcite-preview", class: "ragcite-preview", role: "tooltip", hidden: true });
    const askSelection = el(
      "button",
      { type: "button", class: "ragcite-ask-selection", hidden: true },
      icon(),
      el("span", { text: "Ask about this" }),
    );
    const root = el("div", { id: "ragcite-root", class: "ragcite-root", "data-ragcite-version": VERSION }, launcher, panel, preview, askSelection);

    launcher.addEventListener("click", () => (isOpen() ? close() : open()));
    closeButton.addEventListener("click", () => close());
    selectionClear.addEventListener("click", () => {
      setSelection(null);
      question.focus();
    });
    question.addEventListener("input", updateCounter);
    question.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        form.requestSubmit();
      }
    });
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      ask(question.value, { selection: currentSelection || undefined, fromForm: true }).catch(() => {
        // the error is on screen already
      });
    });
    output.addEventListener("click", onOutputClick);
    output.addEventListener("pointerdown", (event) => {
      if (event.pointerType === "touch") lastTouch = Date.now();
    });
    output.addEventListener("touchstart", () => (lastTouch = Date.now()), { passive: true });
    output.addEventListener("mouseover", onMarkerEnter);
    output.addEventListener("mouseout", onMarkerLeave);
    output.addEventListener("focusin", onMarkerEnter);
    output.addEventListener("focusout", onMarkerLeave);
    output.addEventListener("keydown", (event) => {
      const marker = markerOf(event.target);
      if (marker && !marker.hasAttribute("href") && (event.key === "Enter" || event.key === " ")) {
        event.preventDefault();
        showSource(marker);
      }
    });
    preview.addEventListener("mouseenter", () => window.clearTimeout(previewTimer));
    preview.addEventListener("mouseleave", () => hidePreviewSoon());
    askSelection.addEventListener("mousedown", (event) => event.preventDefault()); // keep the selection
    askSelection.addEventListener("click", () => {
      const text = pendingSelection;
      hideAskSelection();
      if (text) {
        setSelection(text);
        open();
      }
    });
    document.body.append(root);
    return {
      root,
      launcher,
      panel,
      modeNote,
      selectionBox,
      selectionText,
      form,
      question,
      counter,
      submit,
      body,
      status,
      error,
      output,
      preview,
      askSelection,
    };
  }

  function updateCounter() {
    if (!widget) return;
    const n = widget.question.value.length;
    widget.counter.textContent = `${n} / ${MAX_QUESTION}`;
    widget.counter.classList.toggle("ragcite-count-near", n >= MAX_QUESTION * 0.9);
  }

  function isOpen() {
    return Boolean(widget && !widget.panel.hidden);
  }

  /** @type {Element | null} */
  let returnFocus = null;

  function open() {
    const w = ensure();
    if (!isOpen()) {
      const active = document.activeElement;
      returnFocus = active && !w.root.contains(active) ? active : null;
      w.panel.hidden = false;
      w.launcher.setAttribute("aria-expanded", "true");
      w.root.classList.add("ragcite-open");
      serverAvailable().then(showMode);
    }
    w.question.focus();
  }

  /** @param {boolean} [restoreFocus] */
  function close(restoreFocus = true) {
    if (!widget || !isOpen()) return;
    hidePreview();
    widget.panel.hidden = true;
    widget.launcher.setAttribute("aria-expanded", "false");
    widget.root.classList.remove("ragcite-open");
    if (!restoreFocus) return;
    const back = returnFocus;
    returnFocus = null;
    if (back && back.isConnected && typeof (/** @type {HTMLElement} */ (back).focus) === "function" && back !== document.body) {
      /** @type {HTMLElement} */ (back).focus();
    } else {
      widget.launcher.focus();
    }
  }

  /** @param {boolean} up */
  function showMode(up) {
    if (!widget) return;
    widget.modeNote.hidden = up;
    widget.root.classList.toggle("ragcite-static", !up);
    if (!up) {
      widget.modeNote.textContent =
        "No answer server is reachable: questions search the book's passages. " +
        "Generated answers with citations need the answer server (ragcite serve).";
    }
  }

  // -- selection mode -----------------------------------------------------

  /** @type {string | null} */
  let currentSelection = null;
  /** @type {string | null} */
  let pendingSelection = null;
  /** @type {Range | null} */
  let pendingRange = null;

  /** @param {string | null} text */
  function setSelection(text) {
    const w = ensure();
    currentSelection = text ? text.slice(0, MAX_SELECTION) : null;
    w.selectionBox.hidden = currentSelection === null;
    w.root.classList.toggle("ragcite-selection-mode", currentSelection !== null);
    w.question.placeholder = currentSelection
      ? "What would you like to know about the selected text?"
      : "Ask a question about this book…";
    if (currentSelection !== null) {
      const cut = text && text.length > MAX_SELECTION ? ` (first ${MAX_SELECTION} characters)` : "";
      w.selectionText.textContent = C.clip(currentSelection, 160);
      w.selectionText.title = `${currentSelection.length} characters${cut}`;
    }
  }

  /** The page's main content, where selections count. */
  function contentRoot() {
    return (
      document.querySelector('[role="main"]') ||
      document.querySelector("main") ||
      document.querySelector("article") ||
      document.body
    );
  }

  function checkSelection() {
    const w = widget;
    if (!w) return;
    const selection = window.getSelection();
    if (!selection || selection.isCollapsed || selection.rangeCount === 0) {
      hideAskSelection();
      return;
    }
    const range = selection.getRangeAt(0);
    const node = range.commonAncestorContainer;
    const text = selection.toString().replace(/\s+/g, " ").trim();
    if (text.length < 2 || w.root.contains(node) || !contentRoot().contains(node)) {
      hideAskSelection();
      return;
    }
    pendingSelection = text;
    pendingRange = range.cloneRange();
    w.askSelection.hidden = false;
    placeAskSelection();
  }

  function placeAskSelection() {
    if (!widget || !pendingRange || widget.askSelection.hidden) return;
    const rects = pendingRange.getClientRects();
    const rect = rects.length ? rects[rects.length - 1] : pendingRange.getBoundingClientRect();
    const button = widget.askSelection;
    const width = button.offsetWidth || 140;
    const height = button.offsetHeight || 32;
    let top = rect.bottom + 8;
    if (top + height > window.innerHeight - 8) top = Math.max(8, rect.top - height - 8);
    const left = Math.min(Math.max(8, rect.right - width / 2), window.innerWidth - width - 8);
    button.style.top = `${Math.round(top)}px`;
    button.style.left = `${Math.round(left)}px`;
  }

  function hideAskSelection() {
    if (!widget) return;
    widget.askSelection.hidden = true;
    pendingRange = null;
  }

  // -- previews -------------------------------------------------------------

  /** @type {Map<number, SourceModel>} */
  let sources = new Map();
  /** @type {HTMLElement | null} */
  let previewFor = null;
  /** @type {number | undefined} */
  let previewTimer;
  /** When the last touch began: touches preview first, then follow. */
  let lastTouch = 0;
  /** @type {HTMLElement | null} the marker a tap has previewed */
  let tapped = null;
  const touching = () => Date.now() - lastTouch < 1500;

  /**
   * @param {EventTarget | null} target
   * @returns {HTMLElement | null}
   */
  function markerOf(target) {
    const node = /** @type {Element | null} */ (target instanceof Element ? target : null);
    const marker = node && node.closest("[data-ragcite-n]");
    return marker && widget && widget.output.contains(marker) ? /** @type {HTMLElement} */ (marker) : null;
  }

  /** @param {Event} event */
  function onMarkerEnter(event) {
    const marker = markerOf(event.target);
    if (marker && !touching()) showPreview(marker);
  }

  /** @param {Event} event */
  function onMarkerLeave(event) {
    const marker = markerOf(event.target);
    const to = /** @type {MouseEvent | FocusEvent} */ (event).relatedTarget;
    if (marker && !(to instanceof Node && marker.contains(to))) hidePreviewSoon();
  }

  /** @param {HTMLElement} marker */
  function showPreview(marker) {
    const w = widget;
    const source = sources.get(Number(marker.getAttribute("data-ragcite-n")));
    if (!w || !source) return;
    window.clearTimeout(previewTimer);
    if (previewFor && previewFor !== marker) previewFor.removeAttribute("aria-describedby");
    const p = w.preview;
    clear(p);
    p.append(
      el("div", { class: "ragcite-preview-title" }, `[${source.n}] `, sourceTitle(source)),
      el("blockquote", { class: "ragcite-preview-quote", text: C.clip(source.quote, 320) }),
      el(
        "div",
        { class: "ragcite-preview-meta" },
        source.level ? `${capital(source.level)} confidence` : "",
        source.href && touching() ? " · Tap again to open the passage" : "",
      ),
    );
    p.hidden = false;
    previewFor = marker;
    marker.setAttribute("aria-describedby", "ragcite-preview");
    placePreview(marker);
  }

  /** @param {HTMLElement} marker */
  function placePreview(marker) {
    if (!widget) return;
    const p = widget.preview;
    const rect = marker.getBoundingClientRect();
    const width = Math.min(340, window.innerWidth - 16);
    p.style.width = `${width}px`;
    const height = p.offsetHeight;
    let top = rect.top - height - 8;
    if (top < 8) top = Math.min(rect.bottom + 8, window.innerHeight - height - 8);
    const left = Math.min(Math.max(8, rect.left + rect.width / 2 - width / 2), window.innerWidth - width - 8);
    p.style.top = `${Math.round(Math.max(8, top))}px`;
    p.style.left = `${Math.round(left)}px`;
  }

  function hidePreviewSoon() {
    window.clearTimeout(previewTimer);
    previewTimer = window.setTimeout(hidePreview, 150);
  }

  function hidePreview() {
    window.clearTimeout(previewTimer);
    if (!widget) return;
    widget.preview.hidden = true;
    if (previewFor) previewFor.removeAttribute("aria-describedby");
    previewFor = null;
    tapped = null;
  }

  /**
   * Scroll the source list entry of a marker into view (markers without link).
   * @param {HTMLElement} marker
   */
  function showSource(marker) {
    const n = marker.getAttribute("data-ragcite-n");
    const item = widget && widget.output.querySelector(`li[data-ragcite-source="${Number(n)}"]`);
    if (!item) return;
    item.scrollIntoView({ block: "nearest", behavior: reducedMotion() ? "auto" : "smooth" });
    item.classList.add("ragcite-source-flash");
    window.setTimeout(() => item.classList.remove("ragcite-source-flash"), 1500);
    showPreview(marker);
  }

  /** @param {MouseEvent} event */
  function onOutputClick(event) {
    const marker = markerOf(event.target);
    if (marker) {
      if (touching() && tapped !== marker) {
        // first tap previews, the second follows
        event.preventDefault();
        showPreview(marker);
        tapped = marker;
        return;
      }
      if (!marker.hasAttribute("href")) {
        event.preventDefault();
        showSource(marker);
        return;
      }
      hidePreview();
      follow(event, /** @type {HTMLAnchorElement} */ (marker));
      return;
    }
    const target = event.target instanceof Element ? event.target : null;
    const anchor = /** @type {HTMLAnchorElement | null} */ (target && target.closest("a[href][data-ragcite-link]"));
    if (anchor) follow(event, anchor);
  }

  // -- rendering ------------------------------------------------------------

  /** @param {string} s */
  function capital(s) {
    return s.charAt(0).toUpperCase() + s.slice(1);
  }

  /** @param {{chapter: string, section: string}} s */
  function sourceTitle(s) {
    const chapter = s.chapter.trim();
    const section = s.section.trim();
    const parts = section && section !== chapter ? [chapter, section] : [chapter || section];
    return parts.filter(Boolean).join(" › ") || "Untitled passage";
  }

  /** @param {string} text */
  function setStatus(text) {
    if (widget) widget.status.textContent = text;
  }

  /** @type {number | undefined} */
  let retryTimer;

  /**
   * @param {WidgetError} error
   * @param {() => void} retry
   */
  function showError(error, retry) {
    const w = widget;
    if (!w) return;
    window.clearInterval(retryTimer);
    clear(w.error);
    w.error.hidden = false;
    w.error.className = `ragcite-error ragcite-error-${error.kind}`;
    if (error.kind === "busy" || error.kind === "rate") {
      let left = error.retryAfter;
      const count = el("span", { class: "ragcite-retry-count" });
      const button = el("button", { type: "button", class: "ragcite-retry", text: "Retry now" });
      const tick = () => {
        count.textContent = left > 0 ? `Retry in ${left} s.` : "You can retry now.";
        if (left <= 0) window.clearInterval(retryTimer);
        left -= 1;
      };
      const head = error.kind === "busy" ? "The answer server is busy. " : `${error.message} `;
      w.error.append(el("strong", { text: head }), count, " ", button);
      button.addEventListener("click", () => {
        window.clearInterval(retryTimer);
        retry();
      });
      tick();
      retryTimer = window.setInterval(tick, 1000);
      setStatus("");
      return;
    }
    const title = error.kind === "invalid" ? "Cannot ask that: " : error.kind === "static" ? "" : "Error: ";
    w.error.append(title ? el("strong", { text: title }) : "", error.message);
    setStatus("");
  }

  function resetOutput() {
    const w = ensure();
    window.clearInterval(retryTimer);
    hidePreview();
    clear(w.output);
    clear(w.error);
    w.error.hidden = true;
    sources = new Map();
    w.root.classList.remove("ragcite-has-answer");
  }

  /**
   * @param {string} text
   * @param {string} [cls]
   */
  function heading(text, cls) {
    return el("h3", { class: `ragcite-subheading ${cls || ""}`.trim(), text });
  }

  /**
   * @param {LinkModel[]} links
   * @param {string} cls
   */
  function linkList(links, cls) {
    const list = el("ol", { class: cls });
    for (const item of links) {
      list.append(
        el(
          "li",
          { class: "ragcite-link-item" },
          link(item.href, { class: "ragcite-link", "data-ragcite-link": item.passageId }, sourceTitle(item)),
          item.snippet ? el("p", { class: "ragcite-snippet", text: C.clip(item.snippet, 240) }) : null,
        ),
      );
    }
    return list;
  }

  /**
   * Render an answer of the server (final event, `/api/ask`).
   * @param {Answer} answer
   */
  function renderAnswer(answer) {
    const w = ensure();
    resetOutput();
    const models = C.buildSources(answer, root);
    sources = new Map(models.map((s) => [s.n, s]));
    const out = w.output;
    const level = ["high", "medium", "low"].includes(answer.confidence_level)
      ? answer.confidence_level
      : C.confidenceLevel(answer.confidence);

    if (!answer.grounded) {
      out.append(
        el(
          "div",
          { class: "ragcite-notfound" },
          el("strong", { class: "ragcite-notfound-title", text: "Not in the book" }),
          el("p", { class: "ragcite-notfound-text", text: answer.answer || "The book does not answer this question." }),
        ),
      );
      const seeAlso = C.buildSeeAlso(answer, root);
      if (seeAlso.length) {
        out.append(heading("Passages that may help"), linkList(seeAlso, "ragcite-see-also"));
      }
    } else {
      const badges = el("div", { class: "ragcite-badges" });
      if (level) {
        badges.append(
          el("span", {
            class: `ragcite-badge ragcite-badge-${level}`,
            text: `${capital(level)} confidence`,
            title: `Confidence ${Math.round(answer.confidence * 100)}%`,
          }),
        );
      }
      if (answer.mode === "selection") {
        badges.append(el("span", { class: "ragcite-badge ragcite-badge-mode", text: "About your selection" }));
      }
      out.append(badges);
      if (level === "low") {
        out.append(
          el("p", {
            class: "ragcite-low-note",
            text: "Low confidence: the book may not fully answer this. Check the sources before relying on it.",
          }),
        );
      }
      out.append(renderText(answer.answer));
    }

    if (models.length) {
      const list = el("ol", { class: "ragcite-sources" });
      for (const s of models) list.append(renderSource(s));
      out.append(heading("Sources"), list);
    }
    const meta = answer.metadata || {};
    const model = typeof meta.model === "string" && meta.model ? meta.model : "a language model";
    const by =
      meta.generator === "llm"
        ? `Written by ${model}; each cited sentence was checked against its source.`
        : meta.generator === "llm->extractive"
          ? "The generated answer could not be checked against the book, so these sentences are quoted from it."
          : "Sentences quoted from the book.";
    out.append(el("p", { class: "ragcite-footnote", text: by }));
    w.root.classList.add("ragcite-has-answer");
    setStatus(answer.grounded ? `Answer ready, ${models.length} source${models.length === 1 ? "" : "s"}.` : "No answer found in the book.");
  }

  /**
   * The answer paragraph: text nodes and `<sup><a data-ragcite-n>` markers.
   * @param {string} text
   */
  function renderText(text) {
    const p = el("p", { class: "ragcite-answer" });
    for (const seg of C.parseAnswer(text, sources.keys())) {
      if ("text" in seg) {
        p.append(document.createTextNode(seg.text));
        continue;
      }
      const s = /** @type {SourceModel} */ (sources.get(seg.marker));
      const label = `Source ${s.n}: ${sourceTitle(s)}`;
      const a = el("a", {
        class: s.href ? "ragcite-marker" : "ragcite-marker ragcite-marker-nolink",
        "data-ragcite-n": s.n,
        href: s.href,
        tabindex: s.href ? null : 0,
        role: s.href ? null : "button",
        "aria-label": label,
        text: `[${s.n}]`,
      });
      p.append(el("sup", { class: "ragcite-sup" }, a));
    }
    return p;
  }

  /** @param {SourceModel} s */
  function renderSource(s) {
    const title = s.selection
      ? el("span", { class: "ragcite-source-title ragcite-source-selection" }, sourceTitle(s))
      : link(s.href, { class: "ragcite-source-title ragcite-link", "data-ragcite-link": s.passageId }, sourceTitle(s));
    const confidence = s.level
      ? el("span", {
          class: `ragcite-source-confidence ragcite-level-${s.level}`,
          text: `${capital(s.level)} confidence${s.confidence !== null ? ` (${Math.round(s.confidence * 100)}%)` : ""}`,
        })
      : null;
    return el(
      "li",
      { class: "ragcite-source", value: s.n, "data-ragcite-source": s.n, id: `ragcite-source-${s.n}` },
      title,
      s.snippet ? el("p", { class: "ragcite-snippet", text: C.clip(s.snippet, 240) }) : null,
      el("div", { class: "ragcite-source-meta" }, confidence, s.selection ? el("span", { class: "ragcite-source-kind", text: " · no link: your own selection" }) : null),
    );
  }

  /**
   * Render static-search results.
   * @param {StaticResult} result
   * @param {string} [why] a note on why there is no generated answer
   */
  function renderStatic(result, why) {
    const w = ensure();
    resetOutput();
    sources = new Map();
    const out = w.output;
    out.append(
      el(
        "div",
        { class: "ragcite-static-note", role: "note" },
        el("strong", { text: "Search results, not an answer. " }),
        why || "No answer server is reachable, so these are the passages that best match your question. Generated answers with citations need the answer server (ragcite serve).",
      ),
    );
    if (result.hits.length) {
      out.append(heading("Matching passages"), linkList(C.buildLinks(result.hits, root), "ragcite-results"));
    } else {
      out.append(el("p", { class: "ragcite-noresults", text: "No passage matches these words. Try other words." }));
    }
    w.root.classList.add("ragcite-has-answer");
    setStatus(`${result.hits.length} matching passage${result.hits.length === 1 ? "" : "s"}.`);
  }

  // -- asking ---------------------------------------------------------------

  /** @type {AbortController | null} */
  let inflight = null;
  /** @type {{kind: "answer" | "static", question: string, selection: string | null, data: any, why?: string} | null} */
  let last = null;

  function remember() {
    if (!last) return;
    try {
      sessionStorage.setItem(STORAGE_KEY, JSON.stringify(last));
    } catch {
      // storage may be off: the answer is just not restored
    }
  }

  function restore() {
    let saved;
    try {
      saved = JSON.parse(sessionStorage.getItem(STORAGE_KEY) || "null");
    } catch {
      return;
    }
    if (!saved || typeof saved !== "object" || typeof saved.question !== "string") return;
    try {
      if (saved.kind === "answer" && saved.data && typeof saved.data.answer === "string") {
        renderAnswer(saved.data);
      } else if (saved.kind === "static" && saved.data && Array.isArray(saved.data.hits)) {
        renderStatic(saved.data, typeof saved.why === "string" ? saved.why : undefined);
      } else {
        return;
      }
    } catch {
      resetOutput();
      return;
    }
    last = saved;
    const w = ensure();
    w.question.value = saved.question.slice(0, MAX_QUESTION);
    updateCounter();
    if (typeof saved.selection === "string" && saved.selection) setSelection(saved.selection);
    setStatus("");
  }

  /**
   * @param {string} question
   * @param {string | null} selection
   * @param {string} [why]
   * @returns {Promise<StaticResult>}
   */
  async function askStatic(question, selection, why) {
    setStatus("Searching the book's passages…");
    const searcher = await loadStaticSearch();
    const query = selection ? `${question} ${selection.slice(0, 2000)}` : question;
    const hits = /** @type {StaticHit[]} */ (searcher.search(query, STATIC_RESULTS));
    /** @type {StaticResult} */
    const result = { mode: "static", question, hits };
    renderStatic(result, why);
    last = { kind: "static", question, selection, data: result, why };
    remember();
    return result;
  }

  /**
   * Ask a question and render the result; the promise settles once it is on
   * screen (rejects with the error shown).
   * @param {string} question
   * @param {{selection?: string, fromForm?: boolean}} [options]
   * @returns {Promise<Answer | StaticResult>}
   */
  async function ask(question, options = {}) {
    const w = ensure();
    if (!options.fromForm) {
      open();
      setSelection(typeof options.selection === "string" && options.selection.trim() ? options.selection.trim() : null);
      w.question.value = String(question == null ? "" : question).slice(0, MAX_QUESTION);
      updateCounter();
    }
    const text = String(question == null ? "" : question).trim();
    const selection = currentSelection;
    const retry = () => {
      ask(w.question.value, { fromForm: true }).catch(() => {});
    };
    if (inflight) inflight.abort();
    const controller = new AbortController();
    inflight = controller;
    resetOutput();
    try {
      if (!text) throw new WidgetError("Type a question first.", "invalid");
      if (text.length > MAX_QUESTION) {
        throw new WidgetError(`The question has ${text.length} characters; the limit is ${MAX_QUESTION}.`, "invalid");
      }
      w.submit.disabled = true;
      w.submit.textContent = "Asking…";
      w.output.setAttribute("aria-busy", "true");
      w.root.classList.add("ragcite-loading");
      setStatus("Searching the book…");
      const up = await serverAvailable();
      showMode(up);
      if (controller.signal.aborted) throw new WidgetError("Replaced by a newer question.", "aborted");
      if (!up) return await askStatic(text, selection);

      /** @type {import("./types").AskRequest} */
      const body = selection ? { question: text, mode: "selection", selection } : { question: text, mode: "book" };
      /** @type {Text | null} */
      let streamed = null;
      let answer;
      try {
        answer = await streamAnswer(body, controller.signal, (event, data) => {
          if (inflight !== controller) return;
          if (event === "retrieval") {
            const n = data && Array.isArray(data.retrieved) ? data.retrieved.length : 0;
            setStatus(`Found ${n} relevant passage${n === 1 ? "" : "s"}. Writing the answer…`);
          } else if (event === "token" && data && typeof data.text === "string") {
            if (!streamed) {
              streamed = document.createTextNode("");
              w.output.append(el("p", { class: "ragcite-answer ragcite-streaming" }, streamed));
            }
            streamed.appendData(data.text);
          }
        });
      } catch (error) {
        if (controller.signal.aborted) throw new WidgetError("Replaced by a newer question.", "aborted");
        if (error instanceof WidgetError) throw error;
        // the server went away after the health check: search instead
        serverCheck = null;
        showMode(false);
        return await askStatic(
          text,
          selection,
          "The answer server stopped responding, so these are the passages that best match your question.",
        );
      }
      if (inflight !== controller) throw new WidgetError("Replaced by a newer question.", "aborted");
      renderAnswer(answer);
      last = { kind: "answer", question: text, selection, data: answer };
      remember();
      document.dispatchEvent(new CustomEvent("ragcite:answer", { detail: answer }));
      return answer;
    } catch (error) {
      const e =
        error instanceof WidgetError
          ? error
          : new WidgetError(String((error && /** @type {Error} */ (error).message) || error), "server");
      if (e.kind !== "aborted" && inflight === controller) {
        resetOutput();
        showError(e, retry);
      }
      throw e;
    } finally {
      if (inflight === controller) {
        inflight = null;
        w.submit.disabled = false;
        w.submit.textContent = "Ask";
        w.output.setAttribute("aria-busy", "false");
        w.root.classList.remove("ragcite-loading");
      }
    }
  }

  // -- wiring -----------------------------------------------------------------

  /** @returns {Widget} */
  function ensure() {
    if (!widget) {
      if (!document.body) throw new Error("ragcite: the page has no body yet");
      widget = build();
    }
    return widget;
  }

  /** @param {EventTarget | null} target */
  function isTyping(target) {
    if (!(target instanceof HTMLElement)) return false;
    return (
      target.isContentEditable ||
      target instanceof HTMLInputElement ||
      target instanceof HTMLTextAreaElement ||
      target instanceof HTMLSelectElement
    );
  }

  /** @param {KeyboardEvent} event */
  function onKeydown(event) {
    if (event.defaultPrevented) return;
    if (shortcut && matches(event, shortcut)) {
      const plain = !shortcut.ctrl && !shortcut.meta && !shortcut.alt;
      if (plain && isTyping(event.target)) return;
      event.preventDefault();
      // with "Ask about this" on offer, the shortcut takes the selection along
      if (widget && !widget.askSelection.hidden && pendingSelection) {
        setSelection(pendingSelection);
        hideAskSelection();
      }
      open();
      return;
    }
    if (event.key !== "Escape" || !widget) return;
    if (!widget.preview.hidden) {
      hidePreview();
      event.preventDefault();
    } else if (!widget.askSelection.hidden) {
      hideAskSelection();
    } else if (isOpen()) {
      const active = document.activeElement;
      if (!active || active === document.body || widget.root.contains(active)) {
        event.preventDefault();
        close();
      }
    }
  }

  /** @type {number | undefined} */
  let selectionTimer;

  function init() {
    ensure();
    document.addEventListener("keydown", onKeydown);
    const soon = () => {
      window.clearTimeout(selectionTimer);
      selectionTimer = window.setTimeout(checkSelection, 10);
    };
    document.addEventListener("mouseup", soon);
    document.addEventListener("touchend", soon);
    document.addEventListener("keyup", (event) => {
      if (event.shiftKey || event.key === "Shift") soon();
    });
    document.addEventListener("selectionchange", () => {
      const s = window.getSelection();
      if (!s || s.isCollapsed) hideAskSelection();
    });
    window.addEventListener("scroll", placeAskSelection, { passive: true });
    window.addEventListener("resize", placeAskSelection, { passive: true });
    window.addEventListener("hashchange", highlightFromHash);
    restore();
    if (document.readyState === "complete") highlightFromHash();
    else window.addEventListener("load", highlightFromHash, { once: true });
  }

  /** @type {RagciteApi} */
  const publicApi = {
    version: VERSION,
    open: () => open(),
    close: () => close(),
    ask: (question, options) => ask(question, { selection: options && options.selection }),
    highlight: (id) => highlight(String(id), { smooth: true }),
  };
  g.ragcite = Object.freeze(publicApi);

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init, { once: true });
  else init();
})();
