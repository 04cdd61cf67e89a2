// @ts-check
/**
 * The quoted words of a followed citation, found and marked inside the
 * highlighted passage.
 *
 * A citation's `quote_spans` are offsets into the passage's plain text (the
 * `text` of `_ragcite/passages.*.jsonl`), not into the page: the index
 * collapses spaces in prose, keeps the lines of code, writes table rows as
 * "a | b" and leaves out what the page adds (the "¶" of a caption). So the
 * quote is found by its words: the passage's text nodes and each quoted
 * sentence are compared without whitespace (and, failing that, without
 * table bars), and the span only chooses between occurrences of the same
 * sentence. What cannot be found is simply not marked.
 *
 * `quoteSentences` and `locateQuote` are pure (tested under
 * Node); `passageTextNodes` and `createQuoteMarker` need a document. Classic
 * script: provides `quotes` (see `lib.js`).
 */

/**
 * What a followed citation quotes: `citation.quote` and `citation.quote_spans`.
 * @typedef {object} Quote
 * @property {string} text the quoted sentence(s), joined with " … "
 * @property {[number, number][]} spans [start, end) of each sentence in the passage's text
 */

/**
 * Where a sentence was found: [text node index, offset] of its first
 * character and just past its last (UTF-16 offsets, as `Range` takes them).
 * @typedef {{start: [number, number], end: [number, number]}} NodeRange
 */

