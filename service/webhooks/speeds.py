"""How quickly each receiver answers, as the worker last saw it.

A receiver (host_slots.receiver_of) whose last delivery took less than a threshold is quick:
the worker hands it a read's deliveries several to a thread, as many as its last delivery's
time fits into a short turn, and lets a delivery over its share wait briefly for a slot
(worker.py). Only the last delivery's time is remembered, and the map is bounded: a worker
serving more receivers than it keeps starts again from "not quick", which costs only some
CPU until each has answered once more.
"""
from __future__ import annotations

import math
import threading

MAX_RECEIVERS_KNOWN = 10_000


class ReceiverSpeeds:
    """The time of each receiver's last delivery; quick under ``quick_seconds``. Thread-safe;
    holds at most ``most`` receivers."""

    def __init__(self, quick_seconds: float, most: int = MAX_RECEIVERS_KNOWN) -> None:
        self._quick_seconds = quick_seconds
        self._most = most
        self._last: dict[str, float] = {}
        self._lock = threading.Lock()

    def is_quick(self, receiver: str) -> bool:
        """False for a receiver not seen yet (or forgotten)."""
        return self._last.get(receiver, math.inf) < self._quick_seconds

    def in_turn(self, receiver: str, turn_seconds: float) -> int:
        """How many deliveries to ``receiver`` one thread makes one after another: as many as
        its last delivery's time fits into ``turn_seconds``, at least 1 (1 when not quick)."""
        last = self._last.get(receiver, math.inf)
        if last >= self._quick_seconds:
            return 1
        return max(1, int(turn_seconds / max(last, 1e-6)))

    def note(self, receiver: str, seconds: float) -> None:
        """A delivery to ``receiver`` took ``seconds``."""
        self._set(receiver, seconds)

    def mark_slow(self, receiver: str) -> None:
        """``receiver`` kept every one of its slots taken for longer than a quick delivery takes."""
        self._set(receiver, math.inf)

    def __len__(self) -> int:
        return len(self._last)

    def _set(self, receiver: str, seconds: float) -> None:
        with self._lock:
            if len(self._last) >= self._most and receiver not in self._last:
                self._last.clear()  # many receivers: start again rather than grow without bound
            self._last[receiver] = seconds
