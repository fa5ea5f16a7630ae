"""What the embedded store's background loop waits on: a counter of changes that concern it
(a feed entry appended, a timer set), so that a change made while the loop was busy is never
slept through."""
from __future__ import annotations

import threading


class Activity:
    def __init__(self) -> None:
        self._changed = threading.Condition(threading.Lock())
        self.count = 0

    def touch(self) -> None:
        with self._changed:
            self.count += 1
            self._changed.notify_all()

    def wait_past(self, seen: int, timeout: float) -> None:
        """Return once ``count`` is past ``seen`` or after ``timeout`` seconds."""
        with self._changed:
            if self.count == seen:
                self._changed.wait(timeout)
