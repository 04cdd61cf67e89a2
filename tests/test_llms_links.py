"""llms.txt v2: pages name their Markdown twin and llms.txt, in the head and over HTTP.

Every page with passages carries ``<link rel="alternate" type="text/markdown">``
and ``<link rel="describedby">`` that resolve to files of the built site
(``html``, ``dirhtml``, ``singlehtml``, and one shared corpus); ``ragcite
serve`` sends the same as ``Link`` headers and answers ``Accept:
text/markdown`` on a page's URL with its twin, per site under ``--site``.
"""

from __future__ import annotations

import logging
import posixpath
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import httpx
import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient
from llms_txt import parse_llms_file

from benchmarks import _corpora
from sphinx_ragcite.formats.llms_links import link_header, relative_links, twin_url
from sphinx_ragcite.server.app import create_app
from sphinx_ragcite.server.pages import prefers_markdown
from sphinx_ragcite.server.settings import ServerSettings

from helpers.builds import Builds, read_passages
from helpers.repo import EXAMPLE_BOOK
from helpers.servers import serving

#: What Chromium and Firefox send for a page they navigate to.
BROWSER_ACCEPT = (
    "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,"
    "image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7"
)
FIREFOX_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


@pytest.mark.parametrize(
    ("page", "twin", "llms"),
    [
        ("index.html", "index.html.md", "llms.txt"),
        ("", "index.html.md", "llms.txt"),  # dirhtml's root
        ("a/b.html", "b.html.md", "../llms.txt"),
        ("a/b/", "index.html.md", "../../llms.txt"),  # dirhtml
        ("a/uni%20page.html", "uni%20page.html.md", "../llms.txt"),
    ],
)
def test_links_are_relative_to_the_page(page: str, twin: str, llms: str) -> None:
    assert relative_links(page) == (twin, llms)
    assert posixpath.normpath(posixpath.join(page.rpartition("/")[0], twin)) == (
        twin_url(page)
    )
    assert link_header(page) == (
        f'<{twin}>; rel="alternate"; type="text/markdown", <{llms}>; rel="describedby"'
    )


@pytest.mark.parametrize(
    ("accept", "markdown"),
    [
        ("text/markdown", True),
        ("text/markdown, text/html;q=0.9", True),
        ("text/html;q=0.5, text/markdown;q=0.9", True),
        ("text/*;q=0.2, text/markdown", True),
        ("TEXT/Markdown; charset=utf-8", True),
        ("text/markdown;q=0.5, text/html", False),
        ("text/markdown;q=0.8, text/html;q=0.8", False),  # a tie: HTML
        ("text/markdown;q=0", False),
        ("text/markdown;q=x", False),
        ("text/*", False),
        ("*/*", False),
        ("", False),
        (None, False),
        ("application/json", False),
        (BROWSER_ACCEPT, False),
        (FIREFOX_ACCEPT, False),
    ],
)
def test_accept_prefers_markdown_only_when_it_ranks_above_html(
    accept: str | None, markdown: bool
) -> None:
    assert prefers_markdown(accept) is markdown


def head_links(page: Path) -> dict[str, list[str]]:
    """rel -> hrefs of the page's ``<link>`` tags (alternate: Markdown only)."""
    soup = BeautifulSoup(page.read_text("utf-8"), "html.parser")
    found: dict[str, list[str]] = {"alternate": [], "describedby": []}
    for tag in soup.head.find_all("link") if soup.head else ():
        rel = " ".join(tag.get("rel") or [])
        if rel == "describedby" or (
            rel == "alternate" and tag.get("type") == "text/markdown"
        ):
            found[rel].append(str(tag["href"]))
    return found


def page_file(outdir: Path, url: str) -> Path:
    path = outdir / unquote(url)
    return path / "index.html" if url == "" or url.endswith("/") else path


