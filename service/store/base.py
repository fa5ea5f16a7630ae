"""The store port: what the use cases need from a place that keeps games.

A stored game is an opaque state text plus an integer version. Every change is one atomic
compare-and-set on that version that also appends the change's events, records the response
under an idempotency key, appends its entries to the feed (webhook deliveries among them),
sets the turn deadline's timer, moves the game within the player index and refreshes the
tombstone: a change happens with all of its effects or not at all. Implementations: ``memory.py`` (one process)
and ``redis.py`` (one server or a cluster).
"""
from __future__ import annotations

import abc
import threading
from contextlib import AbstractContextManager
from dataclasses import dataclass
from enum import Enum

from service.rules.errors import GameError
from service.store.feed import FeedEntry
from service.store.presence import SeatHolds

_HOLDS_LOCK = threading.Lock()

class GameMissing(GameError):
    """No game with this id ever existed, or its tombstone expired too (HTTP 404)."""

    status = 404
    code = "game_not_found"
    titles = {"game_not_found": "No such game"}

    def __init__(self, game_id: str = "") -> None:
        super().__init__("no game with this id")


class GameExpired(GameMissing):
    """The game existed and expired; its tombstone says when (HTTP 410)."""

    status = 410
    code = "game_expired"
    titles = {"game_expired": "The game expired"}

    def __init__(self, expired_at: str) -> None:
        GameError.__init__(self, f"this game expired at {expired_at}", params={"expired_at": expired_at})
        self.expired_at = expired_at


class VersionConflict(Exception):
    """A save lost the compare-and-set: the game is no longer at the expected version."""


@dataclass(frozen=True)
class Loaded:
    """A game as read in one round trip.

    ``replay`` is the response stored earlier under the idempotency key that was asked
    for, if any, else None; ``fingerprint`` what ``create`` stored with the game;
    ``present`` the seats with a stream or long-poll open (``present_seats``), when asked for.
    """

    state: str
    version: int
    replay: str | None = None
    fingerprint: str = ""
    ratings: str | None = None  # the rating changes of a rated match, once applied (JSON)
    present: frozenset[int] | None = None


@dataclass(frozen=True)
class IdempotentResponse:
    """A response to keep under a client's idempotency key for ``ttl`` seconds."""

    key: str
    response: str
    ttl: int


@dataclass(frozen=True)
class Claim:
    """A ticket or invite that a new game takes (``kind`` "ticket" or "invite", its ``id``): it
    must still be at ``version`` with status ``expect``; it then becomes ``data`` (its new text,
    at ``version`` + 1, with status ``status``), leaves its queue (tickets) and loses its timer."""

    kind: str
    id: str
    version: int
    expect: str
    status: str
    data: str
    queue: str | None = None
    timer: str | None = None


class ClaimLost(Exception):
    """A claimed ticket or invite changed before the game could take it: nothing was written."""


@dataclass(frozen=True)
class Effects:
    """What a write does besides the state: all of it in the same atomic step.

    ``events``: texts appended to the game's log, which then holds ``event_count`` events in
    all (waiters are told this count). ``ttl``: seconds the game lives from now; its tombstone
    lives ``tombstone_ttl`` seconds longer and says when it expired. ``timed``: the game has
    turn deadlines; then ``deadline`` (epoch seconds, None: none now) replaces its timer (kind
    ``deadline``, service/store/timers.py).
    ``index_add``: players (their index ids) whose active list
    gets the game now; ``index_finish``: players whose lists move the game from active to finished;
    ``index_keep``: players whose lists hold the game, kept at least as long as its tombstone
    (a save of a match played over weeks must not let its players' lists expire under it).
    ``feed``: entries for the internal event stream of the game's shard (service/store/feed.py),
    webhook deliveries among them.
    """

    events: tuple[str, ...]
    event_count: int
    ttl: int
    tombstone_ttl: int
    timed: bool = False
    deadline: float | None = None
    index_add: tuple[str, ...] = ()
    index_finish: tuple[str, ...] = ()
    index_keep: tuple[str, ...] = ()
    reply: IdempotentResponse | None = None
    feed: tuple[FeedEntry, ...] = ()
    claims: tuple[Claim, ...] = ()


class Wake(Enum):
    """Why a follower of a game woke up."""

    EVENTS = "events"  # a save published a count past the follower's
    RESYNC = "resync"  # the subscription was broken and is back: read again
    PRESENCE = "presence"  # a seat's stream or long-poll opened or closed somewhere
    SHUTDOWN = "shutdown"  # the process is stopping: answer now


class Follow(abc.ABC):
    """A reader's hold on one game's changes, for as long as it follows them (a stream).

    ``after`` is the last event the reader has; it moves it on as it reads. ``woken_at``
    (time.monotonic()) is when the last wake-up came: a read begun since then sees its change."""

    __slots__ = ()
    after: int
    woken_at: float

    @abc.abstractmethod
    def wait(self, deadline: float) -> Wake | None:
        """Wait until something may have changed or until ``deadline`` (time.monotonic()).

        Returns why it woke (EVENTS: events past ``after`` may be there; RESYNC: read again;
        PRESENCE: who is present may have changed; SHUTDOWN, from then on at once), or None
        when the time is up. Raises requester.ClientGone when the client hung up."""


class IndexList(str, Enum):
    ACTIVE = "active"
    FINISHED = "finished"


