"""What ``search`` and ``eval`` print for people (``--json`` prints data instead)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from sphinx_ragcite.contracts import Hit

#: ``eval --answers`` rows, in the order a reader scans them.
ANSWER_ROWS = (
    "answer_accuracy",
    "answered_with_supporting_citation",
    "citation_validity",
    "citation_precision",
    "citation_recall",
    "grounded_rate",
    "llm_answer_kept",
    "abstention_unanswerable",
    "latency_p50_ms",
    "latency_p90_ms",
    "first_token_p50_ms",
    "verification_p50_ms",
)


def hits(ranked: Sequence[Hit]) -> str:
    if not ranked:
        return "No passage matches.\n"
    lines = []
    for rank, hit in enumerate(ranked, start=1):
        record = hit.passage
        lines.append(f"{rank:>2}. {hit.passage_id}  {hit.score:.4f}  {record['url']}")
        lines.append(f"    {record['chapter']} › {record['section']}")
        lines.append(f"    {record['snippet']}")
    return "\n".join(lines) + "\n"


def grid(label: str, columns: Sequence[str], rows: Mapping[str, Sequence[Any]]) -> str:
    """Right-aligned numbers under their column names; None prints as '-'."""
    width = max([len(label), *map(len, rows)]) + 2
    cell = max([12, *map(len, columns)]) + 2

    def show(value: Any) -> str:
        return "-" if value is None else f"{value:.3f}"

    out = [f"{label:<{width}}" + "".join(f"{c:>{cell}}" for c in columns)]
    for name, values in rows.items():
        out.append(f"{name:<{width}}" + "".join(f"{show(v):>{cell}}" for v in values))
    return "\n".join(out) + "\n"


def retrieval(
    results: Mapping[str, Mapping[str, float]], passages: int, cutoffs: Sequence[int]
) -> str:
    columns = [*(f"recall@{k}" for k in cutoffs), "mrr@10", "ndcg@10", "ms_per_query"]
    first = next(iter(results.values()))
    head = f"{first['questions']:.0f} answerable questions, {passages} passages\n"
    rows = {mode: [m[c] for c in columns] for mode, m in results.items()}
    return head + grid("mode", columns, rows)


def answers(results: Mapping[str, Mapping[str, Any]]) -> str:
    generators = list(results)
    rows = {row: [results[g][row] for g in generators] for row in ANSWER_ROWS}
    return grid("metric", generators, rows)
