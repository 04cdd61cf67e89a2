"use strict";
/**
 * Fuzz the browser answer engine's inputs in Node: what `fuzz_engine.py`
 * runs (see its docstring for the why and the report).
 *
 * The engine runs as in the reader's worker: `createWorkerHost` of
 * `js/worker.js` with the real store, static search, answer engine,
 * WordPiece tokenizer and question encoder (onnxruntime-web's WASM build,
 * the site's own `model.onnx`), over a fetch that serves a built site's
 * `_ragcite/` from memory. Each case mutates one input (sometimes two):
 *
 * - `question`: random and mutated questions (and selections) asked of an
 *   engine loaded from the intact site;
 * - `manifest`, `shards` (the shard listing), `ranker`, `static` (the
 *   static search index), `embeddings`, `embedding_scales`, `tokenizer`:
 *   the file's JSON mutated (a value deleted, retyped, made huge or odd) or
 *   its bytes (flipped, cut, padded), then signed again in the manifest
 *   (its size and SHA-256, as a build would write them) so the mutation
 *   reaches the parsers, or now and then left unsigned;
 * - `shard`: one passage shard's header JSON or bytes, renamed after its
 *   new digest in a re-signed listing; the questions asked then fetch it.
 *
 * A case loads, asks two or three questions and one static search, and
 * fails when the host lets an exception out of `onMessage`, a message gets
 * no reply (the page would wait forever), the process sees an uncaught
 * exception or unhandled rejection, an error reply has a `kind` the page
 * has no sentence for (`WHY` of `js/browser.js`) or a message that is no
 * sentence (a JS engine's own words: "Cannot read properties of
 * undefined"), or an answer is malformed (unknown outcome, a confidence
 * that is not a number from 0 to 1).
 *
 *   node benchmarks/fuzz_engine.js SITE OUT [--seed 0] [--seconds 30] [--cases N]
 *
 * SITE: a built site (its `_ragcite/`); OUT: the JSON report. Onnxruntime's
 * session is made once per model (what is fuzzed is the engine's inputs,
 * not the runtime's start).
 */

const fs = require("node:fs");
const path = require("node:path");
const crypto = require("node:crypto");

const REPO = path.join(__dirname, "..");
const JS = path.join(REPO, "js");
const ORT = path.join(REPO, "node_modules", "onnxruntime-web", "dist", "ort.wasm.min.js");
const ORIGIN = "https://books.example";
const INDEX = `${ORIGIN}/guide/_ragcite/`;
const SCRIPTS = `${ORIGIN}/guide/_static/ragcite/`;
const REPLY_MS = 60_000;

// -- the failures counted outside a case's own replies ----------------------------

const processErrors = [];
process.on("uncaughtException", (error) => processErrors.push(`uncaught: ${error && error.stack}`));
process.on("unhandledRejection", (error) => processErrors.push(`unhandled rejection: ${error && error.stack}`));

// -- the engine's scripts, as the worker imports them ------------------------------

// under Node the registry is require (js/lib.js): the worker's scripts by name
const lib = require(path.join(JS, "lib.js"));
const { CORE_SCRIPTS, createWorkerHost } = require(path.join(JS, "worker.js"));
const { WHY } = require(path.join(JS, "browser.js"));
for (const name of CORE_SCRIPTS) require(path.join(JS, name));
const KINDS = new Set(Object.keys(WHY));

/** The worker's `importScripts`: the repository's own scripts by name. */
function importScripts(...urls) {
  for (const url of urls) {
    const u = new URL(url);
    if (u.href.startsWith(INDEX)) continue; // the runtime's script: `ort()` below
    if (!u.href.startsWith(SCRIPTS)) throw new Error(`importScripts outside the scripts' folder: ${url}`);
    const name = u.pathname.slice(new URL(SCRIPTS).pathname.length);
    const file = path.join(JS, name);
    if (!file.startsWith(JS + path.sep) || !fs.existsSync(file)) throw new Error(`NetworkError: ${name} not found`);
    require(file);
  }
}

