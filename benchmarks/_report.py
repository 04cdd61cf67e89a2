"""The plain-text tables every benchmark prints."""

from __future__ import annotations


def table(head: list[str], body: list[list[str]]) -> str:
    """Columns padded to fit; the first left-aligned, the rest right-aligned."""
    widths = [max(len(row[i]) for row in [head, *body]) for i in range(len(head))]

    def fmt(row: list[str]) -> str:
        return "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        )

    return "\n".join([fmt(head), fmt(["-" * w for w in widths]), *map(fmt, body)])
