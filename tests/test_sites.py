"""Several sites in one server: scopes, versions, fusion, URLs, the real server.

Two versions of the example book (``example_site`` and ``example_site_v2``,
version 2.0 with the bloom paragraph edited) are served together; a question
scoped to one version must cite that version only, with links into it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from sphinx_ragcite.cli.commands import main
from sphinx_ragcite.contracts import Answer
from sphinx_ragcite.errors import RagciteError
from sphinx_ragcite.retrieval.site import Site
from sphinx_ragcite.server.app import create_app
from sphinx_ragcite.server.settings import ServerSettings
from sphinx_ragcite.server.sites import (
    ScopeError,
    ServedSite,
    Sites,
    parse_site_spec,
)

from helpers.builds import BLOOM_V1, BLOOM_V2
from helpers.repo import EXAMPLE_BOOK
from helpers.servers import ragcite_serve, run_async, sse_events

QUESTION = "How long is the bloom?"


def questions(limit: int) -> list[str]:
    lines = (EXAMPLE_BOOK / "qa.jsonl").read_text("utf-8").splitlines()
    return [json.loads(line)["question"] for line in lines[:limit]]


@pytest.fixture(scope="module")
def sites(example_site: Path, example_site_v2: Path) -> Sites:
    return Sites.load([("v1", example_site), ("v2", example_site_v2)])


@pytest.fixture(scope="module")
def sites_client(example_site: Path, example_site_v2: Path):
    settings = ServerSettings(
        sites=(("v1", example_site), ("v2", example_site_v2)), rate_limit=0
    )
    with TestClient(create_app(settings)) as client:
        yield client


def texts_of(sites: Sites) -> dict[tuple[str, str], str]:
    return {
        (m.name, p["passage_id"]): p["text"] for m in sites for p in m.site.passages
    }


def check_citations(answer: dict, texts: dict[tuple[str, str], str]) -> None:
    """Every citation names a retrieved (site, ID), links into its site, and
    quotes that site's text."""
    meta = answer["metadata"]
    retrieved = set(zip(meta["retrieved_sites"], meta["retrieved"], strict=True))
    for citation in answer["citations"]:
        key = (citation["site"], citation["passage_id"])
        assert key in retrieved
        assert citation["url"].startswith(f"{citation['site']}/")
        assert citation["url"].endswith(f"#{citation['passage_id']}")
        assert citation["version"] == {"v1": "1.0", "v2": "2.0"}[citation["site"]]
        for start, end in citation["quote_spans"]:
            assert texts[key][start:end] in citation["quote"]


# -- the registry ------------------------------------------------------------


def test_site_specs_and_names() -> None:
    assert parse_site_spec("v1.2=build/html") == ("v1.2", Path("build/html"))
    for bad in ("v1", "=dir", "v1=", "../x=dir", "api=dir", "MCP=dir", "a b=dir"):
        with pytest.raises(RagciteError):
            parse_site_spec(bad)


def test_settings_take_one_layout(example_site: Path) -> None:
    with pytest.raises(ValidationError, match="not both"):
        ServerSettings(build_dir=example_site, sites=(("v1", example_site),))
    with pytest.raises(ValidationError, match="BUILD_DIR"):
        ServerSettings()
    with pytest.raises(ValidationError, match="given twice"):
        ServerSettings(sites=(("v1", example_site), ("v1", example_site)))
    with pytest.raises(ValidationError, match="taken"):
        ServerSettings(sites=(("api", example_site),))
    single = ServerSettings(build_dir=example_site)
    assert single.site_specs() == (("", example_site),)


