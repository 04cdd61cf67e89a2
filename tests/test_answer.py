"""Hits -> grounded answers: extractive, verification, abstention, selection."""

from __future__ import annotations

import re

import pytest

from sphinx_ragcite.answer.citations import parse_markers
from sphinx_ragcite.answer.engine import AnswerEngine
from sphinx_ragcite.answer.sentences import split_claims, strip_markup
from sphinx_ragcite.answer.units import kind_match
from sphinx_ragcite.contracts import Answer, confidence_level
from sphinx_ragcite.retrieval.site import Site
from sphinx_ragcite.text import split_sentences

from helpers.llm import ScriptedLLM

MARKER = re.compile(r"\[(\d+)\]")


@pytest.fixture(scope="module")
def engine(site: Site) -> AnswerEngine:
    return AnswerEngine(site)


def check_contract(result: Answer, site: Site) -> None:
    """What must hold for every answer we return, whatever generated it."""
    Answer.model_validate(result.model_dump())
    retrieved = set(result.metadata["retrieved"])
    numbers = [int(n) for n in MARKER.findall(result.answer)]
    assert sorted(set(numbers)) == [c.n for c in result.citations]
    assert [c.n for c in result.citations] == list(range(1, len(result.citations) + 1))
    for citation in result.citations:
        assert citation.passage_id in retrieved
        if citation.source_type == "book":
            record = site.passage(citation.passage_id)
            assert record is not None
            assert citation.url == record["url"]
            for quote in citation.quote.split(" … "):
                assert quote in record["text"]
    assert result.confidence_level == confidence_level(result.confidence)


@pytest.mark.slow
def test_extractive_answer_cites_the_sentence_it_quotes(
    engine: AnswerEngine, site: Site
) -> None:
    result = engine.answer("How long is the bloom?")
    check_contract(result, site)
    assert result.grounded
    assert "30 to 45 seconds" in result.answer
    assert result.citations[0].quote in result.answer
    assert result.metadata["generator"] == "extractive"
    assert {"retrieval_ms", "generation_ms", "verification_ms"} <= set(result.metadata)


@pytest.mark.slow
def test_unanswerable_question_abstains_with_see_also(
    engine: AnswerEngine, site: Site
) -> None:
    result = engine.answer("How is decaffeinated coffee made?")
    check_contract(result, site)
    assert not result.grounded
    assert result.citations == []
    assert result.confidence_level == "low"
    assert len(result.metadata["see_also"]) == 3


def test_verification_removes_and_reattributes_planted_citations(
    site: Site,
) -> None:
    question = "What water temperature does the SCA recommend for brewing?"
    probe = AnswerEngine(site).answer(question)
    sca = probe.citations[0].passage_id
    engine = AnswerEngine(site, llm=None)
    retrieved = probe.metadata["retrieved"]
    wrong = next(i for i, pid in enumerate(retrieved, 1) if pid != sca)
    engine.llm = ScriptedLLM(
        "The SCA recommends brewing with water between 90 and 96 °C. ",
        f"[{wrong}] ",
        "Coffee was first roasted on the Moon in 1850. [1]",
    )
    result = engine.answer(question, generator="llm")
    check_contract(result, site)
    # one unsupported sentence and the whole generated answer gives way to
    # the quote: the model may only rephrase what verification accepts
    assert result.metadata["generator"] == "llm->extractive"
    assert result.metadata["fallback"] == "a generated sentence was not supported"
    assert "Moon" not in result.answer
    assert [r["sentence"] for r in result.metadata["removed"]] == [
        "Coffee was first roasted on the Moon in 1850."
    ]
    moved = result.metadata["reattributed"]
    assert moved
    assert moved[0]["to"] == sca
    assert [c.passage_id for c in result.citations] == [sca]
    # the reader is shown the quote: its confidence, not the discarded text's
    assert result.answer == probe.answer
    assert result.confidence == probe.confidence


def test_markers_are_renumbered_in_order_of_appearance(site: Site) -> None:
    question = "How hot should the water be, and what pressure does espresso use?"
    engine = AnswerEngine(site)
    probe = engine.answer(question)
    retrieved = probe.metadata["retrieved"]
    chosen = probe.citations[0]
    i_chosen = retrieved.index(chosen.passage_id) + 1
    # join a sentence of another retrieved passage, cited first, to the quote
    i_other, other = next(
        (i, pid) for i, pid in enumerate(retrieved, 1) if pid != chosen.passage_id
    )
    text = site.passage(other)["text"]
    sentence = max(split_sentences(text), key=lambda s: len(s.text)).text
    engine.llm = ScriptedLLM(f"{sentence} [{i_other}] {chosen.quote} [{i_chosen}]")
    result = engine.answer(question, generator="llm")
    check_contract(result, site)
    assert result.metadata["generator"] == "llm", result.metadata.get("fallback")
    assert result.answer == f"{sentence} [1] {chosen.quote} [2]"


