"""JSON -> widget: the reader widget in real Chromium against the real server.

Drives the Debian ``chromium`` package through Python playwright (never a
downloaded browser). Screenshots land in /tmp/ragcite-shots/ for people to
look at; with ``RAGCITE_UPDATE_SCREENSHOTS=1`` those the docs show are also
written to docs/_static/screenshots/.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from helpers.browser import (
    QUESTION,
    QUOTE_MARKED,
    RLO,
    SHOTS,
    ask,
    ask_api,
    assert_reads_in_order,
    shot,
    squeezed,
    wait_highlighted,
    words,
)
from helpers.builds import read_passages, sphinx_build
from helpers.llm import ScriptedLLM
from helpers.repo import EXAMPLE_BOOK, ROOTS
from helpers.servers import answer_server, serving_files

# Without Chromium the ``browser`` fixture skips each test (fails it under
# ``CI=true``: CI installs Chromium).
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="pip install playwright (no browser download)"
)
uvicorn = pytest.importorskip("uvicorn")

PWNED = "window.__pwned"


# -- servers ---------------------------------------------------------------


def hostile_model() -> ScriptedLLM:
    """A language model that answers with markup, script and javascript: links."""
    model = ScriptedLLM(
        "Espresso machines brew at nine bars of pressure ",
        "<img src=x onerror=window.__pwned=1> [1]. ",
        "</script><script>window.__pwned=1</script> ",
        "[2](javascript:window.__pwned=1) ",
        '<a href="javascript:window.__pwned=1">click</a> [99]',
    )
    model.name = 'hostile <img src=x onerror="window.__pwned=1">'
    return model


@pytest.fixture(scope="module")
def hostile_server(builds):
    out = builds.sphinx(ROOTS / "test-hostile").outdir
    with answer_server(out, generator="llm", llm=hostile_model()) as url:
        yield url


# -- asking and citations ----------------------------------------------------


def test_ask_with_the_button_shows_a_cited_answer(page, example_server: str) -> None:
    page.goto(f"{example_server}/index.html")
    launcher = page.locator(".ragcite-launcher")
    launcher.click()
    panel = page.get_by_role("dialog", name="Ask this book")
    assert panel.is_visible()
    box = page.locator("#ragcite-question")
    assert page.evaluate("document.activeElement.id") == "ragcite-question"
    box.fill(QUESTION)
    assert page.locator(".ragcite-count").text_content() == f"{len(QUESTION)} / 2000"
    box.press("Enter")
    marker = page.locator('a[data-ragcite-n="1"]')
    marker.wait_for(state="visible")

    answer = ask_api(example_server, QUESTION)
    first = answer["citations"][0]
    assert marker.get_attribute("href") == f"{example_server}/{first['url']}"
    assert marker.text_content() == "[1]"
    assert page.evaluate(
        "document.querySelector('a[data-ragcite-n=\"1\"]').parentElement.tagName"
    ) == ("SUP")
    source = page.locator('li[data-ragcite-source="1"]')
    assert first["chapter"] in source.text_content()
    assert first["section"] in source.text_content()
    assert "confidence" in source.text_content()
    assert (
        source.locator("a").get_attribute("href") == f"{example_server}/{first['url']}"
    )
    level = answer["confidence_level"]
    assert page.locator(f".ragcite-badge-{level}").is_visible()
    shot(page, "answer.png", docs=True)


def test_hover_and_focus_preview_show_the_quote(page, example_server: str) -> None:
    page.goto(f"{example_server}/index.html")
    answer = ask(page, QUESTION)
    quote = answer["citations"][0]["quote"]
    preview = page.locator("#ragcite-preview")
    assert preview.is_hidden()
    page.locator('a[data-ragcite-n="1"]').hover()
    preview.wait_for(state="visible")
    assert quote[:60] in " ".join(preview.text_content().split())
    assert page.get_attribute('a[data-ragcite-n="1"]', "aria-describedby") == (
        "ragcite-preview"
    )
    shot(page, "preview.png", docs=True)
    page.mouse.move(5, 5)
    preview.wait_for(state="hidden")
    page.focus('a[data-ragcite-n="1"]')
    preview.wait_for(state="visible")
    page.keyboard.press("Escape")
    preview.wait_for(state="hidden")


def test_click_a_marker_on_another_page_loads_and_highlights(
    page, example_server: str
) -> None:
    page.goto(f"{example_server}/index.html")
    answer = ask(page, QUESTION)
    target = answer["citations"][0]
    assert not target["url"].startswith("index.html")
    page.click('a[data-ragcite-n="1"]')
    page.wait_for_url(f"{example_server}/{target['url']}")
    wait_highlighted(page, target["passage_id"])
    # the last answer comes along to the new page
    page.locator(".ragcite-launcher").click()
    page.locator('a[data-ragcite-n="1"]').wait_for(state="visible")


def test_click_a_marker_on_this_page_scrolls_and_highlights(
    page, example_server: str
) -> None:
    target = ask_api(example_server, QUESTION)["citations"][0]
    page_url = f"{example_server}/{target['url'].split('#')[0]}"
    page.goto(page_url)
    ask(page, QUESTION)
    page.evaluate("window.__samePage = true")  # lost if the page reloads
    page.click('a[data-ragcite-n="1"]')
    page.wait_for_url(f"{example_server}/{target['url']}")
    wait_highlighted(page, target["passage_id"])
    assert page.evaluate("window.__samePage") is True
    page.wait_for_timeout(300)  # let the smooth scroll settle for the picture
    shot(page, "highlight.png", docs=True)
    page.wait_for_function(
        "(id) => !document.getElementById(id).classList.contains('ragcite-highlight')",
        arg=target["passage_id"],
        timeout=6000,
    )


def test_deep_link_highlights_on_load(
    page, example_server: str, example_site: Path
) -> None:
    passages = [
        p for p in read_passages(example_site) if p["docname"] == "brewing/espresso"
    ]
    deep = passages[len(passages) * 2 // 3]
    page.goto(f"{example_server}/{deep['url']}")
    wait_highlighted(page, deep["passage_id"])
    assert page.evaluate("scrollY") > 0
    assert page.evaluate(QUOTE_MARKED) is None  # a plain deep link has no quote


# -- the quoted words of a followed citation -------------------------------------


def marked_quote(page) -> dict:
    page.wait_for_function(f"({QUOTE_MARKED})() !== null", timeout=5000)
    return page.evaluate(QUOTE_MARKED)


def test_followed_citation_marks_the_quoted_words(
    page, example_server: str, example_site: Path
):
    page.goto(f"{example_server}/index.html")
    answer = ask(page, QUESTION)
    target = answer["citations"][0]
    spans = target["quote_spans"]
    assert spans, target
    page.click('a[data-ragcite-n="1"]')  # to another page: the quote goes along
    page.wait_for_url(f"{example_server}/{target['url']}")
    wait_highlighted(page, target["passage_id"])
    marked = marked_quote(page)
    assert marked["api"] == "highlight"  # Chromium has the CSS Highlight API
    assert " … ".join(words(part) for part in marked["parts"]) == target["quote"]
    passage = next(
        p
        for p in read_passages(example_site)
        if p["passage_id"] == target["passage_id"]
    )
    assert [words(passage["text"][a:b]) for a, b in spans] == [
        words(part) for part in marked["parts"]
    ]
    assert page.evaluate(
        """(id) => [...CSS.highlights.get('ragcite-quote')].every((r) =>
             document.getElementById(id).contains(r.commonAncestorContainer))""",
        target["passage_id"],
    )
    # only part of the passage is quoted, and the page's text is untouched
    assert len(squeezed(target["quote"])) < len(squeezed(passage["text"]))
    assert page.locator("mark").count() == 0
    page.wait_for_timeout(300)
    page.screenshot(path=str(SHOTS / "quote.png"))
    # the passage highlight fades; the quote stays until the next highlight
    page.wait_for_function(
        "(id) => !document.getElementById(id).classList.contains('ragcite-highlight')",
        arg=target["passage_id"],
        timeout=6000,
    )
    assert page.evaluate(QUOTE_MARKED) == marked
    page.evaluate("(id) => window.ragcite.highlight(id)", target["passage_id"])
    assert page.evaluate(QUOTE_MARKED) is None


def test_a_page_without_quotes_js_still_follows_citations(page, example_server: str):
    """Pages an incremental build kept from before quotes.js load the new
    widget without it: citations still highlight their passage."""
    page.route("**/_static/ragcite/quotes.js*", lambda route: route.abort())
    page.goto(f"{example_server}/index.html")
    target = ask(page, QUESTION)["citations"][0]
    page.click('a[data-ragcite-n="1"]')
    page.wait_for_url(f"{example_server}/{target['url']}")
    wait_highlighted(page, target["passage_id"])
    assert page.evaluate("window.ragcite_lib.has('quotes')") is False
    assert page.evaluate(QUOTE_MARKED) is None


def reopen(page) -> None:
    if not page.get_by_role("dialog", name="Ask this book").is_visible():
        page.locator(".ragcite-launcher").click()


def test_quote_marks_without_the_highlight_api(
    page, example_server: str, example_site: Path
) -> None:
    """<mark> fallback, on this page: table rows, a sentence across a link,
    and a quote the page does not have (the passage alone is highlighted)."""
    records = {p["passage_id"]: p for p in read_passages(example_site)}
    on_page = [p for p in records.values() if p["docname"] == "grinding"]
    table = next(p for p in on_page if " | " in p["text"])
    after = next(p for p in on_page if p["text"].startswith("The recipes in"))
    other = on_page[1]
    rows = table["text"].split("\n")[2:4]
    sentence = after["text"][: after["text"].index(".") + 1]
    template = ask_api(example_server, QUESTION)
    base = template["citations"][0]

    def cite(n: int, record: dict, quoted: list[str], spans=None) -> dict:
        if spans is None:
            spans = [[a, a + len(q)] for q in quoted for a in [record["text"].index(q)]]
        return {
            **base,
            **{k: record[k] for k in ("passage_id", "url", "chapter", "section")},
            "n": n,
            "heading_path": record["heading_path"],
            "snippet": record["snippet"],
            "quote": " … ".join(quoted),
            "quote_spans": spans,
        }

    fake = {
        **template,
        "answer": "Rows [1]. A sentence [2]. Missing [3].",
        "citations": [
            cite(1, table, rows),
            cite(2, after, [sentence]),
            cite(3, other, ["A sentence this page does not have."], [[0, 35]]),
        ],
    }
    page.add_init_script("delete window.Highlight")
    page.goto(f"{example_server}/grinding.html")
    before = page.evaluate(
        "(id) => document.getElementById(id).innerHTML", table["passage_id"]
    )
    page.route("**/api/ask/stream", lambda route: fake_stream(route, fake))
    ask(page, QUESTION)

    page.click('li[data-ragcite-source="1"] a')  # the source's title
    wait_highlighted(page, table["passage_id"])
    marked = marked_quote(page)
    assert marked["api"] == "mark"
    assert squeezed("".join(marked["parts"])) == squeezed("".join(rows))
    assert len(marked["parts"]) == 6  # one <mark> per table cell
    assert page.evaluate(
        "() => [...document.querySelectorAll('mark.ragcite-quote')]"
        ".every((m) => m.closest('td'))"
    )

    reopen(page)  # the panel steps aside when it covers a passage
    page.click('a[data-ragcite-n="2"]')
    wait_highlighted(page, after["passage_id"])
    marked = marked_quote(page)
    assert words("".join(marked["parts"])) == sentence
    assert len(marked["parts"]) >= 3  # before, inside and after the link
    # the table's marks are gone and its markup is as it was
    assert (
        page.evaluate(
            "(id) => document.getElementById(id).innerHTML", table["passage_id"]
        )
        == before
    )

    reopen(page)  # the panel steps aside when it covers a passage
    page.click('a[data-ragcite-n="3"]')
    wait_highlighted(page, other["passage_id"])
    assert page.evaluate(QUOTE_MARKED) is None


# -- old links after an edit ---------------------------------------------------


@pytest.fixture(scope="module")
def edited_site(tmp_path_factory):
    """test-links built, then a paragraph inserted and one moved to another page."""
    import shutil

    root = tmp_path_factory.mktemp("edited")
    src, out, doctrees = root / "src", root / "html", root / "doctrees"
    shutil.copytree(ROOTS / "test-links", src)
    sphinx_build(src, out, "-d", str(doctrees))
    before = {r["url"]: r["text"] for r in read_passages(out)}
    kettles = (src / "kettles.rst").read_text("utf-8")
    scale = kettles[kettles.index("Scale builds up") :]
    kettles = kettles.replace(scale, "").replace(
        "Heating\n-------\n\n",
        "Heating\n-------\n\nBefore any numbers: use a thermometer once, so you "
        "know what your kettle\nreally does when it clicks off, and write the "
        "reading down.\n\n",
    )
    (src / "kettles.rst").write_text(kettles, "utf-8")
    with (src / "grinders.rst").open("a", encoding="utf-8") as f:
        f.write("\n" + scale)
    sphinx_build(src, out, "-d", str(doctrees))
    with serving_files(out) as url:
        yield url, before


def shown_text(page, passage_id: str) -> str:
    wait_highlighted(page, passage_id)
    return " ".join(page.locator(f"#{passage_id}").inner_text().split())


def test_old_link_follows_text_moved_down_the_page(page, edited_site) -> None:
    base, before = edited_site
    old = "kettles.html#ch1-sec1-p1"
    page.goto(f"{base}/{old}")  # as from a bookmark: no referrer
    page.wait_for_url(f"{base}/kettles.html#ch1-sec1-p2")
    assert shown_text(page, "ch1-sec1-p2") == " ".join(before[old].split())
    note = page.locator(".ragcite-moved")
    assert note.is_visible()
    shot(page, "moved-link.png", docs=True)
    # the link may have been made after the edit: one click shows the anchor now
    note.locator("a").click()
    assert shown_text(page, "ch1-sec1-p1").startswith("Before any numbers")


def test_old_link_follows_text_to_another_page(page, edited_site) -> None:
    base, before = edited_site
    old = "kettles.html#ch1-sec2-p1"
    page.goto(f"{base}/{old}")
    page.wait_for_url(f"{base}/grinders.html#ch2-sec1-p3")
    assert shown_text(page, "ch2-sec1-p3") == " ".join(before[old].split())
    assert page.locator(".ragcite-moved").is_visible()


def test_links_from_the_site_itself_are_not_redirected(page, edited_site) -> None:
    base, _ = edited_site
    page.goto(f"{base}/kettles.html#ch1-sec1-p1", referer=f"{base}/index.html")
    assert shown_text(page, "ch1-sec1-p1").startswith("Before any numbers")
    assert page.url.endswith("#ch1-sec1-p1")
    assert page.locator(".ragcite-moved").count() == 0


@pytest.fixture(scope="module")
def rechunked_site(tmp_path_factory):
    """test-links with two paragraphs per passage, then one inserted at the top."""
    import shutil

    root = tmp_path_factory.mktemp("rechunked")
    src, out, doctrees = root / "src", root / "html", root / "doctrees"
    shutil.copytree(ROOTS / "test-links", src)
    words = ("-D", "ragcite_passage_words=60", "-d", str(doctrees))
    sphinx_build(src, out, *words)
    kettles = (src / "kettles.rst").read_text("utf-8")
    (src / "kettles.rst").write_text(
        kettles.replace(
            "Heating\n-------\n\n",
            "Heating\n-------\n\nMeasure the water once with a thermometer.\n\n",
        ),
        "utf-8",
    )
    sphinx_build(src, out, *words)
    with serving_files(out) as url:
        yield url


def test_old_link_to_a_rechunked_passage_highlights_its_first_block(
    page, rechunked_site: str
) -> None:
    """[a b] [c] became [new a] [b c]: the old p1 link shows a, inside p1."""
    page.goto(f"{rechunked_site}/kettles.html#ch1-sec1-p1")
    page.wait_for_selector(".ragcite-highlight")
    shown = page.locator(".ragcite-highlight").inner_text()
    assert shown.startswith("The gooseneck kettle pours")
    assert page.url.endswith("#ch1-sec1-p1")
    page.locator(".ragcite-moved a").click()  # what the anchor holds now
    page.wait_for_function(
        "() => document.querySelector('.ragcite-highlight')?.id === 'ch1-sec1-p1'"
    )
    assert page.locator("#ch1-sec1-p1").inner_text().startswith("Measure the water")


def dirhtml_with_a_shift(tmp_path: Path, name: str = "kettles") -> Path:
    """test-links built as dirhtml (its kettles page named *name*), then again
    with a paragraph inserted before ``ch1-sec1-p2``: the output folder."""
    import shutil

    src, out = tmp_path / "src", tmp_path / "html"
    shutil.copytree(ROOTS / "test-links", src)
    (src / "kettles.rst").rename(src / f"{name}.rst")
    index = (src / "index.rst").read_text("utf-8")
    (src / "index.rst").write_text(index.replace("   kettles", f"   {name}"), "utf-8")
    options = ("-b", "dirhtml", "-d", str(tmp_path / "doctrees"))
    sphinx_build(src, out, *options)
    kettles = (src / f"{name}.rst").read_text("utf-8")
    (src / f"{name}.rst").write_text(
        kettles.replace("Heating\n-------\n\n", "Heating\n-------\n\nA new one.\n\n"),
        "utf-8",
    )
    sphinx_build(src, out, *options)
    return out


def test_old_link_on_a_dirhtml_site(page, tmp_path) -> None:
    """Pages are folders there (kettles/): the widget keys links the same way."""
    out = dirhtml_with_a_shift(tmp_path)
    with serving_files(out) as base:
        page.goto(f"{base}/kettles/#ch1-sec1-p2")
        page.wait_for_url(f"{base}/kettles/#ch1-sec1-p3")
        assert shown_text(page, "ch1-sec1-p3").startswith("An electric kettle")


def test_old_link_on_a_dirhtml_page_with_a_non_ascii_name(page, tmp_path) -> None:
    """dirhtml writes ``kéttles/`` as it is, the browser has ``k%C3%A9ttles/``:
    the moved map still finds the link (keys compare decoded)."""
    out = dirhtml_with_a_shift(tmp_path, "kéttles")
    moved = (out / "_ragcite" / "moved.js").read_text("utf-8")
    moved_map = json.loads(moved.split("=", 1)[1].rstrip().rstrip(";"))
    assert "k%C3%A9ttles/#ch1-sec1-p2" in moved_map  # a URL, quoted once
    with serving_files(out) as base:
        page.goto(f"{base}/k%C3%A9ttles/#ch1-sec1-p2")
        page.wait_for_url(f"{base}/k%C3%A9ttles/#ch1-sec1-p3")
        assert shown_text(page, "ch1-sec1-p3").startswith("An electric kettle")
        assert page.locator(".ragcite-moved").is_visible()


def test_old_link_to_a_renamed_page_from_the_404_page(page, tmp_path) -> None:
    """grinders.rst became mills.rst: the old page is gone, so the server's
    404 page (sphinx-notfound-page) runs the widget, which follows the map."""
    pytest.importorskip("notfound", reason="pip install sphinx-notfound-page")
    import shutil

    src = tmp_path / "src"
    shutil.copytree(ROOTS / "test-links", src)
    options = (
        *("-D", "extensions=sphinx_ragcite,notfound.extension"),
        *("-D", "notfound_urls_prefix=/", "-d", str(tmp_path / "doctrees")),
    )
    sphinx_build(src, tmp_path / "before", *options)
    before = {r["url"]: r["text"] for r in read_passages(tmp_path / "before")}
    (src / "grinders.rst").rename(src / "mills.rst")
    index = (src / "index.rst").read_text("utf-8")
    (src / "index.rst").write_text(index.replace("   grinders", "   mills"), "utf-8")
    out = tmp_path / "after"  # a fresh output folder, as a deploy would have
    sphinx_build(src, out, *options)
    assert not (out / "grinders.html").exists()
    with answer_server(out, generator="extractive") as base:
        page.goto(f"{base}/grinders.html#ch2-sec1-p2")
        page.wait_for_url(f"{base}/mills.html#ch2-sec1-p2")
        shown = shown_text(page, "ch2-sec1-p2")
    assert shown == " ".join(before["grinders.html#ch2-sec1-p2"].split())


# -- selected text --------------------------------------------------------------


def test_selection_mode_cites_the_user_selection(page, example_server: str) -> None:
    page.goto(f"{example_server}/brewing/espresso.html")
    page.evaluate(
        """() => {
          const p = document.querySelector('[role=main] p[id^="ch"]');
          const range = document.createRange();
          range.selectNodeContents(p);
          const s = getSelection();
          s.removeAllRanges();
          s.addRange(range);
          p.dispatchEvent(new MouseEvent('mouseup', {bubbles: true}));
        }"""
    )
    button = page.locator(".ragcite-ask-selection")
    button.wait_for(state="visible")
    assert button.text_content() == "Ask about this"
    button.click()
    assert page.locator(".ragcite-selection").is_visible()
    assert page.evaluate("document.activeElement.id") == "ragcite-question"
    page.keyboard.type("How is espresso brewed?")
    page.keyboard.press("Enter")
    selection = page.locator("li.ragcite-source", has_text="User Selection")
    selection.wait_for(state="visible")
    assert selection.locator("a").count() == 0
    n = selection.get_attribute("data-ragcite-source")
    markers = page.locator(f'a[data-ragcite-n="{n}"]')
    for i in range(markers.count()):  # the selection has no link to follow
        assert markers.nth(i).get_attribute("href") is None
    assert page.locator(".ragcite-badge-mode").is_visible()
    shot(page, "selection.png", docs=True)


def test_selection_inside_the_widget_offers_nothing(page, example_server: str) -> None:
    page.goto(f"{example_server}/index.html")
    ask(page, QUESTION)
    page.evaluate(
        """() => {
          const p = document.querySelector('.ragcite-answer');
          const range = document.createRange();
          range.selectNodeContents(p);
          getSelection().removeAllRanges();
          getSelection().addRange(range);
          p.dispatchEvent(new MouseEvent('mouseup', {bubbles: true}));
        }"""
    )
    page.wait_for_timeout(100)
    assert page.locator(".ragcite-ask-selection").is_hidden()


@pytest.fixture(scope="module")
def tall_list_site(tmp_path_factory):
    """A page whose list is ten times taller than the viewport."""
    root = tmp_path_factory.mktemp("tall")
    src, out = root / "src", root / "html"
    src.mkdir()
    (src / "conf.py").write_text(
        'extensions = ["sphinx_ragcite"]\nragcite_embeddings = False\n', "utf-8"
    )
    steps = "\n".join(
        f"* Step {i}: weigh the beans, grind them and taste the cup."
        for i in range(1, 301)
    )
    (src / "index.rst").write_text(
        f"Routine\n=======\n\nEvery morning:\n\n{steps}\n\nThe end.\n", "utf-8"
    )
    sphinx_build(src, out)
    with serving_files(out) as url:
        yield url


SELECT_LIST = """() => {
  const list = document.querySelector('[role=main] ul');
  const range = document.createRange();
  range.selectNodeContents(list);
  getSelection().removeAllRanges();
  getSelection().addRange(range);
  list.dispatchEvent(new MouseEvent('mouseup', {bubbles: true}));
  return list.getBoundingClientRect().height;
}"""


LINE_ENDS = """() => [...document.querySelectorAll('[role=main] ul li')]
  .map((li) => {  // the box of the item's last character
    const text = [...li.querySelectorAll('*'), li].flatMap((e) => [...e.childNodes])
      .filter((n) => n.nodeType === Node.TEXT_NODE && n.data.trim()).pop();
    const r = document.createRange();
    r.setStart(text, text.data.trimEnd().length - 1);
    r.setEnd(text, text.data.trimEnd().length);
    return r.getBoundingClientRect();
  })
  .filter((r) => r.bottom > 0 && r.top < innerHeight)
  .map((r) => r.right)"""


def test_ask_about_a_selection_taller_than_the_screen(page, tall_list_site) -> None:
    """The button sits where the selection leaves the screen, in view."""
    page.goto(f"{tall_list_site}/index.html")
    height = page.evaluate(SELECT_LIST)
    assert height > 8 * 800
    button = page.locator(".ragcite-ask-selection")
    button.wait_for(state="visible")

    def placed() -> dict:
        page.wait_for_timeout(50)  # placed on scroll, in a passive listener
        box = button.bounding_box()
        assert box is not None
        assert box["y"] >= 0, box
        assert box["y"] + box["height"] <= 800, box
        # at the end of the text, not at the column's edge or on the launcher
        ends = page.evaluate(LINE_ENDS)
        assert ends, "no selected line on screen"
        centre = box["x"] + box["width"] / 2
        assert min(abs(centre - end) for end in ends) < 40, (box, ends)
        launcher = page.locator(".ragcite-launcher").bounding_box()
        assert launcher is not None
        apart = (
            box["x"] + box["width"] <= launcher["x"]
            or box["y"] + box["height"] <= launcher["y"]
        )
        assert apart, (box, launcher)
        return box

    # the list runs past the bottom edge: the button is near that edge
    assert placed()["y"] > 800 / 2
    page.screenshot(path=str(SHOTS / "tall-selection.png"))
    # scrolled into the middle of the selection: still on screen
    page.evaluate("window.scrollTo(0, 3000)")
    placed()
    # the selection's real end in view: right below its last line
    page.evaluate(
        """() => {
          const li = document.querySelector('[role=main] ul li:last-child');
          scrollTo(0, scrollY + li.getBoundingClientRect().top - 300);
        }"""
    )
    last = page.locator("[role=main] ul li").last.bounding_box()
    assert last is not None
    assert abs(placed()["y"] - (last["y"] + last["height"] + 8)) < 12
    button.click()
    assert page.locator(".ragcite-selection").is_visible()
    chosen = page.locator(".ragcite-selection-text")
    assert chosen.text_content().startswith("Step 1: weigh the beans")
    assert int(chosen.get_attribute("title").split()[0]) > 15_000  # all 300 steps


# -- static mode -----------------------------------------------------------------


def test_static_mode_without_a_server_lists_passages(page, example_files: str) -> None:
    # keyword search alone, as on a site built with ragcite_browser_answers =
    # False (answers in the browser: test_browser_answers.py)
    page.route("**/_static/ragcite/browser.js*", lambda route: route.abort())
    page.goto(f"{example_files}/index.html")
    result = ask(page, QUESTION)
    assert result["mode"] == "static"
    assert result["hits"]
    links = page.locator(".ragcite-results a.ragcite-link")
    assert links.count() == len(result["hits"])
    first = result["hits"][0]
    assert links.first.get_attribute("href") == f"{example_files}/{first['url']}"
    note = page.locator(".ragcite-static-note").text_content()
    assert "need the answer server" in note
    assert page.locator(".ragcite-mode-note").is_visible()
    assert page.locator("a[data-ragcite-n]").count() == 0
    shot(page, "static.png", docs=True)
    links.first.click()
    page.wait_for_url(f"{example_files}/{first['url']}")
    wait_highlighted(page, first["passage_id"])


def test_static_mode_works_from_disk(page, example_site: Path) -> None:
    """file:// blocks fetch, but the static index also loads as a script."""
    page.goto((example_site / "brewing" / "espresso.html").as_uri())
    result = ask(page, QUESTION)
    assert result["mode"] == "static"
    assert result["hits"]
    first = page.locator(".ragcite-results a.ragcite-link").first
    href = first.get_attribute("href")
    assert href.startswith("file://")
    assert href.endswith("#" + result["hits"][0]["passage_id"])