def test_cli_rejects_a_bad_site_spec(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--site", "nodir"]) == 2
    assert "NAME=BUILD_DIR" in capsys.readouterr().err
    assert main(["serve", "--site", "v1=/no/such/dir"]) == 2
    assert "is not a folder" in capsys.readouterr().err
    assert main(["serve"]) == 2
    assert capsys.readouterr().err.endswith(
        "invalid server options: give BUILD_DIR or --site NAME=BUILD_DIR\n"
    )


def test_scopes_resolve_by_name_and_version(sites: Sites) -> None:
    assert sites.several
    assert [m.name for m in sites.resolve()] == ["v1", "v2"]
    assert [m.name for m in sites.resolve("*")] == ["v1", "v2"]
    assert [m.name for m in sites.resolve("v2")] == ["v2"]
    assert [m.name for m in sites.resolve(version="2.0")] == ["v2"]
    assert [m.name for m in sites.resolve(version="2.0.1")] == ["v2"]  # release
    assert [m.name for m in sites.resolve("v1", "1.0")] == ["v1"]
    with pytest.raises(ScopeError, match="sites: v1, v2") as unknown:
        sites.resolve("v3")
    assert unknown.value.field == "site"
    with pytest.raises(ScopeError, match=r"v1 \(1.0\), v2 \(2.0\)") as wrong:
        sites.resolve(version="3.0")
    assert wrong.value.field == "version"
    with pytest.raises(ScopeError):
        sites.resolve("v1", "2.0")


def test_sites_share_one_encoder(sites: Sites) -> None:
    first, second = (m.site for m in sites)
    assert first.embedder is second.embedder


def test_a_union_of_one_site_searches_as_that_site(sites: Sites) -> None:
    v2 = sites["v2"]
    union = sites.union([v2])
    mine = union.search("descaling the kettle", 8)
    theirs = v2.site.search("descaling the kettle", 8)
    assert [(h.row, h.score) for h in mine] == [(h.row, h.score) for h in theirs]
    assert all(h.passage["url"].startswith("v2/") for h in mine)
    assert mine[0].passage["site"] == "v2"
    assert union.version == sites.union([v2]).version


def test_a_union_of_two_fuses_their_rankings(sites: Sites) -> None:
    union = sites.union(list(sites))
    assert len(union.passages) == sum(len(m.site.passages) for m in sites)
    hits = union.search(QUESTION, 10)
    assert len(hits) == 10
    names = {h.passage["site"] for h in hits}
    assert names == {"v1", "v2"}  # both versions hold the bloom passage
    for hit in hits:  # rows are the union's: they give back the same record
        assert union.passages[hit.row] == hit.passage
        member, row = union.locate(hit.row)
        assert member.site.passages[row]["passage_id"] == hit.passage_id
    assert union.vectors is not None
    member, row = union.locate(hits[0].row)
    assert (union.vectors[hits[0].row] == member.site.vectors[row]).all()
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert [h.passage_id for h in union.search(QUESTION, 4, mode="bm25")]
    with pytest.raises(IndexError):
        union.locate(len(union.passages))
    # the build's sentence vectors, from the member that holds the row
    assert union.sentences is not None
    assert member.site.sentences is not None
    assert (union.sentences.of(hits[0].row) == member.site.sentences.of(row)).all()


def test_sites_of_different_models_are_not_asked_together(
    sites: Sites, example_site: Path
) -> None:
    other = Site.load(example_site)
    assert other.manifest.embedding is not None
    other.manifest = other.manifest.model_copy(
        update={
            "embedding": other.manifest.embedding.model_copy(
                update={"model": "another-model"}
            )
        }
    )
    mixed = Sites([sites["v1"], ServedSite("other", other)])
    with pytest.raises(ScopeError, match="different models"):
        mixed.union(list(mixed))


# -- the API -------------------------------------------------------------------


def test_health_lists_the_sites(sites_client: TestClient) -> None:
    body = sites_client.get("/api/health").json()
    assert [(s["name"], s["version"], s["url"]) for s in body["sites"]] == [
        ("v1", "1.0", "v1/"),
        ("v2", "2.0", "v2/"),
    ]
    assert body["sites"][1]["release"] == "2.0.1"
    assert body["passages"] == sum(s["passages"] for s in body["sites"])


@pytest.mark.parametrize(
    ("scope", "name", "says"),
    [
        ({"site": "v1"}, "v1", BLOOM_V1),
        ({"site": "v2"}, "v2", BLOOM_V2),
        ({"version": "2.0"}, "v2", BLOOM_V2),
        ({"version": "1.0"}, "v1", BLOOM_V1),
    ],
)
def test_a_version_scoped_answer_cites_that_version(
    sites_client: TestClient, sites: Sites, scope: dict, name: str, says: str
) -> None:
    response = sites_client.post("/api/ask", json={"question": QUESTION, **scope})
    assert response.status_code == 200, response.text
    answer = response.json()
    Answer.model_validate(answer)
    assert answer["site"] == name
    assert answer["version"] == scope.get("version", {"v1": "1.0", "v2": "2.0"}[name])
    assert says in answer["answer"]
    assert answer["citations"]
    assert {c["site"] for c in answer["citations"]} == {name}
    assert set(answer["metadata"]["retrieved_sites"]) == {name}
    check_citations(answer, texts_of(sites))
    assert says in answer["citations"][0]["quote"]


def test_no_scoped_question_cites_another_version(
    sites_client: TestClient, sites: Sites
) -> None:
    """The target: across the QA set, a version-scoped answer (and its
    see-also list when it abstains) never names the other version."""
    texts = texts_of(sites)
    cited = 0
    for question in questions(24):
        for name in ("v1", "v2"):
            for scope in (
                {"site": name},
                {"version": {"v1": "1.0", "v2": "2.0"}[name]},
            ):
                answer = sites_client.post(
                    "/api/ask", json={"question": question, **scope}
                ).json()
                assert answer["site"] == name
                assert set(answer["metadata"]["retrieved_sites"]) == {name}
                assert {c["site"] for c in answer["citations"]} <= {name}
                assert all(
                    s["site"] == name and s["url"].startswith(f"{name}/")
                    for s in answer["metadata"].get("see_also", [])
                )
                check_citations(answer, texts)
                cited += len(answer["citations"])
    assert cited > 40


def test_asked_across_versions_citations_say_which(
    sites_client: TestClient, sites: Sites
) -> None:
    for body in ({"question": QUESTION}, {"question": QUESTION, "site": "*"}):
        answer = sites_client.post("/api/ask", json=body).json()
        assert "site" not in answer  # asked across sites
        assert "version" not in answer  # of different versions
        assert set(answer["metadata"]["retrieved_sites"]) == {"v1", "v2"}
        check_citations(answer, texts_of(sites))


def test_the_stream_is_scoped_too(sites_client: TestClient) -> None:
    with sites_client.stream(
        "POST", "/api/ask/stream", json={"question": QUESTION, "site": "v2"}
    ) as response:
        events = sse_events(response.read().decode())
    first, final = events[0][1], events[-1][1]
    assert set(first["retrieved_sites"]) == {"v2"}
    assert final["site"] == "v2"
    assert BLOOM_V2 in final["answer"]


def test_the_cache_keeps_scopes_apart(sites_client: TestClient) -> None:
    one = sites_client.post(
        "/api/ask", json={"question": QUESTION, "site": "v1"}
    ).json()
    two = sites_client.post(
        "/api/ask", json={"question": QUESTION, "site": "v2"}
    ).json()
    again = sites_client.post(
        "/api/ask", json={"question": QUESTION, "site": "v1"}
    ).json()
    assert BLOOM_V1 in one["answer"]
    assert BLOOM_V2 in two["answer"]
    assert again == one


def test_search_and_passages_take_a_scope(sites_client: TestClient) -> None:
    hits = sites_client.get(
        "/api/search", params={"q": "bloom", "k": 5, "site": "v2"}
    ).json()["hits"]
    assert {h["site"] for h in hits} == {"v2"}
    assert all(h["url"].startswith("v2/") for h in hits)
    both = sites_client.get("/api/search", params={"q": "bloom", "k": 10}).json()[
        "hits"
    ]
    assert {h["site"] for h in both} == {"v1", "v2"}

    pid = hits[0]["passage_id"]
    ambiguous = sites_client.get(f"/api/passages/{pid}")
    assert ambiguous.status_code == 400
    assert ambiguous.json()["error"]["field"] == "site"
    record = sites_client.get(f"/api/passages/{pid}", params={"site": "v2"}).json()
    assert (record["site"], record["version"]) == ("v2", "2.0")
    assert record["url"] == hits[0]["url"]
    by_version = sites_client.get(f"/api/passages/{pid}", params={"version": "1.0"})
    assert by_version.json()["site"] == "v1"
    assert sites_client.get("/api/passages/ch99-sec0-p1").status_code == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"site": "v3"}, "site"),
        ({"version": "9.9"}, "version"),
        ({"site": "v1", "version": "2.0"}, "version"),
        ({"site": "x" * 101}, "site"),
        ({"site": 3}, "site"),
    ],
)
def test_a_bad_scope_is_a_400_that_says_why(
    sites_client: TestClient, body: dict, field: str
) -> None:
    response = sites_client.post("/api/ask", json={"question": QUESTION, **body})
    assert response.status_code == 400
    error = response.json()["error"]
    assert field in (error["field"] or "")
    stream = sites_client.post("/api/ask/stream", json={"question": QUESTION, **body})
    assert stream.status_code == 400
    search = sites_client.get("/api/search", params={"q": "bloom", **body})
    assert search.status_code == 400


