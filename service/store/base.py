"""The store port: what the use cases need from a place that keeps games.

A stored game is an opaque text blob plus an integer version. Every change is one atomic
compare-and-set on that version, which appends the move's events and, optionally, records
the response under an idempotency key, all at once: a move either happened with all of its
effects or not at all. Implementations: ``memory.py`` (one process) and ``redis.py``.
"""
from __future__ import annotations

import abc
from dataclasses import dataclass


class StoreError(Exception):
    """The backend could not be reached or answered with an error (HTTP 503)."""


class VersionConflict(Exception):
    """A save lost the compare-and-set: the game is no longer at the expected version."""


class GameMissing(Exception):
    """The game does not exist (never created, or expired)."""


@dataclass(frozen=True)
class Loaded:
    """A game as read in one round trip.

    ``replay`` is the response stored earlier under the idempotency key that was asked
    for, if any (whatever text the caller stored), else None.
    """

    state: str
    version: int
    replay: str | None = None


@dataclass(frozen=True)
class IdempotentResponse:
    """A response to keep under a client's idempotency key for ``ttl`` seconds."""

    key: str
    response: str
    ttl: int


class GameStore(abc.ABC):
    """Keeps games, their event logs and idempotent responses.

    Event ``n`` (1-based) of a game is the n-th string appended for it; events are never
    rewritten. ``ttl`` is in seconds and is refreshed on every successful save.
    """

    @abc.abstractmethod
    def create(self, game_id: str, state: str, version: int, events: list[str], ttl: int) -> None:
        """Store a new game. Raises ValueError if the id is taken, StoreError."""

    @abc.abstractmethod
    def load(self, game_id: str, idempotency_key: str | None = None) -> Loaded:
        """Read a game (and the stored response for ``idempotency_key``).

        Raises GameMissing, StoreError."""

    @abc.abstractmethod
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
        """Replace the game iff it is still at ``expected_version``; append ``events``.

        Raises VersionConflict, GameMissing, StoreError."""

    @abc.abstractmethod
    def events(self, game_id: str, after: int) -> list[str]:
        """The events with sequence number > ``after``, oldest first.

        Raises GameMissing, StoreError."""

    @abc.abstractmethod
    def wait_for_events(self, game_id: str, after: int, timeout: float) -> list[str]:
        """Like ``events`` but, while there are none, waits up to ``timeout`` seconds."""

    @abc.abstractmethod
    def check(self) -> None:
        """Raise StoreError unless the backend answers now (readiness)."""

    def close(self) -> None:
        """Release connections; the store is not used afterwards."""
