// @ts-check
/**
 * Deep links: highlight the passage a link names, follow citation links, and
 * send links made before an edit to where their text is now.
 *
 * Passage IDs are positions, so after an edit an old link's ID may name
 * other text or nothing. `_ragcite/moved.js` (written by the build from its
 * link history) maps such links, keyed by page and ID as `linkKey` spells
 * them, to the passage URL that holds their text now, or to `[url, start]`
 * when the text's first block sits inside that passage (`start`: its opening
 * words). Only links from outside the site are redirected: this build's own
 * links already name the right text.
 *
 * `linkKey`, `canonicalKey`, `idOf`, `movedTarget` and `squash` are pure. Classic script: provides `deeplinks` (see `lib.js`).
 *
 * A citation followed from the widget also marks its quoted words inside the
 * passage (`quotes.js`): on this page at once, on another page through
 * sessionStorage (the quote, keyed by the URL followed, taken on arrival).
 * A deep link opened any other way highlights the passage only.
 */

/** @typedef {import("./quotes.js").Quote} Quote */

/**
 * What deep links need of the rest of the widget.
 * @typedef {object} DeepLinkEnv
 * @property {string} root the site root
 * @property {URL | null} indexUrl the manifest; `moved.js` is beside it
 * @property {() => HTMLElement} mount where the moved note goes
 * @property {(node: Node) => boolean} inWidget whether a node is the widget's own
 * @property {(target: Element) => boolean} covers whether the open panel hides an element
 * @property {() => void} stepAside close the panel, leaving the focus alone
 * @property {() => void} remember keep the answer for the next page
 */

/**
 * How a passage is highlighted.
 * @typedef {object} HighlightOptions
 * @property {boolean} [smooth] scroll smoothly (unless the reader asks for less motion)
 * @property {boolean} [focus] give the passage the focus
 * @property {Quote | null} [quote] also mark these quoted words in it (until
 *   the next highlight)
 */

/**
 * @typedef {object} DeepLinks
 * @property {(id: string, options?: HighlightOptions) => boolean} highlight
 *   highlight a passage for a few seconds and scroll it into view; false
 *   when the page has no such passage
 * @property {(event?: Event) => Promise<void>} fromHash highlight (or
 *   redirect) what the address names
 * @property {(event: MouseEvent | KeyboardEvent, anchor: HTMLAnchorElement, quote?: Quote | null) => void} follow
 *   follow a citation link: on this page scroll and highlight, else navigate;
 *   with the citation's quote, its words are marked too
 */

