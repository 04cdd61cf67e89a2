"""Assets: the widget reaches every HTML page, with its settings, and nothing else."""

from __future__ import annotations

import re

import pytest
from bs4 import BeautifulSoup
from sphinx.errors import ExtensionError

from sphinx_ragcite import __version__
from sphinx_ragcite.extension import assets

from helpers.builds import build
from helpers.repo import REPO

FAST = {"ragcite_embeddings": False}
SCRIPTS = (
    "lib.js",
    "spec.js",
    "citations.js",
    "sse.js",
    "settings.js",
    "dom.js",
    "client.js",
    "files.js",
    "static.js",
    "quotes.js",
    "deeplinks.js",
    "selection.js",
    "render.js",
    "previews.js",
    "feedback.js",
    "panel.js",
    "widget.js",
)


def widget_tags(html: str) -> dict:
    """The widget's script and link tags of one page."""
    soup = BeautifulSoup(html, "html.parser")
    scripts = [
        s for s in soup.find_all("script", src=True) if "_static/ragcite/" in s["src"]
    ]
    css = [
        link
        for link in soup.find_all("link", href=True)
        if "_static/ragcite/" in link["href"]
    ]
    return {"soup": soup, "scripts": scripts, "css": css}


def check_page(html: str, root: str) -> None:
    tags = widget_tags(html)
    names = [s["src"].split("?")[0].rsplit("/", 1)[1] for s in tags["scripts"]]
    assert names == list(SCRIPTS), names
    assert all(s.has_attr("defer") for s in tags["scripts"])
    widget = tags["scripts"][-1]
    assert widget["src"].startswith(f"{root}_static/ragcite/widget.js")
    assert widget["data-ragcite-index"] == "_ragcite/manifest.json"
    assert widget["data-ragcite-server"] == ""
    assert widget["data-ragcite-shortcut"] == "Mod+/"
    assert widget["data-ragcite-version"] == __version__
    assert widget["data-ragcite-site"] == ""
    assert widget["data-ragcite-scope"] == "site"
    for other in tags["scripts"][:-1]:
        assert not any(a.startswith("data-ragcite") for a in other.attrs)
    assert len(tags["css"]) == 1
    assert tags["css"][0]["href"].startswith(f"{root}_static/ragcite/widget.css")
    # the widget finds the site root through Sphinx's attribute
    assert tags["soup"].html["data-content_root"] == (root or "./")


@pytest.mark.sphinx("html", testroot="basic", freshenv=True, confoverrides=FAST)
def test_html_pages_get_the_widget_once(app_built) -> None:
    outdir = app_built.outdir
    pages = {p.relative_to(outdir).as_posix() for p in outdir.rglob("*.html")}
    assert {"index.html", "first.html", "part/index.html"} <= pages
    for page in pages:
        root = "../" * page.count("/")
        check_page((outdir / page).read_text("utf-8"), root)
    for name in assets.WIDGET_FILES:
        shipped = outdir / "_static" / "ragcite" / name
        assert shipped.read_bytes() == (assets.widget_dir() / name).read_bytes()
    # the checksum query busts caches when the widget changes
    index = (outdir / "index.html").read_text("utf-8")
    assert re.search(r'_static/ragcite/widget\.js\?v=[0-9a-f]{8}"', index)


@pytest.mark.parametrize(
    ("builder", "pages"),
    [
        ("dirhtml", {"index.html": "", "first/index.html": "../"}),
        ("singlehtml", {"index.html": ""}),
    ],
)
def test_other_site_builders_get_the_widget(builds, builder, pages):
    built = builds.app("basic", builder, FAST)  # the session's build, shared
    for page, root in pages.items():
        check_page((built.outdir / page).read_text("utf-8"), root)


