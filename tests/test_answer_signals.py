"""Issue 36's detectors of wrong answers (``benchmarks/answer_signals.py``).

A lead-in that announces an answer, a definition of the subject asked how or
why, an answer of the wrong type and a question whose key term the book lacks
were the patterns of wrong answers on unseen books. ``error_patterns.py``
counts them and ``tools/ranker_experiments.py`` measures them as signals;
both read these detectors, checked here on the shapes the issue names.
"""

from __future__ import annotations

import pytest

from helpers.repo import benchmark

signals = benchmark("answer_signals")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("You can also use these settings:", (True, False)),
        ("The following options control which files are checked.", (True, False)),
        ("This chapter is for readers who want to try X.", (True, False)),
        ("Set these options:\nA = 1\nB = 2", (True, True)),
        ("参阅以下小节以开始创建：", (True, False)),
        ("Set the timeout to 5 seconds.", (False, False)),
        ("These values are read once at start-up.", (False, False)),
    ],
)
def test_lead_ins_are_recognised(text: str, expected: tuple[bool, bool]) -> None:
    assert signals.announces(text) == expected


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("Where does pip write its log file?", "path"),
        ("Where was Chopin born?", "place"),
        ("What port does the development server listen on?", "number"),
        ("Which option turns colours off?", "option"),
        ("What function registers a command?", "code"),
        ("How do I descale the kettle?", "procedure"),
        ("Which score does the report show?", "named"),
        ("Is the cache thread-safe?", "yesno"),
        ("What is a wheel?", ""),
        ("自定义多智能体环境的基类叫什么？", ""),
    ],
)
def test_answer_types(question: str, kind: str) -> None:
    assert signals.answer_type(question) == kind


@pytest.mark.parametrize(
    ("kind", "text", "question", "expected"),
    [
        ("path", "Logs go to ~/.cache/pip/log.txt.", "Where does pip write logs?", 1.0),
        ("path", "pip writes a log when it fails.", "Where does pip write logs?", 0.0),
        ("number", "It listens on port 5000.", "What port does it use?", 1.0),
        ("number", "It listens on a local port.", "What port does it use?", 0.0),
        ("option", "Pass --no-color to turn them off.", "Which option?", 1.0),
        ("option", "Colours can be turned off.", "Which option?", 0.0),
        ("named", "The report shows the F1 score.", "Which score does it show?", 1.0),
        ("named", "The report shows a score.", "Which score does it show?", 0.0),
        ("", "Anything at all.", "What is it?", 0.5),
    ],
)
def test_type_match(kind: str, text: str, question: str, expected: float) -> None:
    assert signals.type_match(kind, text, question) == expected


def test_topic_sentences_and_key_terms() -> None:
    assert signals.asks_how_or_why("How do I descale the kettle?")
    assert not signals.asks_how_or_why("What is descaling?")
    assert signals.defines_subject("Descaling is an important part of caring for it.")
    assert not signals.defines_subject("It is recommended that you descale monthly.")
    assert not signals.defines_subject("The file is written to ~/.cache.")
    # the rarest word, never what a contraction leaves behind
    assert signals.rarest({"shouldn": 9.0, "t": 9.0, "vinegar": 4.0}) == "vinegar"
    assert signals.rarest({"a": 1.0, "c": 2.0, "b": 2.0}) == "b"
    assert signals.rarest({}) == ""


@pytest.mark.parametrize(
    ("passage", "api"),
    [
        ("prepare_request(request: Request) → PreparedRequest\n\nPrepares ...", True),
        ("class flask.Config(root_path, defaults=None)\n\nWorks like a dict.", True),
        ("exception attrs.exceptions.PythonTooOldError\n\nRaised when ...", True),
        ("attrs.frozen\n\nAn alias.", True),
        ("Parameters: nwalkers (int) – The number of walkers.", False),
        ("Description: The project is active.", False),
        ("Timeouts\n\nMost requests should have a timeout attached.", False),
        ("Bloom for 30 s.", False),
    ],
)
def test_api_passages_start_with_a_signature(passage: str, api: bool) -> None:
    assert signals.is_api(passage) is api


def test_autodoc_fields() -> None:
    assert signals.is_field("Parameters: name – The name of the plugin.")
    assert signals.is_field("Return type: Response")
    assert signals.is_field("参数： name")
    assert not signals.is_field("The parameters: name and value.")
    assert not signals.is_field("Returns are processed in order.")


def test_defaults_and_program_output() -> None:
    assert signals.says_default(
        "By default, requests do not time out unless a timeout value is set."
    )
    assert not signals.says_default("Pass timeout=5 to requests.get.")
    assert signals.is_output('Traceback (most recent call last):\n  File "<stdin>"')
    assert signals.is_output("click.exceptions.UsageError: Missing argument.")
    assert not signals.is_output("Set a timeout on every request.")