# -- states ------------------------------------------------------------------


# -- the three outcomes: an answer, passages that may hold it, not in the book --

#: Questions of the example book for each outcome, the issue's example first.
#: The engine decides, and its calibration may move a question across a
#: threshold, so each test takes the first question that gives its outcome.
OUTCOMES = {
    "answer": (
        QUESTION,
        "Who invented the paper coffee filter?",
        "What temperature should the water be for brewing?",
    ),
    "passages": (
        "Who invented the French press?",
        "How much water do spent grounds soak up per gram of coffee?",
        "What is channeling?",
    ),
    "not_found": (
        "How do I compute PageRank scores for the characters?",
        "What is the capital city of Mongolia?",
    ),
}
_ASKED: dict[tuple[str, str], tuple[str, dict]] = {}


def question_for(base: str, outcome: str) -> tuple[str, dict]:
    """The first question of ``OUTCOMES[outcome]`` the server answers so,
    with the server's answer JSON."""
    if (base, outcome) not in _ASKED:
        got = {}
        for question in OUTCOMES[outcome]:
            answer = ask_api(base, question)
            got[question] = answer["outcome"]
            if answer["outcome"] == outcome:
                _ASKED[base, outcome] = (question, answer)
                break
        else:
            pytest.fail(f"no question of the example book gives {outcome!r}: {got}")
    return _ASKED[base, outcome]


