"""Near-topic unanswerable questions: each dev set's book built without its gold pages.

Why (issue 25, item 4): the answer gate has seen few unanswerable questions
(about 150 over all dev sets), and hand-written ones tend to be far from the
book's topics. Every answerable dev question becomes a truly unanswerable one,
as near-topic as it gets, in a build of its book that leaves out the pages
holding its gold passages.

How: the documents that hold gold passages of a set
(``devsets.LOADERS``) are dealt into F folds (``assign_folds``:
ordered by a stable hash of the docname, round-robin). The book is built F
more times, each with one fold's documents excluded through the extension's
``ragcite_exclude`` (docname patterns, appended to the copied ``conf.py``:
Sphinx ignores ``-D`` for a tuple-valued option). Each build starts from a
copy of the full build's prepared sources and of its embedding caches
(``ragcite-*.npz`` in its doctrees folder), so no passage is embedded again,
and is reused (``_harness.cached_build``) while the full build's key and the
fold are unchanged. A question becomes unanswerable in fold f when all its
gold passages (mapped to docnames through the full build's passages) lie on
fold f's documents; it is dropped, and counted, when one of its gold answer
strings (``devsets.norm``) still occurs in a passage of that build.

SQuAD (:data:`BY_SECTION`) is folded by section, not by page (issue 36): its
pages are whole Wikipedia articles, and a book without the article has
nothing left on the question's subject (off-topic, not near-topic). Its
units are ``docname#section title``; a fold cuts those sections' paragraphs
from the copied reST and keeps their headings (:func:`drop_sections`), so
the rest of the article stays in the book. ``near_topic_units.py`` measures
both ways (results/near_topic_units.json): page folds made 246 questions
whose best passage (MiniLM cosine, mean 0.237) was never on their article,
and the engine answered 0.4% of them; section folds make 193 (107 more are
dropped, their answer string still being in the article), mean best cosine
0.452, best passage on their article for 89%, answered 17.6%.

Loading them (for training and the benchmark)::

    from benchmarks import near_topic
    for nts in near_topic.load("click"):   # NearTopicSet, a DevSet
        nts.name    # "click~near0"
        nts.group   # "click": keep it with its set (leave-one-set-out)
        nts.items   # unanswerable Items (same ids as in the set)

Run from the repository root::

    .venv/bin/python benchmarks/near_topic.py                # every set, build
    .venv/bin/python benchmarks/near_topic.py --sets click --folds 3 --answer

``--answer`` also answers every near-topic question with the extractive
engine and reports how often it still answers with a citation. The question
lists (and those figures) go to ``benchmarks/results/near_topic.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks import _corpora, devsets
from benchmarks._harness import (
    RESULTS,
    cached_build,
    digest,
    envelope,
    fmt,
    git_commit,
    git_dirty,
    read_passages,
    share,
    table,
    write_result,
)

OUT = RESULTS / "near_topic.json"
FOLDS = 3
#: Sets built with fewer folds because their builds are slow (none so far).
FOLDS_BY_SET: dict[str, int] = {}
#: Options of a set's build beyond its sources' ``conf.py``, as
#: ``devsets``' loader passes them (a corpus set's come from
#: ``_corpora.BUILD_OPTIONS``: :func:`fold_options`).
BUILD_OPTIONS: dict[str, tuple[str, ...]] = {
    "squad": ("-D", "extensions=sphinx_ragcite"),
}
#: Sets whose folds leave out sections, not pages (:func:`drop_sections`).
#: SQuAD's pages are whole Wikipedia articles: a fold without an article's
#: page makes its questions off-topic (nothing on the subject is left), one
#: without a section (five paragraphs) leaves the rest of the article, so
#: they stay near-topic (issue 36).
BY_SECTION = frozenset({"squad"})
#: Part of every fold build's key: change it when what is done to the copy changes.
RECIPE = "near_topic/1: conf.py += ragcite_exclude; doctrees seeded with ragcite-*.npz"
#: What a section fold does instead (its key says so).
SECTION_RECIPE = "near_topic/section/1: the sections' paragraphs cut from the reST"
_CONF_LINE = "\nragcite_exclude = {!r}  # added by benchmarks/near_topic.py\n"
#: A SQuAD book's section label (``squad_to_sphinx.py``): where the section
#: before it ends.
_SQUAD_SECTION_LABEL = re.compile(r"^\.\. _a\d+-s\d+:\s*$")


@dataclass
class NearTopicSet(devsets.DevSet):
    """One fold: the book without the fold's documents, and the set's
    answerable questions that it no longer answers (as unanswerable items)."""

    #: the set it comes from: train and judge it with that set, never apart
    group: str = ""
    fold: int = 0
    folds: int = FOLDS
    #: the docnames left out of this build
    excluded: tuple[str, ...] = ()
    #: question id -> passages of this build that still hold a gold answer
    dropped: dict[str, list[str]] = field(default_factory=dict)


def assign_folds(docnames: set[str] | list[str], folds: int) -> list[tuple[str, ...]]:
    """*docnames* dealt into *folds* groups: ordered by SHA-256 (then name),
    round-robin; each group sorted. Deterministic across runs and machines."""
    order = sorted(
        set(docnames), key=lambda d: (hashlib.sha256(d.encode()).hexdigest(), d)
    )
    return [tuple(sorted(order[f::folds])) for f in range(folds)]


def unit_of(passage: dict[str, Any], by_section: bool) -> str:
    """What a fold leaves out that holds *passage*: its docname, or with
    *by_section* ``docname#section title``."""
    if by_section:
        return f"{passage['docname']}#{passage['section']}"
    return str(passage["docname"])


