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
from test_browser_answers import QUESTION, ask, engine_requests, serve, watched

from sphinx_ragcite.extension.assets import STATIC_FOLDER, assets_digest

from conftest import read_manifest

#: The mode note's words while answers come from the browser.
IN_BROWSER = "answered in your browser"
#: The static note's words that say only a server answers.
NEEDS_SERVER = "need the answer server"
ASSETS = re.compile(r'data-ragcite-assets="([0-9a-f]+)"')


@pytest.fixture(scope="module")
def site(example_site: Path) -> Path:
    assert "model" in read_manifest(example_site)["files"], "no engine shipped"
    return example_site


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = watched(context.new_page())
    page.console_warnings = []
    page.on(
        "console",
        lambda m: page.console_warnings.append(m.text) if m.type == "warning" else None,
    )
    yield page
    context.close()
    assert not page.errors, page.errors


@pytest.fixture
def altered(site: Path, tmp_path: Path):
    """A copy of the site whose manifest (or a file) a test changes."""
    copy = tmp_path / "site"
    shutil.copytree(site, copy)
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
    page, site: Path
) -> None:
    html = (site / "index.html").read_text(encoding="utf-8")
    digest = ASSETS.search(html).group(1)
    assert digest == assets_digest(
        site / "_static" / STATIC_FOLDER,
        [
            p.relative_to(site / "_static" / STATIC_FOLDER).as_posix()
            for p in (site / "_static" / STATIC_FOLDER).rglob("*")
            if p.is_file()
        ],
    )
    with serve(site) as (base, _):
        page.goto(f"{base}/index.html")
        answer = ask(page, QUESTION)
        assert answer["metadata"]["engine"] == "browser"
        scripts = [
            url
            for _, url in page.requests
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


def test_opening_the_panel_downloads_nothing(page, site: Path) -> None:
    page.add_init_script(RECORD_NOTES)
    with serve(site) as (base, _):
        page.goto(f"{base}/index.html")
        page.evaluate("window.ragcite.open()")
        page.locator(".ragcite-mode-note").wait_for(state="visible")
        page.wait_for_timeout(2000)
        started = [u for u in engine_requests(page, base) if "browser.js" not in u]
        assert started == []
        assert page.workers == []
        note = page.locator(".ragcite-mode-note").text_content()
        assert IN_BROWSER in note
        assert "first question" in note
        # the first question starts it
        answer = ask(page, QUESTION)
        assert answer["metadata"]["engine"] == "browser"


def test_a_later_page_starts_the_engine_when_the_panel_opens(page, site: Path) -> None:
    """After the engine answered on a page of the visit, opening the panel on
    the next page starts it (from the caches) while the reader types."""
    with serve(site) as (base, served):
        page.goto(f"{base}/index.html")
        assert ask(page, QUESTION)["metadata"]["engine"] == "browser"
        page.goto(f"{base}/beans.html")
        page.wait_for_timeout(500)
        assert page.workers == []  # not before the panel opens
        mark = len(served)
        page.evaluate("window.ragcite.open()")
        page.wait_for_function(
            "() => window.__messages.some((m) => m[1] === 'ready')", timeout=60_000
        )
        model = [p for _, p, code in served[mark:] if "/_ragcite/model." in p]
        assert model == []  # from Cache Storage, not the network
        answer = ask(page, "What grind size suits espresso?")
        assert answer["metadata"]["engine"] == "browser"


SAVE_DATA = """
Object.defineProperty(Navigator.prototype, 'connection', {
  configurable: true, get: () => ({saveData: true, effectiveType: '3g'}),
});
"""


def test_a_reader_saving_data_is_asked_before_the_download(page, site: Path) -> None:
    page.add_init_script(SAVE_DATA)
    manifest = read_manifest(site)
    size = sum(
        manifest["bytes"][r]
        for r in ("model", "tokenizer", "ort_js", "ort_mjs", "ort_wasm")
    )
    with serve(site) as (base, _):
        page.goto(f"{base}/index.html")
        result = ask(page, QUESTION)
        assert result["mode"] == "static"
        assert result["hits"]
        note = page.locator(".ragcite-static-note").text_content()
        assert "save data" in note
        assert f"about {round(size / 1e6)} MB" in note
        assert not [u for u in page.requests if "/_ragcite/model." in u[1]]
        assert page.workers == []
        page.click(".ragcite-static-action")
        page.locator(".ragcite-in-browser").wait_for(state="visible", timeout=120_000)
        # said yes once: the next page of the visit does not ask again
        page.goto(f"{base}/beans.html")
        again = ask(page, QUESTION)
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
def test_an_index_the_engine_cannot_read_is_named(page, altered: Path, change) -> None:
    rewrite_manifest(altered, change)
    with serve(altered) as (base, _):
        page.goto(f"{base}/index.html")
        result = ask(page, QUESTION)
        assert result["mode"] == "static"
        note = page.locator(".ragcite-static-note").text_content()
        assert "written by another version of sphinx-ragcite" in note
        assert "Reload the page" in note
        assert [
            e for e in page.console_errors + page.console_warnings if "ragcite" in e
        ]
        mode = page.locator(".ragcite-mode-note").text_content()
        assert IN_BROWSER not in mode


def test_a_csp_refusing_the_worker_gets_the_csp_sentence(page, site: Path) -> None:
    csp = "script-src 'self' 'wasm-unsafe-eval'; worker-src 'none'; connect-src 'self'"
    with serve(site, csp=csp) as (base, _):
        page.goto(f"{base}/index.html")
        result = ask(page, QUESTION)
        assert result["mode"] == "static"
        assert result["hits"]
        note = page.locator(".ragcite-static-note").text_content()
        assert "Content-Security-Policy" in note
        assert "missing" not in note


# -- 8: the notes agree ----------------------------------------------------------------


def test_the_first_question_never_says_answers_need_the_server(
    page, site: Path
) -> None:
    page.add_init_script(RECORD_NOTES)
    with serve(site, slow_model=True) as (base, _):
        page.goto(f"{base}/index.html")
        page.evaluate("window.ragcite.open()")
        page.fill("#ragcite-question", QUESTION)
        page.press("#ragcite-question", "Enter")
        page.locator(".ragcite-progress").wait_for(state="visible", timeout=30_000)
        page.locator(".ragcite-in-browser").wait_for(state="visible", timeout=120_000)
        seen = notes(page)
        assert any("answer engine loads" in n for n in seen), seen
        assert not [n for n in seen if NEEDS_SERVER in n], seen


def test_after_a_failure_the_mode_note_stops_promising_answers(
    page, altered: Path
) -> None:
    model = altered / "_ragcite" / read_manifest(altered)["files"]["model"]
    data = bytearray(model.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size, another checksum
    model.write_bytes(bytes(data))
    with serve(altered) as (base, _):
        page.goto(f"{base}/index.html")
        result = ask(page, QUESTION)
        assert result["mode"] == "static"
        note = page.locator(".ragcite-static-note").text_content()
        assert "does not match" in note
        mode = page.locator(".ragcite-mode-note").text_content()
        assert IN_BROWSER not in mode, mode


def test_after_a_cancel_the_mode_note_stops_promising_answers(page, site: Path) -> None:
    with serve(site, slow_model=True) as (base, _):
        page.goto(f"{base}/index.html")
        page.evaluate("window.ragcite.open()")
        page.fill("#ragcite-question", QUESTION)
        page.press("#ragcite-question", "Enter")
        page.locator(".ragcite-progress-cancel").wait_for(
            state="visible", timeout=30_000
        )
        page.click(".ragcite-progress-cancel")
        mode = page.locator(".ragcite-mode-note").text_content()
        assert IN_BROWSER not in mode, mode
        assert "search the book's passages" in mode