#: What only an answer shows: its text, markers and confidence badge.
CLAIMS = "a[data-ragcite-n], .ragcite-answer, .ragcite-badge"
#: What only the other outcomes show.
MAYBE = ".ragcite-maybe, .ragcite-passages"
NOT_FOUND = ".ragcite-notfound"
#: The theme each outcome is pictured in besides the example book's alabaster.
OTHER_THEME = "furo"


@pytest.fixture(scope="module")
def themed_server(tmp_path_factory):
    """The example book under a second theme, with the answer server."""
    pytest.importorskip(OTHER_THEME, reason=f"pip install {OTHER_THEME}")
    root = tmp_path_factory.mktemp(f"example-{OTHER_THEME}")
    srcdir = root / "src"
    shutil.copytree(EXAMPLE_BOOK, srcdir, ignore=shutil.ignore_patterns("_build"))
    out = root / "html"
    options = ("-D", f"html_theme={OTHER_THEME}", "-d", str(root / "doctrees"))
    sphinx_build(srcdir, out, *options)
    with answer_server(out, generator="extractive") as url:
        yield url


def outcome_page(page, base: str, outcome: str) -> tuple[dict, dict]:
    """Ask the outcome's question on the start page: the API's answer, the widget's."""
    question, expected = question_for(base, outcome)
    page.goto(f"{base}/index.html")
    shown = ask(page, question)
    output = page.locator(".ragcite-output")
    assert output.get_attribute("data-ragcite-outcome") == outcome
    return expected, shown