def test_each_site_is_served_under_its_name(sites_client: TestClient) -> None:
    listing = sites_client.get("/")
    assert listing.status_code == 200
    assert '<a href="v1/">v1</a>' in listing.text
    assert "default-src 'self'" in listing.headers["content-security-policy"]
    page = sites_client.get("/v2/brewing/pour_over.html")
    assert page.status_code == 200
    assert BLOOM_V2 in page.text
    assert BLOOM_V1 in sites_client.get("/v1/brewing/pour_over.html").text
    assert sites_client.get("/v1/.buildinfo").status_code == 404
    assert sites_client.get("/v1/../v2/index.html").status_code in (200, 404)
    assert sites_client.get("/brewing/pour_over.html").status_code == 404
    moved = sites_client.get("/v2", follow_redirects=False)
    assert moved.headers["location"].endswith("/v2/")


def test_one_site_keeps_its_json(example_site: Path) -> None:
    """Served alone at /, nothing changes: no site or version anywhere."""
    settings = ServerSettings(build_dir=example_site, rate_limit=0)
    with TestClient(create_app(settings)) as client:
        assert client.get("/api/health").json()["sites"] is None
        answer = client.post("/api/ask", json={"question": QUESTION}).json()
        assert "site" not in answer
        assert "version" not in answer
        assert "retrieved_sites" not in answer["metadata"]
        assert all("site" not in c for c in answer["citations"])
        assert not answer["citations"][0]["url"].startswith("v1/")
        same = client.post(
            "/api/ask", json={"question": QUESTION, "version": "1.0"}
        ).json()
        assert same == answer
        one = client.post("/api/ask", json={"question": QUESTION, "site": "v1"})
        assert one.status_code == 400
        assert "serves one site" in one.json()["error"]["message"]