(function () {
  "use strict";

  const lib = typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib;

  /** How the engine joins quoted sentences (`answer/engine.py`). */
  const JOIN = " … ";
  /** Never part of a comparison: spaces, line ends, soft hyphens, zero widths. */
  const IGNORED = /[\s\u00ad\u200b\u200c\u200d\u2060\ufeff]/;
  /** The name of the CSS highlight, and the class of the fallback `<mark>`. */
  const NAME = "ragcite-quote";
  /** Page parts a passage's text never has (`passages/text.py`, Sphinx's HTML). */
  const SKIP =
    "script, style, template, noscript, button, select, textarea, .headerlink, .linenos, " +
    ".fn-bracket, .no-search, .ragcite-ignore, .ragcite-root";
  /** A footnote reference's brackets, which only the page has. */
  const BRACKET = ".fn-bracket";
  /** Bound on the text nodes walked for one passage. */
  const MAX_NODES = 20000;
  /** `contracts.PASSAGE_ID`, its named groups in JS's spelling. */
  const PASSAGE_ID = new RegExp(lib.need("spec").PASSAGE_ID.source.replaceAll("(?P<", "(?<"));
  /** How often a shown quote is marked again after the page changed its text. */
  const MAX_REMARKS = 20;

  /**
   * The sentences of a quote, each with where it starts in the passage's
   * text (NaN when the spans do not fit the quote). The spans' lengths cut
   * the quote exactly, so a sentence that contains " … " itself stays whole;
   * without fitting spans the quote is split on " … ".
   * @param {string} quote
   * @param {[number, number][]} spans
   * @returns {{text: string, at: number}[]}
   */
  function quoteSentences(quote, spans) {
    if (typeof quote !== "string" || !quote) return [];
    // spans count code points (Python's str), not UTF-16 units
    const points = Array.from(quote);
    const lengths = spans.map(([a, b]) => b - a);
    const total = lengths.reduce((sum, n) => sum + n, 0) + JOIN.length * Math.max(0, spans.length - 1);
    if (spans.length && total === points.length) {
      /** @type {{text: string, at: number}[]} */
      const out = [];
      let i = 0;
      let fits = true;
      spans.forEach(([a], k) => {
        if (k > 0) {
          fits = fits && points.slice(i, i + JOIN.length).join("") === JOIN;
          i += JOIN.length;
        }
        out.push({ text: points.slice(i, i + lengths[k]).join(""), at: a });
        i += lengths[k];
      });
      if (fits) return out;
    }
    const parts = quote.split(JOIN);
    const fitting = parts.length === spans.length;
    return parts.map((text, k) => ({ text, at: fitting ? spans[k][0] : NaN }));
  }

  /**
   * The text nodes' characters without the ignored ones (and without "|"
   * when `bars` is false), each with its node, offset, and where it would
   * be in the text with runs of whitespace collapsed to one space (the
   * passage text's scale, to compare with a span's start).
   * @param {string[]} texts
   * @param {boolean} bars keep "|"
   */
  function compact(texts, bars) {
    let text = "";
    /** @type {number[]} */
    const node = [];
    /** @type {number[]} */
    const offset = [];
    /** @type {number[]} */
    const position = [];
    let pos = 0;
    let gap = false;
    texts.forEach((t, n) => {
      for (let i = 0; i < t.length; i++) {
        const ch = t[i];
        if (IGNORED.test(ch) || (!bars && ch === "|")) {
          gap = gap || /\s/.test(ch);
          continue;
        }
        if (gap && text) pos += 1;
        gap = false;
        text += ch;
        node.push(n);
        offset.push(i);
        position.push(pos);
        pos += 1;
      }
    });
    return { text, node, offset, position };
  }

  /**
   * @param {string} text
   * @param {boolean} bars
   */
  function squeeze(text, bars) {
    let out = "";
    for (const ch of text) if (!IGNORED.test(ch) && (bars || ch !== "|")) out += ch;
    return out;
  }

  /**
   * Where the quote's sentences are in the passage's text nodes: one range
   * per sentence found, in the quote's order; none for a sentence that is
   * not there. Whitespace plays no part (the page and the index space text
   * differently); a sentence found only without table bars ("a | b" of the
   * index is two cells in the page) is matched that way. Among several
   * occurrences of a sentence, the one nearest its span's start is taken;
   * ranges never overlap.
   * @param {string[]} texts the passage's text nodes, in document order
   * @param {string} quote `citation.quote`
   * @param {[number, number][]} spans `citation.quote_spans` (may be [])
   * @returns {NodeRange[]}
   */
  function locateQuote(texts, quote, spans) {
    /** @type {NodeRange[]} */
    const out = [];
    if (!Array.isArray(texts) || !texts.length) return out;
    /** @type {Map<boolean, ReturnType<typeof compact>>} */
    const views = new Map();
    /** @param {boolean} bars */
    const view = (bars) => {
      let v = views.get(bars);
      if (!v) views.set(bars, (v = compact(texts, bars)));
      return v;
    };
    /** @type {[[number, number], [number, number]][]} first and last character of each range */
    const taken = [];
    /** @type {{bars: boolean, end: number} | null} */
    let previous = null;
    for (const { text, at } of quoteSentences(quote, spans)) {
      for (const bars of [true, false]) {
        const key = squeeze(text, bars);
        if (!key) break;
        const v = view(bars);
        /** @param {number} i @returns {[number, number]} */
        const place = (i) => [v.node[i], v.offset[i]];
        /** @type {number[]} */
        const open = [];
        for (let i = v.text.indexOf(key); i >= 0 && open.length < 1000; i = v.text.indexOf(key, i + 1)) {
          const first = place(i);
          const last = place(i + key.length - 1);
          if (taken.every(([s, e]) => before(last, s) || before(e, first))) open.push(i);
        }
        if (!open.length) continue;
        let best = open[0];
        if (Number.isFinite(at)) {
          for (const i of open) if (Math.abs(v.position[i] - at) < Math.abs(v.position[best] - at)) best = i;
        } else if (previous && previous.bars === bars) {
          const end = previous.end;
          best = open.find((i) => i > end) ?? open[0];
        }
        const first = place(best);
        const last = place(best + key.length - 1);
        taken.push([first, last]);
        out.push({ start: first, end: [last[0], last[1] + 1] });
        previous = { bars, end: best + key.length - 1 };
        break;
      }
    }
    return out;
  }

  /**
   * Whether character *x* of the text nodes comes before character *y*.
   * @param {[number, number]} x [node, offset]
   * @param {[number, number]} y
   */
  function before(x, y) {
    return x[0] < y[0] || (x[0] === y[0] && x[1] < y[1]);
  }

  /**
   * The text nodes of a passage in the page: from its anchor element on, in
   * document order, up to the next passage's anchor, a heading or a
   * section, within the anchor's section. The passage's blocks usually
   * follow the anchor as siblings, but the page may wrap them (a code
   * block's anchor inside its captioned wrapper; footnotes in two lists).
   * Page furniture the index leaves out (header links, line numbers,
   * buttons, the widget) is skipped.
   * @param {Element} anchor the element whose id is the passage ID
   * @returns {Text[]}
   */
  function passageTextNodes(anchor) {
    /** @type {Text[]} */
    const nodes = [];
    const root = anchor.parentElement && anchor.parentElement.closest("section, div.section");
    const walker = document.createTreeWalker(root || document.body, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT, {
      acceptNode: (node) => {
        if (node.nodeType === Node.TEXT_NODE) return NodeFilter.FILTER_ACCEPT;
        const element = /** @type {Element} */ (node);
        if (endsPassage(element, anchor.id)) return NodeFilter.FILTER_ACCEPT; // stop here
        return element.matches(SKIP) ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_SKIP;
      },
    });
    walker.currentNode = anchor;
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (node.nodeType !== Node.TEXT_NODE || nodes.length >= MAX_NODES) break;
      nodes.push(/** @type {Text} */ (node));
    }
    return nodes;
  }

  /**
   * Whether an element after a passage's anchor belongs to what comes
   * next: another passage's anchor (a theme may copy an ID onto a wrapper,
   * as furo does for tables: the same ID is still this passage), a heading,
   * a section.
   * @param {Element} element
   * @param {string} id the passage's ID
   */
  function endsPassage(element, id) {
    if (element.id && element.id !== id && PASSAGE_ID.test(element.id)) return true;
    if (/^H[1-6]$/.test(element.tagName) || element.tagName === "SECTION") return true;
    return element.tagName === "DIV" && element.classList.contains("section"); // docutils < 0.18
  }

  /**
   * Marks quotes in the page: with the CSS Custom Highlight API where the
   * browser has it (the page's DOM stays untouched), else by wrapping the
   * quoted text in `<mark class="ragcite-quote">`. One quote at a time.
   *
   * A highlight's ranges sit in the passage's text nodes, and the page may
   * split those after the quote is marked: Sphinx's own search-term
   * highlight (`sphinx_highlight.js`, terms from its search page or a
   * `?highlight=` link) wraps words in `<span class="highlighted">` 10 ms
   * after load, which collapses the ranges. So while a quote is shown, a
   * change to the passage's text marks it again (a bounded number of times).
   */
  function createQuoteMarker() {
    /** @type {HTMLElement[]} */
    let marks = [];
    /** @type {MutationObserver | null} */
    let watcher = null;

    function clear() {
      if (watcher) watcher.disconnect();
      watcher = null;
      const css = /** @type {any} */ (globalThis).CSS;
      if (css && css.highlights) css.highlights.delete(NAME);
      for (const mark of marks) {
        const parent = mark.parentNode;
        if (!parent) continue;
        mark.replaceWith(...mark.childNodes);
        parent.normalize();
      }
      marks = [];
    }

    /**
     * Mark the quote inside the passage whose anchor is *anchor*. Returns
     * the marked text (sentences joined with " … ") and the element holding
     * its start, or null when none of it was found. Never throws.
     * @param {Element} anchor
     * @param {Quote} quote
     * @returns {{text: string, first: Element | null} | null}
     */
    function mark(anchor, quote) {
      return place(anchor, quote, MAX_REMARKS);
    }

    /**
     * @param {Element} anchor
     * @param {Quote} quote
     * @param {number} left how many more times it may be marked again
     * @returns {{text: string, first: Element | null} | null}
     */
    function place(anchor, quote, left) {
      clear();
      try {
        const nodes = passageTextNodes(anchor);
        const found = locateQuote(
          nodes.map((n) => n.data),
          quote.text,
          quote.spans,
        );
        if (!found.length) return null;
        const ranges = found.map(({ start, end }) => {
          const range = document.createRange();
          range.setStart(nodes[start[0]], start[1]);
          range.setEnd(nodes[end[0]], end[1]);
          return widen(range);
        });
        const text = ranges.map((r) => r.toString()).join(JOIN);
        const css = /** @type {any} */ (globalThis).CSS;
        const Highlight = /** @type {any} */ (globalThis).Highlight;
        if (css && css.highlights && typeof Highlight === "function") {
          css.highlights.set(NAME, new Highlight(...ranges));
          watch(anchor, quote, left);
          return { text, first: nodes[found[0].start[0]].parentElement };
        }
        wrap(nodes, found);
        return { text, first: marks[0] || null };
      } catch {
        clear();
        return null;
      }
    }

    /**
     * Mark the quote again when the text around the passage changes (only
     * with the Highlight API: `<mark>`s move with the text they wrap).
     * `clear()`, and so the next mark, ends the watch.
     * @param {Element} anchor
     * @param {Quote} quote
     * @param {number} left how many more times it may be marked again
     */
    function watch(anchor, quote, left) {
      if (left <= 0 || typeof MutationObserver !== "function") return;
      const observer = new MutationObserver((records) => {
        const ours = records.every((r) => {
          const at = r.target instanceof Element ? r.target : r.target.parentElement;
          return Boolean(at && at.closest(".ragcite-root"));
        });
        if (!ours) place(anchor, quote, left - 1);
      });
      observer.observe(anchor.parentElement || anchor, {
        childList: true,
        subtree: true,
        characterData: true,
      });
      watcher = observer;
    }

    /**
     * Take in the page's own brackets of a footnote reference the quote
     * starts or ends with ("[1]" in the page is "1" in the index).
     * @param {Range} range
     */
    function widen(range) {
      const { startContainer: s, endContainer: e } = range;
      const prev = range.startOffset === 0 ? s.previousSibling : null;
      if (prev instanceof Element && prev.matches(BRACKET)) range.setStartBefore(prev);
      const next = range.endOffset === (e.nodeValue || "").length ? e.nextSibling : null;
      if (next instanceof Element && next.matches(BRACKET)) range.setEndAfter(next);
      return range;
    }

    /**
     * Wrap each text node's share of the ranges in a `<mark>`; later slices
     * first, so that splitting a node leaves the earlier offsets valid.
     * @param {Text[]} nodes
     * @param {NodeRange[]} found
     */
    function wrap(nodes, found) {
      /** @type {[number, number, number][]} node, from, to */
      const slices = [];
      for (const { start, end } of found) {
        for (let n = start[0]; n <= end[0]; n++) {
          const from = n === start[0] ? start[1] : 0;
          const to = n === end[0] ? end[1] : nodes[n].length;
          if (to > from && nodes[n].data.slice(from, to).trim()) slices.push([n, from, to]);
        }
      }
      slices.sort((a, b) => b[0] - a[0] || b[1] - a[1]);
      for (const [n, from, to] of slices) {
        const node = nodes[n];
        const rest = from > 0 ? node.splitText(from) : node;
        if (to - from < rest.length) rest.splitText(to - from);
        const element = document.createElement("mark");
        element.className = NAME;
        /** @type {Node} */ (rest.parentNode).insertBefore(element, rest);
        element.append(rest);
        marks.unshift(element);
      }
    }

    return { mark, clear };
  }

  const api = { NAME, createQuoteMarker, locateQuote, passageTextNodes, quoteSentences };
  lib.provide("quotes", api);
  if (typeof module === "object") module.exports = api;
})();
