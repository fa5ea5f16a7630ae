"""Fixtures shared by every test package: the shared Redis and a private key prefix."""
from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator

import pytest
import redis

from tests.redis_servers import RedisClusterServers, RedisServer, redis_server_binary, unavailable

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The shared Redis (env REDIS_URL), checked with a PING.

    When nothing answers at the default address and redis-server is installed, the session
    starts a private one, so the README's test command works on a machine where Redis is not
    running. Otherwise: fails under CI=true, skips loudly elsewhere."""
    url = os.environ.get("REDIS_URL", DEFAULT_REDIS_URL)
    try:
        with redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2) as client:
            client.ping()
    except redis.RedisError as error:
        if "REDIS_URL" in os.environ or shutil.which("redis-server") is None:
            unavailable(f"cannot reach Redis at {url} ({error})")
        server = RedisServer(tmp_path_factory.mktemp("session-redis")).start()
        yield server.url
        server.stop()
        return
    yield url


@pytest.fixture(scope="session")
def key_prefix(redis_url: str) -> Iterator[str]:
    """A key prefix owned by this test session; its keys are deleted at the end.

    The shared Redis serves other sessions too, so nothing else is ever deleted."""
    prefix = f"test:{uuid.uuid4().hex}:"
    yield prefix
    with redis.Redis.from_url(redis_url) as client:
        for keys in _batches(client.scan_iter(match=f"{prefix}*", count=500), 500):
            client.delete(*keys)


def _batches(items: Iterator[bytes], size: int) -> Iterator[list[bytes]]:
    batch: list[bytes] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


@pytest.fixture(scope="session")
def redis_cluster_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A private 3-master Redis Cluster for this session, stopped at its end."""
    redis_server_binary()
    cluster = RedisClusterServers(tmp_path_factory.mktemp("redis-cluster")).start()
    yield cluster.url
    cluster.stop()