def mcp_over(client: TestClient, calls: list[tuple[str, Any]]) -> list[Any]:
    """Tool calls (name, arguments) and resource reads (uri, None) with the
    SDK's client, in-process, over the state *client*'s app serves."""
    from mcp import Client

    from sphinx_ragcite.server.mcp import build_server

    async def run() -> list[Any]:
        server = build_server(lambda: client.app.state.ragcite)
        async with Client(server) as session:
            return [
                await session.read_resource(name)
                if arguments is None
                else await session.call_tool(name, arguments)
                for name, arguments in calls
            ]

    return run_async(run())


def resolves(client: TestClient, url: str) -> None:
    """*url* (page#ID) is a page of this server holding that anchor."""
    page, _, anchor = url.partition("#")
    response = client.get(f"/{page}")
    assert response.status_code == 200, url
    assert f'id="{anchor}"' in response.text, url


def test_every_mcp_url_resolves_on_its_server(sites_client: TestClient) -> None:
    """Issue 24.3: get_passage, cite and the toc name the site, like search."""
    pid = "ch1-sec1-p1"
    got, cited, exported, toc, ambiguous, listed = mcp_over(
        sites_client,
        [
            ("get_passage", {"passage_id": pid, "site": "v2"}),
            ("cite", {"passage_ids": [pid], "site": "v2", "style": "apa"}),
            ("cite", {"passage_ids": [pid], "version": "1.0", "export": "csl-json"}),
            ("ragcite://toc", None),
            ("get_passage", {"passage_id": pid}),
            ("search", {"query": "bloom", "k": 3, "site": "v2"}),
        ],
    )
    record = got.structured_content
    assert not got.is_error, got.content
    assert (record["site"], record["version"]) == ("v2", "2.0")
    assert record["url"].startswith("v2/")
    assert (
        record == sites_client.get(f"/api/passages/{pid}", params={"site": "v2"}).json()
    )
    resolves(sites_client, record["url"])
    hit = listed.structured_content["hits"][0]
    resolves(sites_client, hit["url"])

    assert not cited.is_error, cited.content
    text = cited.structured_content["text"]
    assert f"{record['url']}" in text, text
    (item,) = json.loads(exported.structured_content["text"])
    assert item["URL"].startswith("v1/")
    resolves(sites_client, item["URL"])

    tocs = json.loads(toc.contents[0].text)["sites"]
    assert [t["site"] for t in tocs] == ["v1", "v2"]
    for listing in tocs:
        chapter = listing["chapters"][1]
        assert chapter["url"].startswith(f"{listing['site']}/")
        assert sites_client.get(f"/{chapter['url']}").status_code == 200
        first = chapter["sections"][0]["passages"][0]
        resolves(sites_client, first["url"])

    assert ambiguous.is_error
    assert "pass site" in ambiguous.content[0].text


