"""The report's two charts as inline SVG: no library, no script, same bytes
for the same data. Each has a ``<title>`` and ``role="img"``; the page puts
the numbers in a table beside them as well."""

from __future__ import annotations

import math
from datetime import date, timedelta
from html import escape
from typing import Any

from sphinx_ragcite.questions.schema import OUTCOMES

COLORS = {"answer": "#2e7d32", "passages": "#9a6200", "not_found": "#c62828"}
LABELS = {"answer": "answered", "passages": "passages shown", "not_found": "not found"}
FONT = 'font-family="system-ui, sans-serif" font-size="12"'


def _n(value: float) -> str:
    text = f"{value:.1f}"
    return "0.0" if text == "-0.0" else text


def _step(top: int) -> int:
    """A round tick step giving about five ticks up to *top*."""
    raw = max(top / 5, 1)
    power = 10 ** math.floor(math.log10(raw))
    return int(next(m * power for m in (1, 2, 5, 10) if m * power >= raw))


#: Days filled in between the first and the last at most: a longer span (a
#: date edited by hand, centuries off) charts only the days with questions,
#: so the page grows with the rows, not with the span.
MAX_FILLED = 3660


def days_filled(per_day: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every day from the first to the last, days without questions as zeros."""
    if not per_day:
        return []
    have = {d["day"]: d for d in per_day}
    first, last = (
        date.fromisoformat(per_day[0]["day"]),
        date.fromisoformat(per_day[-1]["day"]),
    )
    if (last - first).days >= MAX_FILLED:
        return per_day
    out = []
    for i in range((last - first).days + 1):
        day = (first + timedelta(days=i)).isoformat()
        out.append(have.get(day, {"day": day, **dict.fromkeys(OUTCOMES, 0)}))
    return out


def per_day_chart(per_day: list[dict[str, Any]], *, width: int = 1000) -> str:
    """Questions per day, stacked by outcome."""
    days = days_filled(per_day)
    height, left, right, top, bottom = 260, 52, 12, 34, 46
    pw, ph = width - left - right, height - top - bottom
    peak = max((sum(d[o] for o in OUTCOMES) for d in days), default=0)
    step = _step(peak)
    ymax = max(step, math.ceil(peak / step) * step)
    title = "Questions per day by outcome"
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" '
        f'aria-labelledby="per-day-title" viewBox="0 0 {width} {height}" {FONT}>',
        f'<title id="per-day-title">{title}: {len(days)} days, at most {peak} '
        "questions a day</title>",
    ]
    for tick in range(0, ymax + 1, step):
        y = top + ph - tick / ymax * ph
        out.append(
            f'<line x1="{left}" x2="{left + pw}" y1="{_n(y)}" y2="{_n(y)}" '
            'stroke="#ddd"/>'
            f'<text x="{left - 6}" y="{_n(y + 4)}" text-anchor="end">{tick:,}</text>'
        )
    slot = pw / max(len(days), 1)
    bar = min(max(slot * 0.8, 1.0), 40.0)
    every = max(1, math.ceil(len(days) / 12))
    for i, day in enumerate(days):
        x, y = left + i * slot + (slot - bar) / 2, top + ph
        for outcome in OUTCOMES:
            h = day[outcome] / ymax * ph
            if h > 0:
                y -= h
                out.append(
                    f'<rect x="{_n(x)}" y="{_n(y)}" width="{_n(bar)}" '
                    f'height="{_n(h)}" fill="{COLORS[outcome]}"/>'
                )
        if i % every == 0:
            out.append(
                f'<text x="{_n(x + bar / 2)}" y="{top + ph + 16}" '
                f'text-anchor="middle">{escape(day["day"][5:])}</text>'
            )
    out.append(
        f'<line x1="{left}" x2="{left + pw}" y1="{top + ph}" y2="{top + ph}" '
        'stroke="#333"/>'
    )
    out.append(_legend(left, 14))
    out.append(
        f'<text x="{left + pw / 2}" y="{height - 8}" text-anchor="middle">'
        "day (UTC, month-day)</text></svg>"
    )
    return "".join(out)


def _legend(x: float, y: float) -> str:
    out = []
    for outcome in OUTCOMES:
        out.append(
            f'<rect x="{_n(x)}" y="{_n(y - 9)}" width="10" height="10" '
            f'fill="{COLORS[outcome]}"/><text x="{_n(x + 14)}" y="{_n(y)}">'
            f"{LABELS[outcome]}</text>"
        )
        x += 30 + 7 * len(LABELS[outcome])
    return "".join(out)


def share_chart(outcomes: dict[str, Any], *, width: int = 1000) -> str:
    """One bar split by the share of each outcome, percentages written on it."""
    height, left, top, bar_h = 62, 2, 22, 28
    pw = width - 2 * left
    total = sum(outcomes[o]["count"] for o in OUTCOMES if o in outcomes)
    parts = ", ".join(
        f"{LABELS[o]} {outcomes[o]['share']:.0%}" for o in OUTCOMES if o in outcomes
    )
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" '
        f'aria-labelledby="share-title" viewBox="0 0 {width} {height}" {FONT}>',
        f'<title id="share-title">Share of outcomes: {parts}</title>',
        _legend(left, 12),
    ]
    x = float(left)
    for outcome in OUTCOMES:
        count = outcomes.get(outcome, {}).get("count", 0)
        w = pw * count / total if total else 0
        if w <= 0:
            continue
        out.append(
            f'<rect x="{_n(x)}" y="{top}" width="{_n(w)}" height="{bar_h}" '
            f'fill="{COLORS[outcome]}"/>'
        )
        if w > 40:
            out.append(
                f'<text x="{_n(x + w / 2)}" y="{top + 19}" text-anchor="middle" '
                f'fill="#fff" font-weight="bold">{count / total:.0%}</text>'
            )
        x += w
    out.append("</svg>")
    return "".join(out)
