// @ts-check
/**
 * The widget's DOM: the launcher, the ask panel, the answer with its `[n]`
 * markers and source list (or, for the other outcomes, the passages that may
 * hold the answer, or word that the book does not cover it, with the closest
 * pages), previews of a marker's quote, static results, errors and status;
 * under an answer, "Helpful? Yes / No" when the server takes votes. With
 * several versions of the book served together, a version picker (a
 * labelled `<select>`) and a "Version 2.0" badge on each source, passage
 * and the answer itself whose version is not the page's.
 *
 * Every model, document and user string enters the page through
 * `textContent` (book and model text sentence by sentence in `<bdi>`); the
 * only `href`s are index URLs that passed `citations.resolveUrl`.
 *
 * Classic script: provides `panel` (see `lib.js`); it needs a document.
 */

/** @typedef {import("./types").Answer} Answer */
/** @typedef {import("./types").StaticResult} StaticResult */
/** @typedef {import("./citations.js").SourceModel} SourceModel */
/** @typedef {import("./citations.js").LinkModel} LinkModel */
/** @typedef {import("./citations.js").ShownModel} ShownModel */
/** @typedef {import("./settings.js").Shortcut} Shortcut */
/** @typedef {import("./client.js").WidgetError} WidgetError */
/** @typedef {import("./client.js").VersionChoice} VersionChoice */

/**
 * @typedef {object} Widget
 * @property {HTMLDivElement} root
 * @property {HTMLButtonElement} launcher
 * @property {HTMLDivElement} panel
 * @property {HTMLDivElement} modeNote
 * @property {HTMLDivElement} versions the version picker's row
 * @property {HTMLSelectElement} versionSelect
 * @property {HTMLSpanElement} versionNote
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

/**
 * What the panel hands to the rest of the widget.
 * @typedef {object} PanelHooks
 * @property {(question: string) => void} submit the form was sent
 * @property {(event: MouseEvent | KeyboardEvent, anchor: HTMLAnchorElement, quote: import("./quotes.js").Quote | null) => void} follow
 *   a citation or result link was chosen; a citation's link comes with its
 *   quote, to mark in the passage
 * @property {() => void} clearSelection "Ask the whole book instead"
 * @property {() => void} askSelection "Ask about this"
 * @property {() => void} opened the panel opened
 * @property {(site: string) => void} chooseVersion the reader picked the
 *   version (site) to ask
 * @property {() => boolean} takesFeedback whether to ask "Helpful?" under an
 *   answer that has an `answer_id`
 * @property {(answerId: string, helpful: boolean, reason: string | null) => Promise<void>} sendFeedback
 *   a reader's vote; rejects with a WidgetError
 */

/**
 * @typedef {object} Panel
 * @property {() => Widget} widget the DOM, built on first use
 * @property {() => boolean} isOpen
 * @property {() => void} open open the panel and focus the question
 * @property {(restoreFocus?: boolean) => void} close
 * @property {(node: Node) => boolean} contains whether a node is the widget's
 * @property {(target: Element) => boolean} covers whether the open panel shares columns with an element
 * @property {(up: boolean, local?: boolean) => void} showMode say whether answers or only search results are
 *   possible (`local`: no server, but answers in the browser)
 * @property {(progress: {loaded: number, total: number, phase?: string} | null, cancel?: () => void) => void} showProgress
 *   the answer engine's download in MB, with a Cancel button; null hides it
 * @property {(choices: VersionChoice[], chosen: string, page: string) => void} showVersions
 *   the versions to offer (fewer than two: no picker), the site chosen, the
 *   page's own version ("" unknown: no version badges)
 * @property {(text: string) => void} setStatus
 * @property {(now: string, gone?: string) => void} sayVersion say in the
 *   status line which version questions go to now (a label, "" for the
 *   server's default) and, when the one asked is no longer served, which
 *   one that was
 * @property {(question: string) => void} setQuestion
 * @property {(busy: boolean) => void} setBusy
 * @property {(text: string) => void} streamText append streamed answer text
 * @property {(answer: Answer) => void} renderAnswer
 * @property {(result: StaticResult, why?: string, action?: {label: string, run: () => void}) => void} renderStatic
 *   the search results under a note saying why they are not an answer, and
 *   an `action` button after it (e.g. "Download the answer engine")
 * @property {(error: WidgetError, retry: () => void) => void} showError
 * @property {() => void} resetOutput
 * @property {() => boolean} previewShown
 * @property {() => void} hidePreview
 */