def gold_documents(
    devset: devsets.DevSet, passages: list[dict[str, Any]], by_section: bool = False
) -> dict[str, frozenset[str] | None]:
    """Answerable item id -> the units (docnames, or sections: :func:`unit_of`)
    of its gold passages (None when a gold ID is not in the build or it has
    none: it cannot be placed)."""
    docname = {p["passage_id"]: unit_of(p, by_section) for p in passages}
    out: dict[str, frozenset[str] | None] = {}
    for item in devset.items:
        if not item.answerable:
            continue
        docs = {docname.get(pid) for pid in item.gold_ids}
        out[item.id] = None if not docs or None in docs else frozenset(docs)  # type: ignore[arg-type]
    return out


def _source_folder(full: Path) -> Path:
    """The full build's prepared source folder (its shallowest ``conf.py``),
    relative to its ``src``."""
    src = full / "src"
    confs = sorted(src.rglob("conf.py"), key=lambda p: (len(p.parts), str(p)))
    if not confs:
        raise FileNotFoundError(f"no conf.py under {src}")
    return confs[0].parent.relative_to(src)


def fold_options(name: str) -> tuple[str, ...]:
    """The options set *name*'s full build was made with, for its folds: a
    corpus set's (``xuance_zh``'s ``-D language=zh_CN``) included, or its
    folds would be built, and their index cut, as another language."""
    if name in devsets.CORPUS_SETS:
        return _corpora.BUILD_OPTIONS.get(devsets.CORPUS_SETS[name][0], ())
    return BUILD_OPTIONS.get(name, ())


def drop_sections(srcdir: Path, units: tuple[str, ...]) -> None:
    """The paragraphs of each ``docname#title`` unit cut from its page's reST
    (a SQuAD book's layout). The section's label and heading stay: the
    section keeps its number, so the sections after it keep their passage
    IDs, and none of the left-out section's IDs is built. Raises ValueError
    when a title is not a section heading of its page."""
    titles: dict[str, set[str]] = {}
    for unit in units:
        doc, _, title = unit.partition("#")
        titles.setdefault(doc, set()).add(title)
    for doc, wanted in sorted(titles.items()):
        path = srcdir / f"{doc}.rst"
        lines = path.read_text("utf-8").splitlines(keepends=True)
        out: list[str] = []
        found: set[str] = set()
        dropping = False
        i = 0
        while i < len(lines):
            line, after = lines[i], lines[i + 1] if i + 1 < len(lines) else ""
            underline = after.strip()
            if line.strip() and underline and set(underline) == {"-"}:
                dropping = line.strip() in wanted
                found.update({line.strip()} & wanted)
                out += [line, after, "\n"]
                i += 2
                continue
            if _SQUAD_SECTION_LABEL.match(line):
                dropping = False
            if not dropping:
                out.append(line)
            i += 1
        if found != wanted:
            raise ValueError(f"{path}: no section headed {sorted(wanted - found)}")
        path.write_text("".join(out), "utf-8")


