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
 * This file is the shell: `createPanel` keeps the state, opens and closes
 * the panel, limits the question, and `createOutput` puts under the form
 * what a question brings. The elements come from `render.js` (pure
 * functions: data in, elements out), previews of a marker's quote from
 * `previews.js`, the "Helpful?" form from `feedback.js`.
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
/** @typedef {import("./citations.js").ShownModel} ShownModel */
/** @typedef {import("./settings.js").Shortcut} Shortcut */
/** @typedef {import("./previews.js").Previews} Previews */
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

/**
 * What the panel reads of the widget's settings.
 * @typedef {{root: string, shortcut: Shortcut | null, version: string, apiBase?: URL | null, site?: string}} PanelSettings
 */

/**
 * What the output shares with the shell.
 * @typedef {object} Shell
 * @property {() => Widget | null} widget the DOM, once built
 * @property {() => Widget} ensure the DOM, built on first use
 * @property {Previews} previews
 */

(function () {
  "use strict";

  const lib = typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib;

  /** `contracts.MAX_QUESTION`, in code points as the server counts them. */
  const MAX_QUESTION = lib.need("spec").MAX_QUESTION;
  const ANSWER_ID = /^[0-9a-f]{32}$/;

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
   * Under the question form: the status line, errors, and what a question
   * brings (streamed text, an answer as its outcome says, search results).
   * It keeps the shown answer's sources and passages, which the previews
   * read, and the page's version, which decides the version badges.
   * @param {Shell} shell
   * @param {PanelSettings} settings
   * @param {PanelHooks} hooks
   */
  function createOutput(shell, settings, hooks) {
    const C = lib.need("citations");
    const R = lib.need("render");
    const { el, isolated } = lib.need("dom");
    const { widget, ensure, previews } = shell;

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

    /** @param {string} text */
    function setStatus(text) {
      const w = widget();
      if (w) w.status.textContent = text;
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
      const w = widget();
      if (!w) return;
      const to = now ? ["version ", el("bdi", { text: now }), "."] : ["every site the server serves."];
      w.status.replaceChildren(
        ...(gone ? ["Version ", el("bdi", { text: gone }), " is no longer served; questions now go to "] : ["Questions now go to "]),
        ...to,
      );
    }

    /**
     * @param {WidgetError} error
     * @param {() => void} retry
     */
    function showError(error, retry) {
      const w = widget();
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
      previews.hide();
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

    /**
     * The page's own version is known (or changed): show each version badge
     * whose version is another.
     * @param {string} page
     */
    function setPage(page) {
      pageVersion = page;
      const w = widget();
      if (!w) return;
      for (const badge of w.output.querySelectorAll("[data-ragcite-version]")) {
        R.setBadge(/** @type {HTMLElement} */ (badge), pageVersion);
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
      if (outcome === "passages") {
        const models = C.buildShown(answer, settings);
        shown = new Map(models.map((p) => [p.rank, p]));
        w.output.append(...R.mayAnswer(answer, models, pageVersion));
        const n = models.length;
        setStatus(`No sure answer; ${n} passage${n === 1 ? "" : "s"} may hold it.`);
        return;
      }
      if (outcome === "not_found") {
        w.output.append(...R.notCovered(answer, C.buildSeeAlso(answer, settings), pageVersion));
        setStatus("No answer in the book.");
        return;
      }
      const models = C.buildSources(answer, settings);
      sources = new Map(models.map((s) => [s.n, s]));
      w.output.append(...R.citedAnswer(answer, models, sources, pageVersion));
      const n = models.length;
      setStatus(`Answer ready, ${n} source${n === 1 ? "" : "s"}.`);
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
        ensure().output.append(R.inBrowserNote());
      }
      const id = answer.answer_id;
      if (typeof id === "string" && ANSWER_ID.test(id) && hooks.takesFeedback()) {
        ensure().output.append(lib.need("feedback").feedbackForm(id, hooks.sendFeedback));
      }
    }

    /**
     * @param {StaticResult} result
     * @param {string} [why] a note on why there is no generated answer
     * @param {{label: string, run: () => void}} [action] a button after it
     */
    function renderStatic(result, why, action) {
      const w = ensure();
      resetOutput();
      w.output.append(...R.searchResults(result, settings.root, why, action));
      w.root.classList.add("ragcite-has-answer");
      const n = result.hits.length;
      setStatus(`${n} matching passage${n === 1 ? "" : "s"}.`);
    }

    return {
      setStatus,
      sayVersion,
      showError,
      resetOutput,
      streamText,
      setPage,
      renderAnswer,
      renderStatic,
      /** @param {number} n */
      source: (n) => sources.get(n),
      /** @param {number} rank */
      shown: (rank) => shown.get(rank),
    };
  }

  /**
   * @param {PanelSettings} settings
   * @param {PanelHooks} hooks
   * @returns {Panel}
   */
  function createPanel(settings, hooks) {
    const R = lib.need("render");
    const { el } = lib.need("dom");

    /** @type {Widget | null} */
    let widget = null;
    /** @type {Element | null} */
    let returnFocus = null;
    /** The picker's options as last built, to build them only on change. */
    let offered = "";
    /** @type {import("./render.js").ProgressParts | null} */
    let progressParts = null;
    /** @type {(() => void) | null} */
    let cancelLoad = null;

    const previews = lib.need("previews").createPreviews({
      widget: () => widget,
      source: (n) => output.source(n),
      shown: (rank) => output.shown(rank),
      follow: hooks.follow,
    });
    const output = createOutput({ widget: () => widget, ensure, previews }, settings, hooks);

    /** The widget's elements, listened to and put on the page. @returns {Widget} */
    function build() {
      const { widget: w, closeButton, selectionClear } = R.skeleton(settings, MAX_QUESTION);
      const { question, form } = w;
      w.launcher.addEventListener("click", () => (isOpen() ? close() : open()));
      closeButton.addEventListener("click", () => close());
      w.versionSelect.addEventListener("change", () => hooks.chooseVersion(w.versionSelect.value));
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
      previews.listen(w);
      w.askSelection.addEventListener("mousedown", (event) => event.preventDefault()); // keep the selection
      w.askSelection.addEventListener("click", () => hooks.askSelection());
      document.body.append(w.root);
      return w;
    }

    /** @returns {Widget} */
    function ensure() {
      if (!widget) {
        if (!document.body) throw new Error("ragcite: the page has no body yet");
        widget = build();
      }
      return widget;
    }

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
        output.setStatus(`Your question was cut to ${MAX_QUESTION.toLocaleString("en")} characters, the limit.`);
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
      previews.hide();
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
        progressParts = R.progressParts();
        progressParts.cancel.addEventListener("click", () => {
          if (cancelLoad) cancelLoad();
        });
        w.body.insertBefore(progressParts.box, w.output);
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
      output.setPage(page);
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
      setStatus: output.setStatus,
      sayVersion: output.sayVersion,
      setQuestion,
      setBusy,
      streamText: output.streamText,
      renderAnswer: output.renderAnswer,
      renderStatic: output.renderStatic,
      showError: output.showError,
      resetOutput: output.resetOutput,
      previewShown: previews.shown,
      hidePreview: previews.hide,
    };
  }

  const api = { MAX_QUESTION, codePoints, createPanel };
  lib.provide("panel", api);
  if (typeof module === "object") module.exports = api;
})();