# -- the real server -------------------------------------------------------------


async def mcp_scoped(url: str) -> None:
    """The MCP door takes the same scope: ``ask`` and ``search`` by site/version."""
    from helpers.mcp import http_session

    async with http_session(url) as session:
        result = await session.call_tool(
            "ask", {"question": QUESTION, "site": "latest"}
        )
        answer = result.structured_content
        assert not result.is_error, result.content
        assert answer is not None
        assert answer["site"] == "latest"
        assert BLOOM_V2 in answer["answer"]
        assert {c["site"] for c in answer["citations"]} == {"latest"}
        found = await session.call_tool(
            "search", {"query": "bloom", "k": 4, "version": "1.0"}
        )
        hits = (found.structured_content or {})["hits"]
        assert {h["site"] for h in hits} == {"v1"}
        wrong = await session.call_tool("ask", {"question": QUESTION, "site": "v9"})
        assert wrong.is_error
        assert "No site 'v9'" in wrong.content[0].text


@pytest.mark.slow
def test_ragcite_serve_two_versions(
    example_site: Path, example_site_v2: Path, tmp_path: Path
) -> None:
    """Done when: two versions served together by ``ragcite serve`` answer
    version-scoped questions with citations into the right version."""
    log = tmp_path / "server.log"
    with ragcite_serve(
        *("--site", f"v1={example_site}", "--site", f"latest={example_site_v2}"),
        *("--rate-limit", "0"),
        log=log,
    ) as (url, _):
        for name, version, says in (
            ("v1", "1.0", BLOOM_V1),
            ("latest", "2.0", BLOOM_V2),
        ):
            for scope in ({"site": name}, {"version": version}):
                answer = httpx.post(
                    f"{url}/api/ask", json={"question": QUESTION, **scope}, timeout=60
                ).json()
                assert answer["site"] == name
                assert says in answer["answer"]
                citation = answer["citations"][0]
                assert (citation["site"], citation["version"]) == (name, version)
                assert says in citation["quote"]
                page = httpx.get(f"{url}/{citation['url'].partition('#')[0]}")
                assert page.status_code == 200
                assert f'id="{citation["passage_id"]}"' in page.text
                assert says in page.text
        run_async(mcp_scoped(f"{url}/mcp"))
        text = log.read_text("utf-8")
        assert "/v1/ (" in text
        assert "/latest/ (" in text
        assert "version 2.0" in text


