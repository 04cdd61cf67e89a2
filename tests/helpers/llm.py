"""A scripted model for the tests of generation: what it streams is the test's."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from sphinx_ragcite.answer.llm import GenerationError

if TYPE_CHECKING:
    from collections.abc import Iterator

    from sphinx_ragcite.answer.llm import Cancel


class ScriptedLLM:
    """A generator (``answer.llm.Generator``) that streams what the test tells
    it to, hostile or not: *pieces*, one each *delay* seconds, or *fail*.

    Like the real ones it serves one stream at a time and stops between
    pieces when a ``Cancel`` fires; ``messages`` holds the last prompt and
    ``closed`` is set when a stream ends, however it ends.
    """

    name = "scripted"
    cancellable = True

    def __init__(self, *pieces: str, delay: float = 0.0, fail: bool = False) -> None:
        self.pieces = pieces
        self.delay = delay
        self.fail = fail
        self.messages: list[dict[str, str]] = []
        self.lock = threading.Lock()
        self.closed = threading.Event()

    def stream(
        self,
        messages: list[dict[str, str]],
        *,
        max_tokens: int,
        cancel: Cancel | None = None,
    ) -> Iterator[str]:
        with self.lock:
            self.messages = messages
            try:
                if self.fail:
                    raise GenerationError("endpoint down")
                for piece in self.pieces:
                    time.sleep(self.delay)
                    if cancel is not None:
                        cancel.check()
                    yield piece
            finally:
                self.closed.set()
