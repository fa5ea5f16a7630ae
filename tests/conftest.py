"""Fixtures shared by every test package: the shared Redis, a private key prefix, a private
Redis Cluster, the stores' areas on each backend, and the ``exclusive`` marker."""
from __future__ import annotations

import fcntl
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from service.store import store_from_url
from service.store.areas import Areas, areas_of
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


@pytest.fixture(params=["memory", "redis", "redis-cluster"])
def backend(request: pytest.FixtureRequest) -> tuple[str, str]:
    """(store URL, key prefix) of each kind; the prefix is this test's alone: the feed, the
    timers and the ratings are shared by every game of a prefix, unlike a game's own keys."""
    if request.param == "memory":
        return "memory://", ""
    prefix = f"{request.getfixturevalue('key_prefix')}areas-{uuid.uuid4().hex[:8]}:"
    return request.getfixturevalue("redis_url" if request.param == "redis" else "redis_cluster_url"), prefix


@pytest.fixture
def areas(backend: tuple[str, str]) -> Iterator[Areas]:
    """The feed, timers and ratings over a store of ``backend``."""
    url, prefix = backend
    built = store_from_url(url, prefix=prefix)
    yield areas_of(built, prefix)
    built.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[object]:
    """Under pytest-xdist, a test marked ``exclusive`` runs while no other test of the session
    does: its timings must not share the CPUs with another worker's heavy test.

    The lock wraps the whole run of each test, so it covers what a fixture of a wider
    scope does in a test's setup or teardown (a module's server started for its first test,
    a generated client type-checked, a browser launched or closed): an autouse fixture would
    take the lock only after those, and let another worker start them beside an exclusive
    test.

    A writer-preference lock across the workers with ``fcntl.flock`` on two files of the
    session's temporary directory. Every test takes the turnstile (exclusive), then the main
    lock shared, and lets the turnstile go; an exclusive test takes the turnstile, then the
    main lock exclusive, and holds both to its end. A waiting exclusive test thus holds the
    turnstile: no new test starts, and the ones running finish and release the main lock."""
    worker_basetemp = getattr(item.config, "workerinput", None) and item.config.option.basetemp
    if not worker_basetemp:
        return (yield)  # one process: nothing runs beside this test anyway
    exclusive = item.get_closest_marker("exclusive") is not None
    # pytest-xdist gives each worker <session directory>/<worker id> as its base directory.
    session = Path(worker_basetemp).parent
    with (session / "exclusive.turnstile").open("a") as turnstile, (session / "exclusive.lock").open("a") as main:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(main, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        finally:
            if not exclusive:
                fcntl.flock(turnstile, fcntl.LOCK_UN)
        try:
            return (yield)
        finally:
            fcntl.flock(main, fcntl.LOCK_UN)
            if exclusive:
                fcntl.flock(turnstile, fcntl.LOCK_UN)
