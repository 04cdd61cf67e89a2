"""The browser engine against what a site update, a host and a reader's
browser do to it (issue 42), in Chromium on a plain file server: every script
it loads is the build's own (versioned), nothing downloads before the first
question and a reader who asks to save data is asked first, an index it
cannot read or a CSP that refuses its worker is named in one sentence, and
the notes above the results never contradict each other.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from sphinx_ragcite.extension.assets import STATIC_FOLDER, assets_digest

from helpers.browser import QUESTION, ask, engine_requests
from helpers.builds import read_manifest
from helpers.servers import serve

#: The mode note's words while answers come from the browser.
IN_BROWSER = "answered in your browser"
#: The static note's words that say only a server answers.
NEEDS_SERVER = "need the answer server"
ASSETS = re.compile(r'data-ragcite-assets="([0-9a-f]+)"')


@pytest.fixture
def altered(engine_site: Path, tmp_path: Path):
    """A copy of the site whose manifest (or a file) a test changes."""
    copy = tmp_path / "site"
    shutil.copytree(engine_site, copy)
    return copy


def notes(page) -> list[str]:
    """Every text the static note and the mode note showed (recorded by an
    observer the page gets before any script runs)."""
    return page.evaluate("window.__notes")


RECORD_NOTES = """
window.__notes = [];
new MutationObserver(() => {
  const shown = '.ragcite-static-note, .ragcite-mode-note';
  for (const n of document.querySelectorAll(shown)) {
    const text = n.textContent;
    if (!n.hidden && text && window.__notes.at(-1) !== text) window.__notes.push(text);
  }
}).observe(document, {
  subtree: true, childList: true, characterData: true, attributes: true,
});
"""


# -- 4: old engine code never runs after an update ---------------------------------


def test_every_script_the_widget_and_worker_load_is_the_builds_own(
    watched_page, engine_site: Path
) -> None:
    html = (engine_site / "index.html").read_text(encoding="utf-8")
    digest = ASSETS.search(html).group(1)
    assert digest == assets_digest(
        engine_site / "_static" / STATIC_FOLDER,
        [
            p.relative_to(engine_site / "_static" / STATIC_FOLDER).as_posix()
            for p in (engine_site / "_static" / STATIC_FOLDER).rglob("*")
            if p.is_file()
        ],
    )
    with serve(engine_site) as (base, _):
        watched_page.goto(f"{base}/index.html")
        answer = ask(watched_page, QUESTION)
        assert answer["metadata"]["engine"] == "browser"
        scripts = [
            url
            for _, url in watched_page.requests
            if f"/_static/{STATIC_FOLDER}/" in url and url.split("?")[0].endswith(".js")
        ]
        loaded_later = [
            u
            for u in scripts
            if re.search(r"/(browser|worker|store|engine|encode)\.js", u)
        ]
        assert len(loaded_later) >= 5, scripts
        unversioned = [u for u in scripts if "v" not in parse_qs(urlsplit(u).query)]
        assert unversioned == []
        # the scripts the widget and its worker load by themselves carry the
        # build's digest of every script it shipped
        ours = {parse_qs(urlsplit(u).query)["v"][0] for u in loaded_later}
        assert ours == {digest}


def test_the_digest_changes_with_any_script(tmp_path: Path) -> None:
    (tmp_path / "a.js").write_text("one", encoding="utf-8")
    (tmp_path / "b.js").write_text("two", encoding="utf-8")
    before = assets_digest(tmp_path, ["a.js", "b.js"])
    assert before == assets_digest(tmp_path, ["b.js", "a.js"])
    (tmp_path / "b.js").write_text("two!", encoding="utf-8")
    assert assets_digest(tmp_path, ["a.js", "b.js"]) != before
    assert assets_digest(tmp_path, ["a.js"]) != assets_digest(tmp_path, ["b.js"])


# -- 5: nothing downloads until the first question; Save-Data asks first -----------


def test_opening_the_panel_downloads_nothing(watched_page, engine_site: Path) -> None:
    watched_page.add_init_script(RECORD_NOTES)
    with serve(engine_site) as (base, _):
        watched_page.goto(f"{base}/index.html")
        watched_page.evaluate("window.ragcite.open()")
        watched_page.locator(".ragcite-mode-note").wait_for(state="visible")
        watched_page.wait_for_timeout(2000)
        started = [
            u for u in engine_requests(watched_page, base) if "browser.js" not in u
        ]
        assert started == []
        assert watched_page.workers == []
        note = watched_page.locator(".ragcite-mode-note").text_content()
        assert IN_BROWSER in note
        assert "first question" in note
        # the first question starts it
        answer = ask(watched_page, QUESTION)
        assert answer["metadata"]["engine"] == "browser"


def test_a_later_page_starts_the_engine_when_the_panel_opens(
    watched_page, engine_site: Path
) -> None:
    """After the engine answered on a page of the visit, opening the panel on
    the next page starts it (from the caches) while the reader types."""
    with serve(engine_site) as (base, served):
        watched_page.goto(f"{base}/index.html")
        assert ask(watched_page, QUESTION)["metadata"]["engine"] == "browser"
        watched_page.goto(f"{base}/beans.html")
        watched_page.wait_for_timeout(500)
        assert watched_page.workers == []  # not before the panel opens
        mark = len(served)
        watched_page.evaluate("window.ragcite.open()")
        watched_page.wait_for_function(
            "() => window.__messages.some((m) => m[1] === 'ready')", timeout=60_000
        )
        model = [p for _, p, code in served[mark:] if "/_ragcite/model." in p]
        assert model == []  # from Cache Storage, not the network
        answer = ask(watched_page, "What grind size suits espresso?")
        assert answer["metadata"]["engine"] == "browser"


SAVE_DATA = """
Object.defineProperty(Navigator.prototype, 'connection', {
  configurable: true, get: () => ({saveData: true, effectiveType: '3g'}),
});
"""


def test_a_reader_saving_data_is_asked_before_the_download(
    watched_page, engine_site: Path
) -> None:
    watched_page.add_init_script(SAVE_DATA)
    manifest = read_manifest(engine_site)
    size = sum(
        manifest["bytes"][r]
        for r in ("model", "tokenizer", "ort_js", "ort_mjs", "ort_wasm")
    )
    with serve(engine_site) as (base, _):
        watched_page.goto(f"{base}/index.html")
        result = ask(watched_page, QUESTION)
        assert result["mode"] == "static"
        assert result["hits"]
        note = watched_page.locator(".ragcite-static-note").text_content()
        assert "save data" in note
        assert f"about {round(size / 1e6)} MB" in note
        assert not [u for u in watched_page.requests if "/_ragcite/model." in u[1]]
        assert watched_page.workers == []
        watched_page.click(".ragcite-static-action")
        watched_page.locator(".ragcite-in-browser").wait_for(
            state="visible", timeout=120_000
        )
        # said yes once: the next page of the visit does not ask again
        watched_page.goto(f"{base}/beans.html")
        again = ask(watched_page, QUESTION)
        assert again["metadata"]["engine"] == "browser"


# -- 6, 7: an index or a CSP the engine cannot work with is named --------------------


def rewrite_manifest(root: Path, change) -> None:
    path = root / "_ragcite" / "manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    change(manifest)
    path.write_text(json.dumps(manifest), encoding="utf-8")


@pytest.mark.parametrize(
    "change",
    [
        lambda m: m.update(format_version=m["format_version"] + 1),
        lambda m: m["files"].update(model="../evil.onnx"),
    ],
    ids=["another-format", "model-outside"],
)
def test_an_index_the_engine_cannot_read_is_named(
    watched_page, altered: Path, change
) -> None:
    rewrite_manifest(altered, change)
    with serve(altered) as (base, _):
        watched_page.goto(f"{base}/index.html")
        result = ask(watched_page, QUESTION)
        assert result["mode"] == "static"
        note = watched_page.locator(".ragcite-static-note").text_content()
        assert "written by another version of sphinx-ragcite" in note
        assert "Reload the page" in note
        assert [
            e
            for e in watched_page.console_errors + watched_page.console_warnings
            if "ragcite" in e
        ]
        mode = watched_page.locator(".ragcite-mode-note").text_content()
        assert IN_BROWSER not in mode


def test_a_csp_refusing_the_worker_gets_the_csp_sentence(
    watched_page, engine_site: Path
) -> None:
    csp = "script-src 'self' 'wasm-unsafe-eval'; worker-src 'none'; connect-src 'self'"
    with serve(engine_site, csp=csp) as (base, _):
        watched_page.goto(f"{base}/index.html")
        result = ask(watched_page, QUESTION)
        assert result["mode"] == "static"
        assert result["hits"]
        note = watched_page.locator(".ragcite-static-note").text_content()
        assert "Content-Security-Policy" in note
        assert "missing" not in note


# -- 8: the notes agree ----------------------------------------------------------------


def test_the_first_question_never_says_answers_need_the_server(
    watched_page, engine_site: Path
) -> None:
    watched_page.add_init_script(RECORD_NOTES)
    with serve(engine_site, slow_model=True) as (base, _):
        watched_page.goto(f"{base}/index.html")
        watched_page.evaluate("window.ragcite.open()")
        watched_page.fill("#ragcite-question", QUESTION)
        watched_page.press("#ragcite-question", "Enter")
        watched_page.locator(".ragcite-progress").wait_for(
            state="visible", timeout=30_000
        )
        watched_page.locator(".ragcite-in-browser").wait_for(
            state="visible", timeout=120_000
        )
        seen = notes(watched_page)
        assert any("answer engine loads" in n for n in seen), seen
        assert not [n for n in seen if NEEDS_SERVER in n], seen


def test_after_a_failure_the_mode_note_stops_promising_answers(
    watched_page, altered: Path
) -> None:
    model = altered / "_ragcite" / read_manifest(altered)["files"]["model"]
    data = bytearray(model.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size, another checksum
    model.write_bytes(bytes(data))
    with serve(altered) as (base, _):
        watched_page.goto(f"{base}/index.html")
        result = ask(watched_page, QUESTION)
        assert result["mode"] == "static"
        note = watched_page.locator(".ragcite-static-note").text_content()
        assert "does not match" in note
        mode = watched_page.locator(".ragcite-mode-note").text_content()
        assert IN_BROWSER not in mode, mode


def test_after_a_cancel_the_mode_note_stops_promising_answers(
    watched_page, engine_site: Path
) -> None:
    with serve(engine_site, slow_model=True) as (base, _):
        watched_page.goto(f"{base}/index.html")
        watched_page.evaluate("window.ragcite.open()")
        watched_page.fill("#ragcite-question", QUESTION)
        watched_page.press("#ragcite-question", "Enter")
        watched_page.locator(".ragcite-progress-cancel").wait_for(
            state="visible", timeout=30_000
        )
        watched_page.click(".ragcite-progress-cancel")
        mode = watched_page.locator(".ragcite-mode-note").text_content()
        assert IN_BROWSER not in mode, mode
        assert "search the book's passages" in mode
