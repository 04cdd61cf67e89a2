"""Question logs -> the report's data: what ``--json`` writes and the page shows.

Everything but the grouping is SQL on the merged rows (:mod:`.merge`), so
100,000 questions take seconds. Only the distinct unanswered questions are
embedded, the most asked first, at most ``max_grouped`` of them; the report
says how many were grouped of how many. The fields are documented in
``docs/reference/cli.md`` (``ragcite report``).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

import numpy as np

from sphinx_ragcite import __version__
from sphinx_ragcite.encoder import DEFAULT_MODEL_ID
from sphinx_ragcite.questions.books import Book, open_books
from sphinx_ragcite.questions.groups import DEFAULT_METHOD, DEFAULT_THRESHOLD, cluster
from sphinx_ragcite.questions.merge import merge
from sphinx_ragcite.questions.schema import OUTCOMES

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Sequence
    from pathlib import Path

    from sphinx_ragcite.encoder import Embedder

#: Raise when a field of the JSON changes meaning or goes.
REPORT_VERSION = 1
#: A ``passages`` outcome below this confidence counts as unanswered too: the
#: passages shown were more likely wrong than right.
LOW_CONFIDENCE = 0.5
MAX_GROUPED = 2000
#: groups given their closest passages (each is one search)
MAX_SEARCHED = 100
CLOSEST = 3
TOP = 20
MAX_UNHELPFUL = 200


def build_report(
    paths: Sequence[Path],
    *,
    since: str | None = None,
    site: str | None = None,
    max_grouped: int = MAX_GROUPED,
    embedder: Embedder | None = None,
) -> dict[str, Any]:
    """The report of the logs at *paths* (see the module docstring)."""
    start = time.perf_counter()
    merged = merge(paths, since=since, site=site)
    db = merged.db
    books = open_books(db)
    total = db.execute("SELECT count(*) FROM q").fetchone()[0]
    report: dict[str, Any] = {
        "report_version": REPORT_VERSION,
        "generator": f"sphinx-ragcite {__version__}",
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "logs": [str(p) for p in paths],
        "filters": {"since": since, "site": site},
        "rows_read": merged.rows_read,
        "duplicates": merged.rows_read - total,
        "skipped": merged.skipped,
        "skipped_rows": merged.skipped_rows,
        "sites": [b.as_json() for b in books.values()],
        **_summary(db, total),
        "per_day": _per_day(db),
        "unanswered": _unanswered(db, books, max_grouped, embedder),
        "feedback": _feedback(db, books),
        "citations": _citations(db, books),
    }
    report["seconds"] = round(time.perf_counter() - start, 3)
    db.close()
    return report


def _summary(db: sqlite3.Connection, total: int) -> dict[str, Any]:
    counts = dict(db.execute("SELECT outcome, count(*) FROM q GROUP BY outcome"))
    outcomes = {
        o: {"count": counts.get(o, 0), "share": _share(counts.get(o, 0), total)}
        for o in (*OUTCOMES, *sorted(set(counts) - set(OUTCOMES)))
    }
    rows = db.execute("SELECT outcome, latency_ms FROM q").fetchall()
    latency = {o: _percentiles([ms for x, ms in rows if x == o]) for o in outcomes}
    latency["all"] = _percentiles([ms for _, ms in rows])  # past any outcome "all"
    first, last = db.execute("SELECT min(asked_at), max(asked_at) FROM q").fetchone()
    doors = dict(db.execute("SELECT door, count(*) FROM q GROUP BY door ORDER BY 1"))
    return {
        "questions": total,
        "first_asked": first,
        "last_asked": last,
        "outcomes": outcomes,
        "latency_ms": latency,
        "doors": doors,
    }


def _share(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def _percentiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p90": None}
    p50, p90 = np.percentile(np.asarray(values, dtype=np.float64), [50, 90])
    return {"p50": round(float(p50), 1), "p90": round(float(p90), 1)}


def _per_day(db: sqlite3.Connection) -> list[dict[str, Any]]:
    days: dict[str, dict[str, Any]] = {}
    for day, outcome, count in db.execute(
        "SELECT substr(asked_at, 1, 10), outcome, count(*) FROM q GROUP BY 1, 2 "
        "ORDER BY 1"
    ):
        entry = days.setdefault(day, {"day": day, **dict.fromkeys(OUTCOMES, 0)})
        if outcome in OUTCOMES:  # another one (a newer server's) is no column
            entry[outcome] = count
    return list(days.values())


def _unanswered(
    db: sqlite3.Connection,
    books: dict[str, Book],
    max_grouped: int,
    embedder: Embedder | None,
) -> dict[str, Any]:
    """The questions the book could not answer, the same text counted once
    (case and spacing aside), the most asked grouped by meaning."""
    distinct = _distinct_unanswered(db)
    ranked = sorted(distinct.values(), key=lambda e: (-e["count"], e["question"]))
    chosen = ranked[:max_grouped]
    out: dict[str, Any] = {
        "low_confidence": LOW_CONFIDENCE,
        "asked": sum(e["count"] for e in ranked),
        "distinct": len(ranked),
        "grouped": len(chosen),
        "grouped_asked": sum(e["count"] for e in chosen),
        "method": DEFAULT_METHOD,
        "threshold": DEFAULT_THRESHOLD,
        "groups": [],
    }
    if not chosen:
        return out
    if embedder is None:
        from sphinx_ragcite.encoder import Embedder, model_files

        embedder = Embedder(model_files(None))
    vectors = embedder.embed(
        [e["question"] for e in chosen], kind="query", batch_size=32
    )
    labels = cluster(vectors, method=DEFAULT_METHOD, threshold=DEFAULT_THRESHOLD)
    members: dict[int, list[int]] = {}
    for row, label in enumerate(labels.tolist()):
        members.setdefault(label, []).append(row)
    groups = sorted(
        members.values(),
        key=lambda rows: (-sum(chosen[r]["count"] for r in rows), rows),
    )
    for number, rows in enumerate(groups):
        entries = [chosen[r] for r in rows]
        sites: Counter[str] = sum((e["sites"] for e in entries), Counter())
        group: dict[str, Any] = {
            "count": sum(e["count"] for e in entries),
            "distinct": len(entries),
            "sites": dict(sites.most_common()),
            "questions": [
                {
                    "question": e["question"],
                    "count": e["count"],
                    "not_found": e["outcomes"]["not_found"],
                    "passages": e["outcomes"]["passages"],
                }
                for e in entries
            ],
            "closest": None,
        }
        if number < MAX_SEARCHED:
            centre = vectors[rows].mean(axis=0)
            centre /= max(float(np.linalg.norm(centre)), 1e-12)
            group["closest"] = _closest(
                _book_for(books, [name for name, _ in sites.most_common()]),
                entries[0]["question"],
                centre,
            )
        out["groups"].append(group)
    return out


def _distinct_unanswered(db: sqlite3.Connection) -> dict[str, dict[str, Any]]:
    """Unanswered questions by their text (case and spacing aside), with counts."""
    distinct: dict[str, dict[str, Any]] = {}
    for text, site, outcome, count in db.execute(
        "SELECT question, site, outcome, count(*) FROM q WHERE outcome = "
        "'not_found' OR (outcome = 'passages' AND confidence < ?) GROUP BY 1, 2, 3",
        (LOW_CONFIDENCE,),
    ):
        key = " ".join(text.split()).casefold()
        entry = distinct.setdefault(
            key,
            {"count": 0, "sites": Counter(), "outcomes": Counter(), "as": Counter()},
        )
        entry["as"][text] += count
        entry["count"] += count
        entry["sites"][site] += count
        entry["outcomes"][outcome] += count
    for entry in distinct.values():  # the most asked spelling, the least shouted
        entry["question"] = max(
            entry.pop("as").items(),
            key=lambda i: (i[1], -sum(c.isupper() for c in i[0]), i[0]),
        )[0]
    return distinct


def _book_for(books: dict[str, Book], names: list[str]) -> Book | None:
    """The first of *names* whose index is open, else any open one (a question
    asked of several sites together has no site of its own)."""
    for name in [*names, *books]:
        if name in books and books[name].site is not None:
            return books[name]
    return None


def _closest(
    book: Book | None, question: str, centre: np.ndarray
) -> list[dict[str, Any]] | None:
    """The book's passages nearest the group (None: its index is not there)."""
    if book is None or book.site is None:
        return None
    site = book.site
    embedding = site.manifest.embedding
    same_model = (
        embedding is not None
        and embedding.model == DEFAULT_MODEL_ID
        and embedding.dim == len(centre)
    )
    hits = site.search(
        question,
        CLOSEST,
        query_vector=centre.astype(np.float32) if same_model else None,
    )
    return [
        {
            "passage_id": hit.passage_id,
            "title": " › ".join(hit.passage["heading_path"]) or hit.passage["docname"],
            "url": hit.passage["url"],
            "link": book.link(hit.passage["url"]),
            "snippet": hit.passage["snippet"],
            "score": round(hit.score, 4),
        }
        for hit in hits
    ]


