"""Site -> Qdrant -> hits and answers: push, re-push, agreement, serve --qdrant.

Everything runs against qdrant-client's local mode (a folder or ``:memory:``),
the same client API a Qdrant server answers; nothing touches the network.
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
from sphinx_ragcite.retrieval.site import Filters, Site
from sphinx_ragcite.server.app import create_app
from sphinx_ragcite.server.settings import ServerSettings

from conftest import EXAMPLE_BOOK, read_passages, sphinx_build

QUESTIONS = [q.question for q in load_qa(EXAMPLE_BOOK / "qa.jsonl")]
#: answer-JSON fields that are measured, not computed
TIMINGS = {"retrieval_ms", "generation_ms", "verification_ms"}


@pytest.fixture(scope="module")
def memory_site(example_site: Path) -> Site:
    return Site.load(example_site)


@pytest.fixture(scope="module")
def qdrant_dir(example_site: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example book pushed to a local-mode folder (then closed)."""
    folder = tmp_path_factory.mktemp("qdrant") / "store"
    assert main(["push", str(example_site), "--qdrant", str(folder)]) == 0
    return folder


def copy_of(folder: Path, dest: Path) -> Path:
    """Local mode locks its folder for one client: each door opens a copy."""
    shutil.copytree(folder, dest)
    return dest


@pytest.fixture(scope="module")
def qdrant_site(  # type: ignore[no-untyped-def]
    qdrant_dir: Path, example_site: Path, tmp_path_factory: pytest.TempPathFactory
):
    folder = copy_of(qdrant_dir, tmp_path_factory.mktemp("qdrant_site") / "store")
    site = QdrantSite.for_build(str(folder), example_site)
    yield site
    site.client.close()


@pytest.fixture(scope="module")
def edited_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
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
    from sphinx_ragcite.retrieval.qdrant import _site_filter

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


def test_a_second_push_changes_nothing(memory_site: Site) -> None:
    client = connect(":memory:")
    push(client, memory_site)
    before = stored_ids(client, "ragcite", "brewing-better-coffee", "1.0")
    again = push(client, memory_site)
    assert again.removed == 0
    assert client.count("ragcite").count == len(memory_site.passages)
    assert stored_ids(client, "ragcite", "brewing-better-coffee", "1.0") == before


def test_a_re_push_removes_passages_the_site_no_longer_has(
    memory_site: Site, edited_site: Path
) -> None:
    client = connect(":memory:")
    push(client, memory_site, name="book", version="1")
    edited = Site.load(edited_site)
    result = push(client, edited, name="book", version="1")
    now = sorted(p["passage_id"] for p in read_passages(edited_site))
    assert stored_ids(client, "ragcite", "book", "1") == now
    gone = {p["passage_id"] for p in memory_site.passages} - set(now)
    assert gone
    assert result.removed == len(gone)
    assert client.count("ragcite").count == len(now)
    # the altitude paragraph is no longer found
    site = QdrantSite.open(":memory:", client=client)
    hits = site.search("boiling point altitude", 10, mode="bm25")
    assert all("Water boils at 100" not in h.passage["text"] for h in hits)


def test_versions_share_a_collection_and_keep_their_own_idf(
    memory_site: Site, edited_site: Path
) -> None:
    client = connect(":memory:")
    push(client, memory_site, name="book", version="1")
    push(client, Site.load(edited_site), name="book", version="2")
    assert pushed_sites(client, "ragcite") == [("book", "1"), ("book", "2")]
    v1 = QdrantSite.open(":memory:", client=client, site="book", version="1")
    for question in QUESTIONS[:30]:
        for mode in ("bm25", "hybrid"):
            expected = memory_site.search(question, 10, mode=mode)
            found = v1.search(question, 10, mode=mode)  # type: ignore[arg-type]
            assert ids(found) == ids(expected), question
    with pytest.raises(RagciteError, match="several pushed site"):
        QdrantSite.open(":memory:", client=client, site="book")


# -- retrieval agreement ------------------------------------------------------


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


def test_clear_errors(
    example_site: Path,
    edited_site: Path,
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
    rebuilt = ["search", "water", "--site", str(edited_site)]
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
        assert b.app.state.ragcite.site.__class__ is QdrantSite  # type: ignore[attr-defined]
        for body in REQUESTS:
            x, y = a.post("/api/ask", json=body), b.post("/api/ask", json=body)
            assert (x.status_code, y.status_code) == (200, 200)
            assert _without_timings(y.json()) == _without_timings(x.json()), body
        stream = b.post("/api/ask/stream", json=REQUESTS[0]).text
        final = json.loads(stream.strip().split("\n\n")[-1].split("data: ", 1)[1])
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


# -- the server's own tests, against a server answering from Qdrant ------------

from test_server import (  # noqa: E402, F401  collected here with the client below
    test_a_selection_is_trimmed_before_its_length_check,
    test_ask_returns_the_answer_contract,
    test_booleans_are_not_numbers,
    test_cache_returns_the_same_answer,
    test_health,
    test_invalid_requests_are_400_with_the_field,
    test_lone_surrogates_are_a_400_not_a_crash,
    test_malformed_bodies,
    test_question_length_bounds_are_accepted,
    test_search_and_passages,
    test_search_validation,
    test_the_cache_does_not_mix_up_styles,
)


@pytest.fixture(scope="module")
def client(  # type: ignore[no-untyped-def]
    example_site: Path, qdrant_dir: Path, tmp_path_factory: pytest.TempPathFactory
):
    folder = copy_of(qdrant_dir, tmp_path_factory.mktemp("served") / "store")
    settings = ServerSettings(
        build_dir=example_site, generator="extractive", qdrant=str(folder)
    )
    with TestClient(create_app(settings)) as client:
        assert isinstance(client.app.state.ragcite.site, QdrantSite)  # type: ignore[attr-defined]
        yield client
