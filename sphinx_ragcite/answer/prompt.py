"""The shortest prompt that still carries the evidence: best sentences, numbered."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sphinx_ragcite.answer.evidence import Evidence
    from sphinx_ragcite.answer.extractive import Candidate

#: First-token latency grows with prompt length (150-240 tokens/s here).
PROMPT_SENTENCES = 4
SYSTEM = (
    "Answer the question in one or two short sentences, using only the "
    "numbered sources. Cite a source like [1]. If the sources do not say, "
    "reply: I don't know."
)


def build_messages(
    question: str,
    candidates: list[Candidate],
    evidence: list[Evidence],
) -> list[dict[str, str]]:
    picked = sorted(
        candidates[:PROMPT_SENTENCES], key=lambda c: (c.evidence, c.sentence)
    )
    lines: dict[int, list[str]] = {}
    for candidate in picked:
        lines.setdefault(candidate.evidence, []).append(candidate.text)
    sources = "\n".join(f"[{e + 1}] {' '.join(texts)}" for e, texts in lines.items())
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"Sources:\n{sources}\n\nQuestion: {question}"},
    ]
