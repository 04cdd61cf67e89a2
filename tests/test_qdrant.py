"""Site -> Qdrant -> hits and answers: push, re-push, agreement, serve --qdrant.

Everything runs against qdrant-client's local mode (a folder or ``:memory:``),
the same client API a Qdrant server answers; nothing touches the network.
The server's own tests run against a server answering from Qdrant too: the
``[qdrant]`` runs of ``test_server.py`` (its ``memory_and_qdrant`` tests).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from sphinx_ragcite.cli.commands import main
from sphinx_ragcite.errors import RagciteError
from sphinx_ragcite.evaluate import load_qa
from sphinx_ragcite.retrieval.qdrant import (
    QdrantSite,
    connect,
    point_id,
    push,
    pushed_sites,
)
from sphinx_ragcite.retrieval.searchable import Filters
from sphinx_ragcite.retrieval.site import Site
from sphinx_ragcite.server.app import create_app
from sphinx_ragcite.server.settings import ServerSettings

from helpers.builds import read_passages, sphinx_build
from helpers.repo import EXAMPLE_BOOK
from helpers.servers import sse_events

QUESTIONS = [q.question for q in load_qa(EXAMPLE_BOOK / "qa.jsonl")]
#: answer-JSON fields that are measured, not computed
TIMINGS = {"retrieval_ms", "generation_ms", "verification_ms"}


@pytest.fixture(scope="module")
def memory_site(example_site: Path) -> Site:
    return Site.load(example_site)


def copy_of(folder: Path, dest: Path) -> Path:
    """Local mode locks its folder for one client: each door opens a copy."""
    shutil.copytree(folder, dest)
    return dest


@pytest.fixture(scope="module")
def qdrant_site(
    qdrant_dir: Path, example_site: Path, tmp_path_factory: pytest.TempPathFactory
):
    folder = copy_of(qdrant_dir, tmp_path_factory.mktemp("qdrant_site") / "store")
    site = QdrantSite.for_build(str(folder), example_site)
    yield site
    site.client.close()


@pytest.fixture(scope="module")
def site_without_altitude(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example book without its water chapter's "Altitude" section."""
    root = tmp_path_factory.mktemp("edited")
    src = root / "src"
    shutil.copytree(EXAMPLE_BOOK, src, ignore=shutil.ignore_patterns("_build"))
    water = (src / "water.rst").read_text("utf-8")
    start = water.index("Altitude\n~~~~~~~~")
    end = water.index("\n\n", water.index("Water boils at 100"))
    (src / "water.rst").write_text(water[:start] + water[end + 2 :], "utf-8")
    out = root / "html"
    assert sphinx_build(src, out, "-d", str(root / "doctrees")) == ""
    return out


def ids(hits: list[Any]) -> list[str]:
    return [h.passage_id for h in hits]


def stored_ids(client: Any, collection: str, site: str, version: str) -> list[str]:
    from sphinx_ragcite.retrieval.qdrant.connection import _site_filter

    points, _ = client.scroll(
        collection,
        scroll_filter=_site_filter(site, version),
        limit=10_000,
        with_payload=["passage_id"],
    )
    return sorted(p.payload["passage_id"] for p in points)


# -- push ---------------------------------------------------------------------


def test_push_stores_every_passage_with_the_citation_payload(
    memory_site: Site,
) -> None:
    client = connect(":memory:")
    result = push(client, memory_site, "books")
    count = len(memory_site.passages)
    assert (result.upserted, result.removed) == (count, 0)
    assert (result.site, result.version) == ("brewing-better-coffee", "1.0")
    assert client.count("books").count == count
    first = memory_site.passages[0]
    [point] = client.retrieve(
        "books",
        [point_id(result.site, result.version, first["passage_id"])],
        with_vectors=True,
    )
    payload = point.payload
    assert payload is not None
    for field in (
        "passage_id",
        "chapter",
        "section",
        "heading_path",
        "snippet",
        "url",
        "content_hash",
    ):
        assert payload[field] == first[field]
    assert payload["page"] is None
    assert (payload["site"], payload["version"]) == (result.site, result.version)
    assert memory_site.vectors is not None
    assert point.vector["dense"] == pytest.approx(list(memory_site.vectors[0]))
    assert all(v > 0 for v in point.vector["bm25"].values)
    assert pushed_sites(client, "books") == [(result.site, result.version)]


