"""The Redis of a bench run: a private redis-server, or a shared one under a key prefix of the
run's own, which is deleted at the end (never anyone else's keys)."""
from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import redis

from tests.redis_servers import RedisServer


@dataclass(frozen=True)
class BenchRedis:
    url: str
    prefix: str
    private: bool  # a redis-server of this run alone (its figures are the run's only)


@contextmanager
def bench_redis(directory: Path, url: str | None) -> Iterator[BenchRedis]:
    """``url``'s Redis, or a private one started in ``directory``; with a fresh key prefix."""
    own = None if url else RedisServer(directory / "redis").start()
    found = BenchRedis(url or own.url, f"bench:{uuid.uuid4().hex}:", own is not None)
    try:
        yield found
    finally:
        if own is not None:
            own.stop()
        else:
            with redis.Redis.from_url(found.url) as client:
                for key in client.scan_iter(match=f"{found.prefix}*", count=1000):
                    client.delete(key)