// onnxruntime-web as the worker sees it, its sessions made once per model
const realOrt = require(ORT);
/** @type {Map<string, Promise<any>>} */
const sessions = new Map();
function ort() {
  return {
    env: { wasm: {} },
    Tensor: realOrt.Tensor,
    InferenceSession: {
      create(bytes, options) {
        const key = crypto.createHash("sha256").update(bytes).digest("hex");
        if (!sessions.has(key)) sessions.set(key, realOrt.InferenceSession.create(bytes, options));
        return sessions.get(key);
      },
    },
  };
}

// -- a seeded generator ---------------------------------------------------------------

function generator(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n) => Math.floor(next() * n);
  const pick = (list) => list[int(list.length)];
  const chance = (p) => next() < p;
  return { next, int, pick, chance };
}

// -- the site ---------------------------------------------------------------------

function readSite(site) {
  const dir = fs.existsSync(path.join(site, "_ragcite")) ? path.join(site, "_ragcite") : site;
  /** @type {Map<string, Uint8Array>} */
  const files = new Map();
  const walk = (folder, prefix) => {
    for (const entry of fs.readdirSync(folder, { withFileTypes: true })) {
      if (entry.isDirectory()) walk(path.join(folder, entry.name), `${prefix}${entry.name}/`);
      else files.set(`${prefix}${entry.name}`, new Uint8Array(fs.readFileSync(path.join(folder, entry.name))));
    }
  };
  walk(dir, "");
  return files;
}

const sha = (bytes) => crypto.createHash("sha256").update(bytes).digest("hex");
const text = (bytes) => new TextDecoder().decode(bytes);
const utf8 = (string) => new Uint8Array(Buffer.from(string, "utf8"));

/** A fetch over `files` (names inside `_ragcite/`), as a static host answers. */
function fetcher(files) {
  return async (url, init) => {
    if (init && init.signal && init.signal.aborted) throw new DOMException("aborted", "AbortError");
    const href = String(url);
    const name = href.startsWith(INDEX) ? decodeURIComponent(new URL(href).pathname.slice(new URL(INDEX).pathname.length)) : null;
    const body = name === null ? undefined : files.get(name);
    const response = body ? new Response(body, { status: 200 }) : new Response("not found", { status: 404 });
    Object.defineProperty(response, "url", { value: href });
    return response;
  };
}

// -- mutations ----------------------------------------------------------------------

const ODD_STRINGS = [
  "", " ", "../passages.jsonl", "/etc/passwd", "https://evil.example/x", "a\u0000b", "\ud800", "%2e%2e/x",
  "x".repeat(70_000), "ch0-sec0-p0", "ranker.json", "shards/", "?", "#", "\\\\host\\x", "é", "𝔘",
];
const ODD_NUMBERS = [0, -1, 1, 2, 3, 7, 0.5, -0.0, 1e308, -1e308, 2 ** 31, 2 ** 53 + 1, 255, 256, 65536, 1e9];

function oddValue(r, depth = 0) {
  switch (r.int(9)) {
    case 0:
      return null;
    case 1:
      return r.chance(0.5);
    case 2:
      return r.pick(ODD_NUMBERS);
    case 3:
      return r.pick(ODD_STRINGS);
    case 4:
      return depth > 2 ? [] : Array.from({ length: r.int(4) }, () => oddValue(r, depth + 1));
    case 5:
      return depth > 2 ? {} : { [r.pick(["a", "rows", "files", "0", "__proto__"])]: oddValue(r, depth + 1) };
    case 6: {
      let deep = [];
      for (let i = 0; i < 2000; i++) deep = [deep];
      return deep;
    }
    case 7:
      return Array.from({ length: 50_000 }, (_, i) => i);
    default:
      return r.pick(["NaN", "Infinity", "-1", "1e999", "true", "{}", "[]"]);
  }
}

/** Every [parent, key] pair in a JSON value (a sample of big arrays). */
function slots(value, r, out = [], depth = 0) {
  if (depth > 6 || value === null || typeof value !== "object") return out;
  const keys = Array.isArray(value)
    ? value.length > 12
      ? [0, 1, value.length - 1, r.int(value.length), r.int(value.length)]
      : value.map((_, i) => i)
    : Object.keys(value);
  for (const key of keys) {
    out.push([value, key]);
    slots(value[key], r, out, depth + 1);
  }
  return out;
}