(function () {
  "use strict";

  const g = /** @type {any} */ (globalThis);
  const lib = typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib;

  /** `contracts.MAX_QUESTION`, in code points as the server counts them. */
  const MAX_QUESTION = 2000;
  const MAX_REASON = 500;
  const ANSWER_ID = /^[0-9a-f]{32}$/;
  const PLACEHOLDER = "Ask a question about this book…";

  /**
   * Characters as Python's `len` counts them (code points): an emoji is
   * one, where `length` (UTF-16 units) counts two.
   * @param {string} text
   */
  function codePoints(text) {
    let n = text.length;
    for (let i = 1; i < text.length; i++) {
      const unit = text.charCodeAt(i);
      if (unit >= 0xdc00 && unit <= 0xdfff && (text.charCodeAt(i - 1) & 0xfc00) === 0xd800) n--;
    }
    return n;
  }

  /**
   * The first `n` code points of `text` (never half a surrogate pair).
   * @param {string} text
   * @param {number} n
   */
  function firstCodePoints(text, n) {
    return text.length <= n ? text : Array.from(text).slice(0, n).join("");
  }

  /**
   * @param {{root: string, shortcut: Shortcut | null, version: string, apiBase?: URL | null, site?: string}} settings
   * @param {PanelHooks} hooks
   * @returns {Panel}
   */
  function createPanel(settings, hooks) {
    const C = lib.need("citations");
    const { capital, el, icon, isolated, link, reducedMotion, title } = lib.need("dom");
    const { shortcut } = settings;

    /** @type {Widget | null} */
    let widget = null;
    /** @type {Element | null} */
    let returnFocus = null;
    /** @type {Map<number, SourceModel>} */
    let sources = new Map();
    /** @type {Map<number, ShownModel>} the passages of a "passages" outcome, by rank */
    let shown = new Map();
    /** @type {Text | null} */
    let streamed = null;
    /** @type {number | undefined} */
    let retryTimer;
    /** The page's own conf.py version: sources of another get a badge. */
    let pageVersion = "";
    /** The picker's options as last built, to build them only on change. */
    let offered = "";

    // -- building ---------------------------------------------------------

    /** @returns {Widget} */
    function build() {
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
        el("span", { class: "ragcite-launcher-label", text: "Ask the book" }),
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
      const versionSelect = el("select", {
        id: "ragcite-version",
        class: "ragcite-version-select",
        "aria-describedby": "ragcite-version-note",
      });
      const versionNote = el("span", { id: "ragcite-version-note", class: "ragcite-version-note", hidden: true });
      const versions = el(
        "div",
        { class: "ragcite-versions", hidden: true },
        el("label", { for: "ragcite-version", class: "ragcite-version-label", text: "Answers from version" }),
        versionSelect,
        versionNote,
      );
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
        // no maxlength: it counts UTF-16 units (1,000 emoji filled it);
        // limitQuestion() keeps the limit in code points
        placeholder: PLACEHOLDER,
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
        versions,
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
      const root = el(
        "div",
        { id: "ragcite-root", class: "ragcite-root", "data-ragcite-version": settings.version },
        launcher,
        panel,
        preview,
        askSelection,
      );

      launcher.addEventListener("click", () => (isOpen() ? close() : open()));
      closeButton.addEventListener("click", () => close());
      versionSelect.addEventListener("change", () => hooks.chooseVersion(versionSelect.value));
      selectionClear.addEventListener("click", () => {
        hooks.clearSelection();
        question.focus();
      });
      question.addEventListener("input", limitQuestion);
      question.addEventListener("keydown", (event) => {
        if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
          event.preventDefault();
          form.requestSubmit();
        }
      });
      form.addEventListener("submit", (event) => {
        event.preventDefault();
        hooks.submit(question.value);
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
      askSelection.addEventListener("click", () => hooks.askSelection());
      document.body.append(root);
      return {
        root,
        launcher,
        panel,
        modeNote,
        versions,
        versionSelect,
        versionNote,
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

    /** @returns {Widget} */
    function ensure() {
      if (!widget) {
        if (!document.body) throw new Error("ragcite: the page has no body yet");
        widget = build();
      }
      return widget;
    }

    // -- opening and closing ------------------------------------------------

    function updateCounter() {
      if (!widget) return;
      const n = codePoints(widget.question.value);
      widget.counter.textContent = `${n} / ${MAX_QUESTION}`;
      widget.counter.classList.toggle("ragcite-count-near", n >= MAX_QUESTION * 0.9);
    }

    /**
     * Text typed or pasted past the limit is cut where it went in (as
     * `maxlength` would, but counting code points), and the status line
     * says so: a long paste is never cut silently.
     */
    function limitQuestion() {
      if (!widget) return;
      const box = widget.question;
      const value = box.value;
      const over = codePoints(value) - MAX_QUESTION;
      if (over > 0) {
        const caret = typeof box.selectionEnd === "number" ? box.selectionEnd : value.length;
        const before = Array.from(value.slice(0, caret));
        const kept =
          before.length >= over
            ? before.slice(0, before.length - over).join("")
            : firstCodePoints(value, MAX_QUESTION);
        box.value = before.length >= over ? kept + value.slice(caret) : kept;
        box.setSelectionRange(kept.length, kept.length);
        setStatus(`Your question was cut to ${MAX_QUESTION.toLocaleString("en")} characters, the limit.`);
      }
      updateCounter();
    }

    function isOpen() {
      return Boolean(widget && !widget.panel.hidden);
    }

    function open() {
      const w = ensure();
      if (!isOpen()) {
        const active = document.activeElement;
        returnFocus = active && !w.root.contains(active) ? active : null;
        w.panel.hidden = false;
        w.launcher.setAttribute("aria-expanded", "true");
        w.root.classList.add("ragcite-open");
        hooks.opened();
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

    /** @param {Element} target */
    function covers(target) {
      if (!widget || !isOpen()) return false;
      const p = widget.panel.getBoundingClientRect();
      const t = target.getBoundingClientRect();
      return t.left < p.right && t.right > p.left;
    }

    /**
     * @param {boolean} up
     * @param {boolean} [local] no server, but answers in the browser
     */
    function showMode(up, local = false) {
      if (!widget) return;
      widget.modeNote.hidden = up;
      widget.root.classList.toggle("ragcite-static", !up);
      if (!up) {
        widget.modeNote.textContent = local
          ? "No answer server is reachable: questions are answered in your browser, from the book's own " +
            "files. The answer engine downloads on your first question; nothing you type leaves this page."
          : "No answer server is reachable: questions search the book's passages. " +
            "Generated answers with citations need the answer server (ragcite serve).";
      }
    }

    /** @type {{box: HTMLDivElement, bar: HTMLProgressElement, label: HTMLSpanElement, cancel: HTMLButtonElement} | null} */
    let progressParts = null;
    /** @type {(() => void) | null} */
    let cancelLoad = null;

    /**
     * The answer engine's download: "Loading the answer engine: 12.3 of
     * 24.9 MB" over a progress bar, and a Cancel button.
     * @param {{loaded: number, total: number, phase?: string} | null} progress null hides it;
     *   phase "starting": every file is in, the engine starts (no figure)
     * @param {() => void} [cancel]
     */
    function showProgress(progress, cancel) {
      const w = ensure();
      if (progress === null) {
        if (progressParts) progressParts.box.hidden = true;
        cancelLoad = null;
        return;
      }
      if (!progressParts) {
        const bar = el("progress", { class: "ragcite-progress-bar", max: 1, value: 0, "aria-labelledby": "ragcite-progress-label" });
        const label = el("span", { id: "ragcite-progress-label", class: "ragcite-progress-label" });
        const button = el("button", { type: "button", class: "ragcite-progress-cancel", text: "Cancel" });
        button.addEventListener("click", () => {
          if (cancelLoad) cancelLoad();
        });
        const box = el("div", { class: "ragcite-progress", role: "group", "aria-label": "Answer engine download" }, label, bar, button);
        w.body.insertBefore(box, w.output);
        progressParts = { box, bar, label, cancel: button };
      }
      cancelLoad = cancel || null;
      const { loaded, total } = progress;
      const mb = (/** @type {number} */ n) => (n / 1e6).toFixed(1);
      progressParts.box.hidden = false;
      if (progress.phase === "starting") {
        // downloaded: the runtime compiles and the model starts (seconds);
        // a bar without a value moves without claiming a figure
        progressParts.bar.removeAttribute("value");
        progressParts.label.textContent = "Starting the answer engine…";
      } else {
        progressParts.bar.max = Math.max(total, 1);
        progressParts.bar.value = Math.min(loaded, total);
        progressParts.label.textContent = `Loading the answer engine: ${mb(Math.min(loaded, total))} of ${mb(total)} MB`;
      }
      progressParts.cancel.hidden = !cancel;
    }

    /**
     * @param {VersionChoice[]} choices
     * @param {string} chosen
     * @param {string} page
     */
    function showVersions(choices, chosen, page) {
      const w = ensure();
      pageVersion = page;
      const key = JSON.stringify(choices.map((c) => [c.name, c.label]));
      if (key !== offered) {
        offered = key;
        w.versionSelect.replaceChildren(...choices.map((c) => el("option", { value: c.name, text: c.label })));
      }
      w.versions.hidden = choices.length < 2;
      const picked = choices.find((c) => c.name === chosen);
      if (picked) w.versionSelect.value = picked.name;
      const other = Boolean(picked && !picked.own);
      w.versionSelect.classList.toggle("ragcite-version-other", other);
      w.versionNote.hidden = !other;
      if (other && page) w.versionNote.replaceChildren("This page is version ", el("bdi", { text: page }), ".");
      else w.versionNote.textContent = other ? "Not this page's version." : "";
      refreshBadges();
    }

    /**
     * A "Version 2.0" badge, shown while the version is not the page's
     * (`refreshBadges` keeps it so when the page's version becomes known).
     * @param {string} version
     * @param {string} [cls] more classes
     */
    function versionBadge(version, cls = "") {
      if (!version) return null;
      const badge = el("span", {
        class: `ragcite-version-badge${cls ? ` ${cls}` : ""}`,
        "data-ragcite-version": version,
        text: `Version ${version}`,
      });
      setBadge(badge);
      return badge;
    }

    /** @param {HTMLElement} badge */
    function setBadge(badge) {
      const version = badge.getAttribute("data-ragcite-version") || "";
      const other = lib.need("client").otherVersion(version, pageVersion);
      badge.hidden = !other;
      const { isolate } = lib.need("client");
      badge.title = other ? `From version ${isolate(version)} of the book; this page is version ${isolate(pageVersion)}` : "";
    }

    function refreshBadges() {
      if (!widget) return;
      for (const badge of widget.output.querySelectorAll("[data-ragcite-version]")) {
        setBadge(/** @type {HTMLElement} */ (badge));
      }
    }

    /**
     * The `version` of each well-formed item of a list, in the order the
     * citation models keep them (`citations.buildShown`, `buildLinks` skip
     * anything but objects).
     * @param {unknown} list
     * @returns {string[]}
     */
    function versionsOf(list) {
      if (!Array.isArray(list)) return [];
      return list
        .filter((item) => item && typeof item === "object")
        .map((item) => (typeof item.version === "string" ? item.version : ""));
    }

    // -- previews -----------------------------------------------------------

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
      const node = target instanceof Element ? target : null;
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
      p.replaceChildren(
        el("div", { class: "ragcite-preview-title" }, `[${source.n}] `, title(source)),
        el("blockquote", { class: "ragcite-preview-quote" }, isolated(C.clip(source.quote, 320))),
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
        const a = /** @type {HTMLAnchorElement} */ (marker);
        hooks.follow(event, a, quoteOf(a));
        return;
      }
      const target = event.target instanceof Element ? event.target : null;
      const anchor = /** @type {HTMLAnchorElement | null} */ (target && target.closest("a[href][data-ragcite-link]"));
      if (anchor) hooks.follow(event, anchor, quoteOf(anchor));
    }

    /**
     * The quote of the citation a link belongs to (a marker, or a source's
     * title), or the best sentence of a shown passage, when the link goes to
     * that passage; null for see-also and search-result links.
     * @param {HTMLAnchorElement} anchor
     */
    function quoteOf(anchor) {
      const rank = anchor.getAttribute("data-ragcite-shown");
      if (rank) {
        const p = shown.get(Number(rank));
        return p && p.marked && p.href === anchor.href ? p.marked : null;
      }
      const item = anchor.closest("li[data-ragcite-source]");
      const n = anchor.getAttribute("data-ragcite-n") || (item && item.getAttribute("data-ragcite-source"));
      const s = n ? sources.get(Number(n)) : undefined;
      return s && s.marked && s.href === anchor.href ? s.marked : null;
    }

    // -- rendering ------------------------------------------------------------

    /** @param {string} text */
    function setStatus(text) {
      if (widget) widget.status.textContent = text;
    }

    /**
     * "Questions now go to version 2.0.", or "Version 2.0 is no longer
     * served; questions now go to version 1.0 (this page)."; each label
     * (conf.py text) in its own `<bdi>`.
     * @param {string} now the label of the version asked from now on, ""
     *   for the server's default (every site it serves)
     * @param {string} [gone] the label of a version no longer served
     */
    function sayVersion(now, gone) {
      if (!widget) return;
      const to = now ? ["version ", el("bdi", { text: now }), "."] : ["every site the server serves."];
      widget.status.replaceChildren(
        ...(gone ? ["Version ", el("bdi", { text: gone }), " is no longer served; questions now go to "] : ["Questions now go to "]),
        ...to,
      );
    }

    /**
     * @param {WidgetError} error
     * @param {() => void} retry
     */
    function showError(error, retry) {
      const w = widget;
      if (!w) return;
      window.clearInterval(retryTimer);
      w.error.replaceChildren();
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
        const head = error.kind === "busy" ? "The answer server is busy." : error.message;
        w.error.append(el("strong", {}, isolated(head), " "), count, " ", button);
        button.addEventListener("click", () => {
          window.clearInterval(retryTimer);
          retry();
        });
        tick();
        retryTimer = window.setInterval(tick, 1000);
        setStatus("");
        return;
      }
      const head = error.kind === "invalid" || error.kind === "unserved" ? "Cannot ask that: " : error.kind === "static" ? "" : "Error: ";
      w.error.append(head ? el("strong", { text: head }) : "", isolated(error.message));
      setStatus("");
    }

    function resetOutput() {
      const w = ensure();
      window.clearInterval(retryTimer);
      hidePreview();
      w.output.replaceChildren();
      w.output.removeAttribute("data-ragcite-outcome");
      w.error.replaceChildren();
      w.error.hidden = true;
      sources = new Map();
      shown = new Map();
      streamed = null;
      w.root.classList.remove("ragcite-has-answer");
    }

    /** @param {string} text */
    function streamText(text) {
      const w = ensure();
      if (!streamed) {
        streamed = document.createTextNode("");
        w.output.append(el("p", { class: "ragcite-answer ragcite-streaming" }, el("bdi", {}, streamed)));
      }
      streamed.appendData(text);
    }

    /** @param {string} text */
    function heading(text) {
      return el("h3", { class: "ragcite-subheading", text });
    }

    /**
     * @param {LinkModel[]} links
     * @param {string} cls
     * @param {string[]} [versions] the version of each link (several sites)
     */
    function linkList(links, cls, versions = []) {
      const list = el("ol", { class: cls });
      for (const [i, item] of links.entries()) {
        list.append(
          el(
            "li",
            { class: "ragcite-link-item" },
            link(item.href, { class: "ragcite-link", "data-ragcite-link": item.passageId }, title(item)),
            versionBadge(versions[i] || "", "ragcite-badge-inline"),
            item.snippet ? el("p", { class: "ragcite-snippet" }, isolated(C.clip(item.snippet, 240))) : null,
          ),
        );
      }
      return list;
    }

    /**
     * The answer paragraph: isolated text and `<sup><a data-ragcite-n>` markers.
     * @param {string} text
     */
    function renderText(text) {
      const p = el("p", { class: "ragcite-answer" });
      for (const seg of C.parseAnswer(text, sources.keys())) {
        if ("text" in seg) {
          p.append(isolated(seg.text));
          continue;
        }
        const s = /** @type {SourceModel} */ (sources.get(seg.marker));
        const a = el("a", {
          class: s.href ? "ragcite-marker" : "ragcite-marker ragcite-marker-nolink",
          "data-ragcite-n": s.n,
          href: s.href,
          tabindex: s.href ? null : 0,
          role: s.href ? null : "button",
          "aria-label": `Source ${s.n}: ${C.sourceTitle(s)}`,
          text: `[${s.n}]`,
        });
        p.append(el("sup", { class: "ragcite-sup" }, a));
      }
      return p;
    }

    /**
     * @param {SourceModel} s
     * @param {string} version its citation's `version` (several sites)
     */
    function renderSource(s, version) {
      const head = s.selection
        ? el("span", { class: "ragcite-source-title ragcite-source-selection" }, title(s))
        : link(s.href, { class: "ragcite-source-title ragcite-link", "data-ragcite-link": s.passageId }, title(s));
      const confidence = s.level
        ? el("span", {
            class: `ragcite-source-confidence ragcite-level-${s.level}`,
            text: `${capital(s.level)} confidence${s.confidence !== null ? ` (${Math.round(s.confidence * 100)}%)` : ""}`,
          })
        : null;
      return el(
        "li",
        { class: "ragcite-source", value: s.n, "data-ragcite-source": s.n, id: `ragcite-source-${s.n}` },
        head,
        s.snippet ? el("p", { class: "ragcite-snippet" }, isolated(C.clip(s.snippet, 240))) : null,
        el(
          "div",
          { class: "ragcite-source-meta" },
          versionBadge(version),
          confidence,
          s.selection ? el("span", { class: "ragcite-source-kind", text: " · no link: your own selection" }) : null,
        ),
      );
    }

    /**
     * A percentage of a 0-1 score.
     * @param {number} score
     */
    function percent(score) {
      return `${Math.round(score * 100)}%`;
    }

    /**
     * One passage of the "passages" outcome: its title linking to it, its
     * best sentence marked among the snippet's words, how likely it answers.
     * @param {ShownModel} p
     * @param {string} version its passage's `version` (several sites)
     */
    function renderShown(p, version) {
      const { before, quote, after } = p.context;
      return el(
        "li",
        { class: "ragcite-passage", "data-ragcite-rank": p.rank },
        link(
          p.href,
          { class: "ragcite-passage-title ragcite-link", "data-ragcite-link": p.passageId, "data-ragcite-shown": p.rank },
          title(p),
        ),
        el(
          "blockquote",
          { class: "ragcite-passage-quote" },
          before ? el("span", { class: "ragcite-passage-context" }, isolated(before)) : null,
          el("span", { class: "ragcite-visually-hidden", text: "Best sentence: " }),
          el("mark", { class: "ragcite-best" }, isolated(quote)),
          after ? el("span", { class: "ragcite-passage-context" }, isolated(after)) : null,
        ),
        p.confidence !== null || version
          ? el(
              "div",
              { class: "ragcite-source-meta" },
              versionBadge(version),
              p.confidence !== null
                ? el("span", { class: "ragcite-passage-likely", text: `${percent(p.confidence)} likely to answer` })
                : null,
            )
          : null,
      );
    }

    /**
     * The "passages" outcome: no claim, the passages that may hold the answer.
     * @param {Answer} answer
     */
    function renderPassages(answer) {
      const models = C.buildShown(answer, settings);
      shown = new Map(models.map((p) => [p.rank, p]));
      const list = el("ol", { class: "ragcite-passages" });
      const versions = versionsOf(answer.passages);
      for (const p of models) list.append(renderShown(p, versions[p.rank - 1] || ""));
      ensure().output.append(
        el(
          "div",
          { class: "ragcite-maybe" },
          el("h3", { class: "ragcite-outcome-title", text: "The book may answer this here:" }),
          el("p", {
            class: "ragcite-outcome-text",
            text: "No sure answer, so none is given. Each link opens the passage at its best sentence.",
          }),
        ),
        list,
      );
      const n = models.length;
      setStatus(`No sure answer; ${n} passage${n === 1 ? "" : "s"} may hold it.`);
    }

    /**
     * The "not_found" outcome: the book does not cover it; the closest pages.
     * @param {Answer} answer
     */
    function renderNotFound(answer) {
      const seeAlso = C.buildSeeAlso(answer, settings);
      const out = ensure().output;
      out.append(
        el(
          "div",
          { class: "ragcite-notfound" },
          el("h3", { class: "ragcite-outcome-title", text: "This book does not seem to cover that" }),
          el("p", {
            class: "ragcite-outcome-text",
            text: seeAlso.length
              ? "No passage answers the question; these pages come closest."
              : "No passage answers the question. Try other words.",
          }),
        ),
      );
      const meta = answer.metadata;
      const versions = versionsOf(meta && typeof meta === "object" ? meta.see_also : null);
      if (seeAlso.length) out.append(heading("Closest pages"), linkList(seeAlso, "ragcite-see-also", versions));
      setStatus("No answer in the book.");
    }

    /**
     * "Helpful? Yes / No" under an answer; after "No", an optional reason
     * and a Send button. Each vote is sent at once, so leaving after "No"
     * still counts; a later one (the reason, or the other button) replaces
     * it on the server. The buttons say which is chosen (`aria-pressed`);
     * a status line says what happened.
     * @param {string} answerId
     */
    function renderFeedback(answerId) {
      const yes = el("button", { type: "button", class: "ragcite-feedback-button", "aria-pressed": "false", text: "Yes" });
      const no = el("button", { type: "button", class: "ragcite-feedback-button", "aria-pressed": "false", text: "No" });
      const reason = el("textarea", {
        id: "ragcite-feedback-reason",
        class: "ragcite-feedback-reason",
        rows: 2,
        maxlength: MAX_REASON,
        "aria-describedby": "ragcite-feedback-count",
        autocomplete: "off",
      });
      const count = el("span", { id: "ragcite-feedback-count", class: "ragcite-count", text: `0 / ${MAX_REASON}` });
      const send = el("button", { type: "submit", class: "ragcite-feedback-send", text: "Send" });
      const form = el(
        "form",
        { class: "ragcite-feedback-form", novalidate: true, hidden: true },
        el("label", { for: "ragcite-feedback-reason", class: "ragcite-feedback-ask", text: "What was missing or wrong? (optional)" }),
        reason,
        el("div", { class: "ragcite-form-row" }, count, send),
      );
      const status = el("p", { class: "ragcite-feedback-status", role: "status", "aria-live": "polite" });
      const box = el(
        "div",
        { class: "ragcite-feedback", role: "group", "aria-labelledby": "ragcite-feedback-label" },
        el(
          "div",
          { class: "ragcite-feedback-row" },
          el("span", { id: "ragcite-feedback-label", class: "ragcite-feedback-label", text: "Helpful?" }),
          yes,
          no,
        ),
        form,
        status,
      );
      let sending = false;

      /**
       * @param {boolean} helpful
       * @param {string | null} text
       * @returns {Promise<boolean>} whether it was stored
       */
      async function vote(helpful, text) {
        if (sending) return false;
        sending = true;
        yes.setAttribute("aria-pressed", String(helpful));
        no.setAttribute("aria-pressed", String(!helpful));
        box.setAttribute("aria-busy", "true");
        try {
          await hooks.sendFeedback(answerId, helpful, text);
          return true;
        } catch (error) {
          const message = error instanceof Error && error.message ? error.message : "try again later.";
          status.replaceChildren("Could not send your feedback: ", isolated(message));
          return false;
        } finally {
          sending = false;
          box.removeAttribute("aria-busy");
        }
      }

      yes.addEventListener("click", async () => {
        form.hidden = true;
        if (await vote(true, null)) status.textContent = "Thanks for your feedback.";
      });
      no.addEventListener("click", async () => {
        if (!(await vote(false, null))) return;
        status.textContent = "Thanks for your feedback. You can say what was missing or wrong.";
        form.hidden = false;
        reason.focus();
      });
      reason.addEventListener("input", () => {
        count.textContent = `${reason.value.length} / ${MAX_REASON}`;
      });
      reason.addEventListener("keydown", (event) => {
        if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
          event.preventDefault();
          form.requestSubmit();
        }
      });
      form.addEventListener("submit", async (event) => {
        event.preventDefault();
        const text = reason.value.trim().slice(0, MAX_REASON);
        if (!(await vote(false, text || null))) return;
        form.hidden = true;
        status.textContent = text ? "Thanks: your note was sent." : "Thanks for your feedback.";
        no.focus();
      });
      return box;
    }

    /**
     * An answer JSON, as its outcome says (see `renderOutcome`), with
     * "Helpful?" under it when it has an `answer_id` the server takes votes on.
     * @param {Answer} answer
     */
    function renderAnswer(answer) {
      renderOutcome(answer);
      const meta = answer.metadata;
      if (meta && typeof meta === "object" && meta.engine === "browser") {
        ensure().output.append(
          el("p", {
            class: "ragcite-footnote ragcite-in-browser",
            text: "Answered in your browser: your question did not leave this page.",
          }),
        );
      }
      const id = answer.answer_id;
      if (typeof id === "string" && ANSWER_ID.test(id) && hooks.takesFeedback()) {
        ensure().output.append(renderFeedback(id));
      }
    }

    /**
     * An answer JSON, as its outcome says: a cited answer with its confidence
     * band; the passages that may hold the answer; or word that the book does
     * not cover it. Anything not grounded is never shown as an answer.
     * @param {Answer} answer
     */
    function renderOutcome(answer) {
      const w = ensure();
      resetOutput();
      w.root.classList.add("ragcite-has-answer");
      const outcome = C.outcomeOf(answer);
      w.output.setAttribute("data-ragcite-outcome", outcome);
      if (outcome === "passages") return renderPassages(answer);
      if (outcome === "not_found") return renderNotFound(answer);

      const models = C.buildSources(answer, settings);
      sources = new Map(models.map((s) => [s.n, s]));
      const out = w.output;
      const level = ["high", "medium", "low"].includes(answer.confidence_level)
        ? answer.confidence_level
        : C.confidenceLevel(answer.confidence);
      const badges = el("div", { class: "ragcite-badges" });
      if (level) {
        const score = typeof answer.confidence === "number" && Number.isFinite(answer.confidence) ? answer.confidence : null;
        badges.append(
          el("span", {
            class: `ragcite-badge ragcite-badge-${level}`,
            text: `${capital(level)} confidence${score !== null ? ` · ${percent(score)}` : ""}`,
            title: score !== null ? `A calibrated ${percent(score)} chance that the cited passage answers the question` : null,
          }),
        );
      }
      if (answer.mode === "selection") {
        badges.append(el("span", { class: "ragcite-badge ragcite-badge-mode", text: "About your selection" }));
      }
      const asked = versionBadge(typeof answer.version === "string" ? answer.version : "", "ragcite-badge");
      if (asked) badges.append(asked);
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

      if (models.length) {
        const list = el("ol", { class: "ragcite-sources" });
        /** @type {Map<number, string>} */
        const versions = new Map();
        for (const c of Array.isArray(answer.citations) ? answer.citations : []) {
          if (c && typeof c === "object" && typeof c.version === "string" && !versions.has(c.n)) versions.set(c.n, c.version);
        }
        for (const s of models) list.append(renderSource(s, versions.get(s.n) || ""));
        out.append(heading("Sources"), list);
      }
      const meta = answer.metadata || {};
      const model = typeof meta.model === "string" && meta.model ? meta.model : "a language model";
      const by =
        meta.generator === "llm"
          ? ["Written by ", el("bdi", { text: model }), "; each cited sentence was checked against its source."]
          : meta.generator === "llm->extractive"
            ? ["The generated answer could not be checked against the book, so these sentences are quoted from it."]
            : ["Sentences quoted from the book."];
      out.append(el("p", { class: "ragcite-footnote" }, ...by));
      const n = models.length;
      setStatus(`Answer ready, ${n} source${n === 1 ? "" : "s"}.`);
    }

    /**
     * @param {StaticResult} result
     * @param {string} [why] a note on why there is no generated answer
     * @param {{label: string, run: () => void}} [action] a button after it
     */
    function renderStatic(result, why, action) {
      const w = ensure();
      resetOutput();
      const out = w.output;
      const note = el(
        "div",
        { class: "ragcite-static-note", role: "note" },
        el("strong", { text: "Search results, not an answer. " }),
        why ||
          "No answer server is reachable, so these are the passages that best match your question. " +
            "Generated answers with citations need the answer server (ragcite serve).",
      );
      if (action) {
        const button = el("button", { type: "button", class: "ragcite-static-action", text: action.label });
        button.addEventListener("click", () => action.run(), { once: true });
        note.append(" ", button);
      }
      out.append(note);
      if (result.hits.length) {
        out.append(heading("Matching passages"), linkList(C.buildLinks(result.hits, settings.root), "ragcite-results"));
      } else {
        out.append(el("p", { class: "ragcite-noresults", text: "No passage matches these words. Try other words." }));
      }
      w.root.classList.add("ragcite-has-answer");
      const n = result.hits.length;
      setStatus(`${n} matching passage${n === 1 ? "" : "s"}.`);
    }

    /** @param {string} question */
    function setQuestion(question) {
      ensure().question.value = firstCodePoints(question, MAX_QUESTION);
      updateCounter();
    }

    /** @param {boolean} busy */
    function setBusy(busy) {
      const w = ensure();
      w.submit.disabled = busy;
      w.submit.textContent = busy ? "Asking…" : "Ask";
      w.output.setAttribute("aria-busy", String(busy));
      w.root.classList.toggle("ragcite-loading", busy);
    }

    return {
      widget: ensure,
      isOpen,
      open,
      close,
      contains: (node) => Boolean(widget && widget.root.contains(node)),
      covers,
      showMode,
      showProgress,
      showVersions,
      setStatus,
      sayVersion,
      setQuestion,
      setBusy,
      streamText,
      renderAnswer,
      renderStatic,
      showError,
      resetOutput,
      previewShown: () => Boolean(widget && !widget.preview.hidden),
      hidePreview,
    };
  }

  const api = { MAX_QUESTION, MAX_REASON, codePoints, createPanel };
  lib.provide("panel", api);
  if (typeof module === "object") module.exports = api;
})();
