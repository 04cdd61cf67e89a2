// @ts-check
/**
 * The widget's settings: read once from the `data-ragcite-*` attributes of
 * its own <script> tag (written by `sphinx_ragcite/assets.py`), plus the
 * keyboard shortcut grammar.
 *
 * - `data-ragcite-server`: base URL of the answer server; "" means look
 *   for it beside the site (`serversOf`), "none" means static mode only.
 * - `data-ragcite-index`: `_ragcite/manifest.json`, relative to the site root.
 * - `data-ragcite-root`: the site root; by default two folders above the
 *   script when the build copied it to `_static/ragcite/`, else the page's
 *   `<html data-content_root>` (set by Sphinx).
 * - `data-ragcite-shortcut`: e.g. "Mod+/" (Mod: Cmd on macOS, Ctrl
 *   elsewhere), "Alt+A", "/"; "" turns the shortcut off.
 * - `data-ragcite-version`: the sphinx-ragcite version that built the page.
 * - `data-ragcite-assets`: a digest of the widget's and engine's scripts as
 *   this build shipped them; every script the widget or the engine's worker
 *   loads by itself carries it as `?v=` (`assetUrl`), so a long `_static/`
 *   max-age never runs old engine code against a new index.
 * - `data-ragcite-site`: this site's name on a server of several sites
 *   (`ragcite serve --site NAME=...`); "" means: the folder the site is
 *   served from below the server (`/NAME/`), if it is one.
 * - `data-ragcite-scope`: "site" (ask within this site and version, the
 *   default) or "all" (ask every site the server serves); a page's
 *   `<meta name="ragcite-scope" content="all">` says so for that page.
 *
 * Everything but `readSettings` is pure. Classic script: provides `settings` (see `lib.js`).
 */

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
 * @typedef {object} Settings
 * @property {string} root the site root, absolute, ending in "/"
 * @property {URL} assetBase the folder of the widget's scripts, with the
 *   build's `?v=<digest>` as its query (see `assetUrl`)
 * @property {URL | null} indexUrl the manifest
 * @property {URL[]} servers where the answer server may be, in the order
 *   to ask (`serversOf`); none: static mode only
 * @property {boolean} serverNamed `data-ragcite-server` names the server
 * @property {URL | null} apiBase the base of a server of several sites
 *   (links into its other sites): the last of `servers`, or null
 * @property {Shortcut | null} shortcut
 * @property {string} version of the build that wrote the page
 * @property {string} site this site's name on a server of several, or ""
 * @property {"site" | "all"} scope which sites a question asks by default
 */

/**
 * What `readSettings` needs of its script tag (an HTMLScriptElement).
 * @typedef {{src: string, getAttribute(name: string): string | null, hasAttribute(name: string): boolean}} ScriptTag
 */

