// @ts-check
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");

require("../sse.js"); // the stream's parser, on globalThis.ragcite_lib as on a page
const { WidgetError, createClient, httpError, namesOf, scopeSite, servesSite } = require("../client.js");

/**
 * A real fetch Response, as the server would send it.
 * @param {number} status
 * @param {string} body
 * @param {Record<string, string>} [headers]
 */
const response = (status, body, headers = {}) => new Response(body, { status, headers });

/** @param {string} message */
const errorBody = (message) => JSON.stringify({ error: { code: "x", message, field: null } });

test("503 is busy, with the server's Retry-After (capped at an hour)", async () => {
  const e = await httpError(response(503, errorBody("busy"), { "Retry-After": "7" }));
  assert.ok(e instanceof WidgetError);
  assert.deepEqual([e.kind, e.retryAfter, e.message], ["busy", 7, "The answer server is busy."]);
  assert.equal((await httpError(response(503, "", { "Retry-After": "99999" }))).retryAfter, 3600);
  assert.equal((await httpError(response(503, ""))).retryAfter, 2);
});

test("429 is a rate limit, with the server's message", async () => {
  const e = await httpError(response(429, errorBody("Slow down."), { "Retry-After": "3" }));
  assert.deepEqual([e.kind, e.retryAfter, e.message], ["rate", 3, "Slow down."]);
  assert.equal((await httpError(response(429, "nope"))).retryAfter, 5);
});

test("4xx with a message is the reader's mistake; anything else the server's", async () => {
  const bad = await httpError(response(400, errorBody("question: must not be empty")));
  assert.deepEqual([bad.kind, bad.message], ["invalid", "question: must not be empty"]);
  const html = await httpError(response(404, "<html>not found</html>"));
  assert.deepEqual([html.kind, html.message], ["server", "The answer server failed (HTTP 404); try again."]);
  const down = await httpError(response(500, errorBody("internal error")));
  assert.deepEqual([down.kind, down.message], ["server", "internal error"]);
});

test("without a server nothing is fetched: static mode", async () => {
  assert.equal(await createClient(null).available(), false);
});

test("namesOf reads the sites of /api/health; one site served is null", () => {
  assert.deepEqual(namesOf([{ name: "v1" }, { name: "" }, null, { name: 3 }, { name: "latest" }]), ["v1", "latest"]);
  assert.equal(namesOf(undefined), null);
  assert.equal(namesOf(null), null);
});

test("scopeSite asks the page's own site only when the server serves it", () => {
  const page = { site: "v1", scope: /** @type {"site"} */ ("site") };
  assert.equal(scopeSite(page, ["v1", "v2"]), "v1");
  assert.equal(scopeSite(page, ["v2"]), null);
  assert.equal(scopeSite(page, null), null);
  assert.equal(scopeSite({ site: "v1", scope: "all" }, ["v1", "v2"]), null);
  assert.equal(scopeSite({ site: "", scope: "site" }, ["v1"]), null);
});

test("the client remembers the sites /api/health names", async () => {
  const saved = globalThis.fetch;
  globalThis.fetch = async () => response(200, JSON.stringify({ service: "ragcite", status: "ok", sites: [{ name: "v1" }, { name: "v2" }] }));
  try {
    const client = createClient(new URL("https://x.org/"));
    assert.equal(client.sites(), null);
    assert.equal(await client.available(), true);
    assert.deepEqual(client.sites(), ["v1", "v2"]);
  } finally {
    globalThis.fetch = saved;
  }
});

test("feedback is offered only when /api/health says so, and posted as JSON", async () => {
  const saved = globalThis.fetch;
  /** @type {{url: string, init: any}[]} */
  const sent = [];
  /** @type {{service: string, status: string, feedback?: boolean}} */
  let health = { service: "ragcite", status: "ok", feedback: true };
  globalThis.fetch = async (url, init) => {
    sent.push({ url: String(url), init });
    if (String(url).endsWith("/api/health")) return response(200, JSON.stringify(health));
    return response(404, errorBody("No answer has this answer_id."));
  };
  try {
    const client = createClient(new URL("https://x.org/"));
    assert.equal(client.feedback(), false); // health not read yet
    await client.available();
    assert.equal(client.feedback(), true);
    const body = { answer_id: "a".repeat(32), helpful: false, reason: "too vague" };
    await assert.rejects(client.sendFeedback(body), (e) => e instanceof WidgetError && e.kind === "invalid");
    const post = sent[sent.length - 1];
    assert.equal(post.url, "https://x.org/api/feedback");
    assert.equal(post.init.method, "POST");
    assert.deepEqual(JSON.parse(post.init.body), body);

    health = { service: "ragcite", status: "ok" }; // no question log
    const old = createClient(new URL("https://x.org/"));
    await old.available();
    assert.equal(old.feedback(), false);
  } finally {
    globalThis.fetch = saved;
  }
  assert.equal(createClient(null).feedback(), false);
});

