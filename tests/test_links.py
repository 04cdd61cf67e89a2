"""Old deep links after edits: the link history and ``_ragcite/moved.js``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sphinx_ragcite.extension.link_history import (
    LinkHistory,
    similarity,
    sketch,
    update,
)
from sphinx_ragcite.extension.passages.records import content_hash
from sphinx_ragcite.formats.moved import PREFIX

from helpers.builds import read_manifest, read_passages, sphinx_build
from helpers.repo import ROOTS

PARAS = {
    "a": "The gooseneck kettle pours a thin steady stream onto the coffee bed.",
    "b": "An electric kettle with a dial holds the water at the chosen degree.",
    "c": "A stovetop kettle is cheap and lasts for decades without a display.",
    "new": "Before any numbers, use a thermometer once to learn your kettle.",
}


def records(*layout: tuple[str, str, str]) -> list[dict]:
    """(passage ID, docname, text) -> the record fields the history reads."""
    return [
        {
            "passage_id": pid,
            "docname": doc,
            "url": f"{doc}.html#{pid}",
            "text": text,
            "content_hash": content_hash(text),
        }
        for pid, doc, text in layout
    ]


def lands(moved: dict, now: list[dict], pid: str, doc: str) -> str | None:
    """The text an old ``doc.html#pid`` link shows, following the moved map."""
    url = moved.get(f"{doc}.html#{pid}", f"{doc}.html#{pid}")
    if isinstance(url, list):
        url = url[0]
    return next((r["text"] for r in now if r["url"] == url), None)


def test_inserted_paragraph_sends_old_ids_to_their_text() -> None:
    history = LinkHistory()
    old = records(
        ("ch1-sec1-p1", "k", PARAS["a"]),
        ("ch1-sec1-p2", "k", PARAS["b"]),
        ("ch1-sec1-p3", "k", PARAS["c"]),
    )
    assert update(history, old) == {}
    new = records(
        ("ch1-sec1-p1", "k", PARAS["new"]),
        ("ch1-sec1-p2", "k", PARAS["a"]),
        ("ch1-sec1-p3", "k", PARAS["b"]),
        ("ch1-sec1-p4", "k", PARAS["c"]),
    )
    moved = update(history, new)
    assert moved == {
        "k.html#ch1-sec1-p1": "k.html#ch1-sec1-p2",
        "k.html#ch1-sec1-p2": "k.html#ch1-sec1-p3",
        "k.html#ch1-sec1-p3": "k.html#ch1-sec1-p4",
    }
    for r in old:
        assert lands(moved, new, r["passage_id"], "k") == r["text"]


def test_original_links_survive_a_series_of_builds() -> None:
    history = LinkHistory()
    v0 = records(("ch1-sec1-p1", "k", PARAS["a"]), ("ch1-sec1-p2", "k", PARAS["b"]))
    update(history, v0)
    update(history, records(
        ("ch1-sec1-p1", "k", PARAS["new"]),
        ("ch1-sec1-p2", "k", PARAS["a"]),
        ("ch1-sec1-p3", "k", PARAS["b"]),
    ))  # fmt: skip
    v2 = records(  # a chapter inserted before: every ID moves again
        ("ch1-sec1-p1", "intro", PARAS["c"]),
        ("ch2-sec1-p1", "k", PARAS["new"]),
        ("ch2-sec1-p2", "k", PARAS["a"]),
        ("ch2-sec1-p3", "k", PARAS["b"]),
    )
    moved = update(history, v2)
    for r in v0:
        assert lands(moved, v2, r["passage_id"], "k") == r["text"]


def test_a_renumbered_chapter_is_not_ambiguous() -> None:
    """Inserting a chapter hands ch2 to another page: the page tells them apart."""
    history = LinkHistory()
    update(
        history,
        records(("ch1-sec1-p1", "k", PARAS["a"]), ("ch2-sec1-p1", "g", PARAS["b"])),
    )
    moved = update(
        history,
        records(
            ("ch1-sec1-p1", "new", PARAS["new"]),
            ("ch2-sec1-p1", "k", PARAS["a"]),
            ("ch3-sec1-p1", "g", PARAS["b"]),
        ),
    )
    assert moved == {
        "k.html#ch1-sec1-p1": "k.html#ch2-sec1-p1",
        "g.html#ch2-sec1-p1": "g.html#ch3-sec1-p1",
    }
    # this build's k.html#ch2-sec1-p1 is not in the map: it is never redirected


def test_root_page_links_match_with_or_without_index_html() -> None:
    history = LinkHistory()
    update(history, records(("ch0-sec0-p1", "index", PARAS["a"])))
    moved = update(
        history,
        records(
            ("ch0-sec0-p1", "index", PARAS["new"]), ("ch0-sec0-p2", "index", PARAS["a"])
        ),
    )
    assert moved == {"#ch0-sec0-p1": "index.html#ch0-sec0-p2"}


def test_text_edited_in_place_keeps_its_id_and_no_redirect() -> None:
    history = LinkHistory()
    update(history, records(("ch1-sec1-p1", "k", PARAS["a"])))
    edited = PARAS["a"].replace("thin steady", "thin, very steady")
    assert update(history, records(("ch1-sec1-p1", "k", edited))) == {}


