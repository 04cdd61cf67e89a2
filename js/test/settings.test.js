// @ts-check
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");

const {
  asFolder,
  isMacPlatform,
  matchesShortcut,
  parseShortcut,
  readSettings,
  scopeOf,
  serversOf,
  siteOf,
  siteRoot,
  toUrl,
} = require("../settings.js");
const { assetUrl } = require("../settings.js");

test("toUrl resolves or gives null", () => {
  assert.equal(toUrl("a/b.html", "https://x.org/book/")?.href, "https://x.org/book/a/b.html");
  assert.equal(toUrl("b.html", "not a base"), null);
  assert.equal(toUrl("http://[bad", "https://x.org/"), null);
});

test("asFolder drops query and hash and ends in a slash", () => {
  assert.equal(asFolder(new URL("https://x.org/api?x=1#y")).href, "https://x.org/api/");
  assert.equal(asFolder(new URL("https://x.org/api/")).href, "https://x.org/api/");
});

test("parseShortcut: Mod is Ctrl off the Mac, Cmd on it", () => {
  const pc = parseShortcut("Mod+/", false);
  assert.deepEqual(pc, {
    key: "/",
    ctrl: true,
    alt: false,
    meta: false,
    shift: false,
    label: "Ctrl+/",
    aria: "Control+/",
  });
  const mac = parseShortcut("Mod+/", true);
  assert.equal(mac?.meta, true);
  assert.equal(mac?.ctrl, false);
  assert.equal(mac?.label, "⌘/");
  assert.equal(mac?.aria, "Meta+/");
});

test("parseShortcut: other modifiers, letters, plus and plain keys", () => {
  const alt = parseShortcut("Alt+a", false);
  assert.equal(alt?.key, "a");
  assert.equal(alt?.alt, true);
  assert.equal(alt?.label, "Alt+A");
  assert.equal(parseShortcut("Option+Shift+K", true)?.label, "⌥ShiftK");
  const plus = parseShortcut("Ctrl++", false);
  assert.equal(plus?.key, "+");
  assert.equal(plus?.ctrl, true);
  const slash = parseShortcut("/", false);
  assert.deepEqual([slash?.key, slash?.ctrl, slash?.alt, slash?.meta, slash?.label], ["/", false, false, false, "/"]);
  assert.equal(parseShortcut("Control+Meta+F2", false)?.aria, "Control+Meta+F2");
  assert.equal(parseShortcut("", false), null);
  assert.equal(parseShortcut("Ctrl+", false), null);
});

/** @param {Partial<KeyboardEvent>} e */
const key = (e) => ({ key: "", code: "", ctrlKey: false, altKey: false, metaKey: false, shiftKey: false, ...e });

test("matchesShortcut: modifiers must match exactly", () => {
  const s = /** @type {import("../settings.js").Shortcut} */ (parseShortcut("Mod+/", false));
  assert.ok(matchesShortcut(key({ key: "/", ctrlKey: true }), s));
  assert.ok(matchesShortcut(key({ key: "/", ctrlKey: true, shiftKey: true }), s), "shift ignored for /");
  assert.ok(!matchesShortcut(key({ key: "/" }), s));
  assert.ok(!matchesShortcut(key({ key: "/", ctrlKey: true, altKey: true }), s));
  assert.ok(!matchesShortcut(key({ key: "?", ctrlKey: true }), s));
});

test("matchesShortcut: letters by code when Option changes the key", () => {
  const s = /** @type {import("../settings.js").Shortcut} */ (parseShortcut("Alt+A", true));
  assert.ok(matchesShortcut(key({ key: "å", code: "KeyA", altKey: true }), s));
  assert.ok(!matchesShortcut(key({ key: "A", code: "KeyA", altKey: true, shiftKey: true }), s), "shift counts for letters");
  const digit = /** @type {import("../settings.js").Shortcut} */ (parseShortcut("Alt+1", true));
  assert.ok(matchesShortcut(key({ key: "¡", code: "Digit1", altKey: true }), digit));
});

