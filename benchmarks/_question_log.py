"""Question logs written for tests and benchmarks, in the server's format.

``write_log(path, rows, sites=..., feedback=...)`` writes a log through
``sphinx_ragcite.questions.schema.open_log`` and plain INSERTs: *rows* are
dicts with the ``questions`` columns (anything left out gets a default from
``row()``), *feedback* ``(answer_id, helpful, reason)`` triples and *sites*
``{name: (build_dir, base_url)}``.

``synthetic_log(path, rows, ...)`` writes a realistic log of any size for
``report_scale.py``: several sites, ``days`` days, the three outcomes
(about 65 % answers, 20 % passages, 15 % not found), questions repeated the
way readers repeat them (a few very often, most once), the unanswered ones
phrased from ``qa/question_topics.jsonl``, citations of real passage IDs
when a site's build is given, and feedback on about 4 % of the answers.
"""

from __future__ import annotations

import json
import random
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from sphinx_ragcite.questions.schema import open_log

TOPICS = Path(__file__).resolve().parent / "qa" / "question_topics.jsonl"
COLUMNS = [
    "answer_id",
    "asked_at",
    "site",
    "version",
    "question",
    "selection_chars",
    "selection",
    "outcome",
    "confidence",
    "answer",
    "cited",
    "latency_ms",
    "generator",
    "door",
]
START = datetime(2026, 10, 1, 8, tzinfo=timezone.utc)


def stamp(when: datetime) -> str:
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def row(question: str, outcome: str = "answer", **more: Any) -> dict[str, Any]:
    """One ``questions`` row with defaults for every column not given."""
    values: dict[str, Any] = {
        "answer_id": uuid.uuid4().hex,
        "asked_at": stamp(START),
        "site": "",
        "version": "",
        "question": question,
        "selection_chars": 0,
        "selection": None,
        "outcome": outcome,
        "confidence": {"answer": 0.85, "passages": 0.4, "not_found": 0.05}[outcome],
        "answer": "",
        "cited": [],
        "latency_ms": 120.0,
        "generator": "extractive",
        "door": "api",
    }
    values.update(more)
    return values


def write_log(
    path: Path,
    rows: list[dict[str, Any]],
    *,
    sites: dict[str, tuple[str, str]] | None = None,
    feedback: list[tuple[str, bool, str | None]] = (),  # type: ignore[assignment]
) -> Path:
    connection = open_log(path, create=True)
    with connection:
        connection.executemany(
            f"INSERT INTO questions ({', '.join(COLUMNS)}) "
            f"VALUES ({', '.join('?' * len(COLUMNS))})",
            (
                tuple(json.dumps(r["cited"]) if c == "cited" else r[c] for c in COLUMNS)
                for r in rows
            ),
        )
        connection.executemany(
            "INSERT OR REPLACE INTO sites (name, build_dir, base_url) VALUES (?, ?, ?)",
            [(name, str(d), url) for name, (d, url) in (sites or {}).items()],
        )
        connection.executemany(
            "INSERT OR REPLACE INTO feedback (answer_id, helpful, reason, given_at) "
            "VALUES (?, ?, ?, ?)",
            [(a, int(h), reason, stamp(START)) for a, h, reason in feedback],
        )
    connection.close()
    return path


def synthetic_log(
    path: Path,
    rows: int,
    *,
    sites: dict[str, tuple[str, str]],
    passages: dict[str, list[dict[str, Any]]] | None = None,
    days: int = 60,
    seed: int = 0,
) -> Path:
    """A realistic log of *rows* questions over *sites* (see the module doc)."""
    rng = random.Random(seed)
    topics = [json.loads(line) for line in TOPICS.read_text("utf-8").splitlines()]
    missing = [t["question"] for t in topics]
    names = sorted(sites)
    out = []
    feedback: list[tuple[str, bool, str | None]] = []
    for n in range(rows):
        site = names[min(int(rng.paretovariate(1.5)) - 1, len(names) - 1)]
        pool = (passages or {}).get(site) or [
            {
                "passage_id": f"ch{c}-sec{s}-p{p}",
                "url": f"page{c}.html#ch{c}-sec{s}-p{p}",
            }
            for c in range(1, 30)
            for s in range(1, 5)
            for p in range(1, 6)
        ]
        when = START + timedelta(days=rng.randrange(days), seconds=rng.randrange(86400))
        draw = rng.random()
        outcome = (
            "answer" if draw < 0.65 else "passages" if draw < 0.85 else "not_found"
        )
        if outcome == "not_found":
            # a few phrasings very often, most once (and casing varies)
            question = missing[min(int(rng.paretovariate(1.2)), len(missing)) - 1]
            if rng.random() < 0.6:  # a reader's own wording around it
                question = f"{rng.choice(OPENINGS)}{question}{rng.choice(ENDINGS)}"
        else:
            hit = pool[min(int(rng.paretovariate(1.1)), len(pool)) - 1]
            question = (
                f"What does {hit['passage_id']} say about item {rng.randrange(900)}?"
            )
        cited = (
            [
                {"id": p["passage_id"], "url": p["url"]}
                for p in rng.sample(pool, k=min(len(pool), rng.randint(1, 3)))
            ]
            if outcome != "not_found"
            else []
        )
        low, high = {"answer": (0.71, 1.0), "passages": (0.23, 0.71)}.get(
            outcome, (0.0, 0.23)
        )
        values = row(
            question,
            outcome,
            asked_at=stamp(when),
            site=site,
            version="1.0",
            confidence=round(rng.uniform(low, high), 3),
            answer="The book says so [1]." if outcome == "answer" else "",
            cited=cited,
            latency_ms=round(rng.lognormvariate(5.0, 0.6), 1),
            door=rng.choice(("api", "stream", "stream", "mcp")),
            answer_id=f"{seed}-{n}",
        )
        out.append(values)
        if outcome != "not_found" and rng.random() < 0.04:
            helpful = rng.random() < 0.7
            reason = (
                None
                if helpful
                else rng.choice(
                    (None, "wrong page", "too short", "does not answer my question")
                )
            )
            feedback.append((values["answer_id"], helpful, reason))
    return write_log(path, out, sites=sites, feedback=feedback)


OPENINGS = (
    "",
    "",
    "hi, ",
    "quick question: ",
    "please help: ",
    "Q: ",
    "so ",
    "I need to know: ",
    "hello! ",
    "newbie here, ",
)
ENDINGS = (
    "",
    "",
    "?",
    " thanks",
    " in python",
    " please",
    " (urgent)",
    " again",
    " - any example?",
    " on windows",
)
