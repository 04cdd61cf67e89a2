"""Passages -> llms.txt, llms-full.txt and Markdown copies that keep passage IDs."""

from __future__ import annotations

import contextlib
import hashlib
import json
import posixpath
import re
import shutil
import urllib.request
from pathlib import Path
from urllib.parse import quote, unquote, urljoin, urlsplit

import mistletoe
import pytest
from bs4 import BeautifulSoup
from llms_txt import parse_llms_file

from sphinx_ragcite.extension.llms_txt import escape, escape_inline

from helpers.builds import build, read_manifest, read_passages, sphinx_build
from helpers.repo import ROOTS
from helpers.servers import serving, serving_files

#: ``[ch3-sec2-p4](water.html#ch3-sec2-p4)``: a passage's ID line in a copy.
ID_LINE = re.compile(r"^\[(ch\d+-sec\d+-p\d+)\]\(([^)]*)\)$", re.MULTILINE)


def llms_listed(outdir: Path) -> dict[str, dict[str, object]]:
    """The files the build's llms listing names (its own file, which the
    manifest names by role: the manifest every reader fetches stays small)."""
    manifest = read_manifest(outdir)
    assert manifest["llms_txt"] == {"role": "llms"}
    listing = outdir / "_ragcite" / manifest["files"]["llms"]
    return json.loads(listing.read_text("utf-8"))["files"]  # type: ignore[no-any-return]


def llms_paths(outdir: Path) -> set[str]:
    return set(llms_listed(outdir))


def resolve(outdir: Path, base: str, link: str) -> tuple[Path, str]:
    """A relative link in the file at *base* -> (file in the site, anchor)."""
    target, _, anchor = link.partition("#")
    path = posixpath.normpath(posixpath.join(posixpath.dirname(base), unquote(target)))
    file = outdir / path
    if file.is_dir():
        file = file / "index.html"
    return file, anchor


def anchors(page: Path) -> list[str]:
    soup = BeautifulSoup(page.read_text("utf-8"), "html.parser")
    return [tag["id"] for tag in soup.find_all(id=True)]


def test_llms_txt_parses_and_every_link_resolves(example_site: Path) -> None:
    text = (example_site / "llms.txt").read_text("utf-8")
    parsed = parse_llms_file(text)
    assert parsed.title == "Brewing Better Coffee"
    assert parsed.summary.startswith("This book is a practical guide")
    assert "passage ID" in parsed.info
    assert list(parsed.sections) == ["Docs", "Optional"]
    links = [link for section in parsed.sections.values() for link in section]
    assert (
        len(links)
        == len({r["url"].partition("#")[0] for r in read_passages(example_site)}) + 1
    )
    for link in links:
        file, _ = resolve(example_site, "llms.txt", link["url"])
        assert file.is_file(), link
        assert link["title"]
        assert link["desc"]
    docs = [link["url"] for link in parsed.sections["Docs"]]
    assert docs[0] == "index.html.md"
    assert "brewing/pour_over.html.md" in docs
    optional = [link["url"] for link in parsed.sections["Optional"]]
    assert optional == ["glossary_notes.html.md", "llms-full.txt"]  # the orphan


@pytest.mark.slow
def test_markdown_copies_keep_every_passage_id_and_its_anchor(
    example_site: Path,
) -> None:
    records = read_passages(example_site)
    by_page: dict[str, list[str]] = {}
    for record in records:
        by_page.setdefault(record["url"].partition("#")[0], []).append(
            record["passage_id"]
        )
    seen = []
    for page, ids in by_page.items():
        copy = f"{page}.md"
        text = (example_site / copy).read_text("utf-8")
        found = ID_LINE.findall(text)
        assert [pid for pid, _ in found] == ids, copy
        html_ids = anchors(example_site / page)
        for pid, link in found:
            file, anchor = resolve(example_site, copy, link)
            assert file == example_site / page
            assert anchor == pid
            assert html_ids.count(pid) == 1
        seen += ids
    assert seen == [r["passage_id"] for r in records]
    full = (example_site / "llms-full.txt").read_text("utf-8")
    found = ID_LINE.findall(full)
    assert [pid for pid, _ in found] == seen
    for pid, link in found:  # llms-full.txt sits at the root: links from there
        file, anchor = resolve(example_site, "llms-full.txt", link)
        assert anchor == pid
        assert pid in anchors(file)