def test_outcome_answer_shows_markers_and_its_band(page, example_server: str) -> None:
    answer, _ = outcome_page(page, example_server, "answer")
    assert answer["grounded"] is True
    level = answer["confidence_level"]
    badge = page.locator(f".ragcite-badge-{level}")
    assert badge.text_content() == (
        f"{level.capitalize()} confidence · {round(answer['confidence'] * 100)}%"
    )
    markers = page.locator("a[data-ragcite-n]")
    assert markers.count() >= len(answer["citations"]) >= 1
    assert page.locator(".ragcite-sources li").count() == len(answer["citations"])
    assert page.locator(f"{MAYBE}, {NOT_FOUND}").count() == 0
    assert "Answer ready" in page.locator(".ragcite-status").text_content()
    shot(page, "outcome-answer.png", docs=True)


def test_outcome_passages_link_to_their_best_sentence(
    page, example_server, example_site: Path
):
    answer, _ = outcome_page(page, example_server, "passages")
    assert answer["grounded"] is False
    assert 1 <= len(answer["passages"]) <= 3
    box = page.locator(".ragcite-maybe")
    heading = box.get_by_role("heading", name="The book may answer this here:")
    assert heading.is_visible()
    # no claim: no answer text, no markers, no confidence badge
    assert page.locator(CLAIMS).count() == 0
    items = page.locator("ol.ragcite-passages > li")
    assert items.count() == len(answer["passages"])
    for i, passage in enumerate(answer["passages"]):
        item = items.nth(i)
        link = item.locator("a.ragcite-passage-title")
        assert link.get_attribute("href") == f"{example_server}/{passage['url']}"
        assert passage["chapter"] in link.text_content()
        assert passage["section"] in link.text_content()
        best = item.locator("mark.ragcite-best")
        assert words(best.text_content()) == words(passage["quote"])
        likely = f"{round(passage['confidence'] * 100)}% likely to answer"
        assert item.locator(".ragcite-passage-likely").text_content() == likely
    status = page.locator(".ragcite-status").text_content()
    assert f"No sure answer; {len(answer['passages'])} passage" in status
    shot(page, "outcome-passages.png", docs=True)

    # following a passage (by keyboard) lands on it and marks its best sentence
    first = answer["passages"][0]
    items.first.locator("a").focus()
    page.keyboard.press("Enter")
    page.wait_for_url(f"{example_server}/{first['url']}")
    wait_highlighted(page, first["passage_id"])
    marked = marked_quote(page)
    assert [words(part) for part in marked["parts"]] == [words(first["quote"])]
    record = next(
        p for p in read_passages(example_site) if p["passage_id"] == first["passage_id"]
    )
    assert [words(record["text"][a:b]) for a, b in first["quote_spans"]] == [
        words(part) for part in marked["parts"]
    ]
    assert page.evaluate(
        """(id) => [...CSS.highlights.get('ragcite-quote')].every((r) =>
             document.getElementById(id).contains(r.commonAncestorContainer))""",
        first["passage_id"],
    )
    page.wait_for_timeout(300)
    shot(page, "outcome-passages-followed.png")
    # the passages come along to the new page
    page.locator(".ragcite-launcher").click()
    assert page.locator("ol.ragcite-passages > li").count() == len(answer["passages"])


