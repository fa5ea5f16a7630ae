"""What this process last read of a game for its streams, shared by all of them.

Every stream of a game in a process is woken by the same save; were each to read the game and
its new events, a match watched by a thousand people would cost two thousand round trips per
move. The streams of one game share a ``Tail`` instead: the first one woken reads (the game,
with presence, and the events after what the tail holds, decoded once), and every stream woken
by the same change takes that read, as long as it began after the change arrived. So a change
costs each process two round trips, whatever the number of its streams. The tail keeps the
last WINDOW events; a stream further behind (one resuming after a long absence) reads its own.
"""
from __future__ import annotations

import threading
import time
import weakref
from dataclasses import dataclass

from service import rules
from service.games.record import Record
from service.games.service import GameService

WINDOW = 1000


@dataclass(frozen=True)
class Read:
    """One read of the game: when it began (time.monotonic()), the record and who is present."""

    started: float
    record: Record
    present: frozenset[int]


class Tail:
    """The latest read of one game and its recent events (decoded), for this process's streams."""

    def __init__(self, games: GameService, game_id: str) -> None:
        self._games = games
        self._game_id = game_id
        self._lock = threading.Lock()  # a gevent lock in the gevent worker: one reader at a time
        self._read: Read | None = None
        self._events: list[rules.Event] = []
        self._base = 0  # the seq before the first event held
        self.users = 0

    def latest(self, after: int, since: float) -> tuple[Read, list[rules.Event]]:
        """A read begun at ``since`` or later, and the events after ``after``.

        Raises GameMissing/GameExpired, ConcurrentChange, StoreError."""
        with self._lock:
            if self._read is None:
                self._base = after
            if self._read is None or self._read.started < since:
                self._read_again()
            read = self._read
            events = self._events[after - self._base:] if after >= self._base else None
        if events is None:
            events = [rules.decode_event(stored) for stored in self._games.ctx.store.events(self._game_id, after)]
        return read, events

    def _read_again(self) -> None:
        """(lock held)"""
        started = time.monotonic()
        loaded, record = self._games.current(self._game_id, present=True)
        known = self._base + len(self._events)
        if record.match.event_count > known:
            new = [rules.decode_event(stored) for stored in self._games.ctx.store.events(self._game_id, known)]
            if new and new[0].seq != known + 1:  # older events were dropped from the log meanwhile
                self._events, self._base = [], new[0].seq - 1
            self._events += new
            excess = len(self._events) - WINDOW
            if excess > 0:
                del self._events[:excess]
                self._base += excess
        self._read = Read(started, record, loaded.present or frozenset())


class Tails:
    """The tails of the games this process streams, each kept while a stream uses it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tails: dict[str, Tail] = {}

    def take(self, games: GameService, game_id: str) -> Tail:
        with self._lock:
            tail = self._tails.get(game_id)
            if tail is None:
                tail = self._tails[game_id] = Tail(games, game_id)
            tail.users += 1
            return tail

    def give_back(self, tail: Tail, game_id: str) -> None:
        with self._lock:
            tail.users -= 1
            if tail.users <= 0 and self._tails.get(game_id) is tail:
                del self._tails[game_id]


_BY_SERVICE: weakref.WeakKeyDictionary[GameService, Tails] = weakref.WeakKeyDictionary()
_BY_SERVICE_LOCK = threading.Lock()


def tails_of(games: GameService) -> Tails:
    """The tails of ``games`` (one set per app, so per process)."""
    with _BY_SERVICE_LOCK:
        found = _BY_SERVICE.get(games)
        if found is None:
            found = _BY_SERVICE[games] = Tails()
        return found