(function () {
  "use strict";

  const g = /** @type {any} */ (globalThis);
  const lib = typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib;

  const DEFAULT_SHORTCUT = "Mod+/";
  const DEFAULT_INDEX = "_ragcite/manifest.json";
  /** Where the build copies the entry script: its root is two folders up. */
  const COPIED = /\/_static\/ragcite\/widget\.js([?#]|$)/;

  /**
   * @param {string} value
   * @param {string | URL} base
   * @returns {URL | null} null when the value is no URL
   */
  function toUrl(value, base) {
    try {
      return new URL(value, base);
    } catch {
      return null;
    }
  }

  /**
   * A script beside the widget's, versioned as the folder is: `?v=<digest>`
   * of the build that shipped it (a cached old copy is never taken for it).
   * @param {string} name e.g. "worker.js", "snowball/german.js"
   * @param {URL | string} base `Settings.assetBase`, or a versioned script's URL
   * @returns {URL}
   */
  function assetUrl(name, base) {
    const from = new URL(String(base));
    const url = new URL(name, from);
    url.search = from.search;
    url.hash = "";
    return url;
  }

  /**
   * The URL as a folder: no query or hash, a trailing "/".
   * @param {URL} url
   */
  function asFolder(url) {
    const u = new URL(url.href);
    u.hash = "";
    u.search = "";
    if (!u.pathname.endsWith("/")) u.pathname += "/";
    return u;
  }

  /**
   * The site root: citation URLs are relative to it.
   * @param {{explicit: string, content: string | null, src: string, page: string}} where
   *   `data-ragcite-root`, `<html data-content_root>`, the script's URL, the page's URL
   * @returns {string}
   */
  function siteRoot({ explicit, content, src, page }) {
    // Copied by the build to <root>/_static/ragcite/: right on every page,
    // also a 404 page served at any depth (sphinx-notfound-page), whose
    // data-content_root is "./" wherever it is served.
    const copied = COPIED.test(src);
    const found =
      (explicit && toUrl(explicit, page)) ||
      (copied && toUrl("../../", src)) ||
      (content !== null && toUrl(content || "./", page)) ||
      (src && toUrl("../../", src)) ||
      new URL("./", page);
    return asFolder(found).href;
  }

  /**
   * Where the answer server may be, in the order the widget asks: the one
   * `data-ragcite-server` names; by default the site root (`ragcite serve
   * BUILD`, or a proxy to it at the site's path), then its parent folder
   * (`ragcite serve --site NAME=...` serves a site at `<base>NAME/`, its API
   * at `<base>api/`). Never the origin's root for a site below it: another
   * app may answer there. None for "none", or a page not on http(s).
   * @param {string} server `data-ragcite-server`
   * @param {string} root the site root
   * @param {string} page the page's URL
   * @returns {URL[]}
   */
  function serversOf(server, root, page) {
    const value = server.trim();
    if (value.toLowerCase() === "none") return [];
    if (value) {
      const u = toUrl(value, page);
      return u && /^https?:$/.test(u.protocol) ? [asFolder(u)] : [];
    }
    const here = toUrl(page, "http://invalid/");
    const site = toUrl(root, page);
    if (!here || !site || !/^https?:$/.test(here.protocol) || !/^https?:$/.test(site.protocol)) return [];
    const own = asFolder(site);
    const parent = new URL("../", own);
    return parent.href === own.href ? [own] : [own, parent];
  }

  /**
   * A site's name on a server of several: its URL folder (`contracts.SITE_NAME`;
   * plain ASCII, read alike by both but for Python's `$` before a final "\n",
   * which a URL's path never holds).
   */
  const SITE_NAME = new RegExp(lib.need("spec").SITE_NAME.source);

  /**
   * This site's name on a server of several: the one folder between the
   * server's base and the site root ("/v1.2/" below "/" is "v1.2"), else "".
   * @param {string} root the site root
   * @param {URL | null} apiBase
   * @returns {string}
   */
  function siteOf(root, apiBase) {
    if (!apiBase) return "";
    const here = toUrl(root, apiBase);
    if (!here || here.origin !== apiBase.origin) return "";
    if (!here.pathname.startsWith(apiBase.pathname)) return "";
    const rest = here.pathname.slice(apiBase.pathname.length);
    if (!rest.endsWith("/")) return "";
    let name = rest.slice(0, -1);
    try {
      name = decodeURIComponent(name);
    } catch {
      return "";
    }
    return SITE_NAME.test(name) ? name : "";
  }

  /**
   * @param {string} value `data-ragcite-scope` or the page's meta tag
   * @returns {"site" | "all" | null} null: not a scope
   */
  function scopeOf(value) {
    const v = value.trim().toLowerCase();
    return v === "site" || v === "all" ? v : null;
  }

  /**
   * @param {{platform?: string, userAgent?: string}} nav `navigator`
   */
  function isMacPlatform(nav) {
    return /Mac|iPhone|iPad|iPod/.test(`${nav.platform || ""} ${nav.userAgent || ""}`);
  }

  /**
   * @param {string} spec e.g. "Mod+/", "Alt+A", "/"
   * @param {boolean} mac Mod is Cmd, and labels use the Mac symbols
   * @returns {Shortcut | null} null for an empty spec
   */
  function parseShortcut(spec, mac) {
    const parts = spec.split("+").map((p) => p.trim());
    // "Ctrl++" names the plus key
    if (spec.endsWith("++")) parts.splice(parts.length - 2, 2, "+");
    const key = parts.pop();
    if (!key) return null;
    const mods = new Set(parts.map((p) => p.toLowerCase()));
    const mod = mods.has("mod");
    const s = {
      key: key.toLowerCase(),
      ctrl: mods.has("ctrl") || mods.has("control") || (mod && !mac),
      alt: mods.has("alt") || mods.has("option"),
      meta: mods.has("meta") || mods.has("cmd") || (mod && mac),
      shift: mods.has("shift"),
      label: "",
      aria: "",
    };
    const names = [];
    const aria = [];
    if (s.ctrl) names.push("Ctrl"), aria.push("Control");
    if (s.meta) names.push(mac ? "⌘" : "Meta"), aria.push("Meta");
    if (s.alt) names.push(mac ? "⌥" : "Alt"), aria.push("Alt");
    if (s.shift) names.push("Shift"), aria.push("Shift");
    const shown = key.length === 1 ? key.toUpperCase() : key;
    s.label = [...names, shown].join(mac && names.length ? "" : "+");
    s.aria = [...aria, shown].join("+");
    return s;
  }

  /**
   * Whether a key press is the shortcut.
   * @param {{key?: string, code?: string, ctrlKey: boolean, altKey: boolean, metaKey: boolean, shiftKey: boolean}} event
   * @param {Shortcut} s
   */
  function matchesShortcut(event, s) {
    const key = (event.key || "").toLowerCase();
    if (key !== s.key) {
      // Alt/Option changes event.key on macOS ("å" for Option+A): use the code
      const code = (/\d/.test(s.key) ? "Digit" : "Key") + s.key.toUpperCase();
      if (!(s.key.length === 1 && /[a-z0-9]/.test(s.key) && event.code === code)) return false;
    }
    if (event.ctrlKey !== s.ctrl || event.altKey !== s.alt || event.metaKey !== s.meta) return false;
    // Shift matters for letters only: "/" or "?" may need it on some layouts
    return !/^[a-z]$/.test(s.key) || event.shiftKey === s.shift;
  }

  /**
   * The settings of the widget whose script tag this is.
   * @param {ScriptTag | null} script
   * @param {{page: string, contentRoot: string | null, mac: boolean, pageScope?: string | null}} env
   *   the page's URL, its `data-content_root`, whether it runs on a Mac, its
   *   `<meta name="ragcite-scope">`
   * @returns {Settings}
   */
  function readSettings(script, env) {
    /** @param {string} name */
    const attr = (name) => (script && script.getAttribute(`data-ragcite-${name}`)) || "";
    const src = script && script.src ? script.src : "";
    const root = siteRoot({ explicit: attr("root"), content: env.contentRoot, src, page: env.page });
    const spec = script && script.hasAttribute("data-ragcite-shortcut") ? attr("shortcut") : DEFAULT_SHORTCUT;
    const servers = serversOf(attr("server"), root, env.page);
    const apiBase = servers.length ? servers[servers.length - 1] : null;
    const named = attr("site").trim();
    const assetBase = toUrl("./", src || env.page) || new URL(env.page);
    assetBase.hash = "";
    const digest = attr("assets").trim();
    assetBase.search = /^[0-9a-f]{8,64}$/.test(digest) ? `?v=${digest}` : "";
    return {
      root,
      assetBase,
      indexUrl: toUrl(attr("index") || DEFAULT_INDEX, root),
      servers,
      serverNamed: servers.length > 0 && attr("server").trim() !== "",
      apiBase,
      shortcut: spec.trim() ? parseShortcut(spec.trim(), env.mac) : null,
      version: attr("version").trim() || "unknown",
      site: SITE_NAME.test(named) ? named : siteOf(root, apiBase),
      scope: scopeOf(env.pageScope || "") || scopeOf(attr("scope")) || "site",
    };
  }

  const api = {
    asFolder,
    assetUrl,
    isMacPlatform,
    matchesShortcut,
    parseShortcut,
    readSettings,
    scopeOf,
    serversOf,
    siteOf,
    siteRoot,
    toUrl,
  };
  lib.provide("settings", api);
  if (typeof module === "object") module.exports = api;
})();
