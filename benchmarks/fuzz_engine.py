"""Does the browser answer engine ever fail without a sentence, or at all?

Why: issue 42 attacked the engine that answers in the reader's browser. Its
inputs are the reader's question and the files of ``_ragcite/`` a static
host serves (the manifest, the shard listing and shards, ``ranker.json``,
the static search index, the vectors and the encoder's tokenizer), and a
host, a proxy or a half-finished deploy can damage any of them. Whatever
comes, the worker must reply, and every refusal must carry a sentence the
page can show. ``fuzz_api.py`` and its siblings fuzz the server's doors;
this fuzzes the engine's.

What it does: ``fuzz_engine.js`` (Node) runs the worker's host
(``createWorkerHost`` of ``js/worker.js``) with the real store, static
search, answer engine, WordPiece tokenizer and encoder (onnxruntime-web's
WASM build over the site's ``model.onnx``) over the example book's build
(``_harness.example_site``, or ``--site``) served from memory. Each case
mutates one input (sometimes a second): questions and selections, random
(lone surrogates, NUL, bidi controls, emoji, 2,000-character edges, long
"words") or mutated from real headings; or a file's JSON (a value deleted,
retyped, made huge, nested 2,000 deep, swapped with another) or bytes
(bits flipped, cut, padded, emptied), signed again in the manifest so the
mutation reaches the parsers (one in ten is left unsigned, for the
checksum's sentence). A shard is renamed after its new digest in a signed
listing. Then it loads, asks two to eight questions and one static search.

A failure is an exception out of the host's ``onMessage``, a message with
no reply, an uncaught exception or unhandled rejection, an error whose
``kind`` has no sentence on the page (``WHY`` of ``js/browser.js``), whose
message is a JavaScript engine's own words ("Cannot read properties of
undefined", "Unexpected token ... in JSON") or that says the device ran out
of memory when it did not, or a malformed answer. Here, in Python: every
question's refusal is compared with the server's (``AskRequest`` and
``answering.py``'s check of the selection): the same questions refused,
with the same sentence (``refusal_mismatches``).

Run from the repository root (``npm ci`` first)::

    .venv/bin/python benchmarks/fuzz_engine.py [--seconds 600] [--seed 0] [--site OUT]

Results go to ``benchmarks/results/fuzz_engine.json`` unless ``--out``; it
exits 1 on any failure or mismatch. The suite runs 30 cases (seed 0):
``tests/test_browser_parity.py::test_fuzzed_engine_inputs``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks._harness import (
    REPO,
    RESULTS,
    envelope,
    example_site,
    table,
    write_result,
)

DEFAULT_OUT = RESULTS / "fuzz_engine.json"
SCRIPT = Path(__file__).with_suffix(".js")


@dataclass
class Tally:
    cases: int = 0
    seconds: float = 0.0
    by_target: dict[str, int] = field(default_factory=dict)
    #: replies by type ("answer", "hits", "error:format", ...)
    replies: dict[str, int] = field(default_factory=dict)
    #: error messages by kind, their particulars left out
    messages: dict[str, int] = field(default_factory=dict)
    failed_cases: int = 0
    #: exceptions out of the host, replies never sent, process-level errors
    uncaught: int = 0
    failures: list[dict[str, Any]] = field(default_factory=list)
    questions: int = 0
    refused: Counter[str] = field(default_factory=Counter)
    refusal_mismatches: list[dict[str, Any]] = field(default_factory=list)


def server_refusal(question: str, selection: str | None) -> str | None:
    """What ``POST /api/ask`` says of this question (None: it answers).

    The worker asks in selection mode when it is given a selection.
    """
    from pydantic import ValidationError

    from sphinx_ragcite.server.schemas import AskRequest, problem, problem_text

    body: dict[str, Any] = {"question": question}
    if selection:
        body |= {"mode": "selection", "selection": selection}
    try:
        request = AskRequest.model_validate(body)
    except ValidationError as error:
        return problem_text(*problem(error.errors(), skip=("body",)))
    if request.mode == "selection" and not request.selection:
        return "selection: is required when mode is 'selection'"  # answering.py
    return None


def fuzz(site: Path, *, seed: int = 0, seconds: float = 60, cases: int = 0) -> Tally:
    """Run ``fuzz_engine.js`` on *site*; *cases* (0: as many as fit) caps it."""
    node = shutil.which("node")
    if node is None:
        raise RuntimeError("node is not on PATH")
    with tempfile.TemporaryDirectory(prefix="fuzz-engine-") as folder:
        out = Path(folder) / "out.json"
        command = [node, str(SCRIPT), str(site), str(out), "--seed", str(seed)]
        command += ["--seconds", str(seconds), "--cases", str(cases)]
        run = subprocess.run(
            command, cwd=REPO, capture_output=True, text=True, check=False
        )
        if run.returncode != 0:
            raise RuntimeError(f"fuzz_engine.js failed:\n{run.stderr[-4000:]}")
        data = json.loads(out.read_text("utf-8"))
    tally = Tally(
        cases=data["cases"],
        seconds=round(data["seconds"], 1),
        by_target=data["by_target"],
        replies=data["replies"],
        messages=data["messages"],
        failed_cases=data["failed_cases"],
        uncaught=data["uncaught"],
        failures=data["failures"],
        questions=len(data["questions"]),
    )
    for asked in data["questions"]:
        expected = server_refusal(asked["question"], asked["selection"])
        got = asked["refused"]
        tally.refused[str(got is not None)] += 1
        if got != expected or (got is None and asked["reply"].startswith("error")):
            tally.refusal_mismatches.append(
                {**asked, "question": asked["question"][:200], "server": expected}
            )
    return tally


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--cases", type=int, default=0, help="at most (0: no cap)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--site", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    site = example_site(args.site)
    tally = fuzz(site, seed=args.seed, seconds=args.seconds, cases=args.cases)
    print(
        f"{tally.cases} cases in {tally.seconds} s (seed {args.seed}): "
        f"{tally.uncaught} uncaught, {tally.failed_cases} failed; "
        f"{tally.questions} fuzzed questions, "
        f"{len(tally.refusal_mismatches)} refused otherwise than the server\n"
    )
    print(table(["input", "cases"], [[k, str(v)] for k, v in tally.by_target.items()]))
    print()
    print(table(["reply", "count"], [[k, str(v)] for k, v in tally.replies.items()]))
    print()
    for failure in tally.failures[:20]:
        print(f"FAIL {failure}")
    for mismatch in tally.refusal_mismatches[:20]:
        print(f"MISMATCH {mismatch}")
    write_result(
        args.out,
        {
            **envelope("fuzz_engine", seed=args.seed, seconds_asked=args.seconds),
            "cases": tally.cases,
            "seconds": tally.seconds,
            "by_target": tally.by_target,
            "replies": tally.replies,
            "uncaught": tally.uncaught,
            "failed_cases": tally.failed_cases,
            "failures": tally.failures,
            "questions": tally.questions,
            "refused": dict(tally.refused),
            "refusal_mismatches": tally.refusal_mismatches,
            "messages": dict(sorted(tally.messages.items(), key=lambda kv: -kv[1])),
        },
    )
    failed = tally.uncaught or tally.failed_cases or tally.refusal_mismatches
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
