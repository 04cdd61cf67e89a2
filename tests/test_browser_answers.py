"""Answers in the reader's browser, in Chromium, on a site served by a plain file
server (``python -m http.server``'s handler): nothing loads with the page, the
download shows its progress in MB and can be cancelled, later questions and
visits reuse what was fetched, and where the engine cannot run (file://, a
Content-Security-Policy without 'wasm-unsafe-eval') the reader gets the search
results and one sentence saying why. Nothing the reader types leaves the page.

Everything runs for real: the worker, the store, onnxruntime-web, the model
and the engine's modules; the last test asks every question of the example
book in Chromium and compares the answers with the Python engine's (issue 35's
Done-when: >= 0.99 the same).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from sphinx_ragcite.extension.browser_assets import ort_runtime_files

from helpers.browser import (
    CHROMIUM,
    LAUNCH_ARGS,
    QUESTION,
    ask,
    engine_requests,
    shot,
    watched,
)
from helpers.builds import read_manifest
from helpers.repo import REPO, benchmark
from helpers.servers import serve

if TYPE_CHECKING:
    pass

if ort_runtime_files() is None:
    pytest.skip(
        "onnxruntime-web is not installed (npm ci in the checkout)",
        allow_module_level=True,
    )

page_tools = benchmark("_browser_page")
#: What a worker loads before the first answer (js/files.js FIRST_ANSWER_ROLES,
#: of a book searched exactly: every passage vector, no dense codes).
FIRST_ANSWER_ROLES = (
    *("model", "tokenizer", "ranker", "search_root", "embeddings"),
    *("embedding_scales", "ort_js", "ort_mjs", "ort_wasm"),
)
#: The CSP docs/howto/static-hosting.md tells hosts to send.
DOCUMENTED_CSP = (
    "script-src 'self' 'wasm-unsafe-eval'; worker-src 'self'; connect-src 'self'"
)

# -- a reader's browser ------------------------------------------------------------
# ``engine_site`` and ``watched_page`` are the session's (conftest).


@pytest.fixture
def profile_page(browser, tmp_path: Path):
    """A page of a browser with a profile on disk: its HTTP cache keeps large
    files, as a reader's browser does (an incognito context's cache in memory
    keeps none as large as the model)."""
    context = browser.browser_type.launch_persistent_context(
        str(tmp_path / "profile"),
        executable_path=str(CHROMIUM),
        args=LAUNCH_ARGS,
        viewport={"width": 1280, "height": 800},
    )
    page = watched(context.pages[0] if context.pages else context.new_page())
    yield page
    context.close()
    assert not page.errors, page.errors


# -- nothing until asked, then progress -------------------------------------------


def test_nothing_loads_at_page_load(watched_page, engine_site: Path) -> None:
    with serve(engine_site) as (base, _):
        watched_page.goto(f"{base}/brewing/pour_over.html")
        watched_page.wait_for_load_state("load")
        watched_page.wait_for_timeout(1500)
        assert engine_requests(watched_page, base) == []
        assert watched_page.workers == []
        # focusing the page or scrolling does not start it either
        watched_page.mouse.wheel(0, 400)
        watched_page.wait_for_timeout(300)
        assert engine_requests(watched_page, base) == []


def first_question(page) -> None:
    """Open the panel and ask, as a reader does: the engine starts then."""
    page.evaluate("window.ragcite.open()")
    page.fill("#ragcite-question", QUESTION)
    page.press("#ragcite-question", "Enter")


def test_the_first_question_starts_the_download_with_progress_in_mb(
    watched_page, engine_site: Path
) -> None:
    manifest = read_manifest(engine_site)
    total = sum(manifest["bytes"][role] for role in FIRST_ANSWER_ROLES)
    with serve(engine_site, slow_model=True) as (base, _):
        watched_page.goto(f"{base}/index.html")
        first_question(watched_page)
        bar = watched_page.locator(".ragcite-progress")
        bar.wait_for(state="visible", timeout=30_000)
        label = watched_page.locator(".ragcite-progress-label").text_content()
        said = re.fullmatch(
            r"Loading the answer engine: ([0-9.]+) of ([0-9.]+) MB", label
        )
        assert said, label
        assert said.group(2) == f"{total / 1e6:.1f}"
        assert watched_page.locator(".ragcite-progress-cancel").is_visible()
        note = watched_page.locator(".ragcite-mode-note").text_content()
        assert "answered in your browser" in note
        # the docs' picture: the search results under the download, under way
        watched_page.locator(".ragcite-results").wait_for(
            state="visible", timeout=30_000
        )
        watched_page.wait_for_function(
            "() => /: [1-9][0-9.]* of/.test(document.querySelector("
            "'.ragcite-progress-label').textContent)",
            timeout=30_000,
        )
        shot(watched_page, "browser-progress.png", docs=True)
        watched_page.wait_for_function(
            "() => window.__messages.some((m) => m[1] === 'ready')", timeout=120_000
        )
        assert watched_page.locator(".ragcite-progress").is_hidden()
        seen = watched_page.evaluate("window.__progress")
        # the download in MB, then "Starting the answer engine…" (issue 42)
        assert seen[-1] == "Starting the answer engine…", seen
        loaded = [float(re.search(r": ([0-9.]+) of", s).group(1)) for s in seen[:-1]]
        assert loaded == sorted(loaded)
        assert len(set(loaded)) >= 3, seen  # it moved while loading


def test_static_results_at_once_then_the_answer_from_the_browser(
    watched_page, engine_site: Path
) -> None:
    with serve(engine_site) as (base, _):
        watched_page.goto(f"{base}/index.html")
        watched_page.evaluate("window.ragcite.open()")
        watched_page.fill("#ragcite-question", QUESTION)
        watched_page.press("#ragcite-question", "Enter")
        watched_page.locator(".ragcite-results").wait_for(
            state="visible", timeout=15_000
        )
        note = watched_page.locator(".ragcite-static-note").text_content()
        assert "answer engine loads" in note
        watched_page.locator(".ragcite-in-browser").wait_for(
            state="visible", timeout=120_000
        )
        assert watched_page.locator(".ragcite-results").count() == 0  # replaced
        assert watched_page.locator(".ragcite-output").get_attribute(
            "data-ragcite-outcome"
        )
        marker = watched_page.locator("a[data-ragcite-n]").first
        assert marker.get_attribute("href").startswith(f"{base}/")
        shot(watched_page, "browser-answer.png", docs=True)
        answer = ask(watched_page, QUESTION)  # the public API resolves with the Answer
        assert answer["metadata"]["engine"] == "browser"
        assert answer["metadata"]["generator"] == "extractive"
        assert {
            "outcome",
            "answer",
            "citations",
            "confidence",
            "confidence_level",
        } <= set(answer)
        # the marker lands on the cited passage
        cited = answer["citations"][0]
        watched_page.locator('a[data-ragcite-n="1"]').click()
        watched_page.wait_for_url(f"{base}/{cited['url']}")


def test_later_questions_fetch_only_shards_and_visits_reuse_the_cache(
    profile_page, engine_site: Path
) -> None:
    page = profile_page
    manifest = read_manifest(engine_site)
    with serve(engine_site) as (base, served):
        page.goto(f"{base}/index.html")
        ask(page, QUESTION)
        before = len(page.requests)
        answer = ask(page, "What grind size suits espresso?")
        assert answer["metadata"]["engine"] == "browser"
        later = [url for _, url in page.requests[before:]]
        assert later, "the question fetched nothing (its shards)"
        assert all(
            "/_ragcite/shards/" in u
            or "/_ragcite/search/" in u  # its terms' and passages' search shards
            or u.endswith("/api/health")
            for u in later
        ), later
        # a later visit: the model comes from the browser's cache
        model = "/_ragcite/" + manifest["files"]["model"]
        page.goto(f"{base}/beans.html")
        again = ask(page, QUESTION)
        assert again["metadata"]["engine"] == "browser"
        bodies = [code for _, path, code in served if path == model and code == 200]
        assert bodies == [200], [s for s in served if "/model." in s[1]]


def test_the_reader_can_cancel_the_download(watched_page, engine_site: Path) -> None:
    with serve(engine_site, slow_model=True) as (base, _):
        watched_page.goto(f"{base}/index.html")
        first_question(watched_page)
        watched_page.locator(".ragcite-progress-cancel").wait_for(
            state="visible", timeout=30_000
        )
        watched_page.wait_for_timeout(500)
        watched_page.click(".ragcite-progress-cancel")
        assert watched_page.locator(".ragcite-progress").is_hidden()
        watched_page.wait_for_timeout(300)
        assert watched_page.workers == []  # the worker is gone, its downloads with it
        result = ask(watched_page, QUESTION)
        assert result["mode"] == "static"
        assert result["hits"]
        note = watched_page.locator(".ragcite-static-note").text_content()
        assert "You stopped the download of the answer engine" in note
        model = [u for _, u in watched_page.requests if "/_ragcite/model." in u]
        assert len(model) == 1  # not started again


# -- where it cannot run ---------------------------------------------------------------


def test_from_disk_the_reader_gets_search_results_and_why(
    watched_page, engine_site: Path
) -> None:
    watched_page.goto((engine_site / "brewing" / "espresso.html").as_uri())
    result = ask(watched_page, QUESTION)
    assert result["mode"] == "static"
    assert result["hits"]
    note = watched_page.locator(".ragcite-static-note").text_content()
    assert "opened from disk (file://)" in note
    assert watched_page.workers == []
    assert not [
        u
        for _, u in watched_page.requests
        if "worker.js" in u or "/_ragcite/model" in u
    ]


def test_a_csp_without_wasm_unsafe_eval_falls_back_with_one_sentence(
    watched_page, engine_site: Path
) -> None:
    csp = "script-src 'self'; worker-src 'self'; connect-src 'self'"
    with serve(engine_site, csp=csp) as (base, _):
        watched_page.goto(f"{base}/index.html")
        result = ask(watched_page, QUESTION)
        assert result["mode"] == "static"
        assert result["hits"]
        note = watched_page.locator(".ragcite-static-note").text_content()
        assert "Content-Security-Policy" in note
        assert "'wasm-unsafe-eval'" in note
        # refused before anything large was fetched
        assert not [
            u
            for _, u in watched_page.requests
            if "/_ragcite/model." in u or ".wasm" in u
        ]


def test_the_documented_csp_lets_answers_run(watched_page, engine_site: Path) -> None:
    with serve(engine_site, csp=DOCUMENTED_CSP) as (base, _):
        watched_page.goto(f"{base}/index.html")
        answer = ask(watched_page, QUESTION)
        assert answer["metadata"]["engine"] == "browser"
        # the theme's own inline script is refused; nothing of ours is
        ours = [
            e
            for e in watched_page.console_errors
            if "Content Security Policy" in e and "inline" not in e
        ]
        assert ours == []


def test_nothing_the_reader_types_leaves_the_page(
    watched_page, engine_site: Path
) -> None:
    with serve(engine_site) as (base, served):
        watched_page.goto(f"{base}/index.html")
        secret = "Is my secret 7f3a9c bloom question private?"
        ask(watched_page, QUESTION)
        ask(watched_page, secret)
        assert watched_page.requests
        assert [m for m, _ in watched_page.requests if m != "GET"] == []
        assert [
            u for _, u in watched_page.requests if not u.startswith(f"{base}/")
        ] == []
        assert not [u for _, u in watched_page.requests if "7f3a9c" in u]
        assert [c for c, _, _ in served if c != "GET"] == []


def test_a_question_about_a_selection_is_answered_in_the_browser(
    watched_page, engine_site: Path
) -> None:
    """Selection mode with no server: the question asked about a selection
    (the opening sentences of the passage a question retrieves first, as
    ``tools/write_parity_cases.py`` makes them) is answered in the browser as
    the Python engine answers it, the selection cited as "User Selection"
    without a link; nothing but GET requests leaves the page."""
    from sphinx_ragcite.answer.engine import AnswerEngine
    from sphinx_ragcite.retrieval.site import Site
    from tools import write_parity_cases as cases_tool

    loaded = Site.load(engine_site)
    engine = AnswerEngine(loaded)
    asked = [
        (QUESTION, "How long is the bloom?"),
        ("How hot should the water be?", cases_tool.ABOUT_THIS),
        ("Why does grind size matter?", "Why does grind size matter?"),
    ]
    selections = 0
    with serve(engine_site) as (base, _):
        watched_page.goto(f"{base}/brewing/pour_over.html")
        for finding, question in asked:
            retrieved = engine.answer(finding).metadata["retrieved"]
            selection = cases_tool.selection_for(loaded, retrieved)
            assert selection
            server = engine.answer(question, mode="selection", selection=selection)
            browser = watched_page.evaluate(
                "([q, s]) => window.ragcite.ask(q, {selection: s})",
                [question, selection],
            )
            assert browser["metadata"]["engine"] == "browser", browser
            assert browser["mode"] == "selection"
            why = page_tools.mismatch(server.model_dump(mode="json"), browser)
            assert why is None, (question, selection, why)
            assert browser["answer"] == server.answer
            assert watched_page.locator(".ragcite-sources li").count() == len(
                server.citations
            )
            cited = [c["passage_id"] for c in browser["citations"]]
            mine = watched_page.locator(".ragcite-source", has_text="User Selection")
            assert mine.count() == cited.count("user-selection")
            assert mine.locator("a").count() == 0
            selections += cited.count("user-selection")
    assert selections, "no answer cited the selection"
    assert all(method == "GET" for method, _ in watched_page.requests)


#: An init script that makes the page's own thread do the engine's kind of
#: work: 200 ms of computing on every progress message, as an engine that
#: loads on the main thread would.
MAIN_THREAD_ENGINE = """
const Observed = window.Worker;
window.Worker = function (url, options) {
  const w = new Observed(url, options);
  w.addEventListener("message", (e) => {
    if (e.data.type !== "progress") return;
    const until = performance.now() + 200;
    while (performance.now() < until);
  });
  return w;
};
"""


def blocked_visits(browser, base: str, *, visits: int = 3, also: str = "") -> list:
    """Up to *visits* new readers (a fresh context each: the engine downloaded
    and started again) ask two questions; what held the main thread while
    only the engine worked, one entry per visit that saw any (it stops at
    the first visit that saw none)."""
    seen = []
    for _visit in range(visits):
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        page = watched(context.new_page())
        if also:
            page.add_init_script(also)
        page.goto(f"{base}/index.html")
        assert page.evaluate("window.__loafObserved"), "no long-animation-frame API"
        ask(page, QUESTION)
        ask(page, "How hot should the water be?")
        windows = page_tools.engine_windows(
            page.evaluate("window.__messages"), page.evaluate("window.__sent")
        )
        assert sum(high - low for low, high in windows) > 1000, windows
        held = page_tools.blocking_scripts(page.evaluate("window.__scripts"), windows)
        long_tasks = page.evaluate("window.__long")
        context.close()
        assert not page.errors, page.errors
        if not held:
            break
        seen.append((held, long_tasks, windows))
    return seen


def test_the_main_thread_is_never_blocked_by_the_engine(
    browser, engine_site: Path
) -> None:
    """No script holds the main thread for a long task (> 50 ms) while the
    engine downloads and starts, nor while it answers (from a question's post
    to the worker to its answer), the page's drawing of what arrives aside
    (benchmarks/_browser_page.py).

    Script time, from the Long Animation Frames API, not the long task's:
    on a machine busy with other work (CI's other test workers) three visits
    in a row each saw a long task (one of 120 ms while the engine started),
    which the Long Tasks API does not say the cause of; under load here the
    long frames were the page's drawing after a 5-10 ms message handler. An
    engine on the main thread computes for seconds in every visit; a machine
    busy enough to stretch a 10 ms handler past 50 ms is allowed two."""
    with serve(engine_site) as (base, _):
        seen = blocked_visits(browser, base)
    assert len(seen) < 3, seen


def test_the_check_sees_an_engine_on_the_main_thread(
    browser, engine_site: Path
) -> None:
    """The check above fails an engine that computes on the page's thread
    (here 200 ms per progress message): one visit is enough to see it."""
    with serve(engine_site) as (base, _):
        seen = blocked_visits(browser, base, visits=1, also=MAIN_THREAD_ENGINE)
    assert len(seen) == 1, "a blocked main thread went unseen"
    held, _, _ = seen[0]
    # the 200 ms handler is seen whole at least once (a frame's script time
    # may also be cut where a frame ends: CI saw one under 200 ms)
    assert any(duration >= 200 for _, duration, _, _ in held), held
    assert {invoker for _, _, invoker, _ in held} == {"Worker.onmessage"}, held


# -- the same answers as the server ----------------------------------------------


def test_the_browser_answers_as_the_server_does(
    watched_page, engine_site: Path
) -> None:
    """Every question of example_book/qa.jsonl, asked through
    ``window.ragcite.ask`` on the served site: the outcome, the cited passage
    IDs and the confidence (within 0.02) of the Python engine's answer, for
    >= 0.99 of them; each mismatch is listed with the stage that differs."""
    from sphinx_ragcite.answer.engine import AnswerEngine
    from sphinx_ragcite.retrieval.site import Site

    engine = AnswerEngine(Site.load(engine_site))
    questions = [
        json.loads(line)["question"]
        for line in (REPO / "example_book" / "qa.jsonl").read_text("utf-8").splitlines()
        if line.strip()
    ]
    assert len(questions) >= 90
    with serve(engine_site) as (base, _):
        watched_page.goto(f"{base}/index.html")
        mismatches = []
        for question in questions:
            server = engine.answer(question).model_dump(mode="json")
            browser = ask(watched_page, question)
            assert browser["metadata"]["engine"] == "browser", browser
            why = page_tools.mismatch(server, browser)
            if why:
                mismatches.append((question, why))
    same = len(questions) - len(mismatches)
    print(f"parity in Chromium: {same}/{len(questions)}", *mismatches, sep="\n")
    assert same >= 0.99 * len(questions), mismatches


def test_a_mismatch_names_what_differs() -> None:
    server = {
        "outcome": "answered",
        "citations": [{"passage_id": "ch1-sec0-p1"}],
        "confidence": 0.80,
        "metadata": {"retrieved": ["ch1-sec0-p1", "ch1-sec0-p2"]},
    }
    assert page_tools.mismatch(server, json.loads(json.dumps(server))) is None
    near = {**server, "confidence": 0.815}
    assert page_tools.mismatch(server, near) is None
    far = {**server, "confidence": 0.83}
    assert page_tools.mismatch(server, far) == "confidence 0.8 vs 0.83"
    other = {**server, "citations": [], "outcome": "not_found"}
    other["metadata"] = {"retrieved": ["ch1-sec0-p2", "ch1-sec0-p1"]}
    why = page_tools.mismatch(server, other)
    assert why
    assert why.startswith("retrieval:")
    assert "outcome answered vs not_found" in why
