"""The stores of one deployment by area, over one backend: games, ratings, the feed, timers.

On Redis they share the game store's client (one pool per process), built when first used, so
that a service starts (not ready) while its Redis, or a cluster's layout, is away; the
embedded store holds them all in this process.
"""
from __future__ import annotations

from functools import cached_property

from redis import Redis
from redis.cluster import RedisCluster

from service.store.base import GameStore, StoreError
from service.store.feed import Feed
from service.store.feed_memory import MemoryFeed
from service.store.feed_redis import RedisFeed
from service.store.memory import MemoryStore
from service.store.ratings import RatingStore
from service.store.ratings_redis import RedisRatings
from service.store.timers import Timers
from service.store.timers_redis import RedisTimers


class Areas:
    """``games``, ``ratings``, ``feed`` and ``timers`` of one backend."""

    games: GameStore
    ratings: RatingStore
    feed: Feed
    timers: Timers


class MemoryAreas(Areas):
    def __init__(self, games: MemoryStore) -> None:  # or a store wrapping one
        self.games, self.ratings, self.feed, self.timers = games, games.ratings, games.feed, games.timers


class RedisAreas(Areas):
    """Each area is built on the client at its first use (StoreError until Redis answers)."""

    def __init__(self, games: GameStore, client_of, prefix: str) -> None:
        self.games = games
        self._client_of = client_of
        self._prefix = prefix

    @cached_property
    def ratings(self) -> RatingStore:
        return RedisRatings(self._client_of(), self._prefix)

    @cached_property
    def feed(self) -> Feed:
        return RedisFeed(self._client_of(), self._prefix)

    @cached_property
    def timers(self) -> Timers:
        return RedisTimers(self._client_of(), self._prefix)


def areas_of(games: GameStore, prefix: str) -> Areas:
    """The other areas beside ``games``, on its backend. Raises ValueError for a store of
    another kind."""
    # Asked of the store's attributes, so that a store wrapped by another (tests) is recognised.
    if isinstance(getattr(games, "feed", None), MemoryFeed):
        return MemoryAreas(games)
    if _has_client(games):
        return RedisAreas(games, lambda: games.client, prefix)
    raise ValueError(f"no other stores beside a {type(games).__name__}")


def _has_client(games: GameStore) -> bool:
    try:
        return hasattr(games, "client")
    except StoreError:
        return True  # a Redis store whose client cannot be built yet (a cluster that is away)


def redis_areas(games: GameStore, client: Redis | RedisCluster, prefix: str) -> Areas:
    """The areas on ``client`` (the worker reads the feed on a client of its own, whose socket
    timeout outlasts its blocking reads)."""
    return RedisAreas(games, lambda: client, prefix)
