"""The report's data -> one self-contained HTML page for the book's authors.

No script at all, no external file: the charts are inline SVG
(:mod:`.charts`), the style one ``<style>`` element allowed by its hash in a
strict Content-Security-Policy. Every text that came from a log (questions,
answers, reasons, URLs) goes through :func:`html.escape`; links are only
``http(s)://`` or ``file://`` URLs.
"""

from __future__ import annotations

import base64
import hashlib
from html import escape
from typing import Any

from sphinx_ragcite.questions.charts import LABELS, per_day_chart, share_chart
from sphinx_ragcite.questions.schema import OUTCOMES

STYLE = """
body{font:15px/1.5 system-ui,sans-serif;color:#1b1b1b;margin:0;background:#fafafa}
main{max-width:1060px;margin:0 auto;padding:24px 28px 48px;background:#fff}
h1{font-size:1.8em;margin:.2em 0}h2{margin-top:2em;border-bottom:2px solid #eee}
h3{font-size:1.05em;margin:1.4em 0 .3em}
table{border-collapse:collapse;margin:.5em 0 1em;width:100%}
th,td{border-bottom:1px solid #e3e3e3;padding:4px 8px;text-align:left;
vertical-align:top}
th{background:#f3f3f3}th[scope=row]{background:none}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.lede{font-size:1.1em}.muted{color:#555}.note{background:#fff8e1;padding:6px 10px}
.group{border-left:4px solid #c62828;padding:2px 14px;margin:14px 0}
.answer{white-space:pre-wrap;background:#f6f6f6;padding:6px 10px}
.tag{font-size:.8em;padding:0 6px;border-radius:3px;background:#eee}
ol.closest li{margin:.2em 0}svg{width:100%;height:auto}
ul.pages{columns:3;padding-left:1.2em}ul.pages li{break-inside:avoid}
a{color:#0b57d0}
"""
_STYLE_HASH = base64.b64encode(hashlib.sha256(STYLE.encode()).digest()).decode()
CSP = (
    f"default-src 'none'; style-src 'sha256-{_STYLE_HASH}'; img-src data:; "
    "base-uri 'none'; form-action 'none'"
)


def e(value: object) -> str:
    return escape("" if value is None else str(value), quote=True)


def link(url: str | None, text: str) -> str:
    """*text* (escaped already) linked to *url* when it is a web or file URL."""
    if url and url.split(":", 1)[0].lower() in ("http", "https", "file"):
        return f'<a href="{e(url)}">{text}</a>'
    return text


def render(report: dict[str, Any]) -> str:
    sites = ", ".join(s["name"] or "(default site)" for s in report["sites"])
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="referrer" content="no-referrer">',
        f"<title>What readers asked: {e(sites) or 'no questions'}</title>",
        f"<style>{STYLE}</style></head><body><main>",
        "<h1>What readers asked</h1>",
        _lede(report),
        _skipped(report),
        _glance(report),
        _unanswered(report["unanswered"]),
        _unhelpful(report["feedback"], several=len(report["sites"]) > 1),
        _citations(report["citations"], several=len(report["sites"]) > 1),
        _about(report),
        "</main></body></html>",
    ]
    return "\n".join(parts) + "\n"


def _lede(report: dict[str, Any]) -> str:
    total = report["questions"]
    if not total:
        return '<p class="lede">No questions in these logs (with these filters).</p>'
    first, last = (report["first_asked"] or "")[:10], (report["last_asked"] or "")[:10]
    when = f"on {e(first)}" if first == last else f"from {e(first)} to {e(last)}"
    gaps = report["unanswered"]
    votes = report["feedback"]
    not_found = report["outcomes"].get("not_found", {}).get("count", 0)
    return (
        f'<p class="lede"><strong>{total:,}</strong> questions {when}. '
        f"<strong>{gaps['asked']:,}</strong> got no answer ({not_found:,} not "
        f"found, {gaps['asked'] - not_found:,} only passages of low confidence): "
        f"{_count(gaps['distinct'], 'different question')} in "
        f"{_count(len(gaps['groups']), 'topic')} below. Readers marked "
        f"{_count(votes['unhelpful'], 'answer')} unhelpful and "
        f"{votes['helpful']:,} helpful.</p>"
    )