test("isMacPlatform", () => {
  assert.ok(isMacPlatform({ platform: "MacIntel" }));
  assert.ok(isMacPlatform({ platform: "", userAgent: "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0)" }));
  assert.ok(!isMacPlatform({ platform: "Linux x86_64", userAgent: "X11" }));
  assert.ok(!isMacPlatform({}));
});

test("siteRoot: explicit, then the copied script's folder, then data-content_root", () => {
  const page = "https://x.org/book/brewing/espresso.html#ch1-sec0-p1";
  const src = "https://x.org/book/_static/ragcite/widget.js?v=1234abcd";
  assert.equal(siteRoot({ explicit: "/docs", content: "../", src, page }), "https://x.org/docs/");
  assert.equal(siteRoot({ explicit: "", content: "../", src, page }), "https://x.org/book/");
  // a 404 page served at any depth says "./" but its script knows better
  const deep = "https://x.org/book/no/such/page.html";
  assert.equal(siteRoot({ explicit: "", content: "./", src, page: deep }), "https://x.org/book/");
  const elsewhere = "https://cdn.example/ragcite/widget.js";
  assert.equal(siteRoot({ explicit: "", content: "../", src: elsewhere, page }), "https://x.org/book/");
  assert.equal(siteRoot({ explicit: "", content: "", src: elsewhere, page }), "https://x.org/book/brewing/");
  assert.equal(siteRoot({ explicit: "", content: null, src: "", page }), "https://x.org/book/brewing/");
});

test("serversOf: beside the site (its root, then its parent), a configured server, or none", () => {
  const page = "https://x.org/book/a.html";
  /** @param {URL[]} urls */
  const hrefs = (urls) => urls.map((u) => u.href);
  const root = "https://x.org/book/";
  // never the origin's root for a site deeper down: another app may answer there
  assert.deepEqual(hrefs(serversOf("", root, page)), ["https://x.org/book/", "https://x.org/"]);
  assert.deepEqual(hrefs(serversOf("", "https://x.org/a/b/docs/", page)), ["https://x.org/a/b/docs/", "https://x.org/a/b/"]);
  assert.deepEqual(hrefs(serversOf("", "https://x.org/", "https://x.org/a.html")), ["https://x.org/"]);
  assert.deepEqual(hrefs(serversOf(" https://answers.example/book ", root, page)), ["https://answers.example/book/"]);
  assert.deepEqual(hrefs(serversOf("/ask-server", root, page)), ["https://x.org/ask-server/"]);
  assert.deepEqual(serversOf("none", root, page), []);
  assert.deepEqual(serversOf("NONE", root, page), []);
  assert.deepEqual(serversOf("javascript:alert(1)", root, page), []);
  const disk = "file:///home/me/book/index.html";
  assert.deepEqual(serversOf("", "file:///home/me/book/", disk), [], "no server from disk");
});

/** @param {Record<string, string>} attrs @param {string} src */
function tag(attrs, src) {
  return {
    src,
    getAttribute: (/** @type {string} */ n) => (n in attrs ? attrs[n] : null),
    hasAttribute: (/** @type {string} */ n) => n in attrs,
  };
}

test("readSettings reads the tag the build writes", () => {
  const s = readSettings(
    tag(
      {
        "data-ragcite-server": "",
        "data-ragcite-index": "_ragcite/manifest.json",
        "data-ragcite-shortcut": "Alt+A",
        "data-ragcite-version": "0.1.0",
      },
      "https://x.org/book/_static/ragcite/widget.js?v=1",
    ),
    { page: "https://x.org/book/part/index.html", contentRoot: "../", mac: false },
  );
  assert.equal(s.root, "https://x.org/book/");
  assert.equal(s.indexUrl?.href, "https://x.org/book/_ragcite/manifest.json");
  assert.equal(s.assetBase.href, "https://x.org/book/_static/ragcite/");
  assert.deepEqual(s.servers.map((u) => u.href), ["https://x.org/book/", "https://x.org/"]);
  assert.equal(s.serverNamed, false);
  assert.equal(s.apiBase?.href, "https://x.org/");
  assert.equal(s.shortcut?.label, "Alt+A");
  assert.equal(s.version, "0.1.0");
});

