"""The stores of one deployment by area, over one backend: games, ratings, the feed, timers.

On Redis they share the game store's client (one pool per process), built when first used, so
that a service starts (not ready) while its Redis, or a cluster's layout, is away; the
embedded store holds them all in this process.
"""
from __future__ import annotations

from functools import cached_property

from redis import Redis
from redis.cluster import RedisCluster

from service.store.base import GameStore
from service.store.errors import StoreError
from service.store.feed import Feed
from service.store.feed_memory import MemoryFeed
from service.store.feed_redis import RedisFeed
from service.store.matchmaking import InviteStore, TicketStore
from service.store.matchmaking_memory import MemoryInvites, MemoryTickets
from service.store.matchmaking_redis import RedisInvites, RedisTickets
from service.store.memory import MemoryStore
from service.store.ratings import RatingStore
from service.store.ratings_redis import RedisRatings
from service.store.streams import KeyStreams
from service.store.streams_redis import RedisKeyStreams
from service.store.timers import Timers
from service.store.timers_redis import RedisTimers


# How long the API keys' streams keep what they announce (KEY_STREAM_RETENTION_SECONDS).
DEFAULT_RETENTION_SECONDS = 90000


class Areas:
    """``games``, ``ratings``, ``feed``, ``timers``, ``tickets`` and ``invites`` of one backend."""

    games: GameStore
    ratings: RatingStore
    feed: Feed
    timers: Timers
    tickets: TicketStore
    invites: InviteStore
    streams: KeyStreams


class MemoryAreas(Areas):
    def __init__(self, games: MemoryStore) -> None:  # or a store wrapping one
        self.games, self.ratings, self.feed, self.timers = games, games.ratings, games.feed, games.timers
        self.tickets, self.invites = MemoryTickets(games), MemoryInvites(games)
        self.streams = games.key_streams


class RedisAreas(Areas):
    """Each area is built on the client at its first use (StoreError until Redis answers)."""

    def __init__(self, games: GameStore, client_of, prefix: str, retention_seconds: int) -> None:
        self.games = games
        self._client_of = client_of
        self._prefix = prefix
        self._retention = retention_seconds

    @cached_property
    def streams(self) -> KeyStreams:
        return RedisKeyStreams(self._client_of(), self._prefix, self.games.notifier, self._retention)

    @cached_property
    def tickets(self) -> TicketStore:
        return RedisTickets(self._client_of(), self._prefix, self.games.notifier)

    @cached_property
    def invites(self) -> InviteStore:
        return RedisInvites(self._client_of(), self._prefix, self.games.notifier)

    @cached_property
    def ratings(self) -> RatingStore:
        return RedisRatings(self._client_of(), self._prefix)

    @cached_property
    def feed(self) -> Feed:
        return RedisFeed(self._client_of(), self._prefix)

    @cached_property
    def timers(self) -> Timers:
        return RedisTimers(self._client_of(), self._prefix)


def areas_of(games: GameStore, prefix: str, retention_seconds: int = DEFAULT_RETENTION_SECONDS) -> Areas:
    """The other areas beside ``games``, on its backend. Raises ValueError for a store of
    another kind."""
    # Asked of the store's attributes, so that a store wrapped by another (tests) is recognised.
    if isinstance(getattr(games, "feed", None), MemoryFeed):
        return MemoryAreas(games)
    if _has_client(games):
        return RedisAreas(games, lambda: games.client, prefix, retention_seconds)
    raise ValueError(f"no other stores beside a {type(games).__name__}")


def _has_client(games: GameStore) -> bool:
    try:
        return hasattr(games, "client")
    except StoreError:
        return True  # a Redis store whose client cannot be built yet (a cluster that is away)


def redis_areas(games: GameStore, client: Redis | RedisCluster, prefix: str,
                retention_seconds: int = DEFAULT_RETENTION_SECONDS) -> Areas:
    """The areas on ``client`` (the worker reads the feed on a client of its own, whose socket
    timeout outlasts its blocking reads)."""
    return RedisAreas(games, lambda: client, prefix, retention_seconds)