class GameStore(abc.ABC):
    """Keeps games, their event logs, idempotent responses and what is shared per shard.

    Event ``n`` (1-based) of a game is the n-th string appended for it; events are never
    rewritten, and at most ``max_events`` stay stored (the oldest go first).
    """

    @abc.abstractmethod
    def create(self, game_id: str, state: str, version: int, effects: Effects, fingerprint: str = "",
               created_at_ms: int = 0) -> Loaded | None:
        """Store a new game, unless one with this id exists: then return it, unchanged. With
        ``effects.claims`` (the game's shard must be theirs) the claims are taken in the same step.

        Raises ClaimLost (a claim no longer holds: nothing written), StoreFull (nothing
        written), StoreError."""

    @abc.abstractmethod
    def load(self, game_id: str, idempotency_key: str | None = None, present: bool = False) -> Loaded:
        """Read a game (and the stored response for ``idempotency_key``, and with ``present``
        the seats present, as ``present_seats`` gives them), in one round trip.

        Raises GameExpired, GameMissing, StoreError."""

    @abc.abstractmethod
    def save(self, game_id: str, expected_version: int, state: str, version: int, effects: Effects) -> None:
        """Replace the game iff it is still at ``expected_version``, with every effect.

        Raises VersionConflict, GameExpired, GameMissing, StoreFull (nothing written), StoreError."""

    @abc.abstractmethod
    def note_ratings(self, game_id: str, changes: str, feed: tuple[FeedEntry, ...]) -> bool:
        """Keep a finished rated match's rating changes with it and, in the same step, append
        their announcements; once only: False (nothing done) when the match already has its
        changes or is gone. Raises StoreFull, StoreError."""

    @abc.abstractmethod
    def events(self, game_id: str, after: int) -> list[str]:
        """The stored events with sequence number > ``after``, oldest first.

        Raises GameExpired, GameMissing, StoreError."""

    @abc.abstractmethod
    def wait_for_events(self, game_id: str, after: int, timeout: float) -> list[str]:
        """Like ``events`` but, while there are none, waits up to ``timeout`` seconds."""

    @abc.abstractmethod
    def following(self, game_id: str, after: int) -> AbstractContextManager[Follow]:
        """A ``Follow`` of ``game_id`` from event ``after`` on, for as long as the context lasts.

        Enter it before reading the game: whatever is saved after the entry wakes it. Raises
        StoreError, LongPollCapacity (the process holds its maximum of waiters)."""

    # --- presence: which seats have a stream or long-poll open, in any process ------------
    @abc.abstractmethod
    def mark_present(self, game_id: str, seat: int, present: bool) -> None:
        """Say whether this process holds a stream or long-poll of ``seat`` (``SeatHolds``
        calls it when that changes), and wake the game's followers. Raises StoreError."""

    @abc.abstractmethod
    def present_seats(self, game_id: str) -> frozenset[int]:
        """The seats of ``game_id`` that a live process marked present. Raises StoreError."""

    def holding(self, game_id: str, seat: int) -> AbstractContextManager[None]:
        """Count ``seat`` present while inside (a stream or long-poll of it is open); it stays
        marked for a grace period after the last one closes (see ``presence.SeatHolds``)."""
        return self._seat_holds().holding(game_id, seat)

    def _seat_holds(self):
        holds = self.__dict__.get("_holds")
        if holds is None:
            with _HOLDS_LOCK:
                holds = self.__dict__.setdefault("_holds", SeatHolds(self.mark_present))
        return holds

    def archive_events(self, game_id: str) -> None:
        """Keep a finished game's events in less room; ``events`` answers the same as before.
        Worth it only where games are kept for long in a shared server: a store that does not
        compress them keeps them as they are. Raises StoreError."""

    @abc.abstractmethod
    def kept(self, game_id: str, name: str) -> str | None:
        """The text kept with the game under ``name`` (``keep``), or None: none was kept, or the
        game is gone. Raises StoreError."""

    @abc.abstractmethod
    def keep(self, game_id: str, name: str, text: str) -> None:
        """Keep ``text`` with the game under ``name`` (replacing what was kept there): it lives,
        expires and is deleted with the game; once the game is gone nothing is kept.
        Raises StoreFull, StoreError."""

    @abc.abstractmethod
    def claim(self, game_id: str, name: str, seconds: int) -> bool:
        """True for the first caller to claim ``name`` of the game within ``seconds`` (so that,
        of concurrent requests, one computes what the others then read); the claim lapses after
        ``seconds`` and goes with the game; False once the game is gone. Raises StoreFull, StoreError."""

    @abc.abstractmethod
    def index_page(self, player: str, which: IndexList, before: tuple[int, str] | None,
                   limit: int) -> list[tuple[int, str, str]]:
        """Up to ``limit`` games of one player's ``which`` list as (created at in ms, game id,
        state), newest first, each older than ``before`` (the last entry of the previous page).

        Games that expired are left out (and dropped from the index). Raises StoreError."""

    @abc.abstractmethod
    def schedule(self, game_id: str, deadline: float) -> None:
        """Set ``game_id``'s deadline timer (again). Raises StoreError."""

    @abc.abstractmethod
    def count(self, key: str, window_seconds: int) -> int:
        """Add one to the counter ``key`` of the current window and return it (rate limits, quotas).

        The counter disappears when its window ends. Raises StoreError."""

    @abc.abstractmethod
    def shared_secret(self, proposed: str) -> str:
        """The service's secret: the first ``proposed`` value ever stored, kept for good."""

    @abc.abstractmethod
    def check(self) -> None:
        """Raise StoreError unless the backend answers now (readiness)."""

    def close(self) -> None:
        """Release connections; the store is not used afterwards (nor retries its presence
        writes)."""
        holds = self.__dict__.get("_holds")
        if holds is not None:
            holds.close()
