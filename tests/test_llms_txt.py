"""Passages -> llms.txt, llms-full.txt and Markdown copies that keep passage IDs."""

from __future__ import annotations

import hashlib
import posixpath
import re
import shutil
from pathlib import Path
from urllib.parse import unquote

import mistletoe
import pytest
from bs4 import BeautifulSoup
from llms_txt import parse_llms_file

from sphinx_ragcite.extension.llms_txt import escape

from conftest import ROOTS, read_manifest, read_passages, sphinx_build

#: ``[ch3-sec2-p4](water.html#ch3-sec2-p4)``: a passage's ID line in a copy.
ID_LINE = re.compile(r"^\[(ch\d+-sec\d+-p\d+)\]\(([^)]*)\)$", re.MULTILINE)


def llms_paths(outdir: Path) -> set[str]:
    return set(read_manifest(outdir)["llms_txt"]["files"])


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
    listed = read_manifest(example_site)["llms_txt"]["files"]
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
