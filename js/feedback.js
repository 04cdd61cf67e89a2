// @ts-check
/**
 * "Helpful? Yes / No" under an answer, when the server takes votes; after
 * "No", an optional reason and a Send button. Each vote is sent at once, so
 * leaving after "No" still counts; a later one (the reason, or the other
 * button) replaces it on the server. The buttons say which is chosen
 * (`aria-pressed`); a status line says what happened.
 *
 * Classic script: provides `feedback` (see `lib.js`); it needs a document.
 */

(function () {
  "use strict";

  const lib = typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib;
  const { el, isolated } = lib.need("dom");

  /** `server/schemas.MAX_REASON`: the longest reason the server takes. */
  const { MAX_REASON } = lib.need("spec");

  /** @param {HTMLButtonElement} yes @param {HTMLButtonElement} no */
  function parts(yes, no) {
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
    return { box, form, reason, count, status };
  }

  /**
   * The "Helpful?" box of one answer, ready to put under it.
   * @param {string} answerId
   * @param {(answerId: string, helpful: boolean, reason: string | null) => Promise<void>} send
   *   sends a vote; rejects with a WidgetError
   * @returns {HTMLDivElement}
   */
  function feedbackForm(answerId, send) {
    const yes = el("button", { type: "button", class: "ragcite-feedback-button", "aria-pressed": "false", text: "Yes" });
    const no = el("button", { type: "button", class: "ragcite-feedback-button", "aria-pressed": "false", text: "No" });
    const { box, form, reason, count, status } = parts(yes, no);
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
        await send(answerId, helpful, text);
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

  const api = { feedbackForm };
  lib.provide("feedback", api);
  if (typeof module === "object") module.exports = api;
})();
