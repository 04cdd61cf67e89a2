// @ts-check
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");

const {
  chosenSite,
  compareVersions,
  createClient,
  httpError,
  infosOf,
  otherVersion,
  pageVersion,
  versionChoices,
  versionKey,
  versionLabel,
} = require("../client.js");

/** @param {string} name @param {string} version @param {string} [project] @param {string} [release] */
const site = (name, version, project = "Book", release = version) => ({
  name,
  url: `${name}/`,
  project,
  version,
  release,
  passages: 140,
  index_version: "7",
});

test("versions sort as people read them: numbers as numbers, words after", () => {
  const sorted = ["1.10", "latest", "1.9", "2.0", "1.9.1", "1.0rc1", "1.0"].sort(compareVersions);
  assert.deepEqual(sorted, ["1.0", "1.0rc1", "1.9", "1.9.1", "1.10", "2.0", "latest"]);
  assert.equal(compareVersions("2.0", "2.0"), 0);
});

test("infosOf keeps the named sites of /api/health, as strings", () => {
  assert.equal(infosOf(null), null);
  assert.equal(infosOf({ name: "v1" }), null);
  const got = infosOf([site("v1", "1.0"), { name: "" }, null, "v2", { name: "x", version: 2 }]);
  assert.deepEqual(got, [
    { name: "v1", url: "v1/", project: "Book", version: "1.0", release: "1.0" },
    { name: "x", url: "", project: "", version: "", release: "" },
  ]);
});

test("the picker offers the versions of the page's own book, newest first", () => {
  const served = infosOf([site("v1.2", "1.2"), site("latest", "2.0"), site("guide", "3.1", "Other book"), site("v1.10", "1.10")]);
  const choices = versionChoices("v1.2", served);
  assert.deepEqual(
    choices.map((c) => [c.name, c.label, c.own]),
    [
      ["latest", "2.0 (latest)", false],
      ["v1.10", "1.10", false],
      ["v1.2", "1.2 (this page)", true],
    ],
  );
  // another book of the portal has no other version: no picker
  assert.deepEqual(versionChoices("guide", served), []);
  // one site served, or the page's site not among those served: no picker
  assert.deepEqual(versionChoices("v1.2", null), []);
  assert.deepEqual(versionChoices("gone", served), []);
  assert.deepEqual(versionChoices("", served), []);
});

test("two sites of one version are told apart by their names", () => {
  const served = infosOf([site("stable", "2.0", "Book", "2.0.1"), site("2.0", "2.0", "Book", "2.0.0")]);
  assert.deepEqual(
    versionChoices("stable", served).map((c) => c.label),
    ["2.0 (stable, this page)", "2.0"],
  );
});

test("the reader's choice holds while it is offered; else the page's own", () => {
  const choices = versionChoices("v1", infosOf([site("v1", "1.0"), site("v2", "2.0")]));
  assert.equal(chosenSite(choices, "v2", "v1"), "v2");
  assert.equal(chosenSite(choices, null, "v1"), "v1");
  assert.equal(chosenSite(choices, "v3", "v1"), "v1"); // no longer served
  assert.equal(chosenSite([], "v2", "v1"), "v1");
  assert.equal(versionKey("v1"), "ragcite:version:v1");
});

test("a source gets a version badge only when both versions are known and differ", () => {
  const served = infosOf([site("v1", "1.0"), site("v2", "2.0")]);
  const page = pageVersion("v1", served);
  assert.equal(page, "1.0");
  assert.equal(otherVersion("2.0", page), true);
  assert.equal(otherVersion("1.0", page), false);
  assert.equal(otherVersion(undefined, page), false);
  assert.equal(otherVersion("", page), false);
  assert.equal(otherVersion("2.0", pageVersion("v1", null)), false); // one site served
});

test("the client keeps the sites /api/health lists with their versions", async () => {
  const saved = globalThis.fetch;
  globalThis.fetch = async () =>
    new Response(JSON.stringify({ service: "ragcite", status: "ok", sites: [site("v1", "1.0"), site("v2", "2.0")] }), { status: 200 });
  try {
    const client = createClient(new URL("https://x.org/"));
    assert.equal(client.siteList(), null);
    await client.available();
    assert.deepEqual(
      client.siteList()?.map((s) => [s.name, s.version]),
      [
        ["v1", "1.0"],
        ["v2", "2.0"],
      ],
    );
  } finally {
    globalThis.fetch = saved;
  }
});

/** @param {number} status @param {object} body */
const reply = (status, body) => new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });

test("a site the server no longer serves is an error of its own kind", async () => {
  // what `ragcite serve` answers today for a site it does not serve (a 400
  // `invalid_request` naming the field `site`), restarted with or without --site
  for (const message of ["No site 'v2' is served here; sites: v1.", "This server serves one site; leave out 'site'."]) {
    const e = await httpError(reply(400, { error: { code: "invalid_request", message, field: "site" } }));
    assert.equal(e.kind, "unserved", message);
    assert.equal(e.message, message);
  }
  // any other invalid request stays one the reader has to change
  const other = await httpError(reply(400, { error: { code: "invalid_request", message: "question: too long", field: "question" } }));
  assert.equal(other.kind, "invalid");
  const version = await httpError(reply(400, { error: { code: "invalid_request", message: "No site asked has version '9'", field: "version" } }));
  assert.equal(version.kind, "invalid"); // a version named by the page's script: its own choice
});

test("a version label with bidi text is isolated; plain ASCII is left as it is", () => {
  const RLO = "\u202e";
  const served = infosOf([site("v1", `${RLO}1.0`), site("v2", "2.0"), site("v3", "\u05d2\u05e8\u05e1\u05d4 3")]);
  const labels = Object.fromEntries(versionChoices("v1", served).map((c) => [c.name, c.label]));
  assert.deepEqual(labels, {
    v1: `\u2068${RLO}1.0\u2069 (this page)`,
    v2: "2.0",
    v3: "\u2068\u05d2\u05e8\u05e1\u05d4 3\u2069",
  });
  // a name beside a version it does not repeat, and two sites of one version
  const twins = infosOf([site("stable", `${RLO}2.0`), site("latest", `${RLO}2.0`)]);
  assert.deepEqual(
    versionChoices("stable", twins).map((c) => c.label),
    [`\u2068${RLO}2.0\u2069 (latest)`, `\u2068${RLO}2.0\u2069 (stable, this page)`],
  );
});

test("versionLabel names a served site, the page's own also when it is the only version left", () => {
  const two = infosOf([site("v1", "1.0"), site("v2", "2.0"), site("guide", "3.1", "Other book")]);
  assert.equal(versionLabel("v1", two, "v2"), "2.0");
  assert.equal(versionLabel("v1", two, "v1"), "1.0 (this page)");
  assert.equal(versionLabel("v1", two, "guide"), "3.1"); // another book: no picker, still a label
  assert.equal(versionLabel("v1", two, "gone"), "");
  assert.equal(versionLabel("v1", null, "v1"), "");
  // v2 removed: no picker any more, the page's own version still has a label
  const one = infosOf([site("v1", "\u202e1.0")]);
  assert.deepEqual(versionChoices("v1", one), []);
  assert.equal(versionLabel("v1", one, "v1"), "\u2068\u202e1.0\u2069 (this page)");
});