def build_fold(
    devset: devsets.DevSet,
    fold: int,
    excluded: tuple[str, ...],
    *,
    rebuild: bool = False,
    by_section: bool = False,
    suffix: str = "near",
) -> tuple[Path, float | None]:
    """The set's book built without *excluded*: (html, seconds or None if reused).

    Lives in ``results/.sites/<set>~<suffix><fold>/``; its key is the full
    build's key, the exclusion and :data:`RECIPE` (:data:`SECTION_RECIPE`
    *by_section*: *excluded* are ``docname#title`` units whose paragraphs
    are cut from the sources, :func:`drop_sections`).
    """
    full = devset.site.parent
    stamp = json.loads((full / "stamp.json").read_text("utf-8"))
    relative = _source_folder(full)
    key = digest([stamp["key"].encode(), RECIPE.encode(), *map(str.encode, excluded)])
    if by_section:
        key = digest([key.encode(), SECTION_RECIPE.encode()])
    options = fold_options(devset.name)
    if options:  # folds once built without them are stale; the others stay
        key = digest([key.encode(), *map(str.encode, options)])

    def prepare(work: Path) -> Path:
        shutil.copytree(full / "src", work, dirs_exist_ok=True)
        srcdir = work / relative
        if by_section:
            drop_sections(srcdir, excluded)
        else:
            with (srcdir / "conf.py").open("a", encoding="utf-8") as conf:
                conf.write(_CONF_LINE.format(list(excluded)))
        doctrees = work.parent / "doctrees"  # cached_build's -d
        doctrees.mkdir(parents=True, exist_ok=True)
        for cache in sorted((full / "doctrees").glob("ragcite-*.npz")):
            shutil.copy2(cache, doctrees / cache.name)
        return srcdir

    return cached_build(
        f"{devset.name}~{suffix}{fold}",
        key,
        prepare,
        options=options,
        rebuild=rebuild,
    )


def near_topic_sets(
    devset: devsets.DevSet,
    folds: int = FOLDS,
    *,
    rebuild: bool = False,
    by_section: bool | None = None,
) -> list[NearTopicSet]:
    """*devset*'s near-topic folds, built (or reused); one per fold, in order.

    *by_section* (default: the set is in :data:`BY_SECTION`) leaves out
    sections instead of pages; the other choice than the set's own (for
    measuring it) is built as ``<set>~doc<fold>`` or ``<set>~sec<fold>``.
    """
    own = devset.name in BY_SECTION
    by_section = own if by_section is None else by_section
    suffix = "near" if by_section == own else ("sec" if by_section else "doc")
    passages = read_passages(devset.site)
    gold_docs = gold_documents(devset, passages, by_section)
    placed = {d for docs in gold_docs.values() if docs for d in docs}
    by_id = {item.id: item for item in devset.items}
    out = []
    for fold, excluded in enumerate(assign_folds(placed, folds)):
        site, seconds = build_fold(
            devset,
            fold,
            excluded,
            rebuild=rebuild,
            by_section=by_section,
            suffix=suffix,
        )
        built = read_passages(site)
        left = {unit_of(p, by_section) for p in built} & set(excluded)
        if left:
            raise RuntimeError(
                f"{site}: excluded documents still have passages: {left}"
            )
        texts = [(p["passage_id"], devsets.norm(p["text"])) for p in built]
        ids = {pid for pid, _ in texts}
        items, dropped = [], {}
        for item_id, docs in gold_docs.items():
            if not docs or not docs <= set(excluded):
                continue
            item = by_id[item_id]
            if item.gold_ids & ids:
                raise RuntimeError(f"{site}: gold of {item_id} still built")
            golds = [g for g in map(devsets.norm, item.answers) if g]
            still = [pid for pid, text in texts if any(g in text for g in golds)]
            if still:
                dropped[item_id] = still
            else:
                items.append(devsets.Item(item.id, item.question, frozenset(), ()))
        out.append(
            NearTopicSet(
                name=f"{devset.name}~{suffix}{fold}",
                kind=devset.kind,
                site=site,
                items=items,
                build_seconds=seconds,
                group=devset.name,
                fold=fold,
                folds=folds,
                excluded=excluded,
                dropped=dropped,
            )
        )
    return out


def load(
    name: str, folds: int | None = None, *, rebuild: bool = False
) -> list[NearTopicSet]:
    """Set *name*'s near-topic folds (its full build first, as ``LOADERS``).

    *rebuild* rebuilds the full book and the folds. Raises what the set's
    loader raises when it cannot be built.
    """
    devset = devsets.LOADERS[name](rebuild)
    return near_topic_sets(
        devset, folds or FOLDS_BY_SET.get(name, FOLDS), rebuild=rebuild
    )


# --------------------------------------------------------------------------
# The current engine on them ("before" for issue 25)


def answer_all(nts: NearTopicSet) -> list[dict[str, Any]]:
    """Each question answered by the extractive engine: did it still cite?"""
    from sphinx_ragcite.answer.engine import AnswerEngine
    from sphinx_ragcite.retrieval.site import Site

    engine = AnswerEngine(Site.load(nts.site))
    out = []
    for item in nts.items:
        answer = engine.answer(item.question, generator="extractive")
        out.append(
            {
                "id": item.id,
                "grounded": answer.grounded,
                "cited": [c.passage_id for c in answer.citations],
                "confidence": round(answer.confidence, 4),
                "band": answer.confidence_level,
            }
        )
    return out


