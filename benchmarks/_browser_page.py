"""What the browser-answer tests and benchmark share about a page in Chromium:
the script that watches it, when only the engine works, and how a browser's
answer is compared with the Python engine's.
"""

from __future__ import annotations

from typing import Any

#: An init script: every long task of the main thread, every script that ran
#: in a long animation frame (its start, duration, invoker and source: what
#: held the thread, as against drawing or a machine busy elsewhere), each
#: message to and from the worker with its time, and each text of the
#: progress label.
OBSERVE = """
window.__long = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) window.__long.push([e.startTime, e.duration]);
}).observe({ type: "longtask", buffered: true });
window.__scripts = [];
window.__loafObserved = PerformanceObserver.supportedEntryTypes.includes(
  "long-animation-frame");
if (window.__loafObserved) new PerformanceObserver((list) => {
  for (const frame of list.getEntries()) for (const s of frame.scripts) {
    window.__scripts.push([s.startTime, s.duration, s.invoker, s.sourceURL]);
  }
}).observe({ type: "long-animation-frame", buffered: true });
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


#: A task this long blocks the page (the Long Tasks API's threshold, ms).
LONG_MS = 50


def blocking_scripts(
    scripts: list[list[Any]], windows: list[tuple[float, float]]
) -> list[list[Any]]:
    """The scripts of *scripts* (``window.__scripts``) that held the main
    thread for a long task while only the engine worked (*windows*). Script
    time, not the frame's: a busy machine stretched the page's drawing past
    50 ms (frames of 60-290 ms here under load), not its 5-10 ms handlers."""
    return [
        s
        for s in scripts
        if s[1] > LONG_MS and any(low <= s[0] < high for low, high in windows)
    ]


#: How far the two engines' confidences may be apart (issue 35).
CONFIDENCE_TOLERANCE = 0.02


def cited(answer: dict[str, Any]) -> list[str]:
    return [c["passage_id"] for c in answer.get("citations") or []]


def mismatch(server: dict[str, Any], browser: dict[str, Any]) -> str | None:
    """Why *browser*'s answer differs from *server*'s (None: the same outcome,
    cited IDs and confidence within 0.02), naming the first stage that differs:
    retrieval (other passages), then the outcome, citations, confidence."""
    why = []
    retrieved = [(a.get("metadata") or {}).get("retrieved") for a in (server, browser)]
    if retrieved[0] != retrieved[1]:
        why.append(f"retrieval: {retrieved[0]} vs {retrieved[1]}")
    if server["outcome"] != browser.get("outcome"):
        why.append(f"outcome {server['outcome']} vs {browser.get('outcome')}")
    if cited(server) != cited(browser):
        why.append(f"cited {cited(server)} vs {cited(browser)}")
    gap = abs(server["confidence"] - (browser.get("confidence") or 0.0))
    if gap > CONFIDENCE_TOLERANCE:
        why.append(f"confidence {server['confidence']} vs {browser.get('confidence')}")
    same = not why or (len(why) == 1 and why[0].startswith("retrieval"))
    return None if same else "; ".join(why)