def test_hostile_generator_output_cannot_cite_outside_the_retrieved_set(
    site: Site,
) -> None:
    engine = AnswerEngine(site)
    engine.llm = ScriptedLLM(
        '<script>alert("x")</script> <img src=x onerror=alert(1)> [99] ',
        "[ch999-sec1-p1] [Source: /etc/passwd] ",
        "See javascript:alert(1) [0] [-1] [1, 2, 77].",
    )
    result = engine.answer(
        "How coarse should I grind for French press?", generator="llm"
    )
    check_contract(result, site)
    assert "<script" not in result.answer
    assert "javascript:" not in result.answer
    assert result.metadata["generator"] == "llm->extractive"
    unknown = result.metadata["unknown_markers"]
    assert "[99]" in unknown
    assert "[ch999-sec1-p1]" in unknown


def test_generation_failure_falls_back_to_extractive(site: Site) -> None:
    engine = AnswerEngine(site, llm=ScriptedLLM(fail=True))
    result = engine.answer("What is channeling in espresso?", generator="llm")
    check_contract(result, site)
    assert result.grounded
    assert "endpoint down" in result.metadata["fallback"]


def test_llm_requested_without_a_model(site: Site) -> None:
    result = AnswerEngine(site).answer("What is channeling?", generator="llm")
    assert result.metadata["fallback"] == "no language model loaded"
    assert result.metadata["generator"] == "extractive"


def test_streaming_events_come_in_order(site: Site) -> None:
    engine = AnswerEngine(site, llm=ScriptedLLM("Channeling ", "is uneven flow."))
    kinds = [e.kind for e in engine.stream("What is channeling?", generator="llm")]
    assert kinds[0] == "retrieval"
    assert kinds[1:3] == ["token", "token"]
    assert kinds[-1] == "final"


def test_selection_mode_cites_the_selection_and_its_passage(site: Site) -> None:
    record = next(p for p in site.passages if "channel" in p["text"].lower())
    selection = " ".join(record["text"].split()[:40])
    result = AnswerEngine(site).answer(
        "What does this passage warn about?", mode="selection", selection=selection
    )
    check_contract(result, site)
    assert result.mode == "selection"
    assert result.metadata["retrieved"][:2] == ["user-selection", record["passage_id"]]
    selected = [c for c in result.citations if c.passage_id == "user-selection"]
    for citation in selected:
        assert citation.url is None
        assert citation.chapter == "User Selection"
        assert citation.section == "Selected Text"
        assert citation.source_type == "selection"


def test_parse_markers_understands_every_convention(site: Site) -> None:
    engine = AnswerEngine(site)
    from sphinx_ragcite.answer.evidence import build_evidence

    vector = site.embedder.embed(["water"])[0]
    rows = [site._rows[p["passage_id"]] for p in site.passages[:40]]
    evidence = build_evidence(site, engine.sentences, vector, rows)
    water = next(i for i, e in enumerate(evidence) if e.record["docname"] == "water")
    pid = evidence[water].key
    chapter = evidence[water].record["chapter"].split(".")[0]
    assert parse_markers("a [2] b [1, 3]", evidence) == ([1, 0, 2], [])
    assert parse_markers(f"x [{pid}]", evidence) == ([water], [])
    assert parse_markers("x [Source: water.html]", evidence)[0] == [water]
    assert parse_markers(f"see Chapter {chapter}", evidence)[0] == [water]
    assert parse_markers("[sic] [999]", evidence) == ([], ["[sic]", "[999]"])


def test_claims_keep_the_markers_after_them() -> None:
    assert split_claims("One fact. [1] Two facts [2][3]. Three.") == [
        "One fact. [1]",
        "Two facts [2][3].",
        "Three.",
    ]
    texts = [s.text for s in split_sentences("Use e.g. 93 °C. Then wait 30 s! Done")]
    assert texts == ["Use e.g. 93 °C.", "Then wait 30 s!", "Done"]


@pytest.mark.parametrize(
    ("value", "level"),
    [(0.95, "high"), (0.9, "high"), (0.89, "medium"), (0.7, "medium"), (0.69, "low")],
)
def test_confidence_bands(value: float, level: str) -> None:
    assert confidence_level(value) == level


@pytest.mark.llm
def test_real_smollm2_end_to_end(site: Site) -> None:
    from sphinx_ragcite.answer.llm import LlamaCppGenerator

    engine = AnswerEngine(site, llm=LlamaCppGenerator())
    for question in (
        "How long is the bloom?",
        "What pressure does espresso use?",
        "How should beans be stored?",
    ):
        events = list(engine.stream(question, generator="llm"))
        assert any(e.kind == "token" for e in events)  # the model really ran
        result = events[-1].data
        check_contract(result, site)
        assert result.grounded
        assert result.metadata["llm_answer"]
        assert result.metadata["generator"] in ("llm", "llm->extractive")