def test_outcome_not_found_lists_the_closest_pages(page, example_server: str) -> None:
    answer, _ = outcome_page(page, example_server, "not_found")
    assert answer["grounded"] is False
    assert answer["passages"] == []
    box = page.locator(".ragcite-notfound")
    heading = box.get_by_role("heading", name="This book does not seem to cover that")
    assert heading.is_visible()
    assert page.locator(CLAIMS).count() == 0
    assert page.get_by_role("heading", name="Closest pages").is_visible()
    see_also = answer["metadata"]["see_also"]
    links = page.locator(".ragcite-see-also a")
    assert links.count() == len(see_also) >= 1
    for i, item in enumerate(see_also):
        assert links.nth(i).get_attribute("href") == f"{example_server}/{item['url']}"
    assert page.locator(".ragcite-status").text_content() == "No answer in the book."
    shot(page, "outcome-not-found.png", docs=True)


@pytest.mark.parametrize("outcome", list(OUTCOMES))
def test_outcomes_under_another_theme(page, themed_server: str, outcome: str) -> None:
    outcome_page(page, themed_server, outcome)
    title = {
        "answer": ".ragcite-answer",
        "passages": ".ragcite-maybe",
        "not_found": ".ragcite-notfound",
    }[outcome]
    assert page.locator(title).is_visible()
    name = f"outcome-{outcome.replace('_', '-')}-{OTHER_THEME}.png"
    shot(page, name, docs=True)


