"""Which seats have a stream or long-poll open in this process, told to the store sparingly.

A seat is present while one of its streams or long-polls is open anywhere. Each process
counts its own and marks a (game, seat) in the store only when its count leaves zero, and
unmarks it only once the count has stayed at zero for GRACE_SECONDS: a client that long-polls
again and again, or reconnects its stream, costs no write at all, and the others never see it
leave (so a reconnect is not news). Writes are a store call each (on Redis one script:
HSET or HDEL, and a publish on the game's channel); one writer per (game, seat) at a time
brings the store in line with what is wanted, so a mark and an unmark never cross.

A write that fails (the store is away) is tried again about every second until it lands, or
until the store is closed.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from service.store.errors import StoreError

log = logging.getLogger(__name__)

# How long a seat stays marked after its last stream or long-poll here closed.
GRACE_SECONDS = 5.0

Key = tuple[str, int]


class SeatHolds:
    """The open streams and long-polls of this process per (game, seat), and their marks.

    ``mark(game_id, seat, present)`` writes one mark (``GameStore.mark_present``)."""

    def __init__(self, mark: Callable[[str, int, bool], None], grace: float | None = None) -> None:
        self._mark = mark
        self._grace = GRACE_SECONDS if grace is None else grace
        self._lock = threading.Lock()
        self._open: Counter[Key] = Counter()
        self._marked: dict[Key, float] = {}  # what the store holds: since when (time.monotonic())
        self._releasing: dict[Key, float] = {}  # closed, still marked until then
        self._writing: set[Key] = set()
        self._failed: set[Key] = set()
        self._sweeper: threading.Thread | None = None
        self._closed = False

    def close(self) -> None:
        """Stop writing: the sweeper ends at its next round, whatever it still meant to write."""
        with self._lock:
            self._closed = True

    @contextmanager
    def holding(self, game_id: str, seat: int) -> Iterator[None]:
        key = (game_id, seat)
        with self._lock:
            self._open[key] += 1
            self._releasing.pop(key, None)
        try:
            self._sync(key)
            yield
        finally:
            with self._lock:
                self._open[key] -= 1
                if self._open[key] <= 0:
                    del self._open[key]
                    self._releasing[key] = time.monotonic() + self._grace
                    self._start_sweeper()

    def renew(self, older_than: float) -> None:
        """Write again the marks written more than ``older_than`` seconds ago (the store's
        copy expires if a seat stays present for very long without a write)."""
        now = time.monotonic()
        with self._lock:
            stale = [key for key, since in self._marked.items() if now - since > older_than]
            for key in stale:
                del self._marked[key]
        for key in stale:
            self._sync(key)

    def _wanted(self, key: Key) -> bool:
        return key in self._open or key in self._releasing

    def _sync(self, key: Key) -> None:
        """Write the mark of ``key`` until the store holds what is wanted; returns at once when
        another writer of ``key`` is at it (it reads what is wanted again after each write)."""
        while True:
            with self._lock:
                wanted = self._wanted(key)
                if key in self._writing or (key in self._marked) == wanted:
                    self._failed.discard(key)
                    return
                self._writing.add(key)
            try:
                self._mark(key[0], key[1], wanted)
            except StoreError:
                log.warning("presence of a seat of game %s not written: the store failed; trying again", key[0])
                with self._lock:
                    self._writing.discard(key)
                    self._failed.add(key)
                    self._start_sweeper()
                return
            with self._lock:
                self._writing.discard(key)
                if wanted:
                    self._marked[key] = time.monotonic()
                else:
                    self._marked.pop(key, None)

    def _start_sweeper(self) -> None:
        """(lock held)"""
        if self._sweeper is None:
            self._sweeper = threading.Thread(target=self._sweep, name="presence sweeper", daemon=True)
            self._sweeper.start()

    def _sweep(self) -> None:
        """Unmark what the grace no longer keeps, retry failed writes; ends when nothing is left."""
        while True:
            time.sleep(min(self._grace / 2, 1.0) if self._grace > 0 else 0.01)
            with self._lock:
                if self._closed:
                    self._sweeper = None
                    return
                now = time.monotonic()
                due = [key for key, until in self._releasing.items() if until <= now]
                for key in due:
                    del self._releasing[key]
                retry = list(self._failed)
                self._failed.clear()
            for key in due + retry:
                self._sync(key)
            with self._lock:
                if not self._releasing and not self._failed:
                    self._sweeper = None
                    return