@pytest.mark.slow
def test_two_versions_served_from_qdrant(
    example_site: Path, example_site_v2: Path, tmp_path: Path
) -> None:
    """Sites read from Qdrant slot in: both versions pushed to one store, one
    client for both, and scoped answers still cite their own version."""
    pytest.importorskip("qdrant_client")
    from sphinx_ragcite.retrieval.qdrant import QdrantSite

    store = tmp_path / "store"
    for folder in (example_site, example_site_v2):
        assert main(["push", str(folder), "--qdrant", str(store)]) == 0
    settings = ServerSettings(
        sites=(("v1", example_site), ("v2", example_site_v2)),
        qdrant=str(store),
        rate_limit=0,
    )
    with TestClient(create_app(settings)) as client:
        sites = client.app.state.ragcite.sites
        assert all(isinstance(m.site, QdrantSite) for m in sites)
        for name, says in (("v1", BLOOM_V1), ("v2", BLOOM_V2)):
            answer = client.post(
                "/api/ask", json={"question": QUESTION, "site": name}
            ).json()
            assert answer["site"] == name
            assert says in answer["answer"]
            assert {c["site"] for c in answer["citations"]} == {name}
        across = client.post("/api/ask", json={"question": QUESTION}).json()
        assert set(across["metadata"]["retrieved_sites"]) == {"v1", "v2"}


@pytest.mark.parametrize("mode", ["bm25", "dense", "hybrid"])
def test_a_union_honours_the_fusion_asked(example_site: Path, mode: str) -> None:
    """A site asked twice over (two names, one index) ranks as itself under
    linear fusion: each row comes twice with the same normalised score (twice
    the depth keeps the same candidates). The union used to re-fuse with RRF
    whatever the caller asked."""
    site = Site.load(example_site)
    union = Sites([ServedSite("a", site), ServedSite("b", site)]).union(
        [ServedSite("a", site), ServedSite("b", site)]
    )
    for question in questions(30):
        alone = site.search(question, 8, mode=mode, fusion="linear")
        twice = union.search(question, 16, mode=mode, fusion="linear", depth=100)
        rows = [union.locate(h.row)[1] for h in twice]
        assert rows[::2] == rows[1::2] == [h.row for h in alone], question
        assert [h.score for h in twice[::2]] == [h.score for h in alone]


@pytest.mark.slow
def test_one_site_of_several_answers_as_it_does_alone(
    example_site: Path, sites_client: TestClient
) -> None:
    """Every question of the example book's QA set gets the same answer and
    citations from the book served alone as from the book scoped by ``site``
    among several (its links under its folder)."""
    settings = ServerSettings(build_dir=example_site, rate_limit=0)
    with TestClient(create_app(settings)) as alone:
        for question in questions(1000):
            mine = alone.post("/api/ask", json={"question": question}).json()
            scoped = sites_client.post(
                "/api/ask", json={"question": question, "site": "v1"}
            ).json()
            assert scoped["answer"] == mine["answer"], question
            assert scoped["confidence"] == mine["confidence"], question
            assert [
                (c["passage_id"], c["quote"], c.get("url")) for c in scoped["citations"]
            ] == [
                (c["passage_id"], c["quote"], c["url"] and f"v1/{c['url']}")
                for c in mine["citations"]
            ], question
