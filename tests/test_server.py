"""Answer -> HTTP: every endpoint, validation bounds, streaming, back-pressure."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from sphinx_ragcite.contracts import Answer
from sphinx_ragcite.server.app import create_app
from sphinx_ragcite.server.settings import ServerSettings

from helpers.llm import ScriptedLLM
from helpers.servers import (
    free_port,
    leave_after_first_token,
    ragcite_serve,
    sse_events,
    wait_until,
)

#: The server's tests that also run against a server answering from Qdrant
#: (local mode): the ``client`` fixture (conftest) with its passages in Qdrant.
memory_and_qdrant = pytest.mark.parametrize(
    "client", ["memory", "qdrant"], indirect=True
)


def slow(delay: float = 0.05, pieces: int = 40) -> ScriptedLLM:
    """A model that takes its time, so requests pile up behind it."""
    return ScriptedLLM(
        *["Channeling is uneven flow through the puck. "] * pieces, delay=delay
    )


@memory_and_qdrant
def test_health(client: TestClient) -> None:
    body = client.get("/api/health").json()
    assert body["status"] == "ok"
    # the widget takes no other service's {"status": "ok"} for an answer server
    assert body["service"] == "ragcite"
    assert body["index_loaded"] is True
    assert body["passages"] > 100
    assert body["model_loaded"] is False
    assert body["queue_depth"] == 0


@memory_and_qdrant
def test_ask_returns_the_answer_contract(client: TestClient) -> None:
    response = client.post("/api/ask", json={"question": "How long is the bloom?"})
    assert response.status_code == 200
    answer = Answer.model_validate(response.json())
    assert answer.grounded
    assert answer.citations[0].url.endswith("#" + answer.citations[0].passage_id)
    assert response.headers["x-content-type-options"] == "nosniff"
    assert "default-src 'none'" in response.headers["content-security-policy"]


@memory_and_qdrant
def test_search_and_passages(client: TestClient) -> None:
    hits = client.get("/api/search", params={"q": "descaling", "k": 3}).json()["hits"]
    assert len(hits) == 3
    first = client.get(f"/api/passages/{hits[0]['passage_id']}")
    assert first.status_code == 200
    assert first.json()["text"]
    missing = client.get("/api/passages/ch999-sec0-p1")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "not_found"


@memory_and_qdrant
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"question": ""}, "question"),
        ({"question": "   "}, "question"),
        ({"question": "x" * 2001}, "question"),
        ({"question": 42}, "question"),
        ({"question": None}, "question"),
        ({}, "question"),
        ({"question": "ok", "k": 0}, "k"),
        ({"question": "ok", "k": 21}, "k"),
        ({"question": "ok", "k": "five"}, "k"),
        ({"question": "ok", "mode": "chapter"}, "mode"),
        ({"question": "ok", "mode": "selection"}, "selection"),
        ({"question": "ok", "selection": "s" * 20_001}, "selection"),
        ({"question": "ok", "style": "mla"}, "style"),
        ({"question": "ok", "unexpected": True}, "unexpected"),
        ({"question": "ok", "filters": {"chapters": ["x"]}}, "filters.chapters.0"),
    ],
)
def test_invalid_requests_are_400_with_the_field(
    client: TestClient, body: dict, field: str
) -> None:
    for path in ("/api/ask", "/api/ask/stream"):
        response = client.post(path, json=body)
        assert response.status_code == 400, (path, response.text)
        error = response.json()["error"]
        assert error["field"] == field
        assert error["message"]


@memory_and_qdrant
@pytest.mark.parametrize("length", [1, 2000])
def test_question_length_bounds_are_accepted(client: TestClient, length: int) -> None:
    question = ("why " * 600)[:length].strip() or "w"
    assert client.post("/api/ask", json={"question": question}).status_code == 200


@memory_and_qdrant
@pytest.mark.parametrize(
    ("content", "content_type", "code"),
    [
        (b"{not json", "application/json", "invalid_json"),
        (b"question=hi", "application/x-www-form-urlencoded", "invalid_body"),
        (b'["a list"]', "application/json", "invalid_body"),
        (b"x" * (330 * 1024), "application/json", "body_too_large"),
    ],
)
def test_malformed_bodies(
    client: TestClient, content: bytes, content_type: str, code: str
) -> None:
    response = client.post(
        "/api/ask", content=content, headers={"content-type": content_type}
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == code


@memory_and_qdrant
def test_search_validation(client: TestClient) -> None:
    assert client.get("/api/search").status_code == 400
    assert client.get("/api/search", params={"q": " "}).status_code == 400
    assert client.get("/api/search", params={"q": "x", "k": 0}).status_code == 400
    assert client.get("/api/search", params={"q": "x", "k": 21}).status_code == 400


def test_the_site_is_served_without_escaping_it(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200
    assert "Brewing Better Coffee" in page.text
    assert "frame-ancestors 'self'" in page.headers["content-security-policy"]
    for path in (
        "/../../../etc/passwd",
        "/%2e%2e/%2e%2e/etc/passwd",
        "/..%2f..%2fetc%2fpasswd",
        "/_static/",
        "/_ragcite/",
    ):
        response = client.get(path)
        assert response.status_code == 404, path
        assert "root:" not in response.text
    assert client.get("/api/nope").json()["error"]["code"] == "not_found"


def test_openapi_and_docs(client: TestClient) -> None:
    spec = client.get("/api/openapi.json").json()
    assert {"/api/ask", "/api/ask/stream", "/api/search", "/api/health"} <= set(
        spec["paths"]
    )
    assert client.get("/api/docs").status_code == 200


#: A question of the example book per outcome (the engine decides which).
OUTCOME_QUESTIONS = (
    "How long is the bloom?",
    "Who invented the French press?",
    "How do I compute PageRank scores for the characters?",
)


@pytest.mark.parametrize("question", OUTCOME_QUESTIONS)
def test_every_outcome_through_ask_and_the_stream(
    client: TestClient, question: str
) -> None:
    """``/api/ask`` and the stream's final event carry the same outcome, and
    each outcome holds what it promises."""
    answer = client.post("/api/ask", json={"question": question}).json()
    events = sse_events(
        client.post("/api/ask/stream", json={"question": question}).text
    )
    assert events[-1][0] == "final"
    final = events[-1][1]
    for body in (answer, final):
        Answer.model_validate(body)
        outcome = body["outcome"]
        assert outcome in ("answer", "passages", "not_found")
        assert body["grounded"] is (outcome == "answer")
        assert bool(body["citations"]) is (outcome == "answer")
        assert bool(body["passages"]) is (outcome == "passages")
        if outcome != "answer":
            assert body["metadata"]["see_also"]
        retrieved = set(body["metadata"]["retrieved"])
        for shown in body["passages"]:
            assert shown["passage_id"] in retrieved
            assert shown["url"].endswith("#" + shown["passage_id"])
            assert 0 <= shown["confidence"] <= 1
            assert len(shown["quote_spans"]) == 1
        ranked = [shown["confidence"] for shown in body["passages"]]
        assert ranked == sorted(ranked, reverse=True)
        assert len(ranked) <= 3
    assert final["outcome"] == answer["outcome"]
    assert final["passages"] == answer["passages"]
    if answer["outcome"] != "answer":  # no claim: nothing is streamed as one
        assert [name for name, _ in events] == ["retrieval", "final"]


def test_the_spec_names_the_outcomes(client: TestClient) -> None:
    spec = client.get("/api/openapi.json").json()
    schemas = spec["components"]["schemas"]
    outcome = schemas["Answer"]["properties"]["outcome"]
    assert outcome["enum"] == ["answer", "passages", "not_found"]
    for name in outcome["enum"]:
        assert name in outcome["description"]
    passages = schemas["Answer"]["properties"]["passages"]
    assert passages["items"] == {"$ref": "#/components/schemas/ShownPassage"}
    assert {"passage_id", "url", "quote", "quote_spans", "confidence"} <= set(
        schemas["ShownPassage"]["properties"]
    )
    # old clients keep working: nothing they read became required or went away
    assert "outcome" not in schemas["Answer"].get("required", [])
    ask = spec["paths"]["/api/ask"]["post"]
    assert "not_found" in ask["description"]


def test_stream_sends_retrieval_tokens_then_the_final_answer(
    example_site: Path,
) -> None:
    settings = ServerSettings(build_dir=example_site, generator="llm")
    with TestClient(create_app(settings, llm=slow(delay=0, pieces=3))) as client:
        response = client.post(
            "/api/ask/stream", json={"question": "What is channeling?"}
        )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    events = sse_events(response.text)
    names = [name for name, _ in events]
    assert names[0] == "retrieval"
    assert names[1:4] == ["token"] * 3
    assert names[-1] == "final"
    final = Answer.model_validate(events[-1][1])
    assert set(c.passage_id for c in final.citations) <= set(events[0][1]["retrieved"])


@pytest.mark.slow
def test_full_queue_gets_503_and_extractive_still_answers(example_site: Path) -> None:
    settings = ServerSettings(build_dir=example_site, generator="llm", queue_size=1)
    with TestClient(create_app(settings, llm=slow(delay=0.05, pieces=40))) as client:
        results: dict[str, int] = {}

        def first() -> None:
            response = client.post("/api/ask", json={"question": "What is channeling?"})
            results["first"] = response.status_code

        worker = threading.Thread(target=first)
        worker.start()
        wait_until(lambda: client.get("/api/health").json()["queue_depth"], 10)
        busy = client.post("/api/ask", json={"question": "What is a burr grinder?"})
        assert busy.status_code == 503
        assert busy.headers["retry-after"]
        assert busy.json()["error"]["code"] == "busy"
        quick = client.post(
            "/api/ask",
            json={"question": "What is a burr grinder?", "generator": "extractive"},
        )
        assert quick.status_code == 200
        worker.join()
        assert results["first"] == 200
        # the slot is given back when the job has really stopped, which may be
        # a moment after its response was sent
        wait_until(lambda: client.get("/api/health").json()["queue_depth"] == 0, 5)


def test_disconnected_stream_frees_its_slot(example_site: Path) -> None:
    model = slow(delay=0.05, pieces=200)
    settings = ServerSettings(build_dir=example_site, generator="llm", queue_size=1)
    with TestClient(create_app(settings, llm=model)) as client:
        leave_after_first_token(client, "", "What is channeling?")
        assert model.closed.wait(5)
        wait_until(lambda: client.get("/api/health").json()["queue_depth"] == 0, 5)


def test_rate_limit(example_site: Path) -> None:
    settings = ServerSettings(
        build_dir=example_site, generator="extractive", rate_limit=3
    )
    with TestClient(create_app(settings)) as client:
        codes = [client.get("/api/health").status_code for _ in range(5)]
    assert codes[:3] == [200, 200, 200]
    assert codes[3] == 429


@pytest.mark.slow
def test_cors_only_for_configured_origins(example_site: Path) -> None:
    plain = ServerSettings(build_dir=example_site, generator="extractive")
    with TestClient(create_app(plain)) as client:
        response = client.get("/api/health", headers={"Origin": "https://evil.test"})
        assert "access-control-allow-origin" not in response.headers
    allowed = ServerSettings(
        build_dir=example_site,
        generator="extractive",
        cors_origins=("https://docs.example.org",),
    )
    with TestClient(create_app(allowed)) as client:
        ok = client.get("/api/health", headers={"Origin": "https://docs.example.org"})
        assert ok.headers["access-control-allow-origin"] == "https://docs.example.org"
        other = client.get("/api/health", headers={"Origin": "https://evil.test"})
        assert "access-control-allow-origin" not in other.headers


@memory_and_qdrant
def test_cache_returns_the_same_answer(client: TestClient) -> None:
    body = {"question": "What is the SCA water temperature range?"}
    first = client.post("/api/ask", json=body).json()
    second = client.post("/api/ask", json=body).json()
    assert first == second


@memory_and_qdrant
@pytest.mark.parametrize(
    "body",
    [
        b'{"question": "\\ud800"}',
        b'{"question": "crema \\udc00"}',
        b'{"question": "crema", "selection": "\\udfff", "mode": "selection"}',
        b'{"question": "crema", "filters": {"docnames": ["\\ud800"]}}',
    ],
)
def test_lone_surrogates_are_a_400_not_a_crash(client: TestClient, body: bytes) -> None:
    for path in ("/api/ask", "/api/ask/stream"):
        response = client.post(
            path, content=body, headers={"content-type": "application/json"}
        )
        assert response.status_code == 400, (path, response.text)
        assert "unicode" in response.json()["error"]["message"].lower()


# -- issue 17: hardening -------------------------------------------------------


def test_a_crash_is_a_500_with_the_security_headers(example_site: Path) -> None:
    """Starlette answers crashes outside user middleware: no CSP, no nosniff."""
    from fastapi.routing import APIRoute

    async def boom() -> None:
        raise RuntimeError("a bug")

    settings = ServerSettings(build_dir=example_site, generator="extractive")
    app = create_app(settings)
    app.router.routes.insert(0, APIRoute("/api/boom", boom))
    with TestClient(app, raise_server_exceptions=False) as client:
        response = client.get("/api/boom")
    assert response.status_code == 500
    assert response.json()["error"]["code"] == "internal_error"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert "default-src 'none'" in response.headers["content-security-policy"]


def test_cors_reaches_a_429_and_preflight_spends_no_tokens(example_site: Path) -> None:
    origin = "https://good.example"
    settings = ServerSettings(
        build_dir=example_site,
        generator="extractive",
        cors_origins=(origin,),
        rate_limit=2,
    )
    preflight = {"Origin": origin, "Access-Control-Request-Method": "POST"}
    with TestClient(create_app(settings)) as client:
        for _ in range(5):
            allowed = client.options("/api/ask", headers=preflight)
            assert allowed.status_code == 200
            assert allowed.headers["access-control-allow-origin"] == origin
            assert allowed.headers["x-content-type-options"] == "nosniff"
        codes = [
            client.get("/api/health", headers={"Origin": origin}) for _ in range(3)
        ]
    assert [r.status_code for r in codes] == [200, 200, 429]
    assert codes[2].headers["access-control-allow-origin"] == origin
    assert codes[2].headers["retry-after"]


@memory_and_qdrant
def test_the_cache_does_not_mix_up_styles(client: TestClient) -> None:
    question = "How fine should the grind be for espresso?"
    styles = []
    for style in ("apa", "ieee", None):
        body = {"question": question} | ({"style": style} if style else {})
        styles.append(
            client.post("/api/ask", json=body).json()["metadata"].get("style")
        )
    assert styles == ["apa", "ieee", None]


def test_the_api_docs_need_nothing_from_outside(client: TestClient) -> None:
    """Swagger UI came from a CDN the CSP blocks (and offline there is none)."""
    response = client.get("/api/docs")
    assert response.status_code == 200
    page = response.text
    csp = response.headers["content-security-policy"]
    assert "script-src" not in csp
    assert "<script" not in page
    assert "http://" not in page
    assert "https://" not in page
    spec = client.get("/api/openapi.json").json()
    for path, methods in spec["paths"].items():
        for method in methods:
            assert f"{method.upper()}</span> <code>{path}</code>" in page
    for name in spec["components"]["schemas"]:
        assert f"id='schema-{name}'" in page


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("GET", "/api/ask", "POST"),
        ("PUT", "/api/ask", "POST"),
        ("GET", "/api/ask/stream", "POST"),
        ("DELETE", "/api/passages/ch1-sec0-p1", "GET, HEAD"),
        ("POST", "/api/health", "GET, HEAD"),
        ("PATCH", "/api/search", "GET, HEAD"),
    ],
)
def test_a_wrong_method_is_405_with_allow(
    client: TestClient, method: str, path: str, allow: str
) -> None:
    response = client.request(method, path)
    assert response.status_code == 405, response.text
    assert response.headers["allow"] == allow
    assert response.json()["error"]["code"] == "method_not_allowed"


def test_head_answers_where_get_does(client: TestClient) -> None:
    for path in ("/api/health", "/api/search?q=crema", "/api/docs"):
        response = client.head(path)
        assert response.status_code == 200, path
        assert response.content == b""
    assert client.get("/api/nope").status_code == 404


@memory_and_qdrant
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"question": "ok", "k": True}, "k"),
        ({"question": "ok", "filters": {"chapters": [True]}}, "filters.chapters.0"),
        # strict, as MCP's ask is (issue 24): no number in a string, no 3.0
        ({"question": "ok", "k": "3"}, "k"),
        ({"question": "ok", "k": 3.0}, "k"),
        ({"question": "ok", "filters": {"chapters": ["3"]}}, "filters.chapters.0"),
    ],
)
def test_booleans_are_not_numbers(client: TestClient, body: dict, field: str) -> None:
    response = client.post("/api/ask", json=body)
    assert response.status_code == 400
    assert response.json()["error"]["field"] == field


@memory_and_qdrant
@pytest.mark.slow
def test_a_selection_is_trimmed_before_its_length_check(client: TestClient) -> None:
    selection = ("Bloom the coffee for thirty seconds. " * 540)[:19_990].rstrip()
    selection += "." * (20_000 - len(selection))
    body = {"question": "What does this mean?", "mode": "selection"}
    ok = client.post("/api/ask", json=body | {"selection": selection + " \n "})
    assert ok.status_code == 200, ok.text
    long = client.post("/api/ask", json=body | {"selection": selection + "x"})
    assert long.status_code == 400
    assert long.json()["error"]["field"] == "selection"


def test_dot_files_of_the_output_folder_are_not_served(
    example_site: Path, tmp_path: Path
) -> None:
    """A build with the default doctree folder keeps ``.doctrees/`` inside."""
    import shutil

    site = tmp_path / "html"
    shutil.copytree(example_site, site)
    (site / ".doctrees").mkdir()
    (site / ".doctrees" / "environment.pickle").write_bytes(b"/home/author/src")
    (site / "_static" / ".secret").write_text("x")
    assert (site / ".buildinfo").is_file()
    settings = ServerSettings(build_dir=site, generator="extractive")
    with TestClient(create_app(settings)) as client:
        for path in (
            "/.doctrees/environment.pickle",
            "/.buildinfo",
            "/_static/.secret",
            "/%2Edoctrees/environment.pickle",
            "/_static/../.buildinfo",
        ):
            response = client.get(path)
            assert response.status_code == 404, path
            assert b"/home/author" not in response.content
        assert client.get("/index.html").status_code == 200


IMMUTABLE = "public, max-age=31536000, immutable"


def test_static_files_say_how_long_they_may_be_cached(
    client: TestClient, example_site: Path
) -> None:
    """Content-addressed index files forever; fixed names and pages revalidate."""
    import re

    index = example_site / "_ragcite"
    hashed = [
        path.relative_to(example_site).as_posix()
        for path in index.rglob("*")
        if path.is_file() and re.search(r"\.[0-9a-f]{16}[./]", str(path))
    ]
    assert len(hashed) > 5
    for path in hashed:
        response = client.get(f"/{path}")
        assert response.status_code == 200, path
        assert response.headers["cache-control"] == IMMUTABLE, path
    for path in (
        "/_ragcite/search.js",
        "/_ragcite/moved.js",
        "/_ragcite/manifest.json",
        "/",
        "/index.html",
        "/water.html",
        "/_static/basic.css",
    ):
        response = client.get(path)
        assert response.status_code == 200, path
        assert response.headers["cache-control"] == "no-cache", path
        again = client.get(path, headers={"If-None-Match": response.headers["etag"]})
        assert again.status_code == 304, path
        assert again.headers["cache-control"] == "no-cache", path


@pytest.mark.slow
def test_a_folder_redirect_stays_on_this_host(
    example_site: Path, tmp_path: Path
) -> None:
    """``/a/sub`` -> ``/a/sub/`` by a relative Location, whatever Host says."""
    import shutil
    from urllib.parse import urljoin

    site = tmp_path / "html"
    shutil.copytree(example_site, site)
    (site / "a" / "sub").mkdir(parents=True)
    (site / "a" / "sub" / "index.html").write_text("<p>sub</p>", "utf-8")
    one = ServerSettings(build_dir=site, generator="extractive")
    several = ServerSettings(sites=(("book", site),), generator="extractive")
    for settings, folders in (
        (one, ["/a/sub"]),
        (several, ["/book/a/sub", "/book"]),  # a site's own folder too
    ):
        with TestClient(create_app(settings)) as client:
            for folder in folders:
                asked = f"http://testserver{folder}?x=1"
                response = client.get(
                    asked, headers={"Host": "evil.example"}, follow_redirects=False
                )
                assert response.is_redirect, folder
                location = response.headers["location"]
                assert "evil.example" not in location
                assert not location.startswith(("/", "http:", "https:"))
                assert urljoin(asked, location) == f"http://testserver{folder}/?x=1"
            assert client.get(f"{folders[0]}").text == "<p>sub</p>"


@pytest.mark.parametrize("filters", [{"docnames": ["nonexistent"]}, {"chapters": [42]}])
def test_a_filter_that_keeps_nothing_is_not_found_not_a_500(
    client: TestClient, filters: dict
) -> None:
    body = {"question": "How long is the bloom?", "filters": filters}
    answer = client.post("/api/ask", json=body)
    assert answer.status_code == 200, answer.text
    assert answer.json()["citations"] == []
    assert answer.json()["grounded"] is False
    stream = client.post("/api/ask/stream", json=body)
    events = sse_events(stream.text)
    assert [name for name, _ in events][-1] == "final", events
    assert events[-1][1]["citations"] == []


# -- behind a proxy, and what ``ragcite serve`` accepts (issue 33) ----------------


def limited(url: str, forwarded_for: str) -> int:
    """The status of one API request claiming to be forwarded for an address."""
    headers = {"X-Forwarded-For": forwarded_for}
    return httpx.get(f"{url}/api/health", headers=headers).status_code


@pytest.mark.slow
def test_x_forwarded_for_dodges_no_rate_limit(
    example_site: Path, tmp_path: Path
) -> None:
    """By default no proxy is trusted, loopback included: a client that names
    a new address in every request still has one bucket, its own."""
    env = {k: v for k, v in os.environ.items() if k != "FORWARDED_ALLOW_IPS"}
    args = (str(example_site), "--rate-limit", "2", "--generator", "extractive")
    with ragcite_serve(*args, log=tmp_path / "server.log", env=env) as (url, _):
        # the start-up check spent one token; one is left
        codes = [limited(url, f"203.0.113.{i}") for i in range(1, 5)]
    assert codes[0] == 200
    assert codes[1:] == [429, 429, 429]
    text = (tmp_path / "server.log").read_text("utf-8")
    hints = [line for line in text.splitlines() if "X-Forwarded-For" in line]
    assert len(hints) == 1, text  # said once: how to trust a proxy that is yours
    assert "--forwarded-allow-ips 127.0.0.1" in hints[0]


@pytest.mark.slow
@pytest.mark.parametrize("how", ["option", "environment"])
def test_a_trusted_proxy_passes_on_the_client_address(
    example_site: Path, tmp_path: Path, how: str
) -> None:
    """``--forwarded-allow-ips`` (or uvicorn's ``FORWARDED_ALLOW_IPS``): each
    forwarded address has its own bucket; the proxy's own entry is skipped."""
    env = {k: v for k, v in os.environ.items() if k != "FORWARDED_ALLOW_IPS"}
    args = [str(example_site), "--rate-limit", "2", "--generator", "extractive"]
    if how == "option":
        args += ["--forwarded-allow-ips", "127.0.0.1, 10.0.0.0/8"]
    else:
        env["FORWARDED_ALLOW_IPS"] = "127.0.0.1,10.0.0.0/8"
    with ragcite_serve(*args, log=tmp_path / "server.log", env=env) as (url, _):
        assert [limited(url, f"203.0.113.{i}") for i in range(1, 5)] == [200] * 4
        # a client's own claim, then our proxies (10.1.2.3 is trusted too)
        chain = "198.51.100.9, 203.0.113.77, 10.1.2.3"
        assert [limited(url, chain) for _ in range(3)] == [200, 200, 429]
        assert limited(url, "203.0.113.77") == 429  # the same client
        assert limited(url, "198.51.100.9") == 200  # its claim was not believed


def serve_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``ragcite serve ARGS`` that must stop before serving."""
    return subprocess.run(
        [sys.executable, "-m", "sphinx_ragcite", "serve", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("--questions-log-days", "1000000", "1 to 36500"),
        ("--questions-log-days", "0", "1 to 36500"),
        ("--questions-log-days", "-5", "1 to 36500"),
        ("--timeout", "1e308", "at most 86400"),
        ("--timeout", "nan", "at most 86400"),
        ("--forwarded-allow-ips", "proxy.example.org", "'proxy.example.org' is not"),
        ("--forwarded-allow-ips", "10.0.0.1/8", "'10.0.0.1/8' is not"),
    ],
)
def test_options_out_of_range_are_usage_errors(
    example_site: Path, tmp_path: Path, option: str, value: str, says: str
) -> None:
    db = tmp_path / "questions.db"
    result = serve_cli(
        str(example_site), "--questions-log", str(db), "--port", str(free_port()),
        option, value,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert says in result.stderr
    assert not db.exists()


#: The longest question and selection, each character the longest JSON can
#: make it: ``\uXXXX`` for CJK, a surrogate pair ``\ud83d\ude00`` above U+FFFF.
#: (No full stop: a selection of 1,000 sentences takes the encoder ~20 s.)
CJK = "咖啡的萃取时间取决于研磨度和水温"


@pytest.mark.parametrize(
    ("question", "selection"),
    [
        ((CJK * 200)[:2000], (CJK * 2000)[:20_000]),
        ("\U0001f600" * 2000, "\U0001f600" * 20_000),
    ],
    ids=["CJK", "astral"],
)
def test_the_largest_valid_request_fits_the_body_limit(
    client: TestClient, question: str, selection: str
) -> None:
    body = {
        "question": question,
        "mode": "selection",
        "selection": selection,
        "k": 20,
        "filters": {"docnames": ["brewing/espresso"] * 50, "chapters": [1] * 50},
        "style": "chicago",
        "generator": "extractive",
    }
    content = json.dumps(body).encode()  # ensure_ascii: every character escaped
    assert len(content) > 64 * 1024
    response = client.post(
        "/api/ask", content=content, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 200, response.text[:300]
    assert response.json()["mode"] == "selection"
    limit = ServerSettings(build_dir=Path(".")).max_body_bytes
    too_large = client.post(
        "/api/ask",
        content=content + b" " * (limit - len(content) + 1),
        headers={"Content-Type": "application/json"},
    )
    assert too_large.status_code == 400
    assert too_large.json()["error"]["code"] == "body_too_large"