/** One mutation of a parsed JSON value, in place; returns what it did. */
function mutateJson(root, r) {
  const all = slots(root, r);
  if (!all.length) return "nothing to mutate";
  const [parent, key] = r.pick(all);
  const old = parent[key];
  const how = r.int(10);
  if (how === 0 && !Array.isArray(parent)) {
    delete parent[key];
    return `deleted ${key}`;
  }
  if (how === 1 && Array.isArray(old)) {
    old.length = r.int(old.length + 1);
    return `cut ${key} to ${old.length}`;
  }
  if (how === 2 && Array.isArray(old) && old.length) {
    for (let i = 0; i < 1 + r.int(5); i++) old.push(old[r.int(old.length)]);
    return `grew ${key}`;
  }
  if (how === 3 && typeof old === "number") {
    parent[key] = r.pick([old + 1, old - 1, -old, old * 1000, Math.floor(old / 2), old + 0.5]);
    return `${key}: ${old} -> ${parent[key]}`;
  }
  if (how === 4 && typeof old === "string") {
    parent[key] = r.pick([old + old, old.slice(0, r.int(old.length + 1)), old.toUpperCase(), `${old}/..`, `../${old}`]);
    return `${key}: string changed`;
  }
  if (how === 5 && all.length > 1) {
    const [p2, k2] = r.pick(all);
    // a copy: the other value may hold this one (no cycle in JSON)
    parent[key] = structuredClone(p2[k2]);
    return `${key} <- the value of ${k2}`;
  }
  if (how === 6 && old && typeof old === "object") {
    parent[key] = Array.isArray(old) ? Object.assign({}, old) : Object.values(old);
    return `${key}: array <-> object`;
  }
  parent[key] = oddValue(r);
  return `${key} = ${JSON.stringify(parent[key]).slice(0, 40)}`;
}

/** One mutation of bytes; returns the new bytes and what it did. */
function mutateBytes(bytes, r) {
  const out = new Uint8Array(bytes);
  const how = r.int(6);
  if (how === 0 && out.length) {
    const n = 1 + r.int(8);
    for (let i = 0; i < n; i++) out[r.int(out.length)] ^= 1 << r.int(8);
    return [out, `${n} bits flipped`];
  }
  if (how === 1) {
    const at = r.int(out.length + 1);
    return [out.slice(0, at), `cut at ${at} of ${out.length}`];
  }
  if (how === 2) {
    const more = Uint8Array.from({ length: 1 + r.int(64) }, () => r.int(256));
    return [new Uint8Array(Buffer.concat([out, more])), `${more.length} bytes appended`];
  }
  if (how === 3 && out.length) {
    const at = r.int(out.length);
    out.fill(r.pick([0, 0xff, 0x20]), at, at + 1 + r.int(64));
    return [out, `filled at ${at}`];
  }
  if (how === 4) return [new Uint8Array(0), "emptied"];
  const at = r.int(Math.min(out.length, 64) + 1);
  const head = out.slice(0, at);
  head.reverse();
  out.set(head, 0);
  return [out, `first ${at} bytes reversed`];
}

/** The JSON inside the static index file, with its prefix. */
const { STATIC_PREFIX } = require(path.join(JS, "spec.js"));

function mutateFile(role, bytes, r) {
  if (r.chance(0.25) && role !== "shards") return mutateBytes(bytes, r);
  try {
    return mutateParsed(role, bytes, r);
  } catch {
    return mutateBytes(bytes, r); // no longer parses (mutated before)
  }
}

