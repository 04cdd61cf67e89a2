"""The real SmolLM2 GGUF through every path: in process, HTTP API, --llm-url.

Slow-ish (the model loads in about a second and writes ~60 tokens/s on 2
cores); deselect with ``-m "not llm"``. CI runs them.
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from sphinx_ragcite.answer.engine import AnswerEngine
from sphinx_ragcite.answer.llm import OpenAIGenerator, default_gguf
from sphinx_ragcite.contracts import Answer
from sphinx_ragcite.retrieval.site import Site
from sphinx_ragcite.server.app import create_app
from sphinx_ragcite.server.settings import ServerSettings

from helpers.builds import sphinx_build
from helpers.servers import (
    free_port,
    health,
    leave_after_first_token,
    serving,
    sse_events,
    wait_until,
    wait_until_up,
)

pytestmark = pytest.mark.llm


SERVER = """
import sys
from llama_cpp.server.__main__ import main
from sphinx_ragcite.answer.llm import plain_cpu_buffers
sys.argv[0] = "llama_cpp.server"
with plain_cpu_buffers():
    main()
"""


@dataclass(frozen=True)
class LlamaServer:
    url: str
    log: Path

    def said(self, text: str) -> bool:
        return text in self.log.read_text("utf-8", errors="replace")


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    """llama-cpp-python's own OpenAI-compatible server, on loopback."""
    pytest.importorskip("sse_starlette", reason="llama-cpp-python[server] missing")
    port = free_port()
    log = tmp_path_factory.mktemp("llama_server") / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            # llama_cpp.server with the weights in plain CPU buffers: AMX
            # repacking segfaults on some Xeons (see plain_cpu_buffers)
            [sys.executable, "-u", "-c", SERVER,
             "--model", str(default_gguf()),
             "--host", "127.0.0.1", "--port", str(port), "--n_threads", "2"],
            stdout=out,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(process, f"{url}/v1/models", log, seconds=60)
        yield LlamaServer(url, log)
    finally:
        process.terminate()
        process.wait(10)


def test_llm_url_goes_through_the_same_verification(
    example_site: Path, llama_server: LlamaServer
) -> None:
    site = Site.load(example_site)
    engine = AnswerEngine(site, llm=OpenAIGenerator(llama_server.url))
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
    events = sse_events(response.text)
    names = [name for name, _ in events]
    assert names[0] == "retrieval"
    assert "token" in names
    assert names[-1] == "final"
    final = Answer.model_validate(events[-1][1])
    assert final.metadata["generator"] in ("llm", "llm->extractive")


# -- issue 17: prompts that do not fit, readers who leave, --timeout ----------

QUESTION = "What is channeling?"
EMOJI_QUESTION = "How long is the bloom? " + "😀" * 1960


@pytest.fixture(scope="module")
def model():
    from sphinx_ragcite.answer.llm import LlamaCppGenerator

    return LlamaCppGenerator()


def test_prompts_are_fitted_with_the_models_tokenizer(model) -> None:
    from sphinx_ragcite.answer.prompt import PromptTooLong, fit_messages
    from sphinx_ragcite.answer.selection import RankedSentence

    assert model.count_tokens("😀" * 10) > 10  # not characters, not words
    huge = RankedSentence(1.0, 1.0, 0, 0, "bloom " * 40_000)
    messages = fit_messages("How long?", [huge], model, max_tokens=120)
    used = sum(model.count_tokens(m["content"]) for m in messages)
    assert used <= model.context_tokens - 120
    with pytest.raises(PromptTooLong, match="context"):
        fit_messages(EMOJI_QUESTION, [huge], model, max_tokens=120)


def test_an_over_long_question_is_answered_not_a_500(
    example_site: Path,
    model,
) -> None:
    """``ValueError: Requested tokens (6052) exceed context window of 2048``."""
    settings = ServerSettings(build_dir=example_site, generator="llm", rate_limit=0)
    selection = " ".join(
        ["the bloom lets carbon dioxide escape from the grounds"] * 330
    )
    with TestClient(create_app(settings, llm=model)) as client:
        answer = client.post("/api/ask", json={"question": EMOJI_QUESTION})
        stream = client.post("/api/ask/stream", json={"question": EMOJI_QUESTION})
        selected = client.post(
            "/api/ask",
            json={"question": "What does this mean?", "mode": "selection",
                  "selection": selection},
        )  # fmt: skip
    assert answer.status_code == 200, answer.text
    assert answer.json()["metadata"]["generator"] == "llm->extractive"
    assert "context" in answer.json()["metadata"]["fallback"]
    assert "event: error" not in stream.text
    assert "event: final" in stream.text
    assert selected.status_code == 200, selected.text
    fallback = selected.json()["metadata"].get("fallback", "")
    assert not fallback.startswith("generation failed"), fallback


