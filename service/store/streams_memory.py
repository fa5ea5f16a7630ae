"""The API keys' streams of the embedded store: a list per key, behind a condition."""
from __future__ import annotations

import threading
import time
from collections import defaultdict

from service.store.streams import KeyStreams, StreamEntry, id_order


class MemoryKeyStreams(KeyStreams):
    def __init__(self, retention_seconds: int) -> None:
        self._changed = threading.Condition(threading.Lock())
        self._retention = retention_seconds
        self._entries: dict[str, list[tuple[float, StreamEntry]]] = defaultdict(list)
        self._seen: dict[str, float] = {}
        self._last = (0, 0)

    def append_once(self, scope: str, source_id: str, type: str, body: str) -> bool:
        with self._changed:
            now = time.time()
            self._forget(scope, now)
            if self._seen.get(f"{scope}\x1f{source_id}", 0) > now:
                return False
            self._seen[f"{scope}\x1f{source_id}"] = now + self._retention
            milliseconds = int(now * 1000)
            self._last = (milliseconds, 0) if milliseconds > self._last[0] else (self._last[0], self._last[1] + 1)
            self._entries[scope].append((now, StreamEntry(f"{self._last[0]}-{self._last[1]}", type, body)))
            self._changed.notify_all()
            return True

    def after(self, scope: str, after: str | None, count: int) -> list[StreamEntry]:
        with self._changed:
            return self._after(scope, after, count)

    def last_id(self, scope: str) -> str | None:
        with self._changed:
            entries = self._entries.get(scope)
            return entries[-1][1].id if entries else None

    def wait(self, scope: str, after: str | None, count: int, timeout: float) -> list[StreamEntry]:
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                found = self._after(scope, after, count)
                left = deadline - time.monotonic()
                if found or left <= 0:
                    return found
                self._changed.wait(left)

    def _after(self, scope: str, after: str | None, count: int) -> list[StreamEntry]:
        self._forget(scope, time.time())
        start = (-1, -1) if after is None else id_order(after)
        return [entry for _, entry in self._entries.get(scope, []) if id_order(entry.id) > start][:count]

    def _forget(self, scope: str, now: float) -> None:
        entries = self._entries.get(scope)
        while entries and entries[0][0] < now - self._retention:
            entries.pop(0)
        for key in [key for key, until in self._seen.items() if until <= now]:
            del self._seen[key]
