"""The feed of the embedded store: one list per process, read by groups like a Redis stream.

The embedded store appends to it inside the same lock as the save (service/store/memory.py),
so an entry exists if and only if its change does, as on Redis; the in-process runner
(service/background) reads it. Nothing outlives the process, as with everything embedded.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from service.store.feed import FEED_MAX_LENGTH, Feed, FeedEntry, Read
from service.store.memory_activity import Activity

SHARD = 0  # one process, one list: every entry is in "shard" 0


@dataclass
class _Group:
    next: int = 0  # index (absolute) of the first entry this group has not read
    pending: dict[int, tuple[str, float]] = field(default_factory=dict)  # index -> (consumer, since)


class MemoryFeed(Feed):
    """A thread-safe in-process feed; ``append`` may be called under the store's own lock."""

    def __init__(self, max_length: int = FEED_MAX_LENGTH, activity: Activity | None = None) -> None:
        self._changed = threading.Condition(threading.Lock())
        self.activity = activity or Activity()
        self._entries: list[FeedEntry] = []
        self._first = 0  # absolute index of _entries[0]
        self._groups: dict[str, _Group] = {}
        self._max_length = max_length

    def append(self, shard: int, entries: tuple[FeedEntry, ...]) -> None:
        if not entries:
            return
        with self._changed:
            self._entries.extend(entries)
            excess = len(self._entries) - self._max_length
            if excess > 0:
                del self._entries[:excess]
                self._first += excess
            self._changed.notify_all()
        self.activity.touch()

    def read(self, group: str, consumer: str, count: int, block_seconds: float,
             shards: Sequence[int] | None = None) -> list[Read]:
        deadline = time.monotonic() + block_seconds
        with self._changed:
            state = self._group(group)
            while True:
                start = max(state.next, self._first)
                end = min(self._first + len(self._entries), start + count)
                if end > start:
                    now = time.monotonic()
                    for index in range(start, end):
                        state.pending[index] = (consumer, now)
                    state.next = end
                    return [self._read(index) for index in range(start, end)]
                left = deadline - time.monotonic()
                if left <= 0:
                    return []
                self._changed.wait(left)

    def ack(self, group: str, reads: list[Read]) -> None:
        with self._changed:
            state = self._group(group)
            for read in reads:
                state.pending.pop(int(read.stream_id), None)

    def claim_stale(self, group: str, consumer: str, idle_seconds: float, count: int,
                    shards: Sequence[int] | None = None) -> list[Read]:
        with self._changed:
            state = self._group(group)
            now = time.monotonic()
            stale = sorted(index for index, (_, since) in state.pending.items()
                           if now - since >= idle_seconds and index >= self._first)[:count]
            for index in stale:
                state.pending[index] = (consumer, now)
            return [self._read(index) for index in stale]

    def trim(self, groups: tuple[str, ...]) -> int:
        with self._changed:
            needed = min((min(state.pending, default=state.next) for state in
                          (self._group(group) for group in groups)), default=self._first)
            dropped = max(min(needed, self._first + len(self._entries)) - self._first, 0)
            del self._entries[:dropped]
            self._first += dropped
            return dropped

    def reader_shards(self) -> list[tuple[int, ...]]:
        return [(SHARD,)]

    def _group(self, name: str) -> _Group:
        # A group made now starts at the oldest entry kept, like XGROUP CREATE ... 0.
        return self._groups.setdefault(name, _Group(self._first))

    def _read(self, index: int) -> Read:
        return Read(SHARD, str(index), self._entries[index - self._first])