def _skipped(report: dict[str, Any]) -> str:
    """Rows left out because a column held what the server never writes."""
    if not report["skipped"]:
        return ""
    rows = "".join(
        f"<li>{e(r['log'])}, table {e(r['table'])}, row {e(r['row'])}: "
        f"{e(r['column'])}</li>"
        for r in report["skipped_rows"]
    )
    more = report["skipped"] - len(report["skipped_rows"])
    return (
        f'<div class="note"><p>Left out {_count(report["skipped"], "row")} of the '
        "logs whose columns hold what the server never writes (a log edited by "
        "hand?): text where a number belongs, a BLOB, a date that is none. The "
        f"first (file, table, rowid: the first wrong column):</p><ul>{rows}</ul>"
        + (f"<p>and {more:,} more.</p>" if more > 0 else "")
        + "</div>"
    )


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _glance(report: dict[str, Any]) -> str:
    outcomes, latency = report["outcomes"], report["latency_ms"]
    rows = "".join(
        f'<tr><th scope="row">{e(LABELS.get(o, o))}</th>'
        f'<td class="n">{v["count"]:,}</td><td class="n">{v["share"]:.1%}</td>'
        f'<td class="n">{_ms(latency.get(o, {}).get("p50"))}</td>'
        f'<td class="n">{_ms(latency.get(o, {}).get("p90"))}</td></tr>'
        for o, v in outcomes.items()
    )
    overall = latency["all"]
    days = "".join(
        f'<tr><th scope="row">{e(d["day"])}</th>'
        + "".join(f'<td class="n">{d[o]:,}</td>' for o in OUTCOMES)
        + "</tr>"
        for d in report["per_day"]
    )
    head = "".join(f'<th scope="col" class="n">{LABELS[o]}</th>' for o in OUTCOMES)
    return (
        "<section><h2>At a glance</h2>"
        + share_chart(outcomes)
        + '<table><caption class="muted">Outcomes and answer time (ms)</caption>'
        '<tr><th scope="col">outcome</th><th scope="col" class="n">questions</th>'
        '<th scope="col" class="n">share</th><th scope="col" class="n">p50</th>'
        f'<th scope="col" class="n">p90</th></tr>{rows}'
        f'<tr><th scope="row">all</th><td class="n">{report["questions"]:,}</td>'
        f'<td class="n">100%</td><td class="n">{_ms(overall["p50"])}</td>'
        f'<td class="n">{_ms(overall["p90"])}</td></tr></table>'
        "<h3>Questions per day</h3>"
        + per_day_chart(report["per_day"])
        + "<details><summary>The numbers per day</summary><table>"
        f'<tr><th scope="col">day</th>{head}</tr>{days}</table></details></section>'
    )


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:,.0f}"


def _unanswered(gaps: dict[str, Any]) -> str:
    out = ["<section><h2>What the book could not answer</h2>"]
    out.append(
        '<p class="muted">Questions answered "not found", and those shown passages '
        f"at a confidence under {gaps['low_confidence']:.0%}, grouped by meaning "
        f"({e(gaps['method'])} clustering of their sentence vectors, cosine "
        f"{gaps['threshold']}). Each group is a topic readers looked for: write "
        "it, or link it from the closest passages.</p>"
    )
    if gaps["grouped"] < gaps["distinct"]:
        out.append(
            f'<p class="note">Grouped the {gaps["grouped"]:,} most asked of '
            f"{gaps['distinct']:,} different questions ({gaps['grouped_asked']:,} "
            f"of {gaps['asked']:,} asks); the rest were asked less often.</p>"
        )
    if not gaps["groups"]:
        out.append("<p>Every question was answered.</p>")
    for n, group in enumerate(gaps["groups"], start=1):
        top = group["questions"][0]["question"]
        out.append(
            f'<div class="group"><h3>{n}. {e(top)} <span class="tag">'
            f"{_count(group['count'], 'ask')}, "
            f"{_count(group['distinct'], 'phrasing')}</span></h3>"
        )
        rows = "".join(
            f'<tr><td>{e(q["question"])}</td><td class="n">{q["count"]:,}</td>'
            f'<td class="n">{q["not_found"]:,}</td>'
            f'<td class="n">{q["passages"]:,}</td></tr>'
            for q in group["questions"][:12]
        )
        more = len(group["questions"]) - 12
        out.append(
            '<table><tr><th scope="col">question</th><th scope="col" class="n">'
            'asked</th><th scope="col" class="n">not found</th>'
            '<th scope="col" class="n">low-confidence passages</th></tr>'
            f"{rows}</table>"
            + (f'<p class="muted">and {more:,} more phrasings</p>' if more > 0 else "")
        )
        out.append(_closest(group["closest"]))
        out.append("</div>")
    out.append("</section>")
    return "".join(out)


def _closest(closest: list[dict[str, Any]] | None) -> str:
    if closest is None:
        return (
            '<p class="muted">Closest passages: not searched (the site\'s index is '
            "not there, or the group is past the first 100).</p>"
        )
    if not closest:
        return '<p class="muted">No passage of the book is close.</p>'
    items = "".join(
        f'<li>{link(c["link"], e(c["title"]))} <span class="muted">'
        f"({e(c['passage_id'])})</span><br>{e(c['snippet'])}</li>"
        for c in closest
    )
    return f'<p>Closest passages of the book:</p><ol class="closest">{items}</ol>'