def _feedback(db: sqlite3.Connection, books: dict[str, Book]) -> dict[str, Any]:
    votes = dict(
        db.execute(
            "SELECT f.helpful, count(*) FROM f JOIN q USING (answer_id) GROUP BY 1"
        )
    )
    unhelpful = []
    for (
        answer_id,
        asked,
        site,
        question,
        outcome,
        answer,
        cited,
        reason,
        given,
    ) in db.execute(
        "SELECT q.answer_id, q.asked_at, q.site, q.question, q.outcome, q.answer, "
        "q.cited, f.reason, f.given_at FROM f JOIN q USING (answer_id) "
        "WHERE f.helpful = 0 ORDER BY f.given_at DESC, q.answer_id LIMIT ?",
        (MAX_UNHELPFUL,),
    ):
        unhelpful.append(
            {
                "answer_id": answer_id,
                "asked_at": asked,
                "given_at": given,
                "site": site,
                "question": question,
                "outcome": outcome,
                "answer": answer,
                "reason": reason,
                "citations": [
                    {**c, "link": _book(books, c["site"]).link(c["url"])}
                    for c in _citations_of(cited, site, books)
                ],
            }
        )
    return {
        "helpful": votes.get(1, 0),
        "unhelpful": votes.get(0, 0),
        "unhelpful_answers": unhelpful,
    }