// -- which server is the answer server (issue 42, defects 1 and 15) ------------

/** sessionStorage as a page has it: one per test, shared by its "pages". */
function fakeStorage() {
  /** @type {Map<string, string>} */
  const items = new Map();
  return {
    items,
    getItem: (/** @type {string} */ k) => (items.has(k) ? /** @type {string} */ (items.get(k)) : null),
    setItem: (/** @type {string} */ k, /** @type {string} */ v) => void items.set(k, String(v)),
    removeItem: (/** @type {string} */ k) => void items.delete(k),
  };
}

/**
 * Run `body` with `fetch` answering from `routes` (URL -> Response maker, or
 * an Error to throw) and a fresh sessionStorage; returns what was fetched.
 * @param {Record<string, (() => Response) | Error>} routes
 * @param {(sent: {method: string, url: string}[]) => Promise<void>} body
 */
async function withOrigin(routes, body) {
  const g = /** @type {any} */ (globalThis);
  const saved = { fetch: g.fetch, storage: g.sessionStorage };
  /** @type {{method: string, url: string}[]} */
  const sent = [];
  g.fetch = async (/** @type {string} */ url, /** @type {any} */ init) => {
    sent.push({ method: (init && init.method) || "GET", url: String(url) });
    const route = routes[String(url)];
    if (route instanceof Error) throw route;
    return route ? route() : response(404, "<html>Not Found</html>");
  };
  g.sessionStorage = fakeStorage();
  try {
    await body(sent);
  } finally {
    g.fetch = saved.fetch;
    if (saved.storage === undefined) delete g.sessionStorage;
    else g.sessionStorage = saved.storage;
  }
}

/** @param {string} root @param {string} [site] */
const placeAt = (root, site = "") => {
  const parent = new URL("../", root);
  const servers = parent.href === root ? [new URL(root)] : [new URL(root), parent];
  return { servers, serverNamed: false, root, site };
};

/** @param {object} body */
const json = (body) => () => response(200, JSON.stringify(body), { "Content-Type": "application/json" });

test("servesSite: only a ragcite health counts, and beside the site it must serve this site", () => {
  const root = "https://x.org/docs/";
  const at = placeAt(root, "docs");
  const own = new URL(root);
  const parent = new URL("https://x.org/");
  // a common health format of some other app
  assert.equal(servesSite({ status: "ok" }, parent, at), false);
  assert.equal(servesSite({ status: "ok" }, own, at), false);
  assert.equal(servesSite(null, own, at), false);
  assert.equal(servesSite("ok", own, at), false);
  // one site: served at the server's root, so only at the site root
  assert.equal(servesSite({ service: "ragcite", status: "ok", sites: null }, own, at), true);
  assert.equal(servesSite({ service: "ragcite", status: "ok", sites: null }, parent, at), false);
  // several: this site's name among them
  const several = { service: "ragcite", status: "ok", sites: [{ name: "docs" }, { name: "v2" }] };
  assert.equal(servesSite(several, parent, at), true);
  assert.equal(servesSite(several, parent, placeAt(root, "other")), false);
  assert.equal(servesSite(several, parent, placeAt(root, "")), false);
  // a server the page names: saying it is ragcite is enough
  const named = { servers: [new URL("https://api.x.org/")], serverNamed: true, root, site: "" };
  assert.equal(servesSite({ service: "ragcite", status: "ok" }, named.servers[0], named), true);
  assert.equal(servesSite({ status: "ok" }, named.servers[0], named), false);
});

test("a site under a sub-path never takes another app's health for a server", async () => {
  await withOrigin({ "https://x.org/api/health": json({ status: "ok" }) }, async (sent) => {
    const client = createClient(placeAt("https://x.org/docs/", "docs"));
    assert.equal(await client.available(), false);
    assert.deepEqual(sent, [
      { method: "GET", url: "https://x.org/docs/api/health" },
      { method: "GET", url: "https://x.org/api/health" },
    ]);
    assert.equal(client.feedback(), false);
    // the verdict holds for the visit: the next page asks nothing
    const next = createClient(placeAt("https://x.org/docs/", "docs"));
    assert.equal(await next.available(), false);
    assert.equal(await next.available(), false);
    assert.equal(sent.length, 2);
  });
});