def test_an_old_server_without_outcome_still_renders(page, example_server: str) -> None:
    """Answer JSON from before ``outcome``: grounded false reads as not_found."""
    page.goto(f"{example_server}/index.html")
    question, old = question_for(example_server, "not_found")
    old = json.loads(json.dumps(old))  # a copy to change
    for key in ("outcome", "passages"):
        old.pop(key)
    old["answer"] = "I could not find an answer to this in the book."
    page.route("**/api/ask/stream", lambda route: fake_stream(route, old))
    ask(page, question)
    assert page.locator(".ragcite-notfound").is_visible()
    assert page.locator(".ragcite-see-also a").count() == len(
        old["metadata"]["see_also"]
    )
    page.unroute("**/api/ask/stream")
    question, grounded = question_for(example_server, "answer")
    grounded = {k: v for k, v in grounded.items() if k not in ("outcome", "passages")}
    page.route("**/api/ask/stream", lambda route: fake_stream(route, grounded))
    ask(page, question)
    assert page.locator('a[data-ragcite-n="1"]').is_visible()
    # and an answer that claims to be one but is not grounded is never shown as one
    page.unroute("**/api/ask/stream")
    unchecked = {**grounded, "grounded": False, "outcome": "answer"}
    page.route("**/api/ask/stream", lambda route: fake_stream(route, unchecked))
    ask(page, question)
    assert page.locator(".ragcite-notfound").is_visible()
    assert page.locator("a[data-ragcite-n], .ragcite-answer").count() == 0


def test_hostile_passages_cannot_link_or_run(page, example_server: str) -> None:
    page.goto(f"{example_server}/index.html")
    question, evil = question_for(example_server, "passages")
    evil = json.loads(json.dumps(evil))  # a copy to change
    good = evil["passages"][0]
    evil["passages"] = [
        {**good, "url": "javascript:window.__pwned=1"},
        {
            **good,
            "url": "https://evil.example/steal.html",
            "chapter": "<img src=x onerror=window.__pwned=1>",
            "quote": "</script><script>window.__pwned=1</script>",
            "snippet": "<b>bold</b>",
        },
    ]
    page.route("**/api/ask/stream", lambda route: fake_stream(route, evil))
    ask(page, question)
    titles = page.locator(".ragcite-passage-title")
    assert titles.count() == 2
    assert page.locator(".ragcite-passages a").count() == 0  # no link survived
    state = page.evaluate(INERT)
    assert (state["pwned"], state["imgs"], state["handlers"], state["badHrefs"]) == (
        None,
        0,
        0,
        [],
    )
    assert "<script>window.__pwned=1</script>" in state["text"]


def fake_stream(route, answer: dict) -> None:
    body = (
        'event: retrieval\ndata: {"retrieved": []}\n\n'
        f"event: final\ndata: {json.dumps(answer)}\n\n"
    )
    route.fulfill(status=200, content_type="text/event-stream", body=body)