test("readSettings without attributes: defaults, and an empty shortcut turns it off", () => {
  const bare = readSettings(tag({}, ""), { page: "file:///b/index.html", contentRoot: "", mac: true });
  assert.equal(bare.shortcut?.label, "⌘/");
  assert.equal(bare.version, "unknown");
  assert.equal(bare.apiBase, null);
  assert.deepEqual(bare.servers, []);
  assert.equal(bare.indexUrl?.href, "file:///b/_ragcite/manifest.json");
  const off = readSettings(tag({ "data-ragcite-shortcut": " " }, ""), { page: "https://x.org/", contentRoot: null, mac: false });
  assert.equal(off.shortcut, null);
  assert.equal(readSettings(null, { page: "https://x.org/a/b.html", contentRoot: null, mac: false }).root, "https://x.org/a/");
});

test("siteOf: the one folder between the server's base and the site root", () => {
  const base = new URL("https://x.org/");
  assert.equal(siteOf("https://x.org/v1.2/", base), "v1.2");
  assert.equal(siteOf("https://x.org/", base), "");
  assert.equal(siteOf("https://x.org/a/b/", base), "");
  assert.equal(siteOf("https://y.org/v1/", base), "");
  assert.equal(siteOf("https://x.org/docs/latest/", new URL("https://x.org/docs/")), "latest");
  assert.equal(siteOf("https://x.org/-x/", base), "");
  assert.equal(siteOf("https://x.org/%E0%A4%A/", base), "");
  assert.equal(siteOf("https://x.org/v1/", null), "");
});

test("readSettings: site and scope from the tag, the page's meta tag first", () => {
  const src = "https://x.org/v2/_static/ragcite/widget.js";
  const page = { page: "https://x.org/v2/index.html", contentRoot: "./", mac: false };
  const inferred = readSettings(tag({ "data-ragcite-server": "" }, src), page);
  assert.equal(inferred.site, "v2");
  assert.equal(inferred.scope, "site");
  const named = readSettings(tag({ "data-ragcite-site": "latest", "data-ragcite-scope": "all" }, src), page);
  assert.equal(named.site, "latest");
  assert.equal(named.scope, "all");
  const bad = readSettings(tag({ "data-ragcite-site": "../x", "data-ragcite-scope": "nope" }, src), page);
  assert.equal(bad.site, "v2");
  assert.equal(bad.scope, "site");
  const portal = readSettings(tag({}, src), { ...page, pageScope: " ALL " });
  assert.equal(portal.scope, "all");
  assert.equal(scopeOf("site"), "site");
  assert.equal(scopeOf(""), null);
});

test("every script the widget loads by itself carries the build's digest as ?v=", () => {
  const s = readSettings(
    tag({ "data-ragcite-assets": "0123456789abcdef" }, "https://x.org/book/_static/ragcite/widget.js?v=sphinx1"),
    { page: "https://x.org/book/index.html", contentRoot: "./", mac: false },
  );
  assert.equal(assetUrl("worker.js", s.assetBase).href, "https://x.org/book/_static/ragcite/worker.js?v=0123456789abcdef");
  assert.equal(
    assetUrl("snowball/german.js", s.assetBase).href,
    "https://x.org/book/_static/ragcite/snowball/german.js?v=0123456789abcdef",
  );
  // the worker resolves its neighbours against its own versioned URL
  const worker = assetUrl("worker.js", s.assetBase);
  assert.equal(assetUrl("store.js", worker).href, "https://x.org/book/_static/ragcite/store.js?v=0123456789abcdef");
  // a page of an older build (no digest), or a digest that is not one: bare names
  for (const value of [null, "<script>", "12"]) {
    /** @type {Record<string, string>} */
    const attrs = value === null ? {} : { "data-ragcite-assets": value };
    const old = readSettings(tag(attrs, "https://x.org/_static/ragcite/widget.js"), { page: "https://x.org/", contentRoot: "", mac: false });
    assert.equal(assetUrl("worker.js", old.assetBase).href, "https://x.org/_static/ragcite/worker.js");
  }
});