test("a static host is asked once per visit, and never with no server configured", async () => {
  await withOrigin({}, async (sent) => {
    for (let page = 0; page < 3; page++) {
      const client = createClient(placeAt("https://x.org/docs/", "docs"));
      assert.equal(await client.available(), false);
    }
    assert.equal(sent.length, 2, JSON.stringify(sent));
    assert.equal(await createClient({ servers: [], serverNamed: false, root: "https://x.org/docs/", site: "" }).available(), false);
    assert.equal(sent.length, 2);
  });
});

test("ragcite serve with one site is found at the site root, and remembered with its health", async () => {
  const health = { service: "ragcite", status: "ok", sites: null, feedback: true };
  await withOrigin({ "https://x.org/api/health": json(health) }, async (sent) => {
    const client = createClient(placeAt("https://x.org/"));
    assert.equal(await client.available(), true);
    assert.equal(client.feedback(), true);
    const next = createClient(placeAt("https://x.org/"));
    assert.equal(await next.available(), true);
    assert.equal(next.feedback(), true);
    assert.equal(sent.length, 1);
  });
});

test("several sites: found at the parent folder, named there; questions go to it", async () => {
  const health = { service: "ragcite", status: "ok", sites: [{ name: "v1", project: "P", version: "1.0" }, { name: "v2" }] };
  const routes = {
    "https://x.org/api/health": json(health),
    "https://x.org/api/ask/stream": () =>
      response(200, `event: final\ndata: ${JSON.stringify({ answer: "A.", citations: [] })}\n\n`),
  };
  await withOrigin(routes, async (sent) => {
    const client = createClient(placeAt("https://x.org/v1/", "v1"));
    assert.equal(await client.available(), true);
    assert.deepEqual(client.sites(), ["v1", "v2"]);
    const answer = await client.stream({ question: "q", mode: "book" }, new AbortController().signal, () => {});
    assert.equal(answer.answer, "A.");
    assert.deepEqual(sent.map((r) => `${r.method} ${r.url}`), [
      "GET https://x.org/v1/api/health",
      "GET https://x.org/api/health",
      "POST https://x.org/api/ask/stream",
    ]);
    // the next page of the visit knows the server and its sites
    const next = createClient(placeAt("https://x.org/v1/", "v1"));
    assert.equal(await next.available(), true);
    assert.deepEqual(next.siteList()?.map((s) => [s.name, s.project, s.version]), [
      ["v1", "P", "1.0"],
      ["v2", "", ""],
    ]);
    assert.equal(sent.length, 3);
    // forgotten when it fails: asked again
    next.forget();
    assert.equal(await next.available(), true);
    assert.equal(sent.length, 5);
  });
});

test("no answer or a server that is not ready is asked again later, not kept for the visit", async () => {
  const routes = {
    "https://x.org/docs/api/health": new TypeError("Failed to fetch"),
    "https://x.org/api/health": () => response(503, JSON.stringify({ service: "ragcite", status: "error", sites: [{ name: "docs" }] })),
  };
  await withOrigin(routes, async (sent) => {
    assert.equal(await createClient(placeAt("https://x.org/docs/", "docs")).available(), false);
    assert.equal(await createClient(placeAt("https://x.org/docs/", "docs")).available(), false);
    assert.equal(sent.length, 4);
  });
});

test("a server the page already took stays taken when it stops serving this site; a new visit asks strictly", async () => {
  /** @type {any} */
  let health = { service: "ragcite", status: "ok", sites: [{ name: "v1" }, { name: "v2" }] };
  await withOrigin({ "https://x.org/api/health": () => response(200, JSON.stringify(health)) }, async () => {
    const client = createClient(placeAt("https://x.org/v1/", "v1"));
    assert.equal(await client.available(), true);
    health = { service: "ragcite", status: "ok", sites: [{ name: "v2" }] }; // restarted without v1
    client.forget();
    assert.equal(await client.available(), true);
    assert.deepEqual(client.sites(), ["v2"]);
    /** @type {any} */ (globalThis).sessionStorage = fakeStorage();
    assert.equal(await createClient(placeAt("https://x.org/v1/", "v1")).available(), false);
  });
});