def _unhelpful(votes: dict[str, Any], *, several: bool) -> str:
    out = [
        "<section><h2>Answers readers marked unhelpful</h2>",
        f"<p>{votes['unhelpful']:,} unhelpful, {votes['helpful']:,} helpful.</p>",
    ]
    for item in votes["unhelpful_answers"]:
        cites = "".join(
            f"<li>{link(c['link'], e(c['title'] or c['url'] or c['id']))} "
            f'<span class="muted">({e(c["id"])})</span></li>'
            for c in item["citations"]
        )
        site = f" · {e(item['site'] or 'default site')}" if several else ""
        reason = item["reason"] or "(no reason given)"
        out.append(
            f"<h3>{e(item['question'])}</h3>"
            f'<p class="muted">{e(item["asked_at"][:16].replace("T", " "))} UTC'
            f"{site} · outcome {e(item['outcome'])}</p>"
            f'<p class="answer">{e(item["answer"]) or "(no answer text)"}</p>'
            + (f"<ul>{cites}</ul>" if cites else "")
            + f"<p><strong>Reason:</strong> {e(reason)}</p>"
        )
    out.append("</section>")
    return "".join(out)


def _citations(cites: dict[str, Any], *, several: bool) -> str:
    """Most cited pages and passages, pages never cited (a site column only
    when the logs hold several sites)."""

    def site(name: str) -> str:
        return f"<td>{e(name or '(default)')}</td>" if several else ""

    site_head = '<th scope="col">site</th>' if several else ""
    pages = "".join(
        f"<tr><td>{link(p['link'], e(p['title'] or p['page'] or '(unknown)'))}</td>"
        f'{site(p["site"])}<td class="n">{p["count"]:,}</td></tr>'
        for p in cites["top_pages"]
    )
    passages = "".join(
        f"<tr><td>{link(p['link'], e(p['passage_id']))}</td><td>{e(p['title'])}</td>"
        f'{site(p["site"])}<td class="n">{p["count"]:,}</td></tr>'
        for p in cites["top_passages"]
    )
    out = [
        "<section><h2>Most cited pages</h2>",
        f'<table><tr><th scope="col">page</th>{site_head}'
        f'<th scope="col" class="n">citations</th></tr>{pages}</table>',
        "<h2>Most cited passages</h2>",
        '<table><tr><th scope="col">passage</th><th scope="col">section</th>'
        f'{site_head}<th scope="col" class="n">citations</th></tr>'
        f"{passages}</table>",
        "<h2>Pages never cited</h2>",
    ]
    if not cites["never_cited"]:
        out.append('<p class="muted">No site\'s index could be opened.</p>')
    for name, pages_left in cites["never_cited"].items():
        items = "".join(
            f'<li>{link(p["link"], e(p["title"]))} <span class="muted">'
            f"{e(p['page'])}</span></li>"
            for p in pages_left
        )
        where = f"{e(name or 'default site')}: " if several else ""
        out.append(
            f"<h3>{where}{len(pages_left):,} of the book's pages</h3>"
            + (
                f'<ul class="pages">{items}</ul>'
                if items
                else "<p>Every page was cited.</p>"
            )
        )
    out.append("</section>")
    return "".join(out)


def _about(report: dict[str, Any]) -> str:
    sites = "".join(
        f"<tr><td>{e(s['name'] or '(default)')}</td><td>{e(s['build_dir'])}</td>"
        f"<td>{e(s['base_url'])}</td><td>{e(s['index'])}</td>"
        f'<td class="n">{s["pages"]:,}</td></tr>'
        for s in report["sites"]
    )
    logs = "".join(f"<li>{e(p)}</li>" for p in report["logs"])
    filters = report["filters"]
    return (
        "<section><h2>About this report</h2>"
        '<table><tr><th scope="col">site</th><th scope="col">build folder</th>'
        '<th scope="col">base URL</th><th scope="col">index</th>'
        f'<th scope="col" class="n">pages</th></tr>{sites}</table>'
        f"<p>Logs merged ({report['duplicates']:,} rows found in more than one "
        f"were counted once):</p><ul>{logs}</ul>"
        f'<p class="muted">Since: {e(filters["since"] or "the start")}; site: '
        f"{e(filters['site'] if filters['site'] is not None else 'all')}. Made by "
        f"{e(report['generator'])} at {e(report['generated_at'])} in "
        f"{report['seconds']:.1f} s.</p></section>"
    )
