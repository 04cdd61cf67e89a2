"""The browser engine's inputs, fuzzed: ``benchmarks/fuzz_engine.py`` in short.

Under ``CI=true`` a missing Node or onnxruntime-web fails instead of
skipping (``helpers.ci``): CI must hold the engine to this.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.ci import skip_or_fail
from helpers.node import need_node
from helpers.repo import REPO, benchmark

ORT = REPO / "node_modules" / "onnxruntime-web" / "dist" / "ort.wasm.min.js"

#: Why CI fails where Node or onnxruntime-web is missing.
WHY = "CI must fuzz the browser engine"
pytestmark = [pytest.mark.node, pytest.mark.slow, pytest.mark.fuzz]


@pytest.fixture(scope="module")
def runnable() -> None:
    """Node and onnxruntime-web; else a skip (a failure under ``CI=true``)."""
    need_node(WHY)
    if not ORT.is_file():
        skip_or_fail("onnxruntime-web is not installed (npm ci)", WHY)


def test_fuzzed_engine_inputs_always_get_a_reply_with_a_sentence(
    runnable: None, example_site: Path
) -> None:
    """20 cases (seed 0): the edge questions, then each input mutated once
    (manifest, shard listing, a shard, ranker.json, the static index, the
    vectors, the tokenizer), then drawn. No exception leaves the worker's
    host, every message gets a reply, every refusal has a sentence, and the
    questions the server refuses (a lone surrogate, 2,001 characters) the
    engine refuses in the server's words, and no others."""
    tally = benchmark("fuzz_engine").fuzz(example_site, seed=0, seconds=300, cases=20)
    assert tally.cases == 20
    assert tally.uncaught == 0, tally.failures
    assert tally.failures == []
    assert tally.refusal_mismatches == []
    # the cases reached the engine: it loaded, answered, refused and failed
    assert tally.replies.get("ready", 0) >= 3
    assert tally.replies.get("answer", 0) >= 5
    assert tally.refused["True"] >= 5
    assert tally.replies.get("error:format", 0) >= 1