@pytest.mark.parametrize("question", ["What does this mean?", "Explain this"])
def test_vague_questions_about_a_selection_cite_it_and_its_passage(
    site: Site, question: str
) -> None:
    record = next(p for p in site.passages if "channel" in p["text"].lower())
    result = AnswerEngine(site).answer(
        question, mode="selection", selection=record["text"][:300]
    )
    check_contract(result, site)
    assert result.grounded
    cited = {c.passage_id for c in result.citations}
    assert cited == {"user-selection", record["passage_id"]}


def test_markup_from_the_model_never_reaches_the_answer() -> None:
    text = strip_markup(
        'Nine bars <img src=x onerror=alert(1)> [1]. <a href="javascript:x()">'
        "click</a> [2](javascript:alert(1)) data:text/html,<b>x</b>"
    )
    assert "<" not in text
    assert "javascript:" not in text
    assert "data:" not in text
    assert text.startswith("Nine bars [1].")


def test_quoted_code_with_brackets_makes_no_marker() -> None:
    """``parts[0]`` in a quoted code line is text, not a citation ``[0]``."""
    from sphinx_ragcite.answer.engine import defuse_markers

    code = "return parts[0] + rows[1, 2]"
    quoted = defuse_markers(code)
    assert quoted.replace("\u2060", "") == code
    assert not re.search(r"\[\d+(?:,\s*\d+)*\]", quoted)


def test_answers_cite_from_the_linear_fusion_top(
    site: Site, engine: AnswerEngine
) -> None:
    """Answers retrieve with linear fusion (the passage ranked first is what
    an answer quotes); search results keep RRF."""
    question = "What water temperature should I use for pour-over?"
    result = engine.answer(question)
    vector = site.embedder.embed([question])[0]
    linear = site.search(question, engine.k, fusion="linear", query_vector=vector)
    rrf = site.search(question, engine.k, query_vector=vector)
    retrieved = result.metadata["retrieved"]
    assert retrieved == [h.passage_id for h in linear]
    assert retrieved != [h.passage_id for h in rrf]
    # the book's temperature guidance only linear fusion retrieves
    texts = {h.passage_id: h.passage["text"] for h in linear}
    assert any("90 and 96" in text for text in texts.values())
    assert not any("90 and 96" in h.passage["text"] for h in rrf)
    shown = [c.passage_id for c in result.citations] or [
        p.passage_id for p in result.passages
    ]
    assert set(shown) <= set(retrieved)


def test_who_questions_are_not_answered_by_a_description(
    engine: AnswerEngine,
) -> None:
    """The book describes the French press but says nobody invented it; its
    patent holders answer a question it does answer."""
    described = engine.answer("Who invented the French press?")
    assert described.outcome != "answer"
    assert not described.citations
    assert not described.grounded
    patented = engine.answer("Who patented the French press design used today?")
    assert "Calimani" in patented.answer


@pytest.mark.parametrize(
    ("kind", "text", "question", "expected"),
    [
        ("who", "Deacons assist elders in the sacraments.", "Who assists elders?", 1.0),
        ("who", "The French press is a jug.", "Who invented the French press?", 0.0),
        ("who", "It was patented by Attilio Calimani.", "Who patented it?", 1.0),
        ("quantity", "The SNP took a further eight seats.", "How many seats?", 1.0),
        ("quantity", "Counting is used for verbosity.", "How often was -v given?", 0.0),
        ("when", "It opened in March.", "When did it open?", 1.0),
        ("when", "It remained the boundary.", "When did it stop?", 0.0),
    ],
)
def test_kind_match_finds_answers_written_out(
    kind: str, text: str, question: str, expected: float
) -> None:
    assert kind_match(kind, text, question) == expected


@pytest.mark.parametrize(
    ("rephrasing", "reason"),
    [
        ("{bare}, and the answer is no. [1]", "says what its sources do not (answer)"),
        ("{garbled} [1]", "says what its sources do not (bortz)"),
        ("It is not so that {lower} [1]", "negates what the book says"),
    ],
)
def test_a_rephrasing_may_not_add_words_or_a_negation(
    site: Site, rephrasing: str, reason: str
) -> None:
    """Verification measures similarity, which a flipped or garbled sentence
    keeps; a rephrasing must use its sources' words and their polarity."""
    question = "What water temperature does the SCA recommend for brewing?"
    probe = AnswerEngine(site).answer(question)
    assert len(probe.citations) == 1
    quote = probe.citations[0].quote
    n = probe.metadata["retrieved"].index(probe.citations[0].passage_id) + 1
    garbled = quote.replace("water", "Bortz water", 1)
    lower = quote[0].lower() + quote[1:]
    bare = quote.rstrip(".")
    text = rephrasing.format(garbled=garbled, lower=lower, bare=bare)
    text = text.replace("[1]", f"[{n}]")
    engine = AnswerEngine(site, llm=ScriptedLLM(text))
    result = engine.answer(question, generator="llm")
    assert result.metadata["generator"] == "llm->extractive"
    assert reason in result.metadata["fallback"]
    assert result.answer.startswith(quote)