def test_errors_busy_and_low_confidence(page, example_server: str) -> None:
    page.goto(f"{example_server}/index.html")
    page.route(
        "**/api/ask/stream",
        lambda route: route.fulfill(
            status=400,
            content_type="application/json",
            body=json.dumps(
                {
                    "error": {
                        "code": "invalid_request",
                        "message": "question: must not be <b>empty</b>",
                        "field": "question",
                    }
                }
            ),
        ),
    )
    with pytest.raises(sync_api.Error):
        ask(page, "anything")
    error = page.locator(".ragcite-error")
    assert "question: must not be <b>empty</b>" in error.text_content()
    assert error.locator("b").count() == 0

    page.unroute("**/api/ask/stream")
    page.route(
        "**/api/ask/stream",
        lambda route: route.fulfill(
            status=503,
            headers={"Retry-After": "7", "Content-Type": "application/json"},
            body=json.dumps({"error": {"code": "busy", "message": "busy"}}),
        ),
    )
    with pytest.raises(sync_api.Error):
        ask(page, "anything")
    text = error.text_content()
    assert "busy" in text
    assert "Retry in 7 s" in text or "Retry in 6 s" in text

    page.unroute("**/api/ask/stream")
    low = ask_api(example_server, QUESTION)
    low.update(confidence=0.2, confidence_level="low")
    page.route("**/api/ask/stream", lambda route: fake_stream(route, low))
    ask(page, QUESTION)
    assert page.locator(".ragcite-badge-low").is_visible()
    assert page.locator(".ragcite-low-note").is_visible()
    assert error.is_hidden()

    empty = page.evaluate(
        "() => window.ragcite.ask('   ').then(() => 'resolved', (e) => e.message)"
    )
    assert empty == "Type a question first."


# -- safety -------------------------------------------------------------------------

STREAM_WATCH = """() => {
  window.__streamed = [];
  new MutationObserver(() => {
    const p = document.querySelector('.ragcite-streaming');
    if (p) window.__streamed.push(p.textContent);
  }).observe(document.getElementById('ragcite-root'),
             {subtree: true, childList: true, characterData: true});
}"""

INERT = """() => {
  const root = document.getElementById('ragcite-root');
  const hrefs = [...root.querySelectorAll('[href]')].map((a) => a.getAttribute('href'));
  return {
    pwned: window.__pwned,
    imgs: root.querySelectorAll('img, script, iframe, svg image, object, embed').length,
    handlers: [...root.querySelectorAll('*')].filter((el) =>
      [...el.attributes].some((a) => a.name.startsWith('on'))).length,
    badHrefs: hrefs.filter((h) => !/^https?:/.test(h)),
    text: root.textContent,
  };
}"""


def test_hostile_documents_and_model_stay_inert(page, hostile_server: str) -> None:
    page.goto(f"{hostile_server}/index.html")
    page.evaluate(STREAM_WATCH)
    answer = ask(page, "What pressure do espresso machines brew at?")
    assert answer["metadata"]["model"].startswith("hostile")
    streamed = page.evaluate("window.__streamed")
    assert any("nine bars of pressure <img" in text for text in streamed), streamed
    for marker in page.locator("a[data-ragcite-n]").all():
        marker.hover()
        marker.focus()
    state = page.evaluate(INERT)
    assert state["pwned"] is None
    assert state["imgs"] == 0
    assert state["handlers"] == 0
    assert state["badHrefs"] == []
    assert "onerror" in state["text"]  # the hostile text is shown, as text
    page.screenshot(path=str(SHOTS / "hostile.png"))

    page.goto(f"{hostile_server}/crema.html")
    hostile = "<img src=x onerror=window.__pwned=1>"
    result = ask(page, "crema fresh beans", selection=hostile)
    assert result["citations"]
    state = page.evaluate(INERT)
    assert (state["pwned"], state["imgs"], state["handlers"], state["badHrefs"]) == (
        None,
        0,
        0,
        [],
    )


def test_hostile_answer_json_cannot_link_or_run(page, example_server: str) -> None:
    page.goto(f"{example_server}/index.html")
    evil = ask_api(example_server, QUESTION)
    evil["answer"] = (
        "<img src=x onerror=window.__pwned=1> Bloom [1] and [2] "
        "[3](javascript:window.__pwned=1)"
    )
    good = evil["citations"][0]
    evil["citations"] = [
        {**good, "n": 1, "url": "javascript:window.__pwned=1"},
        {
            **good,
            "n": 2,
            "url": "data:text/html,<script>window.__pwned=1</script>",
            "chapter": "<img src=x onerror=window.__pwned=1>",
            "quote": "</script><script>window.__pwned=1</script>",
        },
        {**good, "n": 3, "url": "https://evil.example/steal.html"},
    ]
    page.route("**/api/ask/stream", lambda route: fake_stream(route, evil))
    ask(page, QUESTION)
    for n in ("1", "2"):
        marker = page.locator(f'a[data-ragcite-n="{n}"]')
        assert marker.get_attribute("href") is None
        marker.hover()
    page.locator('a[data-ragcite-n="1"]').click()
    state = page.evaluate(INERT)
    assert (state["pwned"], state["imgs"], state["handlers"], state["badHrefs"]) == (
        None,
        0,
        0,
        [],
    )
    hrefs = page.evaluate(
        "[...document.querySelectorAll('#ragcite-root [href]')].map(a => a.href)"
    )
    assert not any("evil.example" in h for h in hrefs)
    assert "<img src=x onerror=window.__pwned=1>" in state["text"]
    assert page.url == f"{example_server}/index.html"


def test_bidi_overrides_in_book_and_model_text_stay_inside_their_sentence(
    page, example_server: str
) -> None:
    """An unclosed U+202E reverses its own sentence only: the widget's [1]
    stays after its sentence, and other sentences and titles read left to right."""
    page.goto(f"{example_server}/index.html")
    answer = ask_api(example_server, QUESTION)
    good = answer["citations"][0]
    answer["answer"] = (
        f"Heat {RLO}the water. The bloom takes thirty seconds [1]. Grind finer [2]."
    )
    answer["citations"] = [
        {
            **good,
            "n": 1,
            "chapter": f"Brewing {RLO}methods",
            "section": "The\u00a0bloom",
            "snippet": f"Pour slowly {RLO}over the grounds. Wait\u00a0thirty seconds.",
            "quote": f"Stir {RLO}gently. Then\u00a0wait.",
        },
        {**good, "n": 2},
    ]
    page.route("**/api/ask/stream", lambda route: fake_stream(route, answer))
    ask(page, QUESTION)
    answer_p = ".ragcite-answer"
    assert_reads_in_order(page, answer_p, "[1]", ".")  # "[1]." cannot wrap
    assert_reads_in_order(page, answer_p, "[2]", ".")
    assert_reads_in_order(page, answer_p, "Grind", "finer")
    source = 'li[data-ragcite-source="1"]'
    assert_reads_in_order(page, f"{source} .ragcite-snippet", "Wait", "thirty")
    assert_reads_in_order(page, f"{source} .ragcite-source-title", "The", "bloom")
    page.locator('a[data-ragcite-n="1"]').hover()
    page.locator("#ragcite-preview").wait_for(state="visible")
    assert_reads_in_order(page, ".ragcite-preview-quote", "Then", "wait")
    assert_reads_in_order(page, ".ragcite-preview-title", "The", "bloom")
    # the text itself is all there, override included
    text = page.locator(answer_p).text_content()
    assert f"Heat {RLO}the water." in text
    page.screenshot(path=str(SHOTS / "bidi.png"))


