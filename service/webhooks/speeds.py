"""Which receivers answer quickly, as the worker last saw them.

A receiver (host_slots.receiver_of) whose last delivery took less than a threshold is quick:
the worker hands it a read's deliveries a few to a thread and lets a delivery over its share
wait briefly for a slot (worker.py). Nothing else is remembered of it, and the map is
bounded: a worker serving more receivers than it keeps starts again from "not quick", which
costs only some CPU until each has answered once more.
"""
from __future__ import annotations

import threading

MAX_RECEIVERS_KNOWN = 10_000


class ReceiverSpeeds:
    """Whether each receiver's last delivery took under ``quick_seconds``. Thread-safe; holds
    at most ``most`` receivers."""

    def __init__(self, quick_seconds: float, most: int = MAX_RECEIVERS_KNOWN) -> None:
        self._quick_seconds = quick_seconds
        self._most = most
        self._quick: dict[str, bool] = {}
        self._lock = threading.Lock()

    def is_quick(self, receiver: str) -> bool:
        """False for a receiver not seen yet (or forgotten)."""
        return self._quick.get(receiver, False)

    def note(self, receiver: str, seconds: float) -> None:
        """A delivery to ``receiver`` took ``seconds``."""
        self._set(receiver, seconds < self._quick_seconds)

    def mark_slow(self, receiver: str) -> None:
        """``receiver`` kept every one of its slots taken for longer than a quick delivery takes."""
        self._set(receiver, False)

    def __len__(self) -> int:
        return len(self._quick)

    def _set(self, receiver: str, quick: bool) -> None:
        with self._lock:
            if len(self._quick) >= self._most and receiver not in self._quick:
                self._quick.clear()  # many receivers: start again rather than grow without bound
            self._quick[receiver] = quick
