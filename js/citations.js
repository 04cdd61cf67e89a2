// @ts-check
/**
 * Pure helpers of the reader widget: the outcome of an answer, answer text ->
 * segments, citations -> source-list models, shown passages -> models, and
 * the one gate every link goes through.
 *
 * Nothing here touches the DOM. Links are built only from index data (a
 * citation's, a shown passage's, a see-also entry's or a static hit's `url`), resolved
 * against the site root and kept only when they stay on the site's origin;
 * the answer text never produces a link.
 *
 * Classic script: provides `citations` (see `lib.js`).
 */

/** @typedef {import("./types").Answer} Answer */
/** @typedef {import("./types").Citation} Citation */
/** @typedef {import("./types").SeeAlso} SeeAlso */
/** @typedef {import("./types").ShownPassage} ShownPassage */
/** @typedef {import("./types").ConfidenceLevel} ConfidenceLevel */
/** @typedef {import("./types").Outcome} Outcome */

/**
 * A piece of answer text: plain text, or the marker of citation `n`.
 * @typedef {{text: string} | {marker: number}} Segment
 */

/**
 * One entry of the numbered source list.
 * @typedef {object} SourceModel
 * @property {number} n the `[n]` of the marker
 * @property {string} passageId
 * @property {string | null} href absolute, same-origin URL; null: no link
 * @property {string} chapter
 * @property {string} section
 * @property {string} snippet
 * @property {string} quote the supporting sentence(s), or the snippet
 * @property {{text: string, spans: [number, number][]} | null} marked what to
 *   mark in the page when the link is followed: the citation's own quote and
 *   `quote_spans`; null without a quote of its own, and for the selection
 * @property {number | null} confidence 0-1, or null when the answer has none
 * @property {ConfidenceLevel | null} level
 * @property {boolean} selection true for the reader's own selected text
 */

/**
 * A passage to read: a see-also entry of an abstention, or a static hit.
 * @typedef {object} LinkModel
 * @property {string} passageId
 * @property {string | null} href
 * @property {string} chapter
 * @property {string} section
 * @property {string} snippet
 */

/**
 * A passage the `passages` outcome points to: where the answer may be.
 * @typedef {object} ShownModel
 * @property {number} rank 1 for the most likely
 * @property {string} passageId
 * @property {string | null} href absolute, same-origin URL; null: no link
 * @property {string} chapter
 * @property {string} section
 * @property {string} quote its best sentence (the snippet when it has none)
 * @property {{text: string, spans: [number, number][]} | null} marked what to
 *   mark in the page when the link is followed: the best sentence
 * @property {{before: string, quote: string, after: string}} context the best
 *   sentence with the snippet's words around it, when the snippet holds it
 * @property {number | null} confidence 0-1: how likely it holds the answer
 * @property {ConfidenceLevel | null} level
 */

