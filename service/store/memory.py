"""An embedded store for one process: games live in dicts behind one lock.

It keeps the same promises as the Redis store (compare-and-set, TTLs and tombstones,
idempotent responses, the player index, deadlines, bounded event logs) so tests and
single-process runs behave like production, but nothing is shared between processes and
everything is lost on exit.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from service.rules.match import iso_time
from service.store import shutdown
from service.store.feed import FeedEntry
from service.store.feed_memory import MemoryFeed
from service.store.matchmaking_memory import Claimables
from service.store.memory_activity import Activity
from service.store.ratings_memory import MemoryRatings
from service.store.streams_memory import MemoryKeyStreams
from service.store.timers import DEADLINE_TIMER
from service.store.timers_memory import MemoryTimers
from service.store.base import (
    ClaimLost,
    Effects,
    Follow,
    GameExpired,
    GameMissing,
    GameStore,
    IndexList,
    Loaded,
    VersionConflict,
    Wake,
)

# Expired entries are dropped when touched; a full sweep at most this often (seconds)
# also frees the ones nobody asks for again, without making every write O(games).
SWEEP_INTERVAL = 60.0
# What the embedded store's key streams keep (a process's life is shorter than that anyway).
KEY_STREAM_RETENTION_SECONDS = 90000


@dataclass
class _Game:
    state: str
    version: int
    events: list[str]
    expires_at: float
    fingerprint: str = ""
    trimmed: int = 0
    ratings: str | None = None
    kept: dict[str, str] = field(default_factory=dict)
    claims: dict[str, float] = field(default_factory=dict)  # name: when claimed (monotonic)


@dataclass(frozen=True)
class _Expiring:
    value: str
    expires_at: float


@dataclass
class _Player:
    lists: dict[IndexList, dict[str, int]] = field(default_factory=lambda: {which: {} for which in IndexList})


class MemoryStore(GameStore):
    """A thread-safe in-process ``GameStore`` that honours TTLs (monotonic clock)."""

    def __init__(self, max_events: int = 5000) -> None:
        # One lock guards everything; the condition on it wakes waiting readers on writes.
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._games: dict[str, _Game] = {}
        self._replies: dict[tuple[str, str], _Expiring] = {}
        self._tombstones: dict[str, _Expiring] = {}
        self._players: dict[str, _Player] = {}
        self._counters: dict[str, _Expiring] = {}
        self._secret: str | None = None
        # What the in-process background loop serves (service/background/in_process.py).
        self.activity = Activity()
        self.feed = MemoryFeed(activity=self.activity)
        self.timers = MemoryTimers(activity=self.activity)
        self.ratings = MemoryRatings()
        self.claimables = Claimables()  # tickets and invites (service/store/matchmaking_memory.py)
        self.key_streams = MemoryKeyStreams(KEY_STREAM_RETENTION_SECONDS)
        self._max_events = max_events
        self._next_sweep = time.monotonic() + SWEEP_INTERVAL
        # Presence: the seats marked per game, and a count of changes per game for followers.
        self._present: dict[str, set[int]] = {}
        self._presence_changes: dict[str, int] = {}
        shutdown.wake_on_stop(self)

    def create(self, game_id: str, state: str, version: int, effects: Effects, fingerprint: str = "",
               created_at_ms: int = 0) -> Loaded | None:
        """Store a new game unless the id exists (then return that game)."""
        with self._changed:
            now = time.monotonic()
            self._sweep(now)
            existing = self._live_game(game_id, now)
            if existing is not None:
                return Loaded(existing.state, existing.version, None, existing.fingerprint)
            if not all(self.claimables.holds(claim) for claim in effects.claims):
                raise ClaimLost(game_id)
            for claim in effects.claims:
                self.claimables.take(claim, self.timers)
            game = _Game(state, version, [], now + effects.ttl, fingerprint)
            self._games[game_id] = game
            for player in effects.index_add:
                self._players.setdefault(player, _Player()).lists[IndexList.ACTIVE][game_id] = created_at_ms
            self._apply(game_id, game, effects, now)
            return None

    def load(self, game_id: str, idempotency_key: str | None = None, present: bool = False) -> Loaded:
        """Read a game, the response stored under ``idempotency_key`` and with ``present`` the
        seats present. Raises GameExpired, GameMissing."""
        with self._lock:
            now = time.monotonic()
            game = self._existing_game(game_id, now)
            replay = None
            if idempotency_key is not None:
                reply = self._live(self._replies, (game_id, idempotency_key), now)
                replay = reply.value if reply else None
            seats = frozenset(self._present.get(game_id, ())) if present else None
            return Loaded(game.state, game.version, replay, game.fingerprint, game.ratings, seats)

    def note_ratings(self, game_id: str, changes: str, feed: tuple[FeedEntry, ...]) -> bool:
        """Keep the changes once, and append their announcements with them."""
        with self._changed:
            game = self._live_game(game_id, time.monotonic())
            if game is None or game.ratings is not None:
                return False
            game.ratings = changes
            self.feed.append(0, feed)
            return True

    def save(self, game_id: str, expected_version: int, state: str, version: int, effects: Effects) -> None:
        """Replace the game iff at ``expected_version``. Raises VersionConflict, GameExpired, GameMissing."""
        with self._changed:
            now = time.monotonic()
            self._sweep(now)
            game = self._existing_game(game_id, now)
            if game.version != expected_version:
                raise VersionConflict(f"game {game_id} is at version {game.version}, not {expected_version}")
            game.state, game.version, game.expires_at = state, version, now + effects.ttl
            if effects.reply is not None:
                self._replies[(game_id, effects.reply.key)] = _Expiring(effects.reply.response, now + effects.reply.ttl)
            for player in effects.index_finish:
                lists = self._players.setdefault(player, _Player()).lists
                if game_id in lists[IndexList.ACTIVE]:
                    lists[IndexList.FINISHED][game_id] = lists[IndexList.ACTIVE].pop(game_id)
            self._apply(game_id, game, effects, now)

    def _apply(self, game_id: str, game: _Game, effects: Effects, now: float) -> None:
        """The effects both writes share; wakes the waiting readers."""
        game.events.extend(effects.events)
        excess = len(game.events) - self._max_events
        if excess > 0:
            del game.events[:excess]
            game.trimmed += excess
        self._tombstones[game_id] = _Expiring(iso_time(time.time() + effects.ttl),
                                              now + effects.ttl + effects.tombstone_ttl)
        self.feed.append(0, effects.feed)
        if effects.timed:
            if effects.deadline is None:
                self.timers.cancel(DEADLINE_TIMER, game_id)
            else:
                self.timers.set(DEADLINE_TIMER, game_id, effects.deadline)
        self._changed.notify_all()

    def events(self, game_id: str, after: int) -> list[str]:
        """Stored events numbered above ``after``. Raises GameExpired, GameMissing."""
        with self._lock:
            return self._events_after(game_id, after, time.monotonic())

    def wait_for_events(self, game_id: str, after: int, timeout: float) -> list[str]:
        """Events numbered above ``after``, waiting up to ``timeout`` s while there are none.

        Raises GameExpired, GameMissing."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                now = time.monotonic()
                found = self._events_after(game_id, after, now)
                if found or now >= deadline:
                    return found
                self._changed.wait(deadline - now)

    @contextmanager
    def following(self, game_id: str, after: int) -> Iterator[Follow]:
        """A ``Follow`` woken by this store's writes and presence marks."""
        yield _Follower(self, game_id, after)

    def mark_present(self, game_id: str, seat: int, present: bool) -> None:
        """Mark or unmark ``seat`` and wake the followers."""
        with self._changed:
            seats = self._present.setdefault(game_id, set())
            if present:
                seats.add(seat)
            else:
                seats.discard(seat)
                if not seats:
                    del self._present[game_id]
            self._presence_changes[game_id] = self._presence_changes.get(game_id, 0) + 1
            self._changed.notify_all()

    def present_seats(self, game_id: str) -> frozenset[int]:
        with self._lock:
            return frozenset(self._present.get(game_id, ()))

    def wake_all(self, wake: Wake) -> None:
        """Wake every waiter (the process is stopping: ``shutdown.stop_waiting``)."""
        with self._changed:
            self._changed.notify_all()

    def kept(self, game_id: str, name: str) -> str | None:
        """What ``keep`` kept with the game under ``name``, or None."""
        with self._lock:
            game = self._live_game(game_id, time.monotonic())
            return None if game is None else game.kept.get(name)

    def keep(self, game_id: str, name: str, text: str) -> None:
        """Keep ``text`` with the game (nothing once the game is gone)."""
        with self._lock:
            game = self._live_game(game_id, time.monotonic())
            if game is not None:
                game.kept[name] = text

    def claim(self, game_id: str, name: str, seconds: int) -> bool:
        """Whether no claim of ``name`` was made in the last ``seconds`` (the game must live)."""
        with self._lock:
            now = time.monotonic()
            game = self._live_game(game_id, now)
            claimed = None if game is None else game.claims.get(name)
            if game is None or (claimed is not None and now - claimed < seconds):
                return False
            game.claims[name] = now
            return True

    def index_page(self, player: str, which: IndexList, before: tuple[int, str] | None,
                   limit: int) -> list[tuple[int, str, str]]:
        """Up to ``limit`` live games of a player's list, newest first, after the cursor ``before``."""
        with self._lock:
            now = time.monotonic()
            entries = self._players.get(player, _Player()).lists[which]
            for game_id in [g for g in entries if self._live_game(g, now) is None]:
                del entries[game_id]
            ordered = sorted(((score, game_id) for game_id, score in entries.items()), reverse=True)
            page = [entry for entry in ordered if before is None or entry < before][:limit]
            return [(score, game_id, self._games[game_id].state) for score, game_id in page]

    def schedule(self, game_id: str, deadline: float) -> None:
        """Put the deadline back into the schedule."""
        self.timers.set(DEADLINE_TIMER, game_id, deadline)

    def count(self, key: str, window_seconds: int) -> int:
        """Add one to ``key``'s counter of the current window and return it."""
        with self._lock:
            now = time.time()
            name = f"{key}:{int(now // window_seconds)}"
            current = self._live(self._counters, name, time.monotonic())
            value = int(current.value) + 1 if current else 1
            self._counters[name] = _Expiring(str(value), time.monotonic() + window_seconds + 1)
            return value

    def shared_secret(self, proposed: str) -> str:
        """The first ``proposed`` value, kept for the life of this process."""
        with self._lock:
            if self._secret is None:
                self._secret = proposed
            return self._secret

    def check(self) -> None:
        """Always ready: the store is this process's memory."""

    def _event_count(self, game_id: str) -> int | None:
        """How many events ``game_id`` has had (lock held); None for a game that is gone."""
        game = self._live_game(game_id, time.monotonic())
        return None if game is None else game.trimmed + len(game.events)

    def _events_after(self, game_id: str, after: int, now: float) -> list[str]:
        game = self._existing_game(game_id, now)
        return game.events[max(max(after, 0) - game.trimmed, 0):]

    def _existing_game(self, game_id: str, now: float) -> _Game:
        game = self._live_game(game_id, now)
        if game is None:
            tombstone = self._live(self._tombstones, game_id, now)
            if tombstone is not None:
                raise GameExpired(tombstone.value)
            raise GameMissing(game_id)
        return game

    def _live_game(self, game_id: str, now: float) -> _Game | None:
        game = self._games.get(game_id)
        if game is not None and game.expires_at <= now:
            del self._games[game_id]
            self.timers.cancel(DEADLINE_TIMER, game_id)
            return None
        return game

    @staticmethod
    def _live(table: dict, key, now: float) -> _Expiring | None:
        entry = table.get(key)
        if entry is not None and entry.expires_at <= now:
            del table[key]
            return None
        return entry

    def _sweep(self, now: float) -> None:
        if now < self._next_sweep:
            return
        self._next_sweep = now + SWEEP_INTERVAL
        for game_id in [g for g, game in self._games.items() if game.expires_at <= now]:
            self._live_game(game_id, now)
        for table in (self._replies, self._tombstones, self._counters):
            for key in [k for k, entry in table.items() if entry.expires_at <= now]:
                del table[key]
        for game_id in [g for g in self._presence_changes if g not in self._games]:
            del self._presence_changes[game_id]
            self._present.pop(game_id, None)


class _Follower(Follow):
    """A follower of one game in a MemoryStore: it waits on the store's condition."""

    def __init__(self, store: MemoryStore, game_id: str, after: int) -> None:
        self._store = store
        self._game_id = game_id
        self.after = after
        self.woken_at = 0.0
        with store._lock:
            self._presence_seen = store._presence_changes.get(game_id, 0)

    def wait(self, deadline: float) -> Wake | None:
        wake = self._wait(deadline)
        if wake is not None:
            self.woken_at = time.monotonic()
        return wake

    def _wait(self, deadline: float) -> Wake | None:
        store = self._store
        with store._changed:
            while True:
                if shutdown.stopping():
                    return Wake.SHUTDOWN
                count = store._event_count(self._game_id)
                if count is None or count > self.after:
                    return Wake.EVENTS  # a game gone: the reader learns it by reading
                changes = store._presence_changes.get(self._game_id, 0)
                if changes != self._presence_seen:
                    self._presence_seen = changes
                    return Wake.PRESENCE
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                store._changed.wait(remaining)
