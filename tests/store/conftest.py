"""Store fixtures: ``store`` runs each contract test on every implementation.

Select one backend with ``-k memory``, ``-k "redis and not cluster"`` or ``-k redis-cluster``.
``areas`` (tests/conftest.py) does the same for the feed, the timers and the ratings.
"""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from service.store import GameStore, store_from_url
from tests.redis_servers import RedisServer


@pytest.fixture(params=["memory", "redis", "redis-cluster"])
def store(request: pytest.FixtureRequest) -> Iterator[GameStore]:
    """A store of each kind; Redis ones share this session's key prefix."""
    if request.param == "memory":
        built = store_from_url("memory://")
    elif request.param == "redis":
        built = store_from_url(
            request.getfixturevalue("redis_url"), prefix=request.getfixturevalue("key_prefix")
        )
    else:
        # The cluster is private, but a prefix still keeps the keys looking like production.
        built = store_from_url(request.getfixturevalue("redis_cluster_url"), prefix="test:")
    yield built
    built.close()


@pytest.fixture
def private_redis(tmp_path) -> Iterator[RedisServer]:
    """A redis-server of this test's own, with an append-only file so a restart keeps data."""
    server = RedisServer(
        tmp_path / "redis", extra_args=("--appendonly", "yes", "--appendfsync", "always")
    ).start()
    yield server
    server.stop()
