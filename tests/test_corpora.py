"""The extension on real third-party documentation (``../shared/corpora``).

Each corpus is built twice in a subprocess, without and with
``sphinx_ragcite``; the extension must add no warnings and must anchor every
passage it indexes in the page its URL names. Slow: select or deselect with
``-m corpora``.
"""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from benchmarks import _corpora

from helpers.anchors import check_anchors
from helpers.builds import Builds, Built
from helpers.repo import REPO

pytestmark = [
    pytest.mark.corpora,
    pytest.mark.skipif(
        not _corpora.corpora_available(),
        reason=(
            "third-party corpora not found: expected shared/corpora next to the "
            f"repository or set {_corpora.ENV_VAR}"
        ),
    ),
]

#: Lower bounds on passages (click-docs gave 473, requests-docs 372 when
#: written; 688 and 516 once each API object became a passage of its own; the
#: packaging guide 1,252); a large drop means the chunker lost content.
MIN_PASSAGES = {"click-docs": 400, "requests-docs": 300, "packaging-guide": 1000}
PID = re.compile(r"^ch[0-9]+-sec[0-9]+-p[0-9]+$")


class Build:
    """One build of the corpus (the session's, shared: see ``Builds.corpus``)."""

    def __init__(self, built: Built) -> None:
        assert built.origin is not None
        self.root = built.origin
        self.outdir = built.outdir
        self.stderr = built.warnings

    def problems(self) -> Counter[str]:
        """Warning/error lines, with this build's temporary paths removed."""
        return _corpora.problems(self.stderr, [self.root])


class CorpusBuilds:
    def __init__(self, name: str, builds: Builds) -> None:
        self.name = name
        self.without = Build(builds.corpus(name, with_ragcite=False))
        self.with_ = Build(builds.corpus(name, with_ragcite=True))
        self.outdir = self.with_.outdir
        index = self.outdir / "_ragcite"
        self.manifest = json.loads((index / "manifest.json").read_text("utf-8"))
        passages = index / self.manifest["files"]["passages"]
        self.records = [
            json.loads(line)
            for line in passages.read_text("utf-8").splitlines()
            if line.strip()
        ]


@pytest.fixture(scope="module", params=_corpora.CORPORA)
def corpus(request: pytest.FixtureRequest, builds: Builds) -> CorpusBuilds:
    name: str = request.param
    if _corpora.corpus_path(name) is None:
        pytest.skip(f"corpus {name} not found in {_corpora.corpora_dir()}")
    for module in _corpora.CORPUS_DEPS[name]:
        pytest.importorskip(module, reason=f'{name} needs it: pip install ".[corpora]"')
    return CorpusBuilds(name, builds)


def test_no_new_warnings(corpus: CorpusBuilds) -> None:
    without = corpus.without.problems()
    with_ = corpus.with_.problems()
    added = with_ - without
    removed = without - with_
    assert not added, f"{corpus.name}: new with sphinx_ragcite: {sorted(added)}"
    assert not removed, f"{corpus.name}: gone with sphinx_ragcite: {sorted(removed)}"


def test_manifest_counts(corpus: CorpusBuilds) -> None:
    counts = corpus.manifest["counts"]
    assert counts["passages"] == len(corpus.records)
    assert counts["passages"] >= MIN_PASSAGES[corpus.name]
    # Every source page (Sphinx copies each to _sources/) yields passages,
    # but for pages of a title and a toctree only (the packaging guide has 9).
    sources = corpus.outdir / "_sources"
    indexed = {r["docname"] for r in corpus.records}
    empty = []
    for path in sources.rglob("*.txt"):
        docname = path.relative_to(sources).as_posix().rsplit(".", 2)[0]
        if docname not in indexed:
            assert only_navigation(path.read_text("utf-8")), docname
            empty.append(docname)
    assert counts["documents"] == len(indexed)
    assert len(indexed) + len(empty) == len(list(sources.rglob("*.txt")))


def only_navigation(source: str) -> bool:
    """Whether a reST/MyST page holds nothing but titles, labels and toctrees."""
    lines = source.splitlines()
    toctree = ""  # "rst" or "md" while inside one
    for i, line in enumerate(lines):
        stripped = line.strip()
        if toctree == "md":
            toctree = "" if stripped == "```" else "md"
            continue
        if toctree == "rst" and (not stripped or line[0].isspace()):
            continue
        toctree = ""
        if stripped.startswith(".. toctree::"):
            toctree = "rst"
        elif stripped.startswith("```{toctree}"):
            toctree = "md"
        elif not stripped or stripped.startswith((".. _", "(", "#")):
            continue
        elif len(set(stripped)) == 1 and not stripped.isalnum():
            continue  # a title's over- or underline
        elif i + 1 < len(lines) and len(set(lines[i + 1].strip())) == 1:
            continue  # a title
        else:
            return False
    return True


def test_passage_ids(corpus: CorpusBuilds) -> None:
    ids = [r["passage_id"] for r in corpus.records]
    bad = [pid for pid in ids if not PID.match(pid)]
    assert not bad, f"malformed ids: {bad[:10]}"
    dupes = [pid for pid, n in Counter(ids).items() if n > 1]
    assert not dupes, f"duplicate ids: {dupes[:10]}"


def test_every_passage_anchored_once(corpus: CorpusBuilds) -> None:
    pages: dict[str, str] = {}
    wrong = []
    for record in corpus.records:
        pid = record["passage_id"]
        page, _, anchor = record["url"].partition("#")
        assert anchor == pid, record["url"]
        if page not in pages:
            pages[page] = (corpus.outdir / page).read_text("utf-8")
        count = pages[page].count(f'id="{pid}"')
        if count != 1:
            wrong.append(f"{record['url']} x{count}: {record['text'][:60]!r}")
    assert not wrong, f"{len(wrong)} passages not anchored exactly once:\n" + (
        "\n".join(wrong[:20])
    )


def test_anchors_land_where_passages_start(corpus: CorpusBuilds) -> None:
    """Each anchor is on the element whose text starts the passage's text."""
    records = check_anchors(corpus.outdir)
    assert not [r["passage_id"] for r in records if "\x00" in r["text"]]


#: Questions about click's docs with gold passage IDs (benchmarks/click_qa.jsonl,
#: scored by benchmarks/corpora_retrieval.py).
CLICK_QA = REPO / "benchmarks" / "click_qa.jsonl"


@pytest.mark.parametrize("corpus", ["click-docs"], indirect=True)
def test_click_qa_matches_the_build(corpus: CorpusBuilds) -> None:
    """Gold IDs exist in a fresh build and each answer is in a gold passage."""
    from sphinx_ragcite.evaluate import evaluate_retrieval, load_qa
    from sphinx_ragcite.retrieval.site import Site

    questions = load_qa(CLICK_QA)
    answerable = [q for q in questions if q.answer is not None]
    assert len(answerable) >= 40
    assert len({q.question for q in questions}) == len(questions)
    texts = {r["passage_id"]: r["text"] for r in corpus.records}
    for q in answerable:
        assert q.passage_ids, q.question
        missing = [pid for pid in q.passage_ids if pid not in texts]
        assert not missing, (q.question, missing)
        assert any(q.answer in texts[pid] for pid in q.passage_ids), q.question
    for q in questions:
        if q.answer is None:
            assert not q.passage_ids, q.question
    # Retrieval finds them: 0.94 when written; a drop means chunking or
    # ranking got worse on real docs.
    site = Site.load(corpus.outdir)
    hybrid = evaluate_retrieval(site, questions, ("hybrid",))["hybrid"]
    assert hybrid["recall@10"] >= 0.85, hybrid
