"""Timers of the embedded store: a dict behind a lock, which also tells the in-process
runner how long it may sleep (``wait_hint``) and wakes it when a timer is set (``activity``)."""
from __future__ import annotations

import threading
import time

from service.store.memory_activity import Activity
from service.store.timers import Timer, Timers

# Without a timer set, the runner looks again this often anyway.
IDLE_WAIT_SECONDS = 30.0


class MemoryTimers(Timers):
    def __init__(self, clock=time.time, activity: Activity | None = None) -> None:
        self._clock = clock
        self.activity = activity or Activity()
        self._lock = threading.Lock()
        self._due: dict[str, float] = {}

    def set(self, kind: str, subject: str, at: float) -> None:
        with self._lock:
            self._due[Timer(kind, subject).member] = at
        self.activity.touch()

    def cancel(self, kind: str, subject: str) -> None:
        with self._lock:
            self._due.pop(Timer(kind, subject).member, None)

    def claim_due(self, now: float, lease_until: float, count: int) -> list[Timer]:
        with self._lock:
            due = sorted((at, member) for member, at in self._due.items() if at <= now)[:count]
            for _, member in due:
                self._due[member] = lease_until
            return [Timer.from_member(member, lease_until) for _, member in due]

    def release(self, timer: Timer) -> None:
        with self._lock:
            if self._due.get(timer.member) == timer.lease:
                del self._due[timer.member]

    def wait_hint(self) -> float | None:
        with self._lock:
            if not self._due:
                return IDLE_WAIT_SECONDS
            return max(min(self._due.values()) - self._clock(), 0.0)