@pytest.mark.slow
def test_a_second_push_changes_nothing(memory_site: Site) -> None:
    client = connect(":memory:")
    push(client, memory_site)
    before = stored_ids(client, "ragcite", "brewing-better-coffee", "1.0")
    again = push(client, memory_site)
    assert again.removed == 0
    assert client.count("ragcite").count == len(memory_site.passages)
    assert stored_ids(client, "ragcite", "brewing-better-coffee", "1.0") == before


@pytest.mark.slow
def test_a_re_push_removes_passages_the_site_no_longer_has(
    memory_site: Site, site_without_altitude: Path
) -> None:
    client = connect(":memory:")
    push(client, memory_site, name="book", version="1")
    edited = Site.load(site_without_altitude)
    result = push(client, edited, name="book", version="1")
    now = sorted(p["passage_id"] for p in read_passages(site_without_altitude))
    assert stored_ids(client, "ragcite", "book", "1") == now
    gone = {p["passage_id"] for p in memory_site.passages} - set(now)
    assert gone
    assert result.removed == len(gone)
    assert client.count("ragcite").count == len(now)
    # the altitude paragraph is no longer found
    site = QdrantSite.open(":memory:", client=client)
    hits = site.search("boiling point altitude", 10, mode="bm25")
    assert all("Water boils at 100" not in h.passage["text"] for h in hits)


@pytest.mark.slow
def test_versions_share_a_collection_and_keep_their_own_idf(
    memory_site: Site, site_without_altitude: Path
) -> None:
    client = connect(":memory:")
    push(client, memory_site, name="book", version="1")
    push(client, Site.load(site_without_altitude), name="book", version="2")
    assert pushed_sites(client, "ragcite") == [("book", "1"), ("book", "2")]
    v1 = QdrantSite.open(":memory:", client=client, site="book", version="1")
    for question in QUESTIONS[:30]:
        for mode in ("bm25", "hybrid"):
            expected = memory_site.search(question, 10, mode=mode)
            found = v1.search(question, 10, mode=mode)
            assert ids(found) == ids(expected), question
    with pytest.raises(RagciteError, match="several pushed site"):
        QdrantSite.open(":memory:", client=client, site="book")


# -- retrieval agreement ------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mode", "fusion"),
    [("bm25", "rrf"), ("dense", "rrf"), ("hybrid", "rrf"), ("hybrid", "linear")],
)
def test_qdrant_ranks_the_top_10_as_memory_does(
    memory_site: Site, qdrant_site: QdrantSite, mode: Any, fusion: Any
) -> None:
    same = 0
    for question in QUESTIONS:
        expected = memory_site.search(question, 10, mode=mode, fusion=fusion)
        found = qdrant_site.search(question, 10, mode=mode, fusion=fusion)
        same += ids(found) == ids(expected)
        for a, b in zip(expected, found, strict=False):
            if a.passage_id != b.passage_id:
                continue
            assert b.passage == a.passage
            assert b.row == a.row
            for field in ("score", "bm25", "dense"):
                x, y = getattr(a, field), getattr(b, field)
                assert (x is None) == (y is None)
                assert x is None or y == pytest.approx(x, rel=1e-5, abs=1e-6)
    assert same >= 0.99 * len(QUESTIONS)


@pytest.mark.slow
def test_filters_are_applied_in_qdrant(
    memory_site: Site, qdrant_site: QdrantSite
) -> None:
    for filters in (
        Filters(docnames=("water",)),
        Filters(docnames=("brewing/",)),
        Filters(docnames=("water/", "brewing/pour_over")),
        Filters(chapters=(2, 3)),
        Filters(docnames=("brewing",), chapters=(5,)),
    ):
        for question in QUESTIONS[:15]:
            expected = memory_site.search(question, 10, filters=filters)
            found = qdrant_site.search(question, 10, filters=filters)
            assert ids(found) == ids(expected), (filters, question)
    for nothing in (Filters(docnames=("nope",)), Filters(docnames=("water/",))):
        assert qdrant_site.search("water", 5, filters=nothing) == []