def test_a_230000_character_paragraph_is_capped_in_the_prompt(
    tmp_path: Path,
    model,
) -> None:
    src, out = tmp_path / "src", tmp_path / "html"
    src.mkdir()
    (src / "conf.py").write_text('extensions = ["sphinx_ragcite"]\nproject = "Long"\n')
    words = "the bloom takes thirty to forty five seconds while fresh coffee degasses "
    paragraph = (words * (230_000 // len(words))).strip()
    (src / "index.rst").write_text(f"Brewing\n=======\n\n{paragraph}\n", "utf-8")
    sphinx_build(src, out)
    engine = AnswerEngine(Site.load(out), llm=model)
    answer = engine.answer("How long is the bloom?", generator="llm")
    assert not answer.metadata.get("fallback", "").startswith("generation failed")
    assert answer.metadata["generator"] in ("llm", "llm->extractive")


def test_cli_ask_with_an_over_long_question_answers(example_site: Path) -> None:
    """It printed a traceback and exited 1 ("no grounded answer")."""
    result = subprocess.run(
        [sys.executable, "-m", "sphinx_ragcite", "ask", EMOJI_QUESTION,
         "--site", str(example_site), "--generator", "llm", "--format", "json"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert "Traceback" not in result.stderr
    assert result.returncode == 0, result.stderr
    answer = Answer.model_validate_json(result.stdout)
    assert answer.grounded
    assert answer.metadata["generator"] == "llm->extractive"


def test_llama_cpp_stops_when_the_reader_leaves(
    example_site: Path,
    model,
) -> None:
    settings = ServerSettings(build_dir=example_site, generator="llm", rate_limit=0)
    with serving(create_app(settings, llm=model)) as url:
        with httpx.Client(timeout=60) as client:
            leave_after_first_token(client, url, QUESTION)
        wait_until(lambda: health(url)["queue_depth"] == 0, 1)
        assert model._lock.acquire(timeout=1)  # the token loop let go of the model
        model._lock.release()


def test_llama_cpp_stops_when_time_is_up(
    example_site: Path,
    model,
) -> None:
    """Streams ran to the end whatever --timeout said."""
    settings = ServerSettings(
        build_dir=example_site, generator="llm", rate_limit=0, request_timeout=0.3
    )
    with TestClient(create_app(settings, llm=model)) as client:
        started = time.monotonic()
        response = client.post(
            "/api/ask/stream", json={"question": "How should beans be stored?"}
        )
        elapsed = time.monotonic() - started
    final = response.text.rsplit("event: final\ndata: ", 1)[1]
    assert (
        "timed out after 0.3 s"
        in Answer.model_validate_json(final).metadata["fallback"]
    )
    assert elapsed < 2, elapsed


def test_a_reader_who_leaves_frees_llama_cpp_server(
    example_site: Path, llama_server: LlamaServer
) -> None:
    """Through --llm-url: the endpoint itself sees the reader leave."""
    settings = ServerSettings(
        build_dir=example_site, generator="llm", llm_url=llama_server.url, rate_limit=0
    )
    assert not llama_server.said("Disconnected from client")
    with serving(create_app(settings)) as url:
        with httpx.Client(timeout=120) as client:
            leave_after_first_token(client, url, QUESTION)
        wait_until(lambda: health(url)["queue_depth"] == 0, 1)
    # llama_cpp.server prints this when its client goes away mid-stream (a
    # deadline, not a speed: a busy machine delays the next token's write)
    wait_until(lambda: llama_server.said("Disconnected from client"), 30)


def test_a_cancel_stops_llama_cpp_while_it_reads_the_prompt(model) -> None:
    """A long prompt takes seconds before the first token: decode is aborted."""
    import threading

    from sphinx_ragcite.answer.llm import Cancel, GenerationCancelled

    prompt = f"{time.time()} " + "the bloom lets carbon dioxide escape " * 250
    messages = [{"role": "user", "content": prompt}]  # ~1,500 tokens, uncached
    cancel = Cancel()
    threading.Timer(0.3, cancel.expire).start()
    started = time.monotonic()
    with pytest.raises(GenerationCancelled):
        list(model.stream(messages, max_tokens=20, cancel=cancel))
    assert time.monotonic() - started < 1.5
    assert "".join(model.stream([{"role": "user", "content": "Hi"}], max_tokens=5))
