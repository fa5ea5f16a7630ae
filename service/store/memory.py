"""An embedded store for one process: games live in a dict behind one lock.

It keeps the same promises as the Redis store (compare-and-set, TTLs, idempotent
responses) so tests and single-process runs behave like production, but nothing is
shared between processes and everything is lost on exit.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from service.store.base import (
    GameMissing,
    GameStore,
    IdempotentResponse,
    Loaded,
    VersionConflict,
)

# Expired entries are dropped when touched; a full sweep at most this often (seconds)
# also frees the ones nobody asks for again, without making every write O(games).
SWEEP_INTERVAL = 60.0


@dataclass
class _Game:
    state: str
    version: int
    events: list[str]
    expires_at: float


@dataclass(frozen=True)
class _Reply:
    response: str
    expires_at: float


class MemoryStore(GameStore):
    """A thread-safe in-process ``GameStore`` that honours TTLs (monotonic clock)."""

    def __init__(self) -> None:
        # One lock guards everything; the condition on it wakes waiting readers on writes.
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._games: dict[str, _Game] = {}
        self._replies: dict[tuple[str, str], _Reply] = {}
        self._next_sweep = time.monotonic() + SWEEP_INTERVAL

    def create(self, game_id: str, state: str, version: int, events: list[str], ttl: int) -> None:
        """Store a new game. Raises ValueError if the id is taken."""
        with self._changed:
            now = time.monotonic()
            self._sweep(now)
            if self._live_game(game_id, now) is not None:
                raise ValueError(f"game id already exists: {game_id}")
            self._games[game_id] = _Game(state, version, list(events), now + ttl)
            self._changed.notify_all()

    def load(self, game_id: str, idempotency_key: str | None = None) -> Loaded:
        """Read a game and the response stored under ``idempotency_key``. Raises GameMissing."""
        with self._lock:
            now = time.monotonic()
            game = self._existing_game(game_id, now)
            replay = None
            if idempotency_key is not None:
                reply = self._live_reply((game_id, idempotency_key), now)
                replay = reply.response if reply else None
            return Loaded(game.state, game.version, replay)

    def save(
        self,
        game_id: str,
        expected_version: int,
        state: str,
        version: int,
        events: list[str],
        ttl: int,
        idempotent: IdempotentResponse | None = None,
    ) -> None:
        """Replace the game iff at ``expected_version``. Raises VersionConflict, GameMissing."""
        with self._changed:
            now = time.monotonic()
            self._sweep(now)
            game = self._existing_game(game_id, now)
            if game.version != expected_version:
                raise VersionConflict(
                    f"game {game_id} is at version {game.version}, not {expected_version}"
                )
            game.state, game.version, game.expires_at = state, version, now + ttl
            game.events.extend(events)
            if idempotent is not None:
                self._replies[(game_id, idempotent.key)] = _Reply(
                    idempotent.response, now + idempotent.ttl
                )
            self._changed.notify_all()

    def events(self, game_id: str, after: int) -> list[str]:
        """Events numbered above ``after`` (negative reads from the start). Raises GameMissing."""
        with self._lock:
            return self._events_after(game_id, after, time.monotonic())

    def wait_for_events(self, game_id: str, after: int, timeout: float) -> list[str]:
        """Events numbered above ``after``, waiting up to ``timeout`` s while there are none.

        Raises GameMissing."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                now = time.monotonic()
                found = self._events_after(game_id, after, now)
                if found or now >= deadline:
                    return found
                self._changed.wait(deadline - now)

    def check(self) -> None:
        """Always ready: the store is this process's memory."""

    def _events_after(self, game_id: str, after: int, now: float) -> list[str]:
        return self._existing_game(game_id, now).events[max(after, 0):]

    def _existing_game(self, game_id: str, now: float) -> _Game:
        game = self._live_game(game_id, now)
        if game is None:
            raise GameMissing(game_id)
        return game

    def _live_game(self, game_id: str, now: float) -> _Game | None:
        game = self._games.get(game_id)
        if game is not None and game.expires_at <= now:
            del self._games[game_id]
            return None
        return game

    def _live_reply(self, key: tuple[str, str], now: float) -> _Reply | None:
        reply = self._replies.get(key)
        if reply is not None and reply.expires_at <= now:
            del self._replies[key]
            return None
        return reply

    def _sweep(self, now: float) -> None:
        if now < self._next_sweep:
            return
        self._next_sweep = now + SWEEP_INTERVAL
        for game_id in [g for g, game in self._games.items() if game.expires_at <= now]:
            del self._games[game_id]
        for key in [k for k, reply in self._replies.items() if reply.expires_at <= now]:
            del self._replies[key]
