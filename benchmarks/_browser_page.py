"""What the browser-answer tests and benchmark share about a page in Chromium:
the script that watches it, when only the engine works, and the stand-in for
the engine's modules while they are missing (tests/browser_stand_in.js).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
#: The engine's modules (issue 35; ENGINE_SCRIPTS of extension/assets.py).
ENGINE_SCRIPTS = (
    *("wordpiece.js", "encode.js", "fusion.js", "units.js", "ranker.js"),
    *("verify.js", "answer.js", "engine.js"),
)

#: An init script: every long task of the main thread, each message to and
#: from the worker with its time, and each text of the progress label.
OBSERVE = """
window.__long = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) window.__long.push([e.startTime, e.duration]);
}).observe({ type: "longtask", buffered: true });
window.__messages = [];
window.__sent = [];
window.__progress = [];
const Real = window.Worker;
window.Worker = function (url, options) {
  const w = new Real(url, options);
  const seen = (e) => window.__messages.push([performance.now(), e.data.type]);
  w.addEventListener("message", seen);
  const post = w.postMessage.bind(w);
  w.postMessage = (m) => {
    window.__sent.push([performance.now(), m && m.type]);
    return post(m);
  };
  return w;
};
new MutationObserver(() => {
  const label = document.querySelector(".ragcite-progress-label");
  const text = label && !label.closest("[hidden]") ? label.textContent : null;
  const shown = window.__progress;
  if (text && shown[shown.length - 1] !== text) shown.push(text);
}).observe(document, {
  subtree: true, childList: true, characterData: true, attributes: true,
});
"""


#: ms after a message that brings something to draw (an answer, search
#: results): the page's own drawing, as for a server's answer, not the engine.
DRAWING_MS = 150


def engine_windows(
    received: list[list[Any]], sent: list[list[Any]]
) -> list[tuple[float, float]]:
    """When only the engine works: from its first progress to ready, and from
    each question's post to the worker to its answer, less the time the page
    spends drawing what a message brought (search results, an answer)."""
    progress = [t for t, kind in received if kind == "progress"]
    ready = [t for t, kind in received if kind == "ready"]
    answers = [t for t, kind in received if kind == "answer"]
    asked = [t for t, kind in sent if kind == "ask"]
    windows = [(progress[0], ready[0])] if progress and ready else []
    windows += list(zip(asked, answers, strict=False))
    drawn = [t for t, kind in received if kind in ("hits", "answer")]
    for t in drawn:
        windows = [
            part
            for low, high in windows
            for part in ((low, min(high, t)), (max(low, t + DRAWING_MS), high))
            if part[0] < part[1]
        ]
    return windows


def engine_missing() -> list[str]:
    """The engine's modules not in js/ (other branches of issue 35)."""
    return [n for n in ENGINE_SCRIPTS if not (REPO / "js" / n).is_file()]


def install_stand_in(site: Path) -> list[str]:
    """Put tests/browser_stand_in.js in place of the engine's missing modules
    in a built *site* (a copy: this writes into it); the names it stood in for."""
    missing = engine_missing()
    stand_in = (REPO / "tests" / "browser_stand_in.js").read_text("utf-8")
    for name in missing:
        (site / "_static" / "ragcite" / name).write_text(
            stand_in if name == "engine.js" else "// stand-in\n", "utf-8"
        )
    return missing