def test_edited_and_shifted_text_is_followed_by_similarity() -> None:
    history = LinkHistory()
    update(
        history,
        records(("ch1-sec1-p1", "k", PARAS["a"]), ("ch1-sec1-p2", "k", PARAS["b"])),
    )
    edited = PARAS["a"].replace("thin steady", "thin and steady")
    now = records(
        ("ch1-sec1-p1", "k", PARAS["new"]),
        ("ch1-sec1-p2", "k", edited),
        ("ch1-sec1-p3", "k", PARAS["b"]),
    )
    moved = update(history, now)
    assert lands(moved, now, "ch1-sec1-p1", "k") == edited
    # the alias is kept while the edited text lives, so later builds follow it
    assert content_hash(PARAS["a"]) in history.alias


def test_rechunked_passage_goes_to_the_passage_holding_its_first_block() -> None:
    """An insertion changes how blocks merge: [a b] [c] becomes [new a] [b c]."""
    history = LinkHistory()
    a_b = PARAS["a"] + "\n\n" + PARAS["b"]
    update(
        history, records(("ch1-sec1-p1", "k", a_b), ("ch1-sec1-p2", "k", PARAS["c"]))
    )
    new_a = PARAS["new"] + "\n\n" + PARAS["a"]
    b_c = PARAS["b"] + "\n\n" + PARAS["c"]
    now = records(("ch1-sec1-p1", "k", new_a), ("ch1-sec1-p2", "k", b_c))
    moved = update(history, now)
    # each old passage's first block now sits second in a passage: the map
    # names the passage and the block's opening words for the widget
    assert moved == {
        "k.html#ch1-sec1-p1": [
            "k.html#ch1-sec1-p1",
            "The gooseneck kettle pours a thin steady stream",
        ],
        "k.html#ch1-sec1-p2": [
            "k.html#ch1-sec1-p2",
            "A stovetop kettle is cheap and lasts for",
        ],
    }
    assert lands(moved, now, "ch1-sec1-p2", "k") == b_c
    assert update(history, now) == moved  # a rebuild changes nothing


def test_moved_to_another_page_and_deleted_text() -> None:
    history = LinkHistory()
    update(history, records(
        ("ch1-sec1-p1", "k", PARAS["a"]),
        ("ch1-sec1-p2", "k", PARAS["b"]),
        ("ch2-sec1-p1", "g", PARAS["c"]),
    ))  # fmt: skip
    now = records(("ch1-sec1-p1", "k", PARAS["b"]), ("ch2-sec1-p1", "g", PARAS["a"]))
    moved = update(history, now)
    assert moved["k.html#ch1-sec1-p1"] == "g.html#ch2-sec1-p1"  # a: other page
    assert moved["k.html#ch1-sec1-p2"] == "k.html#ch1-sec1-p1"  # b moved up one
    # c was deleted: its anchor now means what it names today, no redirect
    assert "g.html#ch2-sec1-p1" not in moved
    assert history.first["g#ch2-sec1-p1"] == content_hash(PARAS["a"])


def test_an_unchanged_rebuild_keeps_the_map() -> None:
    history = LinkHistory()
    v0 = records(("ch1-sec1-p1", "k", PARAS["a"]))
    v1 = records(("ch1-sec1-p1", "k", PARAS["new"]), ("ch1-sec1-p2", "k", PARAS["a"]))
    update(history, v0)
    first = update(history, v1)
    assert update(history, v1) == first == {"k.html#ch1-sec1-p1": "k.html#ch1-sec1-p2"}


def test_sketch_similarity_tells_edits_from_new_text() -> None:
    a = sketch(PARAS["a"])
    assert similarity(a, sketch(PARAS["a"].replace("thin", "fine"))) >= 0.5
    assert similarity(a, sketch(PARAS["b"])) < 0.5
    assert similarity([], a) == 0.0


def test_history_round_trip_and_damaged_file(tmp_path: Path) -> None:
    path = tmp_path / "links.json"
    history = LinkHistory()
    update(history, records(("ch1-sec1-p1", "k", PARAS["a"])))
    history.save(path)
    again = LinkHistory.load(path)
    assert again.first == history.first
    assert again.passages == history.passages
    path.write_text("{not json", "utf-8")
    assert LinkHistory.load(path).first == {}  # warns and starts over...
    kept = tmp_path / "links.json.unreadable"
    assert kept.read_text("utf-8") == "{not json"  # ...keeping the damaged file
    assert not path.exists()
    path.write_text('{"format": 99}', "utf-8")  # a future version's file
    assert LinkHistory.load(path).first == {}
    assert kept.read_text("utf-8") == '{"format": 99}'
    assert LinkHistory.load(tmp_path / "missing.json").first == {}


# -- real builds ---------------------------------------------------------------


def moved_map(outdir: Path) -> dict[str, str]:
    body = (outdir / "_ragcite" / "moved.js").read_text("utf-8").strip()
    assert body.startswith(PREFIX)
    assert body.endswith(";")
    return json.loads(body[len(PREFIX) : -1])