def _book(books: dict[str, Book], name: str) -> Book:
    return books.get(name) or Book(name)


def _citations_of(
    cited: str, site: str, books: dict[str, Book]
) -> list[dict[str, Any]]:
    """A logged ``cited`` list, each with its site (the entry's, else the
    question's) and its URL filled in from the index when missing."""
    try:
        items = json.loads(cited)
    except (ValueError, RecursionError):  # hand-edited: not JSON, or too deep
        return []
    out = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            continue
        name = item["site"] if isinstance(item.get("site"), str) else site
        url = item.get("url") if isinstance(item.get("url"), str) else None
        record = _book(books, name).passage(item["id"])
        out.append(
            {
                "id": item["id"],
                "site": name,
                "url": url or (record and record["url"]),
                "title": " › ".join(record["heading_path"]) if record else None,
            }
        )
    return out


def _citations(db: sqlite3.Connection, books: dict[str, Book]) -> dict[str, Any]:
    """Most cited passages and pages, and each site's pages never cited."""
    passages = []
    pages: Counter[tuple[str, str]] = Counter()
    for site, passage_id, url, count in db.execute(
        "SELECT coalesce(json_extract(j.value, '$.site'), q.site), "
        "json_extract(j.value, '$.id'), json_extract(j.value, '$.url'), count(*) "
        "FROM q, json_each(CASE WHEN json_valid(q.cited) THEN CASE WHEN "
        "json_type(q.cited) = 'array' THEN q.cited END END) AS j "
        "WHERE j.type = 'object' GROUP BY 1, 2, 3"  # (a list, as _citations_of)
    ):
        if not isinstance(passage_id, str) or not isinstance(site, str):
            continue
        book = _book(books, site)
        record = book.passage(passage_id)
        url = (url if isinstance(url, str) else "") or (record and record["url"]) or ""
        page = url.partition("#")[0]
        pages[site, page] += count
        passages.append(
            {
                "site": site,
                "passage_id": passage_id,
                "url": url or None,
                "link": book.link(url),
                "title": " › ".join(record["heading_path"]) if record else None,
                "count": count,
            }
        )
    passages.sort(key=lambda p: (-p["count"], p["site"], p["passage_id"]))
    top_pages = [
        {
            "site": site,
            "page": page or None,
            "title": books[site].pages.get(page) if site in books else None,
            "link": _book(books, site).link(page),
            "count": count,
        }
        for (site, page), count in sorted(pages.items(), key=lambda i: (-i[1], i[0]))
    ]
    never = {
        name: [
            {"page": page, "title": title, "link": book.link(page)}
            for page, title in sorted(book.pages.items())
            if (name, page) not in pages
        ]
        for name, book in books.items()
        if book.site is not None
    }
    return {
        "cited_passages": len(passages),
        "top_passages": passages[:TOP],
        "top_pages": top_pages[:TOP],
        "never_cited": never,
    }