@pytest.mark.parametrize("builder", ["latex", "text"])
def test_non_html_builders_get_no_widget(builds, builder):
    built = builds.app("basic", builder, FAST)  # the session's build, shared
    assert not (built.outdir / "_static" / "ragcite").exists()
    for path in built.outdir.rglob("*"):
        if path.is_file():
            text = path.read_text("utf-8", errors="replace")
            assert "ragcite/widget" not in text, path
            assert "data-ragcite" not in text, path


def test_widget_can_be_turned_off(builds):
    built = builds.app("basic", "html", {**FAST, "ragcite_widget": False})
    for page in built.outdir.rglob("*.html"):
        text = page.read_text("utf-8")
        assert "ragcite/widget" not in text
        assert "data-ragcite" not in text
    assert not (built.outdir / "_static" / "ragcite").exists()
    assert (built.outdir / "_ragcite" / "manifest.json").exists()  # the index stays


def test_widget_settings_reach_the_script_tag(builds):
    overrides = {
        **FAST,
        "ragcite_server_url": " https://answers.example.org/book ",
        "ragcite_shortcut": "Alt+A",
    }
    built = builds.app("basic", "html", overrides)  # the session's build, shared
    html = (built.outdir / "index.html").read_text("utf-8")
    widget = widget_tags(html)["scripts"][-1]
    assert widget["data-ragcite-server"] == "https://answers.example.org/book"
    assert widget["data-ragcite-shortcut"] == "Alt+A"
    assert built.warnings.strip() == ""


def test_site_name_scope_and_a_page_that_asks_all_sites(make_app, srcdir):
    index = srcdir / "index.rst"
    index.write_text(":ragcite_scope: all\n\n" + index.read_text("utf-8"), "utf-8")
    overrides = {**FAST, "ragcite_site_name": "v1.2", "ragcite_widget_scope": "site"}
    app = build(make_app, "html", srcdir, confoverrides=overrides)
    html = (app.outdir / "index.html").read_text("utf-8")
    widget = widget_tags(html)["scripts"][-1]
    assert widget["data-ragcite-site"] == "v1.2"
    assert widget["data-ragcite-scope"] == "site"
    soup = widget_tags(html)["soup"]
    assert soup.find("meta", attrs={"name": "ragcite-scope"})["content"] == "all"
    for other in sorted(app.outdir.glob("*.html")):
        if other.name != "index.html":
            assert 'name="ragcite-scope"' not in other.read_text("utf-8"), other
    assert app.warning.getvalue().strip() == ""


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("ragcite_server_url", "javascript:alert(1)"),
        ("ragcite_server_url", 8000),
        ("ragcite_widget", 2),
        ("ragcite_shortcut", None),
        ("ragcite_widget_scope", "everything"),
        ("ragcite_site_name", "../up"),
    ],
)
def test_bad_widget_settings_warn_and_fall_back(make_app, srcdir, name, value):
    app = make_app("html", srcdir=srcdir, confoverrides={**FAST, name: value})
    try:
        assert f"{name} must be" in app.warning.getvalue()
        defaults = {
            "ragcite_server_url": "",
            "ragcite_widget": True,
            "ragcite_shortcut": "Mod+/",
            "ragcite_widget_scope": "site",
            "ragcite_site_name": "",
        }
        assert getattr(app.config, name) == defaults[name]
    finally:
        app.cleanup()


# -- where the files come from -------------------------------------------------


def test_widget_dir_prefers_the_packaged_copy(tmp_path, monkeypatch) -> None:
    package = tmp_path / "sphinx_ragcite"
    (package / "static").mkdir(parents=True)
    for name in assets.WIDGET_FILES:
        (package / "static" / name).write_text("/* packaged */", "utf-8")
    monkeypatch.setattr(assets, "__file__", str(package / "extension" / "assets.py"))
    assert assets.widget_dir() == package / "static"


