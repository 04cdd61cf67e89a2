"""Per-client limits and the answer cache: small, thread-safe, in-process.

State here is per process: with N replicas each enforces its own limits, which
is what a stateless server behind a load balancer can promise.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any


class RateLimiter:
    """Token bucket per client: *rate* requests per minute, bursts up to *rate*."""

    def __init__(self, rate: int, *, clock: Any = time.monotonic) -> None:
        self.rate = rate
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def check(self, client: str) -> float:
        """0 if the request may pass, else seconds until it may."""
        if self.rate <= 0:
            return 0.0
        now = self.clock()
        per_second = self.rate / 60.0
        with self._lock:
            tokens, last = self._buckets.get(client, (float(self.rate), now))
            tokens = min(float(self.rate), tokens + (now - last) * per_second)
            if tokens >= 1.0:
                self._buckets[client] = (tokens - 1.0, now)
                if len(self._buckets) > 100_000:  # forget idle clients
                    self._buckets.clear()
                return 0.0
            self._buckets[client] = (tokens, now)
            return (1.0 - tokens) / per_second


class GenerationSlots:
    """A bounded queue for the model: one runs, the rest wait, more get 503."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._depth = 0
        self._lock = threading.Lock()

    @property
    def depth(self) -> int:
        return self._depth

    def try_acquire(self) -> bool:
        with self._lock:
            if self._depth >= self.size:
                return False
            self._depth += 1
            return True

    def release(self) -> None:
        with self._lock:
            self._depth = max(0, self._depth - 1)


class AnswerCache:
    """LRU of recent answers keyed by question, mode, selection and index."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...]) -> Any:
        with self._lock:
            if key not in self._items:
                return None
            self._items.move_to_end(key)
            return self._items[key]

    def put(self, key: tuple[Any, ...], value: Any) -> None:
        if self.size <= 0:
            return
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