def test_the_site_answers_the_calls_the_engine_makes(
    memory_site: Site, qdrant_site: QdrantSite
) -> None:
    assert len(qdrant_site.passages) == len(memory_site.passages)
    assert qdrant_site.version == memory_site.version
    assert qdrant_site.manifest == memory_site.manifest
    assert qdrant_site.passages[7] == memory_site.passages[7]
    assert qdrant_site.vectors is not None
    assert memory_site.vectors is not None
    assert list(qdrant_site.vectors[7]) == pytest.approx(list(memory_site.vectors[7]))
    for term in ("water", "bloom", "never-a-term"):
        assert qdrant_site.idf(term) == pytest.approx(memory_site.idf(term))
    record = memory_site.passages[3]
    assert qdrant_site.passage(record["passage_id"]) == record
    assert qdrant_site.passage("ch999-sec0-p1") is None
    with pytest.raises(IndexError):
        qdrant_site.passages[len(memory_site.passages)]
    assert list(qdrant_site.passages) == memory_site.passages
    assert memory_site.sentences is not None
    assert qdrant_site.sentences is not None
    assert qdrant_site.sentences.of(9) == pytest.approx(memory_site.sentences.of(9))


# -- doors: CLI and server ----------------------------------------------------


def test_cli_search_through_qdrant_prints_the_same_hits(
    example_site: Path,
    qdrant_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    qdrant_dir = copy_of(qdrant_dir, tmp_path / "store")
    query = ["search", "how hot should the water be", "--site", str(example_site)]
    assert main([*query, "--json", "--k", "10"]) == 0
    memory = json.loads(capsys.readouterr().out)
    args = [*query, "--json", "--k", "10", "--qdrant", str(qdrant_dir)]
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out) == memory