(function () {
  "use strict";

  const g = /** @type {any} */ (globalThis);
  const lib = typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib;

  const spec = lib.need("spec");
  /** The anchor grammar of DESIGN.md (`contracts.PASSAGE_ID`, `^ch...$`), as a location hash. */
  const PASSAGE_HASH = new RegExp(`^#${spec.PASSAGE_ID.source.slice(1).replaceAll("(?P<", "(?<")}`);
  /** `[1]`, and `[1, 2]` as a run of markers. */
  const MARKER = /\[(\d{1,4}(?:\s*,\s*\d{1,4})*)\]/g;
  const SAFE_PROTOCOLS = new Set(["http:", "https:", "file:"]);
  /** A scheme at the start of a URL (`javascript:`, `data:`, `http:` ...). */
  const SCHEME = /^[a-zA-Z][a-zA-Z0-9+.-]*:/;
  /** Whitespace or control characters browsers strip or ignore inside URLs. */
  // eslint-disable-next-line no-control-regex
  const URL_JUNK = /[\u0000-\u0020\u007f-\u009f\u00ad\u200b-\u200f\u2028\u2029\ufeff]/g;

  /** The outcomes of the answer JSON (`contracts.Outcome`). */
  const OUTCOMES = new Set(["answer", "passages", "not_found"]);

  /**
   * `high` at 0.9 or more, `medium` from 0.7, else `low`: the bands of a
   * calibrated probability (`contracts.confidence_level`).
   * @param {unknown} score
   * @returns {ConfidenceLevel | null}
   */
  function confidenceLevel(score) {
    if (typeof score !== "number" || !Number.isFinite(score)) return null;
    if (score >= 0.9) return "high";
    if (score >= 0.7) return "medium";
    return "low";
  }

  /**
   * What the reader gets from an answer JSON: its `outcome`; from a server
   * older than `outcome`, "answer" when grounded, else "not_found". An
   * ungrounded "answer", and "passages" without a passage to show, are
   * "not_found" too: nothing unchecked is ever shown as an answer.
   * @param {Partial<Answer> | null | undefined} answer
   * @returns {Outcome}
   */
  function outcomeOf(answer) {
    if (!answer || typeof answer !== "object") return "not_found";
    const said = typeof answer.outcome === "string" && OUTCOMES.has(answer.outcome) ? answer.outcome : null;
    if (said === "passages") {
      return Array.isArray(answer.passages) && answer.passages.length ? "passages" : "not_found";
    }
    if (said === "not_found") return "not_found";
    return answer.grounded === true ? "answer" : "not_found";
  }

  /**
   * The best sentence with the snippet's words around it: the snippet split
   * at the sentence when it holds it (the passage's opening words), else the
   * sentence alone. Each side is cut to `max` characters at a word, and "…"
   * ends words after it that stop mid-sentence.
   * @param {unknown} snippet
   * @param {unknown} quote
   * @param {number} [max]
   * @returns {{before: string, quote: string, after: string}}
   */
  function quoteContext(snippet, quote, max = 120) {
    const norm = (/** @type {unknown} */ t) => str(t).replace(/\s+/g, " ").trim();
    const s = norm(snippet);
    const q = norm(quote);
    if (!q) return { before: "", quote: s, after: "" };
    const at = s.indexOf(q);
    if (at < 0) return { before: "", quote: q, after: "" };
    const before = s.slice(0, at);
    const after = s.slice(at + q.length);
    const cutBefore = before.length > max ? `…${clipStart(before, max)}` : before;
    let cutAfter = after.trim() ? `${/^\s/.test(after) ? " " : ""}${clip(after, max)}` : "";
    // a snippet stops at a word, maybe mid-sentence: say that the text goes on
    if (cutAfter && !/[.!?…:;)"'»”。！？]$/.test(cutAfter)) cutAfter += "…";
    return { before: cutBefore, quote: q, after: cutAfter };
  }

  /**
   * The end of `text`, at most `max` characters, from a word start.
   * @param {string} text
   * @param {number} max
   */
  function clipStart(text, max) {
    const tail = text.slice(text.length - max);
    const space = tail.indexOf(" ");
    return space >= 0 && space < max * 0.5 ? tail.slice(space + 1) : tail;
  }

  /**
   * The passages of a `passages` outcome, most likely first; each href comes
   * from the passage's `url` through {@link resolveUrl}, and following it
   * marks the passage's best sentence (`quote`, `quote_spans`).
   * @param {Partial<Answer> | null | undefined} answer
   * @param {string | URL | Place} root
   * @returns {ShownModel[]}
   */
  function buildShown(answer, root) {
    const list = answer && Array.isArray(answer.passages) ? answer.passages : [];
    /** @type {ShownModel[]} */
    const out = [];
    for (const item of list) {
      if (!item || typeof item !== "object") continue;
      const p = /** @type {Partial<ShownPassage>} */ (item);
      const score = typeof p.confidence === "number" && Number.isFinite(p.confidence) ? p.confidence : null;
      const quote = str(p.quote);
      out.push({
        rank: out.length + 1,
        passageId: str(p.passage_id),
        href: itemHref(p, root),
        chapter: str(p.chapter),
        section: str(p.section),
        quote: quote || str(p.snippet),
        marked: quote ? { text: quote, spans: quoteSpans(p.quote_spans) } : null,
        context: quoteContext(p.snippet, quote || p.snippet),
        confidence: score,
        level: confidenceLevel(score),
      });
    }
    return out;
  }

  /**
   * @param {unknown} value
   * @returns {string}
   */
  function str(value) {
    return typeof value === "string" ? value : "";
  }

  /**
   * `url` (from index data) resolved against the site root, or null when it
   * could leave the site or run script: only relative URLs and absolute
   * http(s)/file URLs on the root's own origin are kept.
   * @param {unknown} url e.g. "brewing/espresso.html#ch8-sec1-p1"
   * @param {string | URL} root the site root, an absolute URL ending in "/"
   * @returns {string | null} an absolute URL
   */
  function resolveUrl(url, root) {
    if (typeof url !== "string") return null;
    const raw = url.replace(URL_JUNK, "");
    if (raw === "" || raw.includes("\\")) return null;
    let base;
    let resolved;
    try {
      base = new URL(String(root));
      resolved = new URL(raw, base);
    } catch {
      return null;
    }
    const scheme = SCHEME.exec(raw);
    if (scheme && !SAFE_PROTOCOLS.has(scheme[0].toLowerCase())) return null;
    if (!SAFE_PROTOCOLS.has(resolved.protocol)) return null;
    if (resolved.protocol !== base.protocol || resolved.host !== base.host) return null;
    if (resolved.username || resolved.password) return null;
    return resolved.href;
  }

  /**
   * Where links of an answer resolve: the site root, and with several sites
   * served together the server's base and this site's name.
   * @typedef {{root: string | URL, apiBase?: URL | null, site?: string}} Place
   */

  /**
   * @param {string | URL | Place} where
   * @returns {{root: string, server: string | null, site: string}}
   */
  function placeOf(where) {
    if (typeof where === "string" || where instanceof URL) {
      return { root: String(where), server: null, site: "" };
    }
    return {
      root: String(where.root),
      server: where.apiBase ? where.apiBase.href : null,
      site: typeof where.site === "string" ? where.site : "",
    };
  }

  /**
   * The link of a citation or see-also entry. With several sites served
   * together it names its `site` and its `url` is relative to the server's
   * root ("v2/page.html#ch1-sec0-p1"): a link into the page's own site
   * resolves against the site root (the same pages, wherever they are
   * hosted), one into another site against the server.
   * @param {{url?: unknown, site?: unknown}} item
   * @param {string | URL | Place} where
   * @returns {string | null}
   */
  function itemHref(item, where) {
    const { root, server, site } = placeOf(where);
    const name = typeof item.site === "string" ? item.site : "";
    const url = item.url;
    if (name && typeof url === "string" && url.startsWith(`${name}/`)) {
      if (name === site) return resolveUrl(url.slice(name.length + 1), root);
      if (server) return resolveUrl(url, server);
    }
    return resolveUrl(url, root);
  }

  /**
   * The answer text cut into text and marker segments. A marker becomes a
   * `{marker}` only when a citation with that number exists; any other
   * bracketed number stays text. Adjacent text segments are merged.
   * @param {unknown} text the answer's `answer` string
   * @param {Iterable<number>} known the citation numbers
   * @returns {Segment[]}
   */
  function parseAnswer(text, known) {
    const s = str(text);
    const numbers = new Set(known);
    /** @type {Segment[]} */
    const out = [];
    /** @param {string} t */
    const pushText = (t) => {
      if (!t) return;
      const last = out[out.length - 1];
      if (last && "text" in last) last.text += t;
      else out.push({ text: t });
    };
    let at = 0;
    MARKER.lastIndex = 0;
    for (let m = MARKER.exec(s); m !== null; m = MARKER.exec(s)) {
      const ns = m[1].split(",").map((x) => Number.parseInt(x.trim(), 10));
      if (!ns.every((n) => numbers.has(n))) continue;
      pushText(s.slice(at, m.index));
      for (const n of ns) out.push({ marker: n });
      at = m.index + m[0].length;
    }
    pushText(s.slice(at));
    return out;
  }

  /**
   * The source list of an answer, ordered by `n`; each href comes from the
   * citation's `url` through {@link resolveUrl}, the selection gets none.
   * @param {Partial<Answer> | null | undefined} answer
   * @param {string | URL | Place} root the site root, or where links go (several sites)
   * @returns {SourceModel[]}
   */
  function buildSources(answer, root) {
    const list = answer ? answer.citations : undefined;
    const citations = Array.isArray(list) ? list : [];
    /** @type {Map<number, SourceModel>} */
    const byN = new Map();
    for (const c of /** @type {Partial<Citation>[]} */ (citations)) {
      if (!c || typeof c !== "object") continue;
      const n = c.n;
      if (typeof n !== "number" || !Number.isInteger(n) || n < 1 || byN.has(n)) continue;
      const selection = c.source_type === "selection" || c.passage_id === spec.USER_SELECTION;
      const score = typeof c.confidence_score === "number" ? c.confidence_score : null;
      byN.set(n, {
        n,
        passageId: str(c.passage_id),
        href: selection ? null : itemHref(c, root),
        chapter: str(c.chapter) || (selection ? "User Selection" : ""),
        section: str(c.section) || (selection ? "Selected Text" : ""),
        snippet: str(c.snippet),
        quote: str(c.quote) || str(c.snippet),
        marked: !selection && str(c.quote) ? { text: str(c.quote), spans: quoteSpans(c.quote_spans) } : null,
        confidence: score,
        level: confidenceLevel(score),
        selection,
      });
    }
    return [...byN.values()].sort((a, b) => a.n - b.n);
  }

  /**
   * A citation's `quote_spans` if well formed (pairs of integers, 0 <= start
   * < end), else [] (the quote is then found by its words alone).
   * @param {unknown} value
   * @returns {[number, number][]}
   */
  function quoteSpans(value) {
    if (!Array.isArray(value)) return [];
    /** @type {[number, number][]} */
    const out = [];
    for (const pair of value) {
      if (!Array.isArray(pair) || pair.length !== 2) return [];
      const [a, b] = pair;
      if (!Number.isInteger(a) || !Number.isInteger(b) || a < 0 || b <= a) return [];
      out.push([a, b]);
    }
    return out;
  }

  /**
   * @param {unknown} items see-also entries or static hits
   * @param {string | URL | Place} root
   * @returns {LinkModel[]}
   */
  function buildLinks(items, root) {
    if (!Array.isArray(items)) return [];
    /** @type {LinkModel[]} */
    const out = [];
    for (const item of items) {
      if (!item || typeof item !== "object") continue;
      const it = /** @type {Partial<SeeAlso>} */ (item);
      out.push({
        passageId: str(it.passage_id),
        href: itemHref(it, root),
        chapter: str(it.chapter),
        section: str(it.section),
        snippet: str(it.snippet),
      });
    }
    return out;
  }

  /**
   * Passages an abstaining answer suggests reading (`metadata.see_also`).
   * @param {Partial<Answer> | null | undefined} answer
   * @param {string | URL | Place} root
   * @returns {LinkModel[]}
   */
  function buildSeeAlso(answer, root) {
    const meta = answer && answer.metadata;
    return buildLinks(meta && typeof meta === "object" ? meta.see_also : null, root);
  }

  /**
   * True for a location hash naming a passage anchor (`#ch3-sec2-p4`).
   * @param {unknown} hash
   * @returns {boolean}
   */
  function isPassageHash(hash) {
    return typeof hash === "string" && PASSAGE_HASH.test(hash);
  }

  /**
   * Text cut to at most `max` characters, at a word boundary when one is near,
   * with "…" appended when something was cut.
   * @param {unknown} text
   * @param {number} max
   * @returns {string}
   */
  function clip(text, max) {
    const s = str(text).replace(/\s+/g, " ").trim();
    if (s.length <= max) return s;
    const cut = s.slice(0, Math.max(1, max - 1));
    const space = cut.lastIndexOf(" ");
    return (space > max * 0.5 ? cut.slice(0, space) : cut) + "…";
  }

  /**
   * Two URLs name the same page (ignoring the hash, and `index.html` against
   * its folder).
   * @param {string} a absolute URL
   * @param {string} b absolute URL
   * @returns {boolean}
   */
  function samePage(a, b) {
    let x;
    let y;
    try {
      x = new URL(a);
      y = new URL(b);
    } catch {
      return false;
    }
    /** @param {URL} u */
    const key = (u) =>
      `${u.protocol}//${u.host}${u.pathname.replace(/\/index\.html$/, "/")}${u.search}`;
    return key(x) === key(y);
  }

  /**
   * "Chapter › Section" of a source or link (the section alone when it
   * repeats the chapter).
   * @param {{chapter: string, section: string}} s
   * @returns {string[]} one or two non-empty parts
   */
  function titleParts(s) {
    const chapter = str(s.chapter).trim();
    const section = str(s.section).trim();
    const parts = section && section !== chapter ? [chapter, section] : [chapter || section];
    const kept = parts.filter(Boolean);
    return kept.length ? kept : ["Untitled passage"];
  }

  /**
   * @param {{chapter: string, section: string}} s
   * @returns {string}
   */
  function sourceTitle(s) {
    return titleParts(s).join(" › ");
  }

  /** A sentence end and the spaces after it. */
  const SENTENCE_END = /(?<=[.!?…。！？:;])(\s+)/u;

  /**
   * Book or model text cut into its sentences and the spaces between them,
   * so that each sentence can be isolated for the bidi algorithm: an
   * unclosed override (U+202E) then reverses no other sentence.
   * Joined, the pieces are the text.
   * @param {unknown} text
   * @returns {string[]} sentences at even positions, spaces at odd ones
   */
  function bidiPieces(text) {
    const s = str(text);
    return s ? s.split(SENTENCE_END) : [];
  }

  const api = {
    bidiPieces,
    buildLinks,
    buildSeeAlso,
    buildShown,
    buildSources,
    clip,
    confidenceLevel,
    isPassageHash,
    outcomeOf,
    parseAnswer,
    quoteContext,
    quoteSpans,
    resolveUrl,
    samePage,
    sourceTitle,
    titleParts,
  };
  lib.provide("citations", api);
  if (typeof module === "object") module.exports = api;
})();
