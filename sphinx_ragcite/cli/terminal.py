"""Colour and a spinner for people at a terminal, nothing for pipes and scripts.

Colour goes to stdout only when it is a terminal; the spinner goes to stderr
only when that is one. ``NO_COLOR`` (https://no-color.org) or ``TERM=dumb``
turn both off, so piped and logged output is always plain text.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from collections.abc import Mapping
    from types import TracebackType

FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
INTERVAL = 0.08


def wants_color(
    stream: TextIO, choice: str = "auto", env: Mapping[str, str] | None = None
) -> bool:
    """``always``/``never``, or (``auto``) a terminal without NO_COLOR."""
    if choice in ("always", "never"):
        return choice == "always"
    env = os.environ if env is None else env
    if env.get("NO_COLOR") or env.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class Spinner:
    """``with Spinner(sys.stderr, on) as s: s.update("...")``; clears its line."""

    def __init__(self, stream: TextIO, enabled: bool, message: str = "") -> None:
        self.stream = stream
        self.enabled = enabled
        self.message = message
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def update(self, message: str) -> None:
        self.message = message

    def __enter__(self) -> Spinner:
        if self.enabled:
            self._thread = threading.Thread(target=self._spin, daemon=True)
            self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self.stream.write("\r\x1b[2K")
            self.stream.flush()

    def _spin(self) -> None:
        frame = 0
        while not self._stop.is_set():
            symbol = FRAMES[frame % len(FRAMES)]
            self.stream.write(f"\r\x1b[2K\x1b[36m{symbol}\x1b[0m {self.message}")
            self.stream.flush()
            frame += 1
            self._stop.wait(INTERVAL)
