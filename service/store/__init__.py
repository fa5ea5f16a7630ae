"""Game stores, chosen by URL: ``memory://`` or a Redis URL (see ``store_from_url``)."""
from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlsplit

from service.store.base import Effects, GameExpired, GameMissing, GameStore, IdempotentResponse, IndexList, Loaded, VersionConflict
from service.store.errors import StoreError, StoreFull
from service.store.memory import MemoryStore
from service.store.redis_client import SCHEMES as REDIS_SCHEMES
from service.store.redis import RedisStore

__all__ = [
    "Effects",
    "GameExpired",
    "GameMissing",
    "GameStore",
    "IdempotentResponse",
    "IndexList",
    "Loaded",
    "MemoryStore",
    "RedisStore",
    "StoreError",
    "StoreFull",
    "VersionConflict",
    "store_from_url",
]

logger = logging.getLogger(__name__)


def store_from_url(url: str, prefix: str = "ginrummy:", max_events: int = 5000, *,
                   max_waiters: int | None = None, **options: Any) -> GameStore:
    """The store that ``url`` names.

    ``memory://`` is a MemoryStore; ``redis://``, ``rediss://``, ``unix://`` a RedisStore on
    one server; ``redis+cluster://host:port`` (or a Redis URL with ``?cluster=true``) a
    RedisStore on a Redis Cluster. ``prefix`` starts every Redis key; ``max_events`` bounds
    each game's stored log; ``max_waiters`` caps the long-polls a Redis store holds at once
    (the memory store has no cap); ``options`` go to the redis-py client. Raises ValueError
    for any other scheme.
    """
    scheme = urlsplit(url).scheme
    if scheme == "memory":
        logger.warning(
            "memory:// store: games live in this process only, are not shared between "
            "processes or workers, and are lost on restart; use a Redis URL in production"
        )
        return MemoryStore(max_events)
    if scheme in REDIS_SCHEMES:
        if max_waiters is not None:
            options["max_waiters"] = max_waiters
        return RedisStore(url, prefix, max_events, **options)
    # Only the scheme is named: the rest of a URL may hold a password.
    raise ValueError(
        f"unknown store URL scheme {scheme!r}; use memory:// or one of {REDIS_SCHEMES}"
    )