INSERT = (
    "Heating\n-------\n\n",
    "Heating\n-------\n\n"
    "Before any numbers: use a thermometer once, so you know what your kettle\n"
    "really does when it clicks off, and write the reading on a sticky note.\n\n",
)


@pytest.fixture
def links_src(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    shutil.copytree(ROOTS / "test-links", src)
    return src


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text("utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), "utf-8")


@pytest.mark.slow
def test_incremental_build_maps_shifted_passages(
    links_src: Path, tmp_path: Path
) -> None:
    out, doctrees = tmp_path / "html", tmp_path / "doctrees"
    sphinx_build(links_src, out, "-d", str(doctrees))
    before = read_passages(out)
    assert moved_map(out) == {}
    # the server's content-addressed copy and the widget's fixed-name script
    index = out / "_ragcite"
    named = index / read_manifest(out)["files"]["moved"]
    assert named.read_bytes() == (index / "moved.js").read_bytes()

    edit(links_src / "kettles.rst", *INSERT)
    assert sphinx_build(links_src, out, "-d", str(doctrees)) == ""
    after = {r["url"]: r["text"] for r in read_passages(out)}
    moved = moved_map(out)
    assert set(moved) == {f"kettles.html#ch1-sec1-p{p}" for p in (1, 2, 3)}
    for record in before:
        url = moved.get(record["url"], record["url"])
        assert after[url] == record["text"], record["passage_id"]
    assert (doctrees / "ragcite-links.json").is_file()


@pytest.mark.slow
def test_link_history_in_the_source_tree_survives_a_clean_build(
    links_src: Path, tmp_path: Path
) -> None:
    option = ("-D", "ragcite_link_history=_links.json")
    sphinx_build(links_src, tmp_path / "a", *option)
    assert (links_src / "_links.json").is_file()
    edit(links_src / "kettles.rst", *INSERT)
    sphinx_build(links_src, tmp_path / "b", *option)  # fresh output, fresh doctrees
    moved = moved_map(tmp_path / "b")
    assert moved["kettles.html#ch1-sec1-p1"] == "kettles.html#ch1-sec1-p2"


@pytest.mark.slow
def test_link_history_none_writes_no_map(links_src: Path, tmp_path: Path) -> None:
    out = tmp_path / "html"
    sphinx_build(links_src, out, "-D", "ragcite_link_history=none")
    assert "moved" not in read_manifest(out)["files"]
    assert not (out / "_ragcite" / "moved.js").exists()


@pytest.mark.slow
def test_unwritable_history_warns_and_the_build_goes_on(
    links_src: Path, tmp_path: Path
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder", "utf-8")
    out = tmp_path / "html"
    option = f"ragcite_link_history={blocker}/links.json"
    warnings = sphinx_build(links_src, out, "-D", option)
    assert "could not write the link history" in warnings
    assert moved_map(out) == {}


@pytest.mark.slow
def test_tools_name_the_new_place_of_a_vanished_id(
    links_src: Path, tmp_path: Path
) -> None:
    """``ragcite cite`` and ``/api/passages`` say where an old ID's text went."""
    from fastapi.testclient import TestClient

    from sphinx_ragcite.cite.records import Book, lookup
    from sphinx_ragcite.errors import RagciteError
    from sphinx_ragcite.retrieval.site import Site
    from sphinx_ragcite.server.app import create_app
    from sphinx_ragcite.server.settings import ServerSettings

    out, doctrees = tmp_path / "html", tmp_path / "doctrees"
    sphinx_build(links_src, out, "-d", str(doctrees))
    kettles = (links_src / "kettles.rst").read_text("utf-8")
    scale = kettles[kettles.index("Scale builds up") :]
    (links_src / "kettles.rst").write_text(kettles.replace(scale, ""), "utf-8")
    with (links_src / "grinders.rst").open("a", encoding="utf-8") as f:
        f.write("\n" + scale)
    sphinx_build(links_src, out, "-d", str(doctrees))

    site = Site.load(out)
    assert site.moved == {"kettles.html#ch1-sec2-p1": "grinders.html#ch2-sec1-p3"}
    with pytest.raises(RagciteError, match="its text is now ch2-sec1-p3"):
        lookup(site, ["ch1-sec2-p1"], Book.from_manifest(site.manifest))
    settings = ServerSettings(build_dir=out, generator="extractive", rate_limit=0)
    with TestClient(create_app(settings)) as client:
        response = client.get("/api/passages/ch1-sec2-p1")
    assert response.status_code == 404
    assert "its text is now ch2-sec1-p3" in response.json()["error"]["message"]


@pytest.mark.slow
def test_dirhtml_keys_are_the_pages_folder_urls(
    links_src: Path, tmp_path: Path
) -> None:
    out, doctrees = tmp_path / "html", tmp_path / "doctrees"
    options = ("-b", "dirhtml", "-d", str(doctrees))
    sphinx_build(links_src, out, *options)
    edit(links_src / "kettles.rst", *INSERT)
    sphinx_build(links_src, out, *options)
    moved = moved_map(out)
    assert moved["kettles/#ch1-sec1-p1"] == "kettles/#ch1-sec1-p2"
