"""How many deliveries one worker runs at once to each receiver.

The worker runs up to ``concurrency`` deliveries side by side, but a receiver that hangs
holds each of its deliveries for the whole attempt timeout (10 s). Without a share per
receiver, one integrator whose endpoint hangs while its matches keep producing events would
take every slot and hold up every other integrator's webhooks; with it, such a receiver gets
its share and the others go on.
"""
from __future__ import annotations

import threading
from urllib.parse import urlsplit


def receiver_of(url: str) -> str:
    """The receiver a callback URL names: its scheme and authority, in lower case (the
    whole URL when it cannot be split, which the sender then refuses anyway)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    return f"{parts.scheme}://{parts.netloc}".lower()


class HostSlots:
    """At most ``limit`` slots per receiver at once. Safe to share between threads."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("the limit per receiver must be at least 1")
        self._limit = limit
        self._lock = threading.Lock()
        self._freed = threading.Condition(self._lock)
        self._taken: dict[str, int] = {}

    def take(self, receiver: str, wait: float = 0.0) -> bool:
        """Take a slot for ``receiver``, waiting up to ``wait`` seconds for one of its slots
        to come back; False when it still holds ``limit``."""
        with self._freed:
            if not self._freed.wait_for(lambda: self._taken.get(receiver, 0) < self._limit, wait):
                return False
            self._taken[receiver] = self._taken.get(receiver, 0) + 1
            return True

    def give_back(self, receiver: str) -> None:
        with self._freed:
            taken = self._taken[receiver] - 1
            if taken:
                self._taken[receiver] = taken
            else:
                del self._taken[receiver]  # the map holds only receivers in use: it stays small
            self._freed.notify_all()

    def taken(self, receiver: str) -> int:
        with self._lock:
            return self._taken.get(receiver, 0)
