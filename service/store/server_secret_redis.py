"""The server secret on Redis: ``<prefix>server-secret``, the first value any process proposed,
so every process checks tokens with the same secret. Set once and never expires.
"""
from __future__ import annotations

from redis import Redis
from redis.cluster import RedisCluster

from service.store.redis_errors import store_errors

SECRET_KEY = "server-secret"


def shared_secret(client: Redis | RedisCluster, prefix: str, proposed: str) -> str:
    """The stored secret, ``proposed`` when none was stored yet. Raises StoreError."""
    name = prefix + SECRET_KEY
    with store_errors():
        client.set(name, proposed, nx=True)
        return client.get(name)