(function () {
  "use strict";

  const g = /** @type {any} */ (globalThis);
  const lib = typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib;
  /** @type {typeof import("./citations.js")} */
  const C = lib.need("citations");

  const HIGHLIGHT = "ragcite-highlight";
  const HIGHLIGHT_MS = 3000;
  const MOVED_FILE = "moved.js";
  /** The URL the widget itself opened: current, never redirected. */
  const DIRECT_KEY = "ragcite:direct";
  /** `{from, to, start}` of a redirect, explained on the page it lands on. */
  const MOVED_KEY = "ragcite:moved";
  /** `{url, text, spans}`: the quote of the citation followed to `url`. */
  const QUOTE_KEY = "ragcite:quote";

  /**
   * A page's link to *id* as the build keys the moved map: the page's path
   * below the site root, `dir/index.html` written `dir/` (the JS twin of
   * Python's `link_key`; both are tested on `tests/golden/link_keys.json`).
   * The path stays percent-encoded, as the browser has it; compare keys
   * through `canonicalKey`. Query and hash of *href* play no part.
   * @param {string} href the page's absolute URL
   * @param {string} id the passage ID
   * @param {string} root the site root, absolute, ending in "/"
   * @returns {string | null} null when the page is not below the root
   */
  function linkKey(href, id, root) {
    let path;
    let base;
    try {
      path = new URL(href).pathname;
      base = new URL(root).pathname;
    } catch {
      return null;
    }
    if (!path.startsWith(base)) return null;
    let page = path.slice(base.length);
    if (page === "index.html" || page.endsWith("/index.html")) page = page.slice(0, -"index.html".length);
    return `${page}#${id}`;
  }

  /**
   * A link key as it is compared: the page decoded. Sphinx's `html` builder
   * percent-encodes page URLs, `dirhtml` writes them as they are, and a
   * browser's address is always encoded; decoded, all three agree. A page
   * that does not decode (a stray "%") stays as it is.
   * @param {string} key `page#id`
   */
  function canonicalKey(key) {
    const at = key.indexOf("#");
    const page = at < 0 ? key : key.slice(0, at);
    try {
      return decodeURIComponent(page) + key.slice(page.length);
    } catch {
      return key;
    }
  }

  /**
   * The decoded anchor of a URL, "" when it has none or is no URL.
   * @param {string} href
   */
  function idOf(href) {
    try {
      return decodeURIComponent(new URL(href).hash.slice(1));
    } catch {
      return "";
    }
  }

  /**
   * Where a moved-map entry sends a link: a passage URL on the site, and the
   * opening words of the block to highlight ("" for the whole passage).
   * @param {unknown} entry a value of the moved map: `url` or `[url, start]`
   * @param {string} root
   * @returns {{url: string, start: string} | null} null: stay
   */
  function movedTarget(entry, root) {
    const [to, start] = Array.isArray(entry) ? entry : [entry, ""];
    const url = typeof to === "string" ? C.resolveUrl(to, root) : null;
    if (!url || !C.isPassageHash(new URL(url).hash)) return null;
    return { url, start: typeof start === "string" ? start : "" };
  }

  /**
   * Text as compared with a block's opening words.
   * @param {string} text
   */
  function squash(text) {
    return text.replace(/\s+/g, " ").trim().toLowerCase();
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

  /**
   * @param {DeepLinkEnv} env
   * @returns {DeepLinks}
   */
  function createDeepLinks(env) {
    const { el, reducedMotion, loadScript } = lib.need("dom");
    // A page written before quotes.js existed (an incremental build keeps
    // it) loads the new scripts but not quotes.js: passages only, then.
    const quotes = lib.has("quotes") ? lib.need("quotes").createQuoteMarker() : { mark: () => null, clear: () => {} };

    /** @type {Element | null} */
    let highlighted = null;
    /** @type {number | undefined} */
    let highlightTimer;
    /** @type {Promise<Map<string, unknown>> | null} */
    let movedMap = null;
    /** @type {HTMLDivElement | null} */
    let movedNote = null;

    /**
     * @param {Element | null} target
     * @param {HighlightOptions} [options]
     */
    function highlightElement(target, options = {}) {
      if (!target || env.inWidget(target)) return false;
      quotes.clear();
      const marked = options.quote ? quotes.mark(target, options.quote) : null;
      if (highlighted) highlighted.classList.remove(HIGHLIGHT);
      window.clearTimeout(highlightTimer);
      target.classList.add(HIGHLIGHT);
      highlighted = target;
      highlightTimer = window.setTimeout(() => {
        target.classList.remove(HIGHLIGHT);
        if (highlighted === target) highlighted = null;
      }, HIGHLIGHT_MS);
      const tall = target.getBoundingClientRect().height > window.innerHeight * 0.8;
      // in a passage taller than the window, the quote is what must be seen
      const view = tall && marked && marked.first ? marked.first : target;
      view.scrollIntoView({
        behavior: options.smooth && !reducedMotion() ? "smooth" : "auto",
        block: tall && view === target ? "start" : "center",
      });
      if (options.focus) {
        if (!target.hasAttribute("tabindex")) target.setAttribute("tabindex", "-1");
        /** @type {HTMLElement} */ (target).focus({ preventScroll: true });
      }
      return true;
    }

    /**
     * @param {string} id
     * @param {HighlightOptions} [options]
     */
    function highlight(id, options = {}) {
      return highlightElement(id ? document.getElementById(id) : null, options);
    }

    /** The moved map by canonical key; empty when the build wrote none. */
    function loadMoved() {
      if (!movedMap) {
        movedMap = (async () => {
          /** @type {Map<string, unknown>} */
          const byKey = new Map();
          if (env.indexUrl === null) return byKey;
          try {
            await loadScript(new URL(MOVED_FILE, env.indexUrl).href, (src) => new Error(src));
          } catch {
            return byKey; // built without a link history, or by an older version
          }
          const map = g.ragcite_moved;
          if (!map || typeof map !== "object" || Array.isArray(map)) return byKey;
          for (const [key, entry] of Object.entries(map)) byKey.set(canonicalKey(key), entry);
          return byKey;
        })();
      }
      return movedMap;
    }

    /**
     * Where an old link to *id* on this page should go now, or null to stay.
     * @param {string} id
     */
    async function movedFrom(id) {
      const moved = await loadMoved();
      const key = linkKey(location.href, id, env.root);
      return key === null ? null : movedTarget(moved.get(canonicalKey(key)), env.root);
    }

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
        const element = /** @type {Element} */ (node);
        if (element.id && C.isPassageHash(`#${element.id}`)) break; // the next passage
        if (env.inWidget(element)) break;
        if (squash(element.textContent || "").startsWith(want)) return element;
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
     * Whether the page was opened from another page of this site: its links
     * are this build's, so their anchors already name the right text.
     */
    function openedFromSite() {
      return document.referrer !== "" && document.referrer.startsWith(env.root);
    }

    /**
     * Say that the link was followed to moved text, with a way back to what
     * the old anchor names now (the link may have been made after the edit).
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
      env.mount().append(note);
      movedNote = note;
    }

    /**
     * Highlight the passage the address names. On page load, a link from
     * outside the site (bookmark, another site) may predate an edit: follow
     * the moved map. A hash changed within the page is this build's.
     * @param {Event} [event]
     */
    async function fromHash(event) {
      if (!C.isPassageHash(location.hash)) return;
      const here = location.href;
      const id = idOf(here);
      if (!id) return;
      const direct = takeStored(DIRECT_KEY) === here;
      const followed = takeStored(QUOTE_KEY);
      const quote = direct ? storedQuote(followed, here) : null;
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
      const target = current ? null : await movedFrom(id);
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
      highlight(id, { quote });
    }

    /**
     * The quote stored for the URL arrived at, or null.
     * @param {string | null} stored
     * @param {string} here
     * @returns {Quote | null}
     */
    function storedQuote(stored, here) {
      try {
        const saved = JSON.parse(stored || "null");
        if (!saved || saved.url !== here || typeof saved.text !== "string") return null;
        return { text: saved.text, spans: C.quoteSpans(saved.spans) };
      } catch {
        return null; // a damaged quote is no quote
      }
    }

    /**
     * @param {MouseEvent | KeyboardEvent} event
     * @param {HTMLAnchorElement} anchor
     * @param {Quote | null} [quote] the citation's quoted words
     */
    function follow(event, anchor, quote = null) {
      const href = anchor.href;
      if (!href || ("button" in event && event.button !== 0)) return;
      if (event.ctrlKey || event.metaKey || event.shiftKey || event.altKey) return;
      if (!C.samePage(href, location.href)) {
        env.remember(); // the answer is there again when the next page opens
        store(DIRECT_KEY, href); // a citation of this build: no redirect there
        if (quote) store(QUOTE_KEY, JSON.stringify({ url: href, text: quote.text, spans: quote.spans }));
        else takeStored(QUOTE_KEY);
        return; // a normal navigation
      }
      const hash = new URL(href).hash;
      let id = hash.slice(1);
      try {
        id = decodeURIComponent(id);
      } catch {
        return;
      }
      const target = document.getElementById(id);
      if (!target) return;
      event.preventDefault();
      if (location.hash !== hash) history.pushState(null, "", hash);
      // The panel would hide the passage: step aside (the launcher brings the
      // answer back) and give the passage the focus.
      const covered = env.covers(target);
      if (covered) env.stepAside();
      highlight(id, { smooth: true, focus: covered, quote });
    }

    return { highlight, fromHash, follow };
  }

  const api = { canonicalKey, createDeepLinks, idOf, linkKey, movedTarget, squash };
  lib.provide("deeplinks", api);
  if (typeof module === "object") module.exports = api;
})();
