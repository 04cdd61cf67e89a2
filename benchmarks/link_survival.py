"""Do deep links made before an edit still land on their text after it?

Why: passage IDs are positions (``ch3-sec2-p4``), so inserting a paragraph,
a section or a chapter hands old IDs to other text. The build keeps a link
history and writes ``_ragcite/moved.js``; the widget follows it (see
``sphinx_ragcite/extension/link_history.py``). This script measures how often
that works.

It copies the example book, builds it, then applies a scripted series of
edits (paragraph inserted, section added, chapter inserted before the others,
paragraph edited, paragraph moved to another page, paragraph deleted, page
renamed; the widget follows links to a renamed page from the site's 404
page, see docs/explanation/passage-ids.md), with an
incremental build after each. After every build it follows every link of the
*original* build and of the *previous* build the way the widget does (the
moved map, else the anchor itself) and checks the text it lands on:

- unchanged text: the old passage's text is still in the book verbatim;
  the link must land on exactly that text (target: 100%);
- changed text: the passage was edited or re-chunked; the link counts as
  landing when it reaches a passage that now holds the old passage's first
  block (what the link showed at the top), or, when that block is gone too,
  the passage sharing the most words with the old text.

It also follows the links of the *current* build as if opened from outside
the site: an ID that changed meaning is ambiguous there (the widget sends it
to the text it first named and says so, with a link to what the anchor holds
now); opened from the site's own pages, links are never redirected.

The baseline, measured on the same builds, is the plain anchor with no map.

Then it times the history step alone (``links.update``) on a synthetic book
of ``--scale`` passages (80 random words each, 500 per document): the first
build, a build where every ID shifted, and one where 30% of passages were
edited; and the size of the history file.

Run (from the repository root)::

    .venv/bin/python benchmarks/link_survival.py

Results go to ``benchmarks/results/link_survival.json`` unless ``--out``.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urljoin

from benchmarks import _corpora
from benchmarks._harness import (
    RESULTS,
    envelope,
    read_passages,
    sphinx_build,
    table,
    write_result,
)
from sphinx_ragcite.extension.link_history import blocks, link_key

DEFAULT_OUT = RESULTS / "link_survival.json"
PREFIX = "globalThis.ragcite_moved="

Edit = tuple[str, str, Callable[[Path], None]]


def replace(path: str, old: str, new: str) -> Callable[[Path], None]:
    def apply(src: Path) -> None:
        file = src / path
        text = file.read_text("utf-8")
        if old not in text:
            raise SystemExit(f"edit script out of date: {old[:40]!r} not in {path}")
        file.write_text(text.replace(old, new, 1), "utf-8")

    return apply


def move_paragraph(src: Path) -> None:
    """Cut a paragraph from grinding.md and paste it into extraction.md."""
    grinding = (src / "grinding.md").read_text("utf-8")
    start = grinding.index("Neither geometry is simply better.")
    end = grinding.index("\n\n", start) + 2
    paragraph = grinding[start:end]
    (src / "grinding.md").write_text(grinding[:start] + grinding[end:], "utf-8")
    extraction = (src / "extraction.md").read_text("utf-8")
    at = extraction.index("## What dissolves, and in what order")
    (src / "extraction.md").write_text(
        extraction[:at] + paragraph + extraction[at:], "utf-8"
    )


def new_chapter(src: Path) -> None:
    (src / "history.rst").write_text(
        "A Short History\n===============\n\n"
        "Coffee reached Europe through the ports of Venice in the seventeenth\n"
        "century, and coffee houses spread from there to London and Vienna.\n",
        "utf-8",
    )
    replace("index.rst", "   beans\n", "   history\n   beans\n")(src)


def rename_page(src: Path) -> None:
    """brewing/immersion.md becomes brewing/steeping.md: every old URL is gone."""
    (src / "brewing" / "immersion.md").rename(src / "brewing" / "steeping.md")
    index = src / "brewing" / "index.rst"
    text = index.read_text("utf-8")
    text = text.replace("   immersion\n", "   steeping\n")
    index.write_text(text.replace(":doc:`immersion`", ":doc:`steeping`"), "utf-8")


EDITS: list[Edit] = [
    (
        "paragraph inserted",
        "a new first paragraph in Water > Brewing temperature",
        replace(
            "water.rst",
            "Brewing temperature\n-------------------\n\n",
            "Brewing temperature\n-------------------\n\n"
            "Before any numbers: use a thermometer once, so you know what your\n"
            "kettle really does when it clicks off. Many kettles switch off a few\n"
            "degrees short of the boil, and the water then cools by a degree or\n"
            "two every minute it stands with the lid open. Pour a cup of water,\n"
            "measure it straight away and again after one and two minutes, and\n"
            "write the three readings on a note stuck to the kettle; the numbers\n"
            "in the rest of this chapter mean more once you know your own.\n\n",
        ),
    ),
    (
        "section added",
        "a new section before Water > Brewing temperature",
        replace(
            "water.rst",
            ".. _water-temperature:\n",
            "Storing water\n-------------\n\n"
            "Keep brewing water in a clean, closed jug and use it within a day.\n\n"
            ".. _water-temperature:\n",
        ),
    ),
    ("chapter inserted", "a new chapter before Beans", new_chapter),
    (
        "paragraph edited",
        "three words changed in Tasting > How we taste coffee",
        replace(
            "tasting.md",
            "Pinch your nose while sipping and most of the\nflavour disappears.",
            "Pinch your nose while drinking and nearly all of the\nflavour disappears.",
        ),
    ),
    ("paragraph moved", "Grinding -> Extraction Science", move_paragraph),
    (
        "paragraph deleted",
        "Tasting > How we taste coffee, second paragraph",
        replace(
            "tasting.md",
            "Alongside taste and aroma, tasters pay attention to *body*",
            "Tasters pay attention to *body*",
        ),
    ),
    ("page renamed", "brewing/immersion.md -> brewing/steeping.md", rename_page),
]


def build(src: Path, out: Path, doctrees: Path, history: bool) -> None:
    options = ["-D", "ragcite_embeddings=0"]
    if not history:
        options += ["-D", "ragcite_link_history=none"]
    sphinx_build(src, out, *options, doctrees=doctrees)


def passages(out: Path) -> dict[str, dict[str, str]]:
    """Passage URL (page#id) -> its record."""
    return {r["url"]: r for r in read_passages(out)}


def moved(out: Path) -> dict[str, str]:
    """Old ID -> passage URL (a value may also name a block inside it)."""
    path = out / "_ragcite" / "moved.js"
    if not path.exists():
        return {}
    body = path.read_text("utf-8").strip()
    entries = json.loads(body[len(PREFIX) : -1])
    return {k: v[0] if isinstance(v, list) else v for k, v in entries.items()}


def words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def follow(url: str, site: dict[str, dict[str, str]], redirects: dict[str, str]) -> str:
    """The URL the widget ends on for an old link (see highlightFromHash)."""
    key = link_key(url)
    return urljoin("/", redirects[key]).lstrip("/") if key in redirects else url


def score(
    old: dict[str, dict[str, str]],
    site: dict[str, dict[str, str]],
    redirects: dict[str, str],
) -> dict[str, int]:
    texts = {r["text"]: url for url, r in site.items()}
    counts = dict.fromkeys(("same", "same_ok", "changed", "changed_ok"), 0)
    for url, record in old.items():
        landed = site.get(follow(url, site, redirects))
        if record["text"] in texts:
            counts["same"] += 1
            counts["same_ok"] += bool(landed and landed["text"] == record["text"])
            continue
        counts["changed"] += 1
        head = blocks(record["text"])[0]
        holders = [r for r in site.values() if head in blocks(r["text"])]
        if holders:
            counts["changed_ok"] += bool(landed and landed in holders)
            continue
        mine = words(record["text"])
        best = max(site.values(), key=lambda r: len(mine & words(r["text"])))
        counts["changed_ok"] += bool(landed and landed["url"] == best["url"])
    return counts


def pct(ok: int, n: int) -> str:
    return f"{100 * ok / n:.1f}% ({ok}/{n})" if n else "-"


def scale_cost(n: int) -> dict[str, float]:
    """Seconds of the history step at *n* passages, and the history's MiB."""
    import random
    import time

    from sphinx_ragcite.extension.link_history import LinkHistory, update
    from sphinx_ragcite.extension.passages.records import content_hash

    rng = random.Random(1)
    vocabulary = [f"w{i}" for i in range(20_000)]
    texts = [" ".join(rng.choices(vocabulary, k=80)) for _ in range(n)]

    def records(texts: list[str]) -> list[dict[str, str]]:
        return [
            {
                "passage_id": f"ch{i // 500}-sec{i // 50 % 10}-p{i % 50 + 1}",
                "docname": f"d{i // 500}",
                "url": f"d{i // 500}.html#p{i}",
                "text": text,
                "content_hash": content_hash(text),
            }
            for i, text in enumerate(texts)
        ]

    history = LinkHistory()
    result: dict[str, float] = {"passages": n}
    shifted = ["a new first paragraph", *texts]
    edited = [t + " edited" if rng.random() < 0.3 else t for t in shifted]
    for name, book in (("first_s", texts), ("shift_s", shifted), ("edit30_s", edited)):
        started = time.perf_counter()
        update(history, records(book))
        result[name] = round(time.perf_counter() - started, 2)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "links.json"
        history.save(path)
        result["history_mib"] = round(path.stat().st_size / 2**20, 1)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--scale", type=int, default=50_000)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="ragcite-links-"))
    rows: list[dict[str, object]] = []
    try:
        sites = {}
        for variant in ("history", "baseline"):
            sites[variant] = _corpora.prepare_example_book(work / variant, True)
        builds = {v: (work / v / "html", work / v / "doctrees") for v in sites}
        for variant, (out, doctrees) in builds.items():
            build(sites[variant], out, doctrees, history=variant == "history")
        original = passages(builds["history"][0])
        previous = original
        for step, (name, what, edit) in enumerate(EDITS, 1):
            site_now: dict[str, dict[str, str]] = {}
            result: dict[str, object] = {"step": step, "edit": name, "what": what}
            for variant, (out, doctrees) in builds.items():
                edit(sites[variant])
                build(sites[variant], out, doctrees, history=variant == "history")
                site = passages(out)
                redirects = moved(out)
                if variant == "history":
                    site_now = site
                    result["moved_entries"] = len(redirects)
                result[variant] = {
                    "from_original": score(original, site, redirects),
                    "from_previous": score(previous, site, redirects),
                    # this build's own links, opened from outside the site
                    # (inside it the widget never redirects)
                    "from_current": score(site, site, redirects),
                }
            rows.append(result)
            previous = site_now
    finally:
        shutil.rmtree(work, ignore_errors=True)

    def cell(row: dict, variant: str, links: str, kind: str) -> str:
        c = row[variant][links]
        return pct(c[f"{kind}_ok"], c[kind])

    body = [
        [
            f"{r['step']}. {r['edit']}",
            cell(r, "history", "from_original", "same"),
            cell(r, "baseline", "from_original", "same"),
            cell(r, "history", "from_previous", "same"),
            cell(r, "history", "from_current", "same"),
            cell(r, "history", "from_original", "changed"),
            cell(r, "baseline", "from_original", "changed"),
        ]
        for r in rows
    ]
    head = [
        "after edit",
        "orig links, same text",
        "baseline",
        "prev links, same text",
        "current links*",
        "orig links, changed text",
        "baseline",
    ]
    print(table(head, body))
    print(
        "\n* this build's own links opened from outside the site (a bookmark, "
        "another site);\n  from the site's own pages the widget never redirects."
    )
    cost = scale_cost(args.scale)
    print()
    print(
        table(
            ["history step", "seconds"],
            [
                [f"first build, {args.scale} passages", f"{cost['first_s']:.2f}"],
                ["every ID shifted", f"{cost['shift_s']:.2f}"],
                ["30% of passages edited", f"{cost['edit30_s']:.2f}"],
                [f"history file: {cost['history_mib']} MiB", ""],
            ],
        )
    )
    write_result(args.out, envelope("link_survival", steps=rows, scale=cost))


if __name__ == "__main__":
    main()