def check_site(outdir: Path) -> int:
    """Every page with passages names its twin and llms.txt; those exist; the
    other pages name neither. Returns the number of pages with links."""
    urls = {r["url"].partition("#")[0] for r in read_passages(outdir)}
    assert urls
    twinned = {page_file(outdir, u).resolve() for u in urls}
    llms = (outdir / "llms.txt").resolve()
    assert parse_llms_file(llms.read_text("utf-8")).title
    for page in outdir.rglob("*.html"):
        if any(p.startswith((".", "_")) for p in page.relative_to(outdir).parts):
            continue
        links = head_links(page)
        if page.resolve() not in twinned:
            assert links == {"alternate": [], "describedby": []}, page
            continue
        assert len(links["alternate"]) == 1, page
        assert links["describedby"] == [
            posixpath.relpath(
                "llms.txt", page.parent.relative_to(outdir).as_posix() or "."
            )
        ], page
        twin = (page.parent / unquote(links["alternate"][0])).resolve()
        assert twin == Path(f"{page.resolve()}.md"), page
        assert twin.is_file(), twin
        assert twin.read_text("utf-8").startswith("# "), twin
        assert (page.parent / links["describedby"][0]).resolve() == llms
    return len(twinned)


def test_every_page_of_the_example_book_has_both_links(example_site: Path) -> None:
    assert check_site(example_site) >= 10


