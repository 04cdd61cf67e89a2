"""The extension under popular themes, alongside common extensions, and in a
Jupyter Book 1 style project (``_toc.yml`` through sphinx-external-toc).

``test-themes`` is one small book (nested sections, a code block, an
admonition, a table, sphinx-design components, an autodoc API page and a
MyST-NB notebook page) built once per theme; ``test-jb`` is a Jupyter Book
whose reading order comes from its ``_toc.yml``. Each build runs in a
subprocess, so the extensions' registrations never leak between builds.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from helpers.anchors import check_anchors, page_of
from helpers.builds import build, read_passages, sphinx_build

#: html_theme -> the distribution that provides it (the ``themes`` extra).
THEMES = {
    "alabaster": "alabaster",
    "furo": "furo",
    "pydata_sphinx_theme": "pydata-sphinx-theme",
    "sphinx_book_theme": "sphinx-book-theme",
}
#: Modules the test roots need besides Sphinx -> their distribution.
EXTENSIONS = {
    "sphinx_design": "sphinx-design",
    "myst_nb": "myst-nb",
    "sphinx_external_toc": "sphinx-external-toc",
}
WIDGET_SCRIPTS = ("citations.js", "sse.js", "widget.js")


def require(module: str, package: str) -> None:
    pytest.importorskip(
        module, reason=f'{package} is not installed: pip install -e ".[themes]"'
    )


@dataclass
class Built:
    outdir: Path
    warnings: str
    records: list[dict]

    def by_doc(self, docname: str) -> list[dict]:
        return [r for r in self.records if r["docname"] == docname]

    def soup(self, record: dict) -> BeautifulSoup:
        html = page_of(self.outdir, record["url"]).read_text("utf-8")
        return BeautifulSoup(html, "html.parser")


def build_root(rootdir: Path, tmp: Path, root: str, *options: str) -> Built:
    srcdir = tmp / root
    shutil.copytree(rootdir / f"test-{root}", srcdir)
    outdir = tmp / "html"
    warnings = sphinx_build(srcdir, outdir, "-d", str(tmp / "doctrees"), *options)
    return Built(outdir, warnings, read_passages(outdir))


@pytest.fixture(scope="module", params=list(THEMES))
def themed(request, rootdir, tmp_path_factory) -> Built:
    theme: str = request.param
    require(theme, THEMES[theme])
    for module, package in EXTENSIONS.items():
        require(module, package)
    tmp = tmp_path_factory.mktemp(f"theme-{theme}")
    return build_root(rootdir, tmp, "themes", "-D", f"html_theme={theme}")


@pytest.fixture(scope="module")
def jupyter_book(rootdir, tmp_path_factory) -> Built:
    for module, package in (
        ("sphinx_book_theme", "sphinx-book-theme"),
        *EXTENSIONS.items(),
    ):
        require(module, package)
    return build_root(rootdir, tmp_path_factory.mktemp("jupyter-book"), "jb")


def widget_counts(html: str) -> dict[str, int]:
    """How often each widget file is linked from a page."""
    soup = BeautifulSoup(html, "html.parser")
    srcs = [s["src"].split("?")[0] for s in soup.find_all("script", src=True)]
    hrefs = [s["href"].split("?")[0] for s in soup.find_all("link", href=True)]
    counts = {
        name: sum(src.endswith(f"_static/ragcite/{name}") for src in srcs)
        for name in WIDGET_SCRIPTS
    }
    counts["widget.css"] = sum(h.endswith("_static/ragcite/widget.css") for h in hrefs)
    return counts


def check_widget(outdir: Path) -> list[Path]:
    """Every page Sphinx wrote links each widget file once.

    Redirect stubs (sphinx-external-toc's ``index.html`` when the root is
    another document) are not Sphinx pages and are left out.
    """
    pages = []
    for page in sorted(outdir.rglob("*.html")):
        if page.relative_to(outdir).parts[0].startswith("_"):
            continue
        html = page.read_text("utf-8")
        if 'http-equiv="Refresh"' in html and "<body" not in html:
            continue
        counts = widget_counts(html)
        assert counts == dict.fromkeys([*WIDGET_SCRIPTS, "widget.css"], 1), page
        pages.append(page)
    assert {page_of(outdir, r["url"]) for r in read_passages(outdir)} <= set(pages)
    for name in (*WIDGET_SCRIPTS, "widget.css"):
        assert (outdir / "_static" / "ragcite" / name).is_file()
    return pages


# -- every theme -----------------------------------------------------------


@pytest.mark.slow
def test_theme_build_has_no_warnings(themed: Built) -> None:
    assert themed.warnings == ""


def test_theme_anchors(themed: Built) -> None:
    records = check_anchors(themed.outdir)
    docs = {r["docname"] for r in records}
    assert docs == {"index", "guide", "design", "api", "notebook"}


#: The theme screenshots' question (docs/widget.md): answered from the autodoc page.
THEME_QUESTION = "How do I heat the water to a given temperature?"


@pytest.mark.slow
def test_theme_screenshot(themed: Built, page, request) -> None:
    """The docs' picture of the widget under each theme, answering from the
    autodoc page with the answer server (tools/docs_screenshots.py)."""
    from helpers.browser import ask, shot
    from helpers.servers import answer_server

    theme = request.node.callspec.params["themed"]
    with answer_server(themed.outdir, generator="extractive") as url:
        page.goto(f"{url}/guide.html")
        answer = ask(page, THEME_QUESTION)
        assert answer["outcome"] == "answer", answer
        assert any(c["url"].startswith("api.html") for c in answer["citations"])
        name = f"theme-{theme.replace('_', '-')}.png"
        # the example book's own screenshots show alabaster in the docs
        shot(page, name, docs=theme != "alabaster", book="test-themes")


@pytest.mark.slow
def test_theme_widget_once_per_page(themed: Built) -> None:
    pages = {p.name for p in check_widget(themed.outdir)}
    assert {"index.html", "guide.html", "design.html", "api.html"} <= pages


def test_theme_blocks(themed: Built) -> None:
    guide = {r["passage_id"].split("-", 1)[1]: r for r in themed.by_doc("guide")}
    # a backslash escape (brew\_helper) leaves no NUL in the text
    assert guide["sec0-p1"]["text"].endswith("step by step with brew_helper.")
    assert not any("\x00" in r["text"] for r in themed.records)
    assert guide["sec3-p1"]["heading_path"] == [
        "Brewing Guide",
        "Water",
        "Temperature",
        "Very Nested Detail",
    ]
    equipment = guide["sec4-p1"]["text"]
    assert "Warning\nNever pour boiling water" in equipment  # admonition
    assert "    return grams * ratio" in equipment  # code keeps its indent
    assert "french press | coarse" in equipment  # table rows


# -- sphinx-design ---------------------------------------------------------


def test_design_text_is_indexed_and_anchored(themed: Built) -> None:
    records = themed.by_doc("design")
    text = "\n".join(r["text"] for r in records)
    for phrase in (
        "On Linux install the kettle driver",  # first tab
        "On Windows run the kettle installer",  # a tab hidden until clicked
        "Freezing sealed portions",  # the second tab of a long tab-set
        "Descale the machine every month",  # card
        "The right card talks about latte art",  # grid card
        "The dropdown hides notes about bean storage",  # dropdown body
    ):
        assert phrase in text
    # Passages that start at a component are anchored on its own element
    # (the ids survive sphinx-design's HTML post-transforms).
    starts = {}
    for record in records:
        element = themed.soup(record).find(id=record["passage_id"])
        starts[record["text"].split("\n", 1)[0]] = (
            element.name,
            element.get("class", []),
        )
    assert starts["Linux"] == ("label", ["sd-tab-label"])
    assert starts["Roasting"] == ("label", ["sd-tab-label"])
    assert "sd-card-title" in starts["Descaling card"][1]
    assert "sd-card-title" in starts["Left grid card"][1]
    assert starts["Hidden details"][0] == "details"


# -- sphinx.ext.autodoc ----------------------------------------------------

#: Documented object -> (its signature in the passage, a docstring phrase).
API = {
    "brewlib.Kettle": ("class brewlib.Kettle(litres: float)", "heats water"),
    "brewlib.Kettle.heat": ("heat(celsius: int) → None", "Heat the water until"),
    "brewlib.Kettle.pour": ("pour(millilitres: int) → int", "Pour water from"),
    "brewlib.grind_size": ("brewlib.grind_size(method: str) → str", "grind size"),
    "brewlib.steep": (
        "brewlib.steep(grams: int, seconds: int = 240) → float",
        "Longer steeping raises the yield",
    ),
}


def test_autodoc_object_per_passage(themed: Built) -> None:
    records = themed.by_doc("api")
    intro = records[0]["text"]
    assert intro.startswith("The brewlib module documents a tiny brewing API.")
    assert "Helpers for brewing coffee in tests." in intro  # module docstring
    assert "steep(" not in intro
    seen = set()
    for record in records[1:]:
        element = themed.soup(record).find(id=record["passage_id"])
        # the anchor is on the object's <dl class="py ...">, whose <dt> is
        # the signature Sphinx links to
        assert element.name == "dl"
        assert "py" in element["class"]
        target = element.find("dt")["id"]
        signature, phrase = API[target]
        assert record["text"].startswith(signature + "\n\n"), record["text"]
        assert phrase in record["text"]
        # one object per passage: a class's passage stops before its methods
        others = [s for t, (s, _) in API.items() if t != target]
        assert not any(s in record["text"] for s in others)
        seen.add(target)
    assert seen == set(API)


# -- MyST-NB ---------------------------------------------------------------


def test_notebook_page(themed: Built) -> None:
    first, section = themed.by_doc("notebook")
    assert first["text"] == (
        "A MyST notebook page rendered by myst-nb without execution.\n\n"
        "ratio = 250 / 15\nprint(ratio)"
    )
    assert section["heading_path"] == ["Notebook Page", "Notebook Section"]


# -- Jupyter Book 1 (sphinx-external-toc) ------------------------------------


@pytest.mark.slow
def test_jupyter_book_builds(jupyter_book: Built) -> None:
    assert jupyter_book.warnings == ""
    check_anchors(jupyter_book.outdir)
    check_widget(jupyter_book.outdir)


@pytest.mark.slow
def test_jupyter_book_reading_order_follows_toc(jupyter_book: Built) -> None:
    chapters = {
        r["docname"]: r["passage_id"].split("-")[0] for r in jupyter_book.records
    }
    # _toc.yml: root intro; part 1: zebra, apple > apple_detail; part 2: middle
    assert chapters == {
        "intro": "ch0",
        "zebra": "ch1",
        "apple": "ch2",
        "apple_detail": "ch3",
        "middle": "ch4",
    }
    order = list(dict.fromkeys(r["docname"] for r in jupyter_book.records))
    assert order == ["intro", "zebra", "apple", "apple_detail", "middle"]
    texts = {r["docname"]: r["text"] for r in jupyter_book.records}
    assert "gala | red" in texts["apple"]
    assert "def peel(apple):" in texts["apple_detail"]


def test_long_api_descriptions(make_app, tmp_path) -> None:
    """The signature stays with its first block; a long docstring splits."""
    (tmp_path / "conf.py").write_text('extensions = ["sphinx_ragcite"]\n', "utf-8")
    words = " ".join(f"word{i}" for i in range(30))
    (tmp_path / "index.rst").write_text(
        "API\n===\n\n"
        "Intro paragraph.\n\n"
        ".. py:function:: mix(a, b=1, *, c=None) -> int\n\n"
        f"   First paragraph {words}.\n\n"
        f"   Second paragraph {words}.\n\n"
        "Prose after the function starts a passage of its own.\n",
        "utf-8",
    )
    app = build(make_app, "html", tmp_path, confoverrides={"ragcite_passage_words": 20})
    assert app.warning.getvalue() == ""
    texts = [r["text"] for r in check_anchors(app.outdir)]
    assert texts[0] == "Intro paragraph."
    # 35 words: over the limit, but a signature alone is no passage
    assert texts[1].startswith("mix(a, b=1, *, c=None) → int\n\nFirst paragraph word0")
    assert texts[2].startswith("Second paragraph")
    assert texts[3] == "Prose after the function starts a passage of its own."
    assert len(texts) == 4