def test_the_copies_say_what_the_passages_say(example_site: Path) -> None:
    """Rendered, a copy shows each passage's text (escaping changes no word)."""
    record = next(
        r for r in read_passages(example_site) if r["passage_id"] == "ch3-sec6-p2"
    )
    text = (example_site / "water.html.md").read_text("utf-8")
    html = mistletoe.markdown(text)
    words = BeautifulSoup(html, "html.parser").get_text(" ")
    for line in record["text"].splitlines():
        assert " ".join(line.split()) in " ".join(words.split())


def test_manifest_lists_the_files_with_their_digests(example_site: Path) -> None:
    listed = llms_listed(example_site)
    assert {"llms.txt", "llms-full.txt", "index.html.md"} <= set(listed)
    for path, entry in listed.items():
        data = (example_site / path).read_bytes()
        assert entry == {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    # not part of the search index: no passage comes from these files
    assert all(not r["docname"].endswith(".md") for r in read_passages(example_site))
    assert all(
        "Each paragraph starts with its passage ID" not in r["text"]
        for r in read_passages(example_site)
    )


@pytest.mark.slow
def test_bytes_are_deterministic_and_rebuilds_keep_them_current(
    tmp_path: Path,
) -> None:
    src = tmp_path / "src"
    shutil.copytree(ROOTS / "test-basic", src)
    first, second = tmp_path / "a", tmp_path / "b"
    sphinx_build(src, first, "-d", str(tmp_path / "d1"))
    sphinx_build(src, second, "-d", str(tmp_path / "d2"), "-j", "2")
    paths = llms_paths(first)
    assert paths == llms_paths(second)
    for path in paths:
        assert (first / path).read_bytes() == (second / path).read_bytes(), path

    # an incremental build after an edit and a deletion: current, nothing stale
    (src / "first.rst").write_text(
        (src / "first.rst").read_text("utf-8") + "\nA sentence added later.\n",
        "utf-8",
    )
    (src / "zorphan.rst").unlink()
    sphinx_build(src, first, "-d", str(tmp_path / "d1"))
    now = llms_paths(first)
    assert "zorphan.html.md" in paths
    assert "zorphan.html.md" not in now
    assert not (first / "zorphan.html.md").exists()
    assert "A sentence added later." in (first / "first.html.md").read_text("utf-8")
    assert "zorphan" not in (first / "llms.txt").read_text("utf-8")
    parse_llms_file((first / "llms.txt").read_text("utf-8"))


@pytest.mark.slow
@pytest.mark.parametrize("builder", ["dirhtml", "singlehtml"])
def test_other_builders_link_to_their_pages(tmp_path: Path, builder: str) -> None:
    out = tmp_path / "out"
    sphinx_build(ROOTS / "test-basic", out, "-d", str(tmp_path / "d"), "-b", builder)
    for path in llms_paths(out):
        if not path.endswith(".md"):
            continue
        text = (out / path).read_text("utf-8")
        for pid, link in ID_LINE.findall(text):
            file, anchor = resolve(out, path, link)
            assert anchor == pid, (path, link)
            assert anchors(file).count(pid) == 1, (path, link)


@pytest.mark.slow
def test_hostile_text_stays_text(tmp_path: Path) -> None:
    out = tmp_path / "out"
    sphinx_build(ROOTS / "test-hostile", out, "-d", str(tmp_path / "d"))
    for path in llms_paths(out):
        html = mistletoe.markdown((out / path).read_text("utf-8"))
        soup = BeautifulSoup(html, "html.parser")
        tags = {tag.name for tag in soup.find_all(True)}
        assert not tags & {"script", "img", "svg", "iframe"}, path
        for tag in soup.find_all("a"):
            assert not tag["href"].startswith("javascript:"), path
        assert "window.__pwned=1" in soup.get_text()  # shown, as text
    parse_llms_file((out / "llms.txt").read_text("utf-8"))


def test_escape_is_invisible_once_rendered() -> None:
    text = "1. one\n# two <b>x</b> [a](javascript:b) a&b * c \\ d"
    html = mistletoe.markdown(escape(text))
    shown = BeautifulSoup(html, "html.parser").get_text()
    assert " ".join(shown.split()) == " ".join(text.split())


@pytest.mark.slow
def test_off_and_an_authors_own_llms_txt(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(ROOTS / "test-basic", src)
    (src / "extra").mkdir()
    (src / "extra" / "llms.txt").write_text("# Mine\n", "utf-8")
    out = tmp_path / "out"
    warnings = sphinx_build(
        src, out, "-d", str(tmp_path / "d"), "-D", "html_extra_path=extra"
    )
    assert "ragcite.llms" in warnings or "was not written by sphinx-ragcite" in warnings
    assert (out / "llms.txt").read_text("utf-8") == "# Mine\n"
    assert "llms.txt" not in llms_paths(out)
    assert "first.html.md" in llms_paths(out)

    off = tmp_path / "off"
    sphinx_build(src, off, "-d", str(tmp_path / "d2"), "-D", "ragcite_llms_txt=0")
    assert "llms_txt" not in read_manifest(off)
    assert not list(off.rglob("*.md"))


@contextlib.contextmanager
def file_server(root: Path):
    """``python -m http.server``: decodes the path once and serves that file."""
    with serving_files(root) as url:
        yield url + "/"


@contextlib.contextmanager
def ragcite_server(root: Path):
    """``ragcite serve ROOT`` on a real socket (Starlette's TestClient decodes
    a path twice, so it cannot tell ``%2541`` from ``%41``)."""
    pytest.importorskip("uvicorn")
    from sphinx_ragcite.server.app import create_app
    from sphinx_ragcite.server.settings import ServerSettings

    settings = ServerSettings(build_dir=root, generator="extractive", rate_limit=0)
    with serving(create_app(settings)) as url:
        yield url + "/"


def odd_site(make_app, rootdir: Path, tmp_path: Path, builder: str) -> Path:
    srcdir = tmp_path / "src"
    shutil.copytree(rootdir / "test-odd-names", srcdir)
    app = build(make_app, builder, srcdir)
    assert app._warning.getvalue().strip() == ""
    return Path(app.outdir)


def passages_of(outdir: Path) -> list[dict]:
    """``helpers.builds.read_passages``, split as the server splits (bytes: U+0085 and
    U+2028 in a record's text end no line)."""
    manifest = read_manifest(outdir)
    data = (outdir / "_ragcite" / manifest["files"]["passages"]).read_bytes()
    return [json.loads(line) for line in data.splitlines()]


def site_urls(outdir: Path) -> set[str]:
    """Every URL the site's Markdown side hands out, absolute from the root
    (``http://x/`` stands for it): llms.txt's links, the ID links of each copy
    and of llms-full.txt, and every passage's ``url``."""
    root = "http://x/"
    urls = set()
    llms = (outdir / "llms.txt").read_text("utf-8")
    for section in parse_llms_file(llms).sections.values():
        urls |= {urljoin(root, link["url"]) for link in section}
    for path in llms_paths(outdir):
        if path == "llms.txt":
            continue
        base = urljoin(root, quote(path))
        text = (outdir / path).read_text("utf-8")
        urls |= {urljoin(base, link) for _, link in ID_LINE.findall(text)}
    urls |= {urljoin(root, r["url"]) for r in passages_of(outdir)}
    return urls


@pytest.mark.parametrize("builder", ["html", "dirhtml"])
def test_odd_page_names_resolve_on_real_http_servers(
    make_app,
    rootdir: Path,
    tmp_path: Path,
    builder: str,
) -> None:
    """Pages named ``uni page é 名前``, ``weird%41name``, ``paren (1)``: the
    copies sit beside the pages under the decoded name, every URL is quoted
    once, and both ``python -m http.server`` and ``ragcite serve`` answer 200
    with the right file (and the HTML page holds the anchor)."""
    outdir = odd_site(make_app, rootdir, tmp_path, builder)
    for path in llms_paths(outdir):  # beside the page Sphinx wrote
        assert (outdir / path).is_file(), path
        if path.endswith(".html.md"):
            assert (outdir / path[: -len(".md")]).is_file(), path
    suffix = "/index.html.md" if builder == "dirhtml" else ".html.md"
    assert f"uni page é 名前{suffix}" in llms_paths(outdir)
    assert f"weird%41name{suffix}" in llms_paths(outdir)
    urls = site_urls(outdir)
    records = passages_of(outdir)
    assert len(urls) > len(records) > 6
    for url in urls:  # quoted exactly once: decoding and quoting again is a no-op
        path = urlsplit(url).path
        assert quote(unquote(path)) == path, url

    def get(url: str) -> bytes:
        with urllib.request.urlopen(url) as response:
            assert response.status == 200, url
            return bytes(response.read())

    with file_server(outdir) as plain, ragcite_server(outdir) as served:
        for url in sorted(urls):
            parts = urlsplit(url)
            path = parts.path.removeprefix("/")
            body = get(plain + path)
            assert get(served + path) == body, url
            if path.endswith((".md", ".txt")):
                assert b"passage ID" in body, url
            else:
                soup = BeautifulSoup(body, "html.parser")
                ids = [tag["id"] for tag in soup.find_all(id=True)]
                assert unquote(parts.fragment) in ids, url
        for record in records:  # the URLs the server hands out resolve too
            passage = json.loads(get(f"{served}api/passages/{record['passage_id']}"))
            assert passage["url"] == record["url"]
            get(served + urlsplit(urljoin("http://x/", passage["url"])).path[1:])


#: Text that Markdown renderers read as rules, headings or quotes, or that
#: hides or reorders what follows it.
HOSTILE_LINES = {
    "rules": "___\n_ _ _\n---\n***\n* * *\n- - -\n__init__ and _stressed_",
    "nel": "next line\x85# h. is no heading",
    "line separator": "a\u2028# h2.\u2029> no quote\r\n# h3.\x0c# h4.",
    "override": "an override \u202ethat never closes",
    "isolates": "a stray pop \u2069\u202eand an open isolate \u2067here",
    "zero width": "zero\u200bwidth\ufeff and \x1b[31m escape",
}
#: What the copies must not hold raw: line breaks other than "\n", controls,
#: bidi controls, zero-width characters.
HIDDEN = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b\u202a-\u202e\u2028\u2029\u2066-\u2069\ufeff]"
)
RENDERED_BLOCKS = ("p", "li", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote")


def bidi_confined(text: str) -> bool:
    """Every embedding or override sits in an isolate that closes in *text*."""
    depth = 0
    for char in text:
        if char in "\u2066\u2067\u2068":
            depth += 1
        elif char == "\u2069":
            depth = max(depth - 1, 0)
        elif char in "\u202a\u202b\u202d\u202e" and not depth:
            return False
    return depth == 0


def assert_markdown_is_text(markdown: str, what: str) -> BeautifulSoup:
    """Raw: no hidden line break or bidi/zero-width character. Rendered: no
    rule, quote or emphasis, and every override confined to its block."""
    assert markdown.splitlines() == markdown.removesuffix("\n").split("\n")
    hidden = HIDDEN.findall(markdown)
    assert not hidden, (what, hidden)
    soup = BeautifulSoup(mistletoe.markdown(markdown), "html.parser")
    tags = {tag.name for tag in soup.find_all(True)}
    assert not tags & {"hr", "em", "strong", "del", "code", "pre"}, (what, tags)
    # llms.txt's summary is its one quote
    assert len(soup.find_all("blockquote")) == (what == "llms.txt"), what
    for block in soup.find_all(RENDERED_BLOCKS):
        assert bidi_confined(block.get_text()), (what, block)
    return soup


@pytest.mark.parametrize("name", sorted(HOSTILE_LINES))
def test_escape_keeps_rules_breaks_and_bidi_as_text(name: str) -> None:
    text = HOSTILE_LINES[name]
    soup = assert_markdown_is_text(escape(text), name)
    assert not soup.find_all(["h1", "h2", "h3", "h4", "h5", "h6"]), name
    shown = HIDDEN.sub("", soup.get_text())
    words = HIDDEN.sub("", re.sub("[\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]", " ", text))
    assert " ".join(shown.split()) == " ".join(words.split()), name

    line = escape_inline(text)
    assert "\n" not in line
    soup = assert_markdown_is_text(f"# {line}", name)
    assert len(soup.find_all(True)) == 1  # one heading and nothing in it


def test_hostile_names_and_text_in_the_copies(
    make_app,
    rootdir: Path,
    tmp_path: Path,
) -> None:
    """A literal block of rules, NEL and U+2028 before ``# h.``, an unclosed
    U+202E and a U+200B in the page's title and a section heading."""
    outdir = odd_site(make_app, rootdir, tmp_path, "html")
    for path in llms_paths(outdir):
        assert_markdown_is_text((outdir / path).read_text("utf-8"), path)
    copy = (outdir / "hostile.html.md").read_text("utf-8")
    soup = BeautifulSoup(mistletoe.markdown(copy), "html.parser")
    headings = [h.get_text() for h in soup.find_all(["h1", "h2", "h3", "h4"])]
    assert len(headings) == 2, headings  # the title and the one section
    assert "\u202eevil" in headings[0]
    assert "\u202ereversed\u200b" in headings[1]
    shown = soup.get_text()
    for text in ("___", "_ _ _", "# h.", "# h2.", "> quote.", "_stressed_"):
        assert text in shown, text
    llms = (outdir / "llms.txt").read_text("utf-8")
    title = next(
        link["title"]
        for section in parse_llms_file(llms).sections.values()
        for link in section
        if link["url"] == "hostile.html.md"
    )
    assert "&#x202E;evil" in title
    assert "and&#x200B;zero width" in title