@pytest.fixture(scope="module")
def example_src(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import shutil

    srcdir = tmp_path_factory.mktemp("llms_links") / "src"
    shutil.copytree(EXAMPLE_BOOK, srcdir, ignore=shutil.ignore_patterns("_build"))
    return srcdir


@pytest.mark.slow
@pytest.mark.parametrize("builder", ["dirhtml", "singlehtml"])
def test_links_under_dirhtml_and_singlehtml(
    example_src: Path, tmp_path: Path, builder: str
) -> None:
    outdir = tmp_path / builder
    cmd = [sys.executable, "-m", "sphinx", "-q", "-b", builder]
    result = subprocess.run(
        [*cmd, "-d", str(tmp_path / "doctrees"), str(example_src), str(outdir)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    pages = check_site(outdir)
    assert pages == 1 if builder == "singlehtml" else pages >= 10
    if builder == "dirhtml":
        links = head_links(outdir / "brewing" / "espresso" / "index.html")
        assert links == {
            "alternate": ["index.html.md"],
            "describedby": ["../../llms.txt"],
        }


@pytest.mark.slow
def test_no_links_without_llms_txt(example_src: Path, tmp_path: Path) -> None:
    outdir = tmp_path / "html"
    cmd = [sys.executable, "-m", "sphinx", "-q", "-b", "html", "-D"]
    subprocess.run(
        [*cmd, "ragcite_llms_txt=0", str(example_src), str(outdir)], check=True
    )
    assert not (outdir / "llms.txt").exists()
    assert head_links(outdir / "index.html") == {"alternate": [], "describedby": []}


# --- the server -----------------------------------------------------------


def expect_links(response: httpx.Response) -> dict[str, str]:
    """rel -> the absolute URL of each ``Link`` of *response*."""
    found = {}
    for link in response.headers["link"].split(","):
        target, *params = (p.strip() for p in link.split(";"))
        rel = next(p for p in params if p.startswith("rel="))[4:].strip('"')
        found[rel] = urljoin(str(response.url), target.strip("<>"))
    return found


@pytest.mark.parametrize(
    ("path", "twin"),
    [
        ("/", "index.html.md"),
        ("/index.html", "index.html.md"),
        ("/brewing/espresso.html", "brewing/espresso.html.md"),
        ("/brewing/", "brewing/index.html.md"),
    ],
)
def test_accept_markdown_gets_the_twin(
    client: TestClient, example_site: Path, path: str, twin: str
) -> None:
    r = client.get(path, headers={"Accept": "text/markdown"})
    assert r.status_code == 200
    assert r.headers["content-type"] == "text/markdown; charset=utf-8"
    assert r.content == (example_site / twin).read_bytes()
    assert r.headers["vary"] == "Accept"
    links = expect_links(r)
    assert urlsplit(links["alternate"]).path == f"/{twin}"
    assert urlsplit(links["describedby"]).path == "/llms.txt"
    assert urljoin(str(r.url), r.headers["content-location"]) == links["alternate"]
    head = client.head(path, headers={"Accept": "text/markdown"})
    assert head.headers["content-type"] == r.headers["content-type"]
    assert head.headers["link"] == r.headers["link"]


@pytest.mark.parametrize(
    "accept", [None, "text/html", "*/*", BROWSER_ACCEPT, "text/markdown;q=0.1, */*"]
)
def test_browsers_get_html_with_the_links(
    client: TestClient, example_site: Path, accept: str | None
) -> None:
    headers = {"Accept": accept} if accept else {}
    r = client.get("/brewing/espresso.html", headers=headers)
    assert r.status_code == 200
    assert r.headers["content-type"] == "text/html; charset=utf-8"
    assert r.content == (example_site / "brewing" / "espresso.html").read_bytes()
    assert r.headers["vary"] == "Accept"
    links = expect_links(r)
    for url in links.values():
        assert client.get(url).status_code == 200, url
    assert urlsplit(links["alternate"]).path == "/brewing/espresso.html.md"


def test_the_variants_revalidate_apart(client: TestClient) -> None:
    """Each variant has its own ETag; a 304 keeps Vary and the links."""
    html = client.get("/brewing/espresso.html")
    md = client.get("/brewing/espresso.html", headers={"Accept": "text/markdown"})
    assert html.headers["etag"] != md.headers["etag"]
    again = client.get(
        "/brewing/espresso.html",
        headers={"Accept": "text/markdown", "If-None-Match": md.headers["etag"]},
    )
    assert again.status_code == 304
    assert again.headers["vary"] == "Accept"
    assert "describedby" in again.headers["link"]


def test_twins_and_other_files_are_served_as_before(client: TestClient) -> None:
    twin = client.get("/brewing/espresso.html.md", headers={"Accept": "text/html"})
    assert twin.headers["content-type"] == "text/markdown; charset=utf-8"
    assert "vary" not in twin.headers
    assert expect_links(twin) == {"describedby": "http://testserver/llms.txt"}
    for path in ("/genindex.html", "/search.html", "/llms.txt", "/_static/basic.css"):
        r = client.get(path, headers={"Accept": "text/markdown"})
        assert r.status_code == 200, path
        assert "link" not in r.headers, path
        assert not r.headers["content-type"].startswith("text/markdown"), path
    folder = client.get(
        "/brewing", headers={"Accept": "text/markdown"}, follow_redirects=False
    )
    assert folder.status_code == 307
    assert folder.headers["location"] == "./brewing/"


def test_curl_gets_markdown_from_ragcite_serve(example_site: Path) -> None:
    """Over a real socket, as ``curl -H 'Accept: text/markdown'`` asks."""
    app = create_app(ServerSettings(build_dir=example_site))
    with serving(app) as url:
        r = httpx.get(f"{url}/water.html", headers={"Accept": "text/markdown"})
        assert r.status_code == 200
        assert r.text == (example_site / "water.html.md").read_text("utf-8")
        assert r.headers["vary"] == "Accept"


@pytest.mark.slow
def test_each_site_points_to_its_own_llms_txt(
    example_site: Path, example_site_v2: Path
) -> None:
    settings = ServerSettings(sites=(("v1", example_site), ("v2", example_site_v2)))
    with TestClient(create_app(settings)) as client:
        for name, folder in (("v1", example_site), ("v2", example_site_v2)):
            page = f"/{name}/brewing/pour_over.html"
            md = client.get(page, headers={"Accept": "text/markdown"})
            assert md.text == (folder / "brewing/pour_over.html.md").read_text("utf-8")
            links = expect_links(md)
            assert urlsplit(links["describedby"]).path == f"/{name}/llms.txt"
            assert urlsplit(links["alternate"]).path == f"{page}.md"
            llms = client.get(links["describedby"])
            assert llms.status_code == 200
            parsed = parse_llms_file(llms.text)
            # its links are relative: they resolve inside the site's prefix
            for _, items in parsed.sections.items():
                for item in items:
                    target = urljoin(links["describedby"], item["url"])
                    assert urlsplit(target).path.startswith(f"/{name}/")
                    assert client.get(target).status_code == 200, target
            html = client.get(f"/{name}/", headers={"Accept": FIREFOX_ACCEPT})
            assert html.headers["content-type"].startswith("text/html")
            assert urlsplit(expect_links(html)["describedby"]).path == (
                f"/{name}/llms.txt"
            )


# --- hostile names, links and paths (issue 33) -----------------------------

SECRET = "# Outside the site\n\nNobody should read this over HTTP.\n"


@pytest.fixture(scope="module")
def symlinked_twins_site(
    example_site: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The example book plus ``weird name.html``, whose twin is a symlink to a
    file outside the site, and ``alias.html``, whose twin links to another
    twin inside it."""
    root = tmp_path_factory.mktemp("odd_site")
    site = root / "html"
    shutil.copytree(example_site, site)
    (root / "secret.md").write_text(SECRET, "utf-8")
    for name in ("weird name", "alias"):
        (site / f"{name}.html").write_text(
            f"<!DOCTYPE html><title>{name}</title><p>{name}</p>", "utf-8"
        )
    (site / "weird name.html.md").symlink_to(root / "secret.md")
    (site / "alias.html.md").symlink_to(site / "water.html.md")
    return site


def test_a_twin_linked_outside_the_site_is_served_by_no_door(
    symlinked_twins_site: Path,
) -> None:
    """Negotiation finds the twin by the static files' own lookup, so the
    same containment holds: a symlink out of the site is no twin at all."""
    with TestClient(
        create_app(ServerSettings(build_dir=symlinked_twins_site))
    ) as client:
        assert client.get("/weird%20name.html.md").status_code == 404
        for accept in ("text/markdown", "text/markdown, text/html;q=0.5"):
            r = client.get("/weird%20name.html", headers={"Accept": accept})
            assert "Nobody should read this" not in r.text
            assert r.status_code == 200
            assert r.headers["content-type"].startswith("text/html")
            assert "link" not in r.headers  # no twin to name
            head = client.head("/weird%20name.html", headers={"Accept": accept})
            assert head.headers["content-type"].startswith("text/html")
        # a twin linked to a file inside the site is served, as the file is
        inside = client.get("/alias.html", headers={"Accept": "text/markdown"})
        assert inside.headers["content-type"] == "text/markdown; charset=utf-8"
        assert inside.text == (symlinked_twins_site / "water.html.md").read_text(
            "utf-8"
        )
        assert client.get("/alias.html.md").text == inside.text


@pytest.mark.parametrize(
    "path",
    [
        "/index.html/",
        "/brewing//espresso.html",
        "/brewing%2Fespresso.html",
        "/water.html/%2F/",
    ],
)
def test_a_page_asked_by_another_url_is_not_negotiated(
    client: TestClient, path: str
) -> None:
    """The static files serve these too, but a relative ``Link`` or
    ``Content-Location`` would resolve against the URL asked, elsewhere
    (found by benchmarks/fuzz_doors.py): plain files, no twin."""
    r = client.get(path, headers={"Accept": "text/markdown"})
    assert r.status_code in (200, 404)
    assert "content-location" not in r.headers
    assert "link" not in r.headers
    assert not r.headers["content-type"].startswith("text/markdown")


LONG = "a" * 256  # one byte over NAME_MAX


@pytest.mark.parametrize(
    "path",
    [
        "/%00",
        "/code.html%00.md",
        "/index.html%00",
        "/index.html%00.md",
        "/%00/index.html",
        "/brewing/%00",
        f"/{LONG}",
        f"/{LONG}.html",
        f"/{LONG}.html.md",
        f"/{LONG}/",
        f"/{LONG}/index.html",
        f"/brewing/{LONG}.html",
        "/brewing/" + "%C3%A9" * 128 + ".html",  # 256 bytes of UTF-8
        "/" + "x/" * 2000 + "index.html",
    ],
    ids=lambda p: p if len(p) < 30 else f"{p[:16]}...{p[-10:]}({len(p)})",
)
def test_odd_paths_are_404_not_500(
    client: TestClient, path: str, caplog: pytest.LogCaptureFixture
) -> None:
    """NUL and over-long names: a 404, as the static file server gives,
    whatever the request accepts (llms.txt is on)."""
    with caplog.at_level(logging.ERROR):
        for method in ("GET", "HEAD"):
            for accept in (None, "text/markdown", "*/*"):
                headers = {"Accept": accept} if accept else {}
                r = client.request(method, path, headers=headers)
                assert r.status_code == 404, (method, accept, r.status_code)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


# --- a shared corpus ------------------------------------------------------

CORPUS = "click-docs"


@pytest.fixture(scope="module")
def corpus_site(builds: Builds) -> Path:
    """The corpus as ``test_corpora.py`` builds it (the session's build)."""
    if _corpora.corpus_path(CORPUS) is None:
        pytest.skip(f"corpus {CORPUS} not found (../shared/corpora)")
    for module in _corpora.CORPUS_DEPS[CORPUS]:
        pytest.importorskip(
            module, reason=f'{CORPUS} needs it: pip install ".[corpora]"'
        )
    return builds.corpus(CORPUS).outdir


@pytest.mark.corpora
@pytest.mark.xdist_group(f"corpus:{CORPUS}")  # with the other tests on it
def test_every_page_of_a_shared_corpus_has_both_links(corpus_site: Path) -> None:
    assert check_site(corpus_site) >= 20


def test_tags_are_inserted_once_where_a_theme_drops_them(tmp_path: Path) -> None:
    """The Pallets themes (click's docs) redefine ``metatags`` without ours."""
    from sphinx_ragcite.extension.llms_links import ensure_links

    page = tmp_path / "guide" / "uni page.html"
    page.parent.mkdir()
    page.write_text("<html><head><title>t</title></HEAD><body>x</body></html>")
    (tmp_path / "index.html").write_text(
        '<html><head><link rel="describedby" href="llms.txt"></head></html>'
    )
    urls = ["guide/uni%20page.html", "index.html", "gone.html"]
    assert ensure_links(tmp_path, urls) == ["guide/uni%20page.html"]
    assert head_links(page) == {
        "alternate": ["uni%20page.html.md"],
        "describedby": ["../llms.txt"],
    }
    before = page.read_bytes()
    assert ensure_links(tmp_path, urls) == []
    assert page.read_bytes() == before


@pytest.mark.slow
def test_several_sites_have_a_root_llms_txt_listing_theirs(
    example_site: Path, example_site_v2: Path
) -> None:
    settings = ServerSettings(sites=(("v1", example_site), ("v2", example_site_v2)))
    with TestClient(create_app(settings)) as client:
        r = client.get("/llms.txt")
        assert r.status_code == 200
        assert r.headers["content-type"] == "text/plain; charset=utf-8"
        parsed = parse_llms_file(r.text)
        links = [item["url"] for items in parsed.sections.values() for item in items]
        assert links == ["v1/llms.txt", "v2/llms.txt"]
        for link in links:
            assert client.get(f"/{link}").text.startswith("# Brewing Better Coffee")