def test_widget_dir_falls_back_to_the_checkout(tmp_path, monkeypatch) -> None:
    package = tmp_path / "sphinx_ragcite"
    package.mkdir()
    (tmp_path / "js").mkdir()
    for name in assets.WIDGET_FILES:
        (tmp_path / "js" / name).write_text("/* source */", "utf-8")
    monkeypatch.setattr(assets, "__file__", str(package / "extension" / "assets.py"))
    assert assets.widget_dir() == tmp_path / "js"
    (tmp_path / "js" / "widget.js").unlink()
    with pytest.raises(ExtensionError, match="ragcite_widget = False"):
        assets.widget_dir()


def test_the_wheel_ships_every_widget_file() -> None:
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))
    shipped = project["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    for name in (*assets.WIDGET_FILES, *assets.BROWSER_SCRIPTS, *assets.ENGINE_SCRIPTS):
        assert shipped[f"js/{name}"] == f"sphinx_ragcite/static/{name}"
        assert (REPO / "js" / name).is_file()


# -- the widget's code keeps to its rules ----------------------------------------

FORBIDDEN = re.compile(
    r"\.(innerHTML|outerHTML|insertAdjacentHTML)\b|document\.write"
    r"|\beval\(|new Function\(|set(Timeout|Interval)\(\s*[\"'`]"
)


def test_every_script_is_on_the_page_or_loaded_by_the_widget() -> None:
    """A new js/ file must be shipped; nothing shipped is left unused."""
    scripts = {p.name for p in (REPO / "js").glob("*.js")}
    shipped = {*assets.WIDGET_SCRIPTS, *assets.STATIC_MODE_SCRIPTS}
    shipped |= {*assets.BROWSER_SCRIPTS, *assets.ENGINE_SCRIPTS}
    assert scripts == shipped
    assert assets.WIDGET_SCRIPTS == SCRIPTS


def test_the_version_comes_from_the_page_not_a_literal() -> None:
    for name in assets.WIDGET_SCRIPTS:
        assert __version__ not in (REPO / "js" / name).read_text("utf-8"), name


@pytest.mark.parametrize("name", sorted(p.name for p in (REPO / "js").glob("*.js")))
def test_widget_code_builds_dom_without_html_strings(name: str) -> None:
    source = (REPO / "js" / name).read_text("utf-8")
    assert source.startswith("// @ts-check")
    code = "\n".join(
        line
        for line in source.splitlines()
        if not line.lstrip().startswith(("*", "//"))
    )
    assert not FORBIDDEN.findall(code)


def test_new_widget_code_rewrites_every_page_on_an_incremental_build(
    make_app, srcdir, monkeypatch
) -> None:
    """Each page names the digest of the scripts its build shipped
    (``data-ragcite-assets``): a build with other scripts (an upgrade of
    sphinx-ragcite) rewrites every page, so none names an old digest."""
    app = build(make_app, "html", srcdir, confoverrides=FAST)
    pages = sorted(app.outdir.glob("*.html"))
    digest = re.search(
        r'data-ragcite-assets="([0-9a-f]{16})"', pages[0].read_text("utf-8")
    )
    assert digest, "no digest on the page"
    files = app.outdir / "_static" / "ragcite"
    assert digest.group(1) == assets.assets_digest(
        files,
        [p.relative_to(files).as_posix() for p in files.rglob("*") if p.is_file()],
    )
    # Sphinx writes its own pages (genindex, search) on every build
    docs = [p for p in pages if p.stem not in ("genindex", "search", "py-modindex")]
    written = {p: p.stat().st_mtime_ns for p in docs}
    build(make_app, "html", srcdir, confoverrides=FAST)
    assert {p: p.stat().st_mtime_ns for p in docs} == written  # nothing changed
    monkeypatch.setattr(
        assets, "assets_digest", lambda folder, names: "0123456789abcdef"
    )
    build(make_app, "html", srcdir, confoverrides=FAST)
    for page in pages:
        assert 'data-ragcite-assets="0123456789abcdef"' in page.read_text("utf-8"), page
