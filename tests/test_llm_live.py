"""The real SmolLM2 GGUF through every path: in process, HTTP API, --llm-url.

Slow-ish (the model loads in about a second and writes ~60 tokens/s on 2
cores); deselect with ``-m "not llm"``. CI runs them.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from sphinx_ragcite.answer.engine import AnswerEngine
from sphinx_ragcite.answer.llm import OpenAIGenerator, default_gguf
from sphinx_ragcite.retrieval import Site
from sphinx_ragcite.contracts import Answer
from sphinx_ragcite.server.app import create_app
from sphinx_ragcite.server.settings import ServerSettings

pytestmark = pytest.mark.llm


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def llama_server():  # type: ignore[no-untyped-def]
    """llama-cpp-python's own OpenAI-compatible server, on loopback."""
    pytest.importorskip("sse_starlette", reason="llama-cpp-python[server] missing")
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(default_gguf()),
         "--host", "127.0.0.1", "--port", str(port), "--n_threads", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while True:
            try:
                if httpx.get(f"{url}/v1/models", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert process.poll() is None, "llama_cpp.server exited"
            assert time.time() < deadline, "llama_cpp.server did not start"
            time.sleep(0.25)
        yield url
    finally:
        process.terminate()
        process.wait(10)


def test_llm_url_goes_through_the_same_verification(
    example_site: Path, llama_server: str
) -> None:
    site = Site.load(example_site)
    engine = AnswerEngine(site, llm=OpenAIGenerator(llama_server))
    events = list(engine.stream("What pressure does espresso use?", generator="llm"))
    assert any(e.kind == "token" for e in events)
    answer = events[-1].data
    assert answer.grounded
    assert answer.metadata["llm_answer"]
    retrieved = set(answer.metadata["retrieved"])
    assert all(c.passage_id in retrieved for c in answer.citations)


def test_unreachable_llm_url_falls_back(example_site: Path) -> None:
    site = Site.load(example_site)
    engine = AnswerEngine(
        site, llm=OpenAIGenerator(f"http://127.0.0.1:{free_port()}", timeout=2)
    )
    answer = engine.answer("What pressure does espresso use?", generator="llm")
    assert answer.grounded
    assert "failed" in answer.metadata["fallback"]


def test_server_streams_real_model_tokens(example_site: Path) -> None:
    settings = ServerSettings(build_dir=example_site, generator="llm")
    with TestClient(create_app(settings)) as client:
        health = client.get("/api/health").json()
        assert health["model_loaded"]
        assert health["model"].startswith("SmolLM2")
        response = client.post(
            "/api/ask/stream", json={"question": "How should beans be stored?"}
        )
    assert response.status_code == 200
    blocks = response.text.strip().split("\n\n")
    names = [b.split("\n")[0].removeprefix("event: ") for b in blocks]
    assert names[0] == "retrieval"
    assert "token" in names
    assert names[-1] == "final"
    final = Answer.model_validate_json(blocks[-1].split("data: ", 1)[1])
    assert final.metadata["generator"] in ("llm", "llm->extractive")
