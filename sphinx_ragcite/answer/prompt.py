"""The shortest prompt that still carries the evidence: best sentences, numbered.

It must also fit the model's context: a question of 2,000 emoji is 6,000
tokens, and a 230,000-character paragraph without full stops is one
"sentence". Tokens are counted with the model's own tokenizer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from sphinx_ragcite.answer.llm import ENDPOINT_CONTEXT, GenerationError, Measured

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sphinx_ragcite.answer.llm import Generator


class Quotable(Protocol):
    """What the prompt needs of a piece of evidence: where it is, its words."""

    @property
    def evidence(self) -> int: ...

    @property
    def sentence(self) -> int: ...

    @property
    def text(self) -> str: ...


#: First-token latency grows with prompt length (150-240 tokens/s here).
PROMPT_SENTENCES = 4
#: Characters of one source in the prompt, cut at a word: a source's first
#: sentences carry its point, and four of them stay near 1,000 tokens.
MAX_SOURCE_CHARS = 800
#: Below this a source says nothing; give up on generating instead.
MIN_SOURCE_CHARS = 40
#: Tokens the chat template adds around each message (ChatML: about 5).
TEMPLATE_TOKENS = 16
SYSTEM = (
    "Answer the question in one or two short sentences, using only the "
    "numbered sources. Cite a source like [1]. If the sources do not say, "
    "reply: I don't know."
)


class PromptTooLong(GenerationError):
    """Even the question alone does not fit the model's context."""


def build_messages(
    question: str, candidates: Sequence[Quotable], *, cap: int = MAX_SOURCE_CHARS
) -> list[dict[str, str]]:
    """Sources numbered by evidence, each at most *cap* characters."""
    picked = sorted(
        candidates[:PROMPT_SENTENCES], key=lambda c: (c.evidence, c.sentence)
    )
    lines: dict[int, list[str]] = {}
    for candidate in picked:
        lines.setdefault(candidate.evidence, []).append(candidate.text)
    sources = "\n".join(
        f"[{e + 1}] {_cut(' '.join(texts), cap)}" for e, texts in lines.items()
    )
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"Sources:\n{sources}\n\nQuestion: {question}"},
    ]


def fit_messages(
    question: str, candidates: Sequence[Quotable], llm: Generator, *, max_tokens: int
) -> list[dict[str, str]]:
    """The prompt, trimmed until it and *max_tokens* fit the model's context.

    Drops the weakest sentences first, then shortens what is left; raises
    :class:`PromptTooLong` (so the answer falls back to the extractive one)
    when the question alone leaves no room.
    """
    if isinstance(llm, Measured):
        count, window = llm.count_tokens, llm.context_tokens
    else:  # a generator that cannot count: UTF-8 bytes bound BPE tokens
        count, window = _utf8_bytes, ENDPOINT_CONTEXT
    budget = window - max_tokens - 2 * TEMPLATE_TOKENS
    bare = build_messages(question, [])
    fixed = sum(count(m["content"]) for m in bare)
    if fixed >= budget:
        raise PromptTooLong(
            f"the question needs {fixed} tokens; the model's context leaves "
            f"{budget} for the prompt"
        )
    picked = candidates[:PROMPT_SENTENCES]
    cap = MAX_SOURCE_CHARS
    while True:
        messages = build_messages(question, picked, cap=cap)
        used = sum(count(m["content"]) for m in messages)
        if used <= budget:
            return messages
        if len(picked) > 1:
            picked = picked[:-1]
            continue
        cap = int(cap * (budget - fixed) / (used - fixed) * 0.9)
        if cap < MIN_SOURCE_CHARS:
            raise PromptTooLong(
                f"no source fits beside the question in {budget} prompt tokens"
            )


def _cut(text: str, cap: int) -> str:
    if len(text) <= cap:
        return text
    head = text[:cap]
    space = head.rfind(" ")
    return (head[:space] if space > cap // 2 else head).rstrip() + " …"


def _utf8_bytes(text: str) -> int:
    return len(text.encode("utf-8"))
