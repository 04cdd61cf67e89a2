"""Generation behind the API: cancelled when the reader leaves or time is up,
fitted to the model's context, and replaced by the extractive answer whenever
it fails. Over real HTTP: the answer server and an OpenAI-compatible endpoint,
each a uvicorn server on loopback.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from sphinx_ragcite.server.app import create_app
from sphinx_ragcite.server.settings import ServerSettings

from helpers.servers import (
    health,
    leave_after_first_token,
    serving,
    sse_events,
    wait_until,
)

pytest.importorskip("uvicorn")

QUESTION = "What is channeling?"


class Endpoint:
    """An OpenAI-compatible ``/v1/chat/completions`` streaming *tokens* tokens,
    one every *interval* seconds, that records what its readers did."""

    def __init__(
        self, tokens: int = 60, interval: float = 0.5, *, chunk: Any = None
    ) -> None:
        self.tokens = tokens
        self.interval = interval
        self.chunk = chunk
        self.started = self.finished = self.disconnected = self.active = 0
        self.peak = 0
        self.prompts: list[list[dict[str, str]]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                await send({"type": message["type"] + ".complete"})
                if message["type"] == "lifespan.shutdown":
                    return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.prompts.append(json.loads(body)["messages"])
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        self.started += 1
        self.active += 1
        self.peak = max(self.peak, self.active)
        try:
            for _ in range(self.tokens):
                with contextlib.suppress(asyncio.TimeoutError):
                    message = await asyncio.wait_for(receive(), self.interval)
                    if message["type"] == "http.disconnect":
                        self.disconnected += 1
                        return
                text = "Channeling is uneven flow through the puck. "
                chunk = self.chunk or {"choices": [{"delta": {"content": text}}]}
                await self._data(send, json.dumps(chunk))
            await self._data(send, "[DONE]")
            await send({"type": "http.response.body", "body": b""})
            self.finished += 1
        finally:
            self.active -= 1

    @staticmethod
    async def _data(send: Any, payload: str) -> None:
        body = f"data: {payload}\n\n".encode()
        await send({"type": "http.response.body", "body": body, "more_body": True})


@contextlib.contextmanager
def answer_server(site: Path, endpoint: Endpoint, **settings: Any) -> Iterator[str]:
    with serving(endpoint) as llm_url:
        options = {"generator": "llm", "rate_limit": 0, **settings}
        app = create_app(ServerSettings(build_dir=site, llm_url=llm_url, **options))
        with serving(app) as url:
            yield url


# -- 17.2: a reader who leaves, and --timeout, stop the endpoint ---------------


@pytest.mark.slow
def test_a_reader_who_leaves_stops_the_endpoint_and_frees_the_slot(
    example_site: Path,
) -> None:
    endpoint = Endpoint(tokens=60, interval=0.5)  # 30 s if read to the end
    with answer_server(example_site, endpoint, request_timeout=60) as url:
        with httpx.Client(timeout=30) as client:
            leave_after_first_token(client, url, QUESTION)
        wait_until(lambda: endpoint.disconnected == 1, 2)
        wait_until(lambda: health(url)["queue_depth"] == 0, 2)
    assert endpoint.active == 0
    assert endpoint.finished == 0


@pytest.mark.slow
def test_a_stream_obeys_the_timeout_and_ends_with_the_extractive_answer(
    example_site: Path,
) -> None:
    endpoint = Endpoint(tokens=60, interval=0.5)
    with answer_server(example_site, endpoint, request_timeout=2) as url:
        started = time.monotonic()
        response = httpx.post(
            f"{url}/api/ask/stream", json={"question": QUESTION}, timeout=60
        )
        elapsed = time.monotonic() - started
        assert health(url)["queue_depth"] == 0
    assert elapsed < 5, elapsed  # not the endpoint's 30 s
    events = sse_events(response.text)
    assert [name for name, _ in events][-1] == "final"
    assert "error" not in [name for name, _ in events]
    final = events[-1][1]
    assert "timed out after 2 s" in final["metadata"]["fallback"]
    assert final["metadata"]["generator"] == "llm->extractive"
    assert final["grounded"]
    assert endpoint.disconnected == 1
    assert endpoint.finished == 0


# -- 17.3: a timed-out /api/ask stops generating; the queue counts it -------


@pytest.mark.slow
def test_timed_out_answers_stop_generating_and_the_queue_counts_what_runs(
    example_site: Path,
) -> None:
    endpoint = Endpoint(tokens=60, interval=0.5)
    with answer_server(example_site, endpoint, request_timeout=2, queue_size=4) as url:

        def ask(question: str) -> tuple[int, dict[str, Any], float]:
            started = time.monotonic()
            response = httpx.post(
                f"{url}/api/ask", json={"question": question}, timeout=60
            )
            return response.status_code, response.json(), time.monotonic() - started

        with ThreadPoolExecutor(4) as pool:
            futures = [pool.submit(ask, QUESTION) for _ in range(4)]
            wait_until(lambda: health(url)["queue_depth"] == 4, 10)
            results = [f.result() for f in futures]
            assert health(url)["queue_depth"] == 0
        wait_until(lambda: endpoint.active == 0, 1)
    assert endpoint.peak == 4  # all four were generating at once
    for status, body, seconds in results:
        assert status == 200, body
        assert seconds < 8, seconds  # the endpoint would take 30 s
        assert "timed out" in body["metadata"]["fallback"]
    assert endpoint.disconnected == 4
    assert endpoint.finished == 0


# -- 17.1: any failure of generation is the extractive answer -------------------


def test_a_broken_endpoint_gives_the_extractive_answer_not_a_500(
    example_site: Path,
) -> None:
    """Chunks the client cannot read (``choices`` a string) failed with a 500."""
    endpoint = Endpoint(tokens=3, interval=0.01, chunk={"choices": "garbage"})
    with answer_server(example_site, endpoint) as url:
        answer = httpx.post(f"{url}/api/ask", json={"question": QUESTION}, timeout=60)
        stream = httpx.post(
            f"{url}/api/ask/stream", json={"question": QUESTION}, timeout=60
        )
    assert answer.status_code == 200, answer.text
    assert answer.json()["metadata"]["generator"] == "llm->extractive"
    assert answer.json()["grounded"]
    events = sse_events(stream.text)
    assert events[-1][0] == "final"
    assert events[-1][1]["metadata"]["fallback"].startswith("generation failed")


def test_an_over_long_question_is_answered_without_the_endpoint(
    example_site: Path,
) -> None:
    """1,960 emoji (~6,000 tokens) never fit a 2,048-token context."""
    endpoint = Endpoint(tokens=3, interval=0.01)
    question = "How long is the bloom? " + "😀" * 1960
    with answer_server(example_site, endpoint) as url:
        response = httpx.post(f"{url}/api/ask", json={"question": question}, timeout=60)
    assert response.status_code == 200, response.text
    meta = response.json()["metadata"]
    assert meta["generator"] == "llm->extractive"
    assert "context" in meta["fallback"]
    assert endpoint.started == 0


def test_a_long_selection_is_fitted_into_the_prompt(example_site: Path) -> None:
    """3,000 words without a full stop are one "sentence": capped in the prompt."""
    endpoint = Endpoint(tokens=3, interval=0.01)
    selection = " ".join(
        ["the bloom lets carbon dioxide escape from fresh coffee"] * 330
    )
    body = {"question": "What does this mean?", "mode": "selection",
            "selection": selection}  # fmt: skip
    with answer_server(example_site, endpoint) as url:
        response = httpx.post(f"{url}/api/ask", json=body, timeout=60)
    assert response.status_code == 200, response.text
    fallback = response.json()["metadata"].get("fallback", "")
    assert not fallback.startswith("generation failed"), fallback
    assert endpoint.started == 1
    prompt = "".join(m["content"] for m in endpoint.prompts[0])
    assert len(prompt.encode()) <= 2048 - 120