# --------------------------------------------------------------------------


def summary(
    name: str, devset: devsets.DevSet, sets: list[NearTopicSet]
) -> dict[str, Any]:
    passages = read_passages(devset.site)
    by_section = name in BY_SECTION
    gold_docs = gold_documents(devset, passages, by_section)
    in_a_fold = sum(
        bool(docs) and any(docs <= set(s.excluded) for s in sets)
        for docs in gold_docs.values()
    )
    return {
        "folds": len(sets),
        "documents": len({unit_of(p, by_section) for p in passages}),
        "unit": "section" if by_section else "document",
        "answerable": len(gold_docs),
        "unplaced": sum(docs is None for docs in gold_docs.values()),
        "gold_in_one_fold": in_a_fold,
        "unanswerable_made": sum(len(s.items) for s in sets),
        "dropped_answer_elsewhere": sum(len(s.dropped) for s in sets),
        "build_seconds": [
            None if s.build_seconds is None else round(s.build_seconds, 1) for s in sets
        ],
        "sets": [
            {
                "name": s.name,
                "group": s.group,
                "fold": s.fold,
                "site": str(s.site),
                "excluded": list(s.excluded),
                "passages": len(read_passages(s.site)),
                "build_seconds": (
                    None if s.build_seconds is None else round(s.build_seconds, 1)
                ),
                "items": [{"id": i.id, "question": i.question} for i in s.items],
                "dropped": {k: v[:5] for k, v in s.dropped.items()},
            }
            for s in sets
        ],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sets", nargs="+", choices=devsets.SETS, default=list(devsets.SETS)
    )
    parser.add_argument(
        "--folds", type=int, help=f"folds per set (default {FOLDS}, or per set)"
    )
    parser.add_argument("--rebuild", action="store_true", help="ignore cached builds")
    parser.add_argument(
        "--answer",
        action="store_true",
        help="answer the questions with the extractive engine (issue 25's before)",
    )
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)

    began = time.perf_counter()
    results: dict[str, Any] = {}
    rows, before = [], []
    for name in args.sets:
        try:
            devset = devsets.LOADERS[name](args.rebuild)
        except (FileNotFoundError, RuntimeError, subprocess.CalledProcessError) as e:
            print(f"{name}: cannot build: {e}", file=sys.stderr)
            return 2
        folds = args.folds or FOLDS_BY_SET.get(name, FOLDS)
        sets = near_topic_sets(devset, folds, rebuild=args.rebuild)
        entry = results[name] = summary(name, devset, sets)
        rows.append(
            [
                name,
                str(entry["folds"]),
                "/".join(str(len(s.excluded)) for s in sets)
                + f" of {entry['documents']}",
                f"{entry['gold_in_one_fold']} of {entry['answerable']}",
                "/".join(str(len(s.items)) for s in sets)
                + f" = {entry['unanswerable_made']}",
                str(entry["dropped_answer_elsewhere"]),
                "/".join(
                    "reused" if t is None else f"{t:.0f}"
                    for t in entry["build_seconds"]
                ),
            ]
        )
        print(
            table(
                [
                    "set",
                    "folds",
                    "excluded docs",
                    "in one fold",
                    "unanswerable",
                    "dropped",
                    "build s",
                ],
                rows[-1:],
            ),
            flush=True,
        )
        if args.answer:
            answered = grounded = 0
            for s, record in zip(sets, entry["sets"], strict=True):
                record["answers"] = answer_all(s)
                answered += sum(bool(a["cited"]) for a in record["answers"])
                grounded += sum(a["grounded"] for a in record["answers"])
            n = entry["unanswerable_made"]
            entry["before"] = {
                "questions": n,
                "cited": answered,
                "grounded": grounded,
                "cited_share": share(answered, n),
            }
            before.append(
                [
                    name,
                    str(n),
                    str(answered),
                    fmt(share(answered, n), ""),
                    str(grounded),
                ]
            )
    head = ["set", "folds", "excluded docs", "in one fold", "unanswerable"]
    head += ["dropped", "build s"]
    text = table(head, rows)
    if before:
        text += "\n\nExtractive engine on the near-topic (unanswerable) questions:\n"
        text += table(["set", "questions", "cited", "cited share", "grounded"], before)
    total = time.perf_counter() - began
    print()
    print(text)
    print(f"\ntotal {total:.0f} s")
    payload = envelope(
        "near_topic",
        git_commit=git_commit(),
        uncommitted=git_dirty(),
        options={"sets": args.sets, "folds": args.folds, "answer": args.answer},
        total_seconds=round(total, 1),
        sets=results,
        table=text,
    )
    write_result(args.out, payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