function mutateParsed(role, bytes, r) {
  if (role === "static") {
    const body = text(bytes).trimEnd();
    const data = JSON.parse(body.slice(STATIC_PREFIX.length, -1));
    const did = mutateJson(data, r);
    return [utf8(`${STATIC_PREFIX}${JSON.stringify(data)};\n`), did];
  }
  if (role === "embeddings" || role === "embedding_scales") {
    // the .npy header: shape and dtype are what the parser trusts
    const raw = Buffer.from(bytes);
    const size = raw.readUInt16LE(8);
    const header = raw.subarray(10, 10 + size).toString("latin1");
    const edits = [
      (h) => h.replace(/'shape': \((\d+)/, (_, n) => `'shape': (${Number(n) + r.pick([-1, 1, 1000, -Number(n)])}`),
      (h) => h.replace(/'descr': '[^']+'/, `'descr': '${r.pick(["<f8", "|i1", "<f4", "<i8", "<u2", "?"])}'`),
      (h) => h.replace("False", "True"),
      (h) => h.replace(/\(\d+, \d+\)/, "(0, 0)"),
      (h) => h.replace(/\d+/, "99999999999"),
    ];
    const edited = r.pick(edits)(header).padEnd(size).slice(0, size);
    const out = Buffer.from(raw);
    out.write(edited, 10, "latin1");
    return [new Uint8Array(out), "npy header edited"];
  }
  const data = JSON.parse(text(bytes));
  const did = mutateJson(data, r);
  return [utf8(JSON.stringify(data)), did];
}

/** A shard with its header JSON or bytes mutated (`formats/shards.py`). */
function mutateShard(bytes, r) {
  if (r.chance(0.4)) return mutateBytes(bytes, r);
  const raw = Buffer.from(bytes);
  let head;
  try {
    head = JSON.parse(raw.subarray(12, 12 + raw.readUInt32LE(8)).toString("utf8"));
  } catch {
    return mutateBytes(bytes, r);
  }
  const size = raw.readUInt32LE(8);
  const did = mutateJson(head, r);
  let json = Buffer.from(JSON.stringify(head));
  json = Buffer.concat([json, Buffer.from(" ".repeat((4 - ((12 + json.length) % 4)) % 4))]);
  const fixed = Buffer.from(raw.subarray(0, 12));
  fixed.writeUInt32LE(json.length, 8);
  if (r.chance(0.2)) fixed.writeUInt32LE(r.pick([0, 2, 0xffffffff]), 4);
  return [new Uint8Array(Buffer.concat([fixed, json, raw.subarray(12 + size)])), `header: ${did}`];
}

/** One case's files: the site with one or two of its inputs mutated. */
function mutatedSite(original, target, r) {
  const files = new Map(original);
  let manifest;
  try {
    manifest = JSON.parse(text(files.get("manifest.json")));
  } catch {
    return { files, did: "" }; // a damaged manifest takes no second mutation
  }
  if (!manifest || typeof manifest.files !== "object" || !manifest.files || !manifest.bytes || !manifest.sha256) {
    return { files, did: "" };
  }
  const sign = (role, name, bytes) => {
    files.set(name, bytes);
    if (!r.chance(0.1)) {
      manifest.bytes[role] = bytes.length;
      manifest.sha256[role] = sha(bytes);
    }
  };
  const did = [];
  if (target === "shard") {
    const listingName = manifest.files.shards;
    const listing = JSON.parse(text(files.get(listingName)));
    const entry = r.pick(listing.shards);
    const [bytes, how] = mutateShard(files.get(entry[1]), r);
    const digest = sha(bytes);
    const folder = entry[1].slice(0, entry[1].lastIndexOf("/") + 1);
    const base = entry[1].slice(entry[1].lastIndexOf("/") + 1).split(".")[0];
    const name = `${folder}${digest.slice(0, base.length)}${entry[1].slice(folder.length + base.length)}`;
    if (r.chance(0.9)) entry[1] = name;
    files.set(entry[1], bytes);
    sign("shards", listingName, utf8(JSON.stringify(listing)));
    did.push(`shard ${how}`);
  } else if (target !== "manifest") {
    const name = manifest.files[target];
    const [bytes, how] = mutateFile(target, files.get(name), r);
    sign(target, name, bytes);
    did.push(how);
  }
  let manifestBytes = utf8(JSON.stringify(manifest));
  if (target === "manifest") {
    const [bytes, how] = r.chance(0.2) ? mutateBytes(manifestBytes, r) : mutateFile("manifest", manifestBytes, r);
    manifestBytes = bytes;
    did.push(how);
  }
  files.set("manifest.json", manifestBytes);
  return { files, did: did.join("; ") };
}

// -- questions -------------------------------------------------------------------------

const PIECES = [
  "How long should the bloom take?", "bloom", "What grind size for espresso?", "water temperature", "crema",
  "😀", "👩‍🔬", "🇧🇷", "\ud800", "\udfff", "\u0000", "\u202e", "\ufeff", "\u200b", "\u00a0", "\u3000", "\u001c",
  "日本語のテキスト", "什么是", "Straße", "İstanbul", "ﷺ", "x²", "[1]", "[ch1-sec0-p1]", "<img src=x onerror=alert(1)>",
  "javascript:alert(1)", "?", "...", "\n", "\t", "a".repeat(300), "𐌀".repeat(300), "é".repeat(50),
];

/** Asked in the first question case: the edges a reader may reach. */
const HAND = [
  { question: "\ud800 bloom \udfff" },
  { question: "bloom \udc00" },
  { question: "" },
  { question: " \n\t " },
  { question: "😀".repeat(2000) },
  { question: "😀".repeat(2001) },
  { question: "x".repeat(2001) },
  { question: ` ${"x".repeat(2000)} ` },
  { question: "bloom", selection: "\ud800" },
  { question: "bloom", selection: " \n " },
  { question: "bloom", selection: "é".repeat(20001) },
  { question: `bloom ${"a".repeat(300)}` },
];

function fuzzQuestion(r) {
  const how = r.int(8);
  if (how === 0) return r.pick(PIECES);
  if (how === 1) {
    // random code points, lone surrogates included
    return Array.from({ length: 1 + r.int(40) }, () => String.fromCharCode(r.int(0x10000))).join("");
  }
  if (how === 2) return r.pick(["😀", "x", " ", "é", "日"]).repeat(r.pick([1000, 1999, 2000, 2001, 2002, 4000]));
  if (how === 3) return " ".repeat(r.int(3000)) + r.pick(PIECES) + "\n".repeat(r.int(3000));
  if (how === 4) return String.fromCodePoint(...Array.from({ length: 1 + r.int(30) }, () => r.int(0x110000))).replace(/[\ud800-\udfff]/g, (c) => (r.chance(0.7) ? "" : c));
  const parts = Array.from({ length: 1 + r.int(6) }, () => r.pick(PIECES));
  return parts.join(r.pick([" ", "", "\n", "-"]));
}

// -- running a case -------------------------------------------------------------------

const RAW = new RegExp(
  [
    "Cannot read propert", "Cannot set propert", "is not a function", "is not iterable", "is not defined",
    "is not a constructor", "Unexpected token", "Unexpected end of", "Unexpected non-whitespace", "in JSON at position",
    "Invalid array length", "Invalid typed array length", "Invalid string length", "Maximum call stack",
    "Cannot convert", "Cannot destructure", "Cannot create property", "Reduce of empty array", "out of range",
    "Offset is outside", "Start offset", "must be non-negative", "should be a multiple of", "Invalid time value",
    "BigInt", "\\[object ", "^undefined", "^null",
  ].join("|"),
);

/** What a failure to allocate says (the worker's "memory" kind). */
const MEMORY = /memory|\bOOM\b|alloc|Invalid string length/i;

/** Whether `message` is ours (says what is wrong), not a JS engine's own words. */
function isSentence(message) {
  return typeof message === "string" && message.trim().length >= 8 && !RAW.test(message);
}

const OUTCOMES = new Set(["answer", "passages", "not_found"]);

function checkAnswer(answer) {
  if (!answer || typeof answer !== "object") return "the answer is not an object";
  if (!OUTCOMES.has(answer.outcome)) return `unknown outcome ${JSON.stringify(answer.outcome)}`;
  if (typeof answer.answer !== "string") return "the answer text is not a string";
  if (!Array.isArray(answer.citations)) return "citations is not a list";
  const c = answer.confidence;
  if (typeof c !== "number" || !Number.isFinite(c) || c < 0 || c > 1) return `confidence ${c}`;
  for (const citation of answer.citations) {
    if (!citation || (typeof citation.url !== "string" && citation.passage_id !== "user-selection")) {
      return "a citation of the book without a URL";
    }
    if (/^\s*(javascript|data|vbscript):/i.test(citation.url || "")) return `a citation URL ${citation.url.slice(0, 40)}`;
  }
  return null;
}

/** Sends one message and waits for its reply (or the load's last word). */
async function send(host, posted, message, done) {
  const from = posted.length;
  let escaped = null;
  const finished = host.onMessage({ data: message }).catch((error) => {
    escaped = error;
  });
  const timer = new Promise((resolve) => setTimeout(resolve, REPLY_MS, "timeout"));
  const result = await Promise.race([finished.then(() => "done"), timer]);
  const replies = posted.slice(from);
  const reply = replies.find(done);
  return { reply, escaped, timeout: result === "timeout", replies };
}

async function runCase(files, r, questions, record) {
  const posted = [];
  const host = createWorkerHost({
    post: (m) => posted.push(JSON.parse(JSON.stringify(m))),
    importScripts,
    lib,
    ort,
    base: `${SCRIPTS}worker.js?v=fuzz`,
    fetch: fetcher(files),
    WebAssembly: { compile: async () => ({}) },
    subtle: crypto.webcrypto.subtle,
  });
  const problems = [];
  const replies = [];
  const messages = [];
  const check = (what, sent) => {
    if (sent.escaped) problems.push(`${what}: onMessage threw ${sent.escaped && sent.escaped.stack}`);
    if (sent.timeout) problems.push(`${what}: no reply in ${REPLY_MS / 1000} s`);
    else if (!sent.reply) problems.push(`${what}: no reply`);
    for (const m of sent.replies) {
      if (m.type !== "error") continue;
      if (!KINDS.has(m.kind)) problems.push(`${what}: kind ${JSON.stringify(m.kind)} has no sentence for the reader`);
      if (!isSentence(m.message)) problems.push(`${what}: ${m.kind}: ${JSON.stringify(String(m.message).slice(0, 200))}`);
      if (m.kind === "memory" && !MEMORY.test(m.message)) {
        problems.push(`${what}: told the reader the device ran out of memory: ${JSON.stringify(String(m.message).slice(0, 200))}`);
      }
    }
    if (sent.reply) replies.push(sent.reply.type === "error" ? `error:${sent.reply.kind}` : sent.reply.type);
    for (const m of sent.replies) if (m.type === "error") messages.push(`${m.kind}: ${shape(m.message)}`);
  };
  const load = await send(host, posted, { type: "load", manifest: `${INDEX}manifest.json` }, (m) => m.type === "ready" || m.type === "error");
  check("load", load);
  let id = 1;
  for (const q of questions) {
    const ask = { type: "ask", id: id++, question: q.question };
    if (q.selection) ask.selection = q.selection;
    const sent = await send(host, posted, ask, (m) => m.id === ask.id);
    check("ask", sent);
    if (sent.reply && sent.reply.type === "answer") {
      const wrong = checkAnswer(sent.reply.answer);
      if (wrong) problems.push(`ask: ${wrong}`);
    }
    if (record) {
      const reply = sent.reply;
      record.push({
        question: q.question,
        selection: q.selection || null,
        refused: reply && reply.type === "error" && reply.kind === "invalid" ? reply.message : null,
        reply: reply ? (reply.type === "error" ? `error:${reply.kind}` : reply.answer.outcome) : "none",
      });
    }
  }
  const search = { type: "search", id: id++, question: questions.length ? questions[0].question : "bloom", k: 5 };
  check("search", await send(host, posted, search, (m) => m.id === search.id));
  return { problems, replies, messages };
}

/** A message with its particulars (URLs, numbers, quoted values) left out. */
function shape(message) {
  return String(message)
    .replace(/https?:\/\/\S+/g, "URL")
    .replace(/"[^"]*"|'[^']*'/g, "…")
    .replace(/\d+(\.\d+)?/g, "N")
    .slice(0, 120);
}

// -- main ---------------------------------------------------------------------------

async function main() {
  const args = process.argv.slice(2);
  const option = (name, fallback) => {
    const at = args.indexOf(name);
    return at >= 0 ? args.splice(at, 2)[1] : fallback;
  };
  const seed = Number(option("--seed", "0"));
  const seconds = Number(option("--seconds", "30"));
  const maxCases = Number(option("--cases", "0")) || Infinity;
  const [site, out] = args;
  if (!site || !out) throw new Error("usage: node benchmarks/fuzz_engine.js SITE OUT [--seed N] [--seconds S] [--cases N]");
  const original = readSite(site);
  const manifest = JSON.parse(text(original.get("manifest.json")));
  const targets = ["question", "manifest", "shards", "shard", "ranker", "static", "embeddings", "embedding_scales", "tokenizer"].filter(
    (t) => t === "question" || t === "manifest" || t === "shard" || t in manifest.files,
  );
  const r = generator(seed);
  const real = Array.from(
    new Set(
      JSON.parse(text(original.get(manifest.files.static))
        .trimEnd()
        .slice(STATIC_PREFIX.length, -1)).headings,
    ),
  ).slice(0, 40);
  const started = Date.now();
  const tally = { cases: 0, by_target: {}, replies: {}, messages: {}, failures: [], failed_cases: 0, uncaught: 0, questions: [] };
  while (tally.cases < maxCases && (Date.now() - started) / 1000 < seconds) {
    // the first cases cover every target once, then they are drawn
    const target = tally.cases < targets.length ? targets[tally.cases] : r.pick(targets);
    const caseSeed = r.int(2 ** 31);
    const cr = generator(caseSeed);
    let files = original;
    let did = "";
    const questions = [];
    if (target === "question") {
      if (!tally.by_target.question) questions.push(...HAND);
      for (let i = 0; i < 8; i++) {
        const q = { question: fuzzQuestion(cr) };
        if (cr.chance(0.15)) q.selection = cr.chance(0.5) ? fuzzQuestion(cr) : cr.pick(real);
        questions.push(q);
      }
    } else {
      ({ files, did } = mutatedSite(original, target, cr));
      if (cr.chance(0.5) && target !== "manifest") {
        const second = cr.pick(targets.filter((t) => t !== "question"));
        try {
          const more = mutatedSite(files, second, cr);
          files = more.files;
          did += ` + ${second}: ${more.did}`;
        } catch {
          // the first mutation left nothing the second can parse
        }
      }
      for (let i = 0; i < 2 + cr.int(2); i++) questions.push({ question: cr.chance(0.7) ? cr.pick(real) : fuzzQuestion(cr) });
    }
    const before = processErrors.length;
    let result;
    try {
      result = await runCase(files, cr, questions, target === "question" ? tally.questions : null);
    } catch (error) {
      result = { problems: [`the fuzzer's case threw: ${error && error.stack}`], replies: [] };
    }
    // a rejection left behind surfaces a tick later
    await new Promise((resolve) => setImmediate(resolve));
    const stray = processErrors.slice(before);
    tally.uncaught += stray.length + result.problems.filter((p) => /onMessage threw|no reply|the fuzzer's case threw/.test(p)).length;
    const problems = [...result.problems, ...stray];
    tally.cases += 1;
    tally.by_target[target] = (tally.by_target[target] || 0) + 1;
    for (const reply of result.replies) tally.replies[reply] = (tally.replies[reply] || 0) + 1;
    for (const m of result.messages || []) tally.messages[m] = (tally.messages[m] || 0) + 1;
    if (problems.length) {
      tally.failed_cases += 1;
      if (tally.failures.length < 200) tally.failures.push({ target, seed: caseSeed, mutation: did, problems: problems.slice(0, 5) });
    }
  }
  tally.seconds = (Date.now() - started) / 1000;
  tally.seed = seed;
  fs.writeFileSync(out, JSON.stringify(tally));
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error && error.stack);
    process.exit(2);
  },
);