@pytest.mark.slow
def test_clear_errors(
    example_site: Path,
    site_without_altitude: Path,
    qdrant_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    empty = tmp_path / "empty"
    qdrant_dir = copy_of(qdrant_dir, tmp_path / "store")
    search = ["search", "water", "--site", str(example_site)]
    assert main([*search, "--qdrant", str(empty)]) == 2
    assert "ragcite push" in capsys.readouterr().err
    afile = tmp_path / "file"
    afile.write_text("x")
    assert main([*search, "--qdrant", str(afile)]) == 2
    assert "not a folder" in capsys.readouterr().err
    # a build whose passages differ from the pushed ones (same name and version)
    rebuilt = ["search", "water", "--site", str(site_without_altitude)]
    assert main([*rebuilt, "--qdrant", str(qdrant_dir)]) == 2
    assert "rebuilt after it was pushed" in capsys.readouterr().err
    other = copy_of(qdrant_dir, tmp_path / "other")
    assert main([*search, "--qdrant", str(other), "--collection", "x"]) == 2
    assert "collection x" in capsys.readouterr().err


def test_a_local_folder_serves_one_process(
    qdrant_dir: Path, example_site: Path
) -> None:
    from sphinx_ragcite.server.run import serve

    settings = ServerSettings(build_dir=example_site, qdrant=str(qdrant_dir), workers=2)
    with pytest.raises(RagciteError, match="one process"):
        serve(settings)


# -- a store that cannot answer: refused at start, reported by health ----------

#: how each damage to the pushed collection is named in the refusal
DAMAGES = {
    "deleted": "has no collection ragcite",
    "16-dimensional": "16-dimensional",
    "points lost": "holds 124 of the 140 passages",
}


def _damage(folder: Path, damage: str) -> None:
    """Break the passages collection of a pushed store (its site record stays)."""
    from qdrant_client import models

    client = connect(str(folder))
    try:
        if damage == "points lost":
            chapter = models.FieldCondition(
                key="chapter_number", match=models.MatchValue(value=2)
            )
            client.delete("ragcite", models.Filter(must=[chapter]))
            return
        client.delete_collection("ragcite")
        if damage == "16-dimensional":
            client.create_collection(
                "ragcite",
                vectors_config={
                    "dense": models.VectorParams(size=16, distance=models.Distance.DOT)
                },
            )
    finally:
        client.close()


@pytest.mark.parametrize("damage", DAMAGES)
def test_serve_and_search_refuse_a_store_that_cannot_answer(
    damage: str,
    example_site: Path,
    qdrant_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = copy_of(qdrant_dir, tmp_path / "store")
    _damage(folder, damage)
    settings = ServerSettings(
        build_dir=example_site, generator="extractive", qdrant=str(folder)
    )
    with pytest.raises(RagciteError) as refused, TestClient(create_app(settings)):
        pass
    message = str(refused.value)
    assert DAMAGES[damage] in message
    assert f"ragcite push {example_site} --qdrant {folder}" in message
    search = ["search", "water", "--site", str(example_site)]
    assert main([*search, "--qdrant", str(folder)]) == 2
    err = capsys.readouterr().err
    assert DAMAGES[damage] in err
    assert "ragcite push" in err


@pytest.mark.slow
def test_health_reports_a_store_it_can_no_longer_read(
    example_site: Path,
    qdrant_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from sphinx_ragcite.server import state

    monkeypatch.setattr(state, "STORE_CHECK_SECONDS", 0.0)  # no cached look
    folder = copy_of(qdrant_dir, tmp_path / "store")
    settings = ServerSettings(
        build_dir=example_site, generator="extractive", qdrant=str(folder)
    )
    with TestClient(create_app(settings)) as client:
        health = client.get("/api/health")
        assert (health.status_code, health.json()["reason"]) == (200, None)
        site = client.app.state.ragcite.site
        site.client.delete_collection("ragcite")
        health = client.get("/api/health")
        assert health.status_code == 503
        body = health.json()
        assert (body["status"], body["index_loaded"]) == ("error", False)
        assert "has no collection ragcite" in body["reason"]
        assert f"ragcite push {example_site} --qdrant {folder}" in body["reason"]


# -- a folder that local mode cannot use: one message, exit 2 ------------------


@pytest.fixture
def read_only(tmp_path: Path):
    """Make a folder read-only (immutable for root, whom modes do not stop)."""
    import os
    import stat
    import subprocess

    made: list[Path] = []

    def make(folder: Path, probe: str = ".lock") -> Path:
        paths = [folder, *folder.rglob("*")]
        for path in paths:
            path.chmod(
                path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
            )
        if os.geteuid() == 0:
            done = subprocess.run(["chattr", "+i", *map(str, paths)], check=False)
            if done.returncode:
                pytest.skip("root, and chattr cannot make the folder immutable")
        made.extend(paths)
        try:
            (folder / probe).open("r+").close()
        except PermissionError:
            return folder
        pytest.skip("cannot make a read-only folder here")

    yield make
    if made and os.geteuid() == 0:
        subprocess.run(["chattr", "-i", *map(str, made)], check=False)
    for path in made:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)


UNUSABLE = ["unwritable", "read-only copy", "corrupt meta.json", "corrupt sqlite"]


@pytest.mark.parametrize("command", ["push", "search", "serve"])
@pytest.mark.parametrize("kind", UNUSABLE)
def test_a_folder_qdrant_cannot_use_is_one_message(
    kind: str,
    command: str,
    example_site: Path,
    qdrant_dir: Path,
    tmp_path: Path,
    read_only: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import sys

    if kind == "unwritable":
        if not sys.platform.startswith("linux"):
            pytest.skip("needs /sys, where nobody may create a folder")
        folder = Path("/sys/ragcite-store")
    else:
        folder = copy_of(qdrant_dir, tmp_path / "store")
    if kind == "read-only copy":
        read_only(folder)
    elif kind == "corrupt meta.json":
        (folder / "meta.json").write_text('{"collections": {', "utf-8")
    elif kind == "corrupt sqlite":
        storage = folder / "collection" / "ragcite" / "storage.sqlite"
        storage.write_bytes(b"not a database " * 512)
    args = {
        "push": ["push", str(example_site)],
        "search": ["search", "water", "--site", str(example_site)],
        "serve": ["serve", str(example_site), "--port", "0"],
    }[command]
    assert main([*args, "--qdrant", str(folder)]) == 2
    err = capsys.readouterr().err
    # search and serve find no store where push cannot make one
    missing = kind == "unwritable" and command != "push"
    opening = "no Qdrant local-mode store" if missing else "cannot open Qdrant"
    assert err.startswith(f"ragcite: error: {opening} at {folder}"), err
    assert err.count("\n") == 1, err


def test_pushing_into_read_only_storage_is_one_message(
    example_site: Path,
    qdrant_dir: Path,
    tmp_path: Path,
    read_only: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The folder opens (its lock is writable) but the passages cannot be stored."""
    folder = copy_of(qdrant_dir, tmp_path / "store")
    read_only(folder / "collection" / "ragcite", probe="storage.sqlite")
    assert main(["push", str(example_site), "--qdrant", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ragcite: error: Qdrant could not store passages")
    assert err.count("\n") == 1, err


@pytest.mark.parametrize(
    "location", ["localhost:6333", "qdrant.internal:6333", "ftp://x", "grpc://q:6334"]
)
def test_a_host_or_another_scheme_is_not_taken_for_a_folder(
    location: str,
    example_site: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["push", str(example_site), "--qdrant", location]) == 2
    err = capsys.readouterr().err
    assert f"--qdrant {location}" in err
    assert "http://" in err
    assert "./" in err  # how to write a folder
    search = ["search", "water", "--site", str(example_site), "--qdrant", location]
    assert main(search) == 2
    assert list(tmp_path.iterdir()) == []
    # written as a path, the same name is a folder
    connect(f"./{location.split('/')[-1]}", create=True).close()
    assert len(list(tmp_path.iterdir())) == 1


def _without_timings(answer: dict[str, Any]) -> dict[str, Any]:
    answer = json.loads(json.dumps(answer))
    for key in TIMINGS:
        answer["metadata"].pop(key, None)
    return answer


REQUESTS: list[dict[str, Any]] = [
    *({"question": q} for q in QUESTIONS[::6]),
    {"question": "Who won the 1998 football world cup?"},
    {"question": "What water temperature?", "filters": {"docnames": ["water"]}},
    {
        "question": "What does this mean?",
        "mode": "selection",
        "selection": "Preheating the brewer and the cup with hot water reduces "
        "that loss.",
    },
]


@pytest.mark.slow
def test_serve_qdrant_answers_exactly_as_in_memory(
    example_site: Path,
    qdrant_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RAGCITE_CITATION_DATE", "2026-01-15")
    qdrant_dir = copy_of(qdrant_dir, tmp_path / "store")
    memory = ServerSettings(build_dir=example_site, generator="extractive")
    remote = memory.model_copy(update={"qdrant": str(qdrant_dir)})
    with (
        TestClient(create_app(memory)) as a,
        TestClient(create_app(remote)) as b,
    ):
        assert b.app.state.ragcite.site.__class__ is QdrantSite
        for body in REQUESTS:
            x, y = a.post("/api/ask", json=body), b.post("/api/ask", json=body)
            assert (x.status_code, y.status_code) == (200, 200)
            assert _without_timings(y.json()) == _without_timings(x.json()), body
        stream = b.post("/api/ask/stream", json=REQUESTS[0]).text
        final = sse_events(stream)[-1][1]
        expected = a.post("/api/ask", json=REQUESTS[0]).json()
        assert _without_timings(final) == _without_timings(expected)
        for path in (
            "/api/search?q=descaling&k=5",
            "/api/passages/ch2-sec1-p1",
            "/api/passages/ch999-sec0-p1",
        ):
            x, y = a.get(path), b.get(path)
            assert (y.status_code, y.json()) == (x.status_code, x.json()), path
        health = b.get("/api/health").json()
        assert health["passages"] == a.get("/api/health").json()["passages"]