def test_the_version_comes_from_the_page(page, example_server: str) -> None:
    from sphinx_ragcite import __version__

    page.goto(f"{example_server}/index.html")
    page.wait_for_function("() => window.ragcite !== undefined")
    assert page.evaluate("window.ragcite.version") == __version__
    root = page.locator("#ragcite-root")
    assert root.get_attribute("data-ragcite-version") == __version__


# -- several sites ------------------------------------------------------------------


def test_the_widget_asks_the_version_of_its_page(
    page, example_versions_server: str
) -> None:
    from helpers.builds import BLOOM_V1, BLOOM_V2

    sent: list[dict] = []
    page.on(
        "request",
        lambda r: (
            sent.append(json.loads(r.post_data or "{}"))
            if r.url.endswith("/api/ask/stream")
            else None
        ),
    )
    for name, says in (("v2", BLOOM_V2), ("v1", BLOOM_V1)):
        page.goto(f"{example_versions_server}/{name}/brewing/pour_over.html")
        answer = ask(page, QUESTION)
        assert sent[-1]["site"] == name
        assert answer["site"] == name
        assert says in answer["answer"]
        first = answer["citations"][0]
        assert first["site"] == name
        marker = page.locator('a[data-ragcite-n="1"]')
        assert (
            marker.get_attribute("href") == f"{example_versions_server}/{first['url']}"
        )
        assert says in page.locator(".ragcite-answer").text_content()
    page.screenshot(path=str(SHOTS / "sites-v1.png"))


def test_the_widget_can_ask_another_version_or_all(
    page, example_versions_server: str
) -> None:
    from helpers.builds import BLOOM_V2

    page.goto(f"{example_versions_server}/v1/brewing/pour_over.html")
    answer = ask(page, QUESTION, site="v2")
    assert answer["site"] == "v2"
    assert BLOOM_V2 in answer["answer"]
    first = answer["citations"][0]
    href = page.locator('a[data-ragcite-n="1"]').get_attribute("href")
    assert href == f"{example_versions_server}/v2/{first['url'].removeprefix('v2/')}"
    page.locator('a[data-ragcite-n="1"]').click()
    page.wait_for_url(f"{example_versions_server}/v2/**")
    wait_highlighted(page, first["passage_id"])
    assert BLOOM_V2 in page.locator(f"#{first['passage_id']}").text_content()

    page.goto(f"{example_versions_server}/v1/index.html")
    across = ask(page, QUESTION, site="*")
    assert "site" not in across
    assert set(across["metadata"]["retrieved_sites"]) == {"v1", "v2"}
    hrefs = page.eval_on_selector_all(
        "li[data-ragcite-source] a", "links => links.map(a => a.href)"
    )
    for citation, link in zip(across["citations"], hrefs, strict=False):
        assert link == f"{example_versions_server}/{citation['url']}"


# -- keyboard and themes --------------------------------------------------------------


def test_keyboard_only(page, example_server: str) -> None:
    page.goto(f"{example_server}/index.html")
    target = ask_api(example_server, QUESTION)["citations"][0]
    page.keyboard.press("Control+/")
    assert page.evaluate("document.activeElement.id") == "ragcite-question"
    page.keyboard.type(QUESTION)
    page.keyboard.press("Enter")
    page.locator('a[data-ragcite-n="1"]').wait_for(state="visible")
    for _ in range(12):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.dataset.ragciteN") == "1":
            break
    else:
        pytest.fail("Tab never reached the first marker")
    assert page.locator("#ragcite-preview").is_visible()
    page.keyboard.press("Enter")
    page.wait_for_url(f"{example_server}/{target['url']}")
    wait_highlighted(page, target["passage_id"])

    # Escape closes the panel and gives focus back
    page.keyboard.press("Control+/")
    assert page.locator("#ragcite-panel").is_visible()
    page.keyboard.press("Escape")
    assert page.locator("#ragcite-panel").is_hidden()
    focused = "document.activeElement.classList.contains('ragcite-launcher')"
    assert page.evaluate(focused)


def test_dark_mode(browser, example_server: str) -> None:
    context = browser.new_context(
        viewport={"width": 1280, "height": 800}, color_scheme="dark"
    )
    try:
        page = context.new_page()
        page.goto(f"{example_server}/brewing/espresso.html")
        ask(page, QUESTION)
        page.locator('a[data-ragcite-n="1"]').hover()
        page.locator("#ragcite-preview").wait_for(state="visible")
        background = page.evaluate(
            "getComputedStyle(document.querySelector('.ragcite-panel')).backgroundColor"
        )
        red, green, blue = (int(x) for x in background[4:-1].split(",")[:3])
        assert red + green + blue < 200, background
        shot(page, "dark.png", docs=True)
    finally:
        context.close()


def test_small_screen_panel_fits(browser, example_server: str) -> None:
    context = browser.new_context(
        viewport={"width": 390, "height": 740}, has_touch=True, is_mobile=True
    )
    try:
        page = context.new_page()
        page.goto(f"{example_server}/index.html")
        ask(page, QUESTION)
        box = page.locator(".ragcite-panel").bounding_box()
        assert box is not None
        assert box["x"] >= 0
        assert box["x"] + box["width"] <= 390 + 0.5
        # a tap previews first, a second tap follows the link
        marker = page.locator('a[data-ragcite-n="1"]')
        marker.tap()
        page.locator("#ragcite-preview").wait_for(state="visible")
        assert "index.html" in page.url
        shot(page, "mobile.png", docs=True)
    finally:
        context.close()
