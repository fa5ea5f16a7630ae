"""Quotas on Redis: a counter per key and window of time, ``<prefix>count:<key>:<window>``,
shared by every process (how many games a client created, analyses it asked for, invites it
accepted). A counter expires once its window is over; keys are not hash-tagged: one
round trip touches one counter.
"""
from __future__ import annotations

import time

from redis import Redis
from redis.cluster import RedisCluster

from service.store.redis_errors import store_errors


def count(client: Redis | RedisCluster, prefix: str, key: str, window_seconds: int) -> int:
    """INCR the counter of the current window (it expires with the window), in one round
    trip. Raises StoreError."""
    window = int(time.time() // window_seconds)
    name = f"{prefix}count:{key}:{window}"
    with store_errors():
        pipe = client.pipeline(transaction=False)
        pipe.incr(name)
        pipe.expire(name, window_seconds + 1)
        value, _ = pipe.execute()
    return int(value)
