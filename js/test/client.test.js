// @ts-check
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");

const { WidgetError, createClient, httpError, namesOf, scopeSite } = require("../client.js");

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
  globalThis.fetch = async () => response(200, JSON.stringify({ status: "ok", sites: [{ name: "v1" }, { name: "v2" }] }));
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
  /** @type {{status: string, feedback?: boolean}} */
  let health = { status: "ok", feedback: true };
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

    health = { status: "ok" }; // an older server, or no question log
    const old = createClient(new URL("https://x.org/"));
    await old.available();
    assert.equal(old.feedback(), false);
  } finally {
    globalThis.fetch = saved;
  }
  assert.equal(createClient(null).feedback(), false);
});
