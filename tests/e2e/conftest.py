"""End-to-end fixtures: real gunicorn processes and the real Redis, under private key prefixes.

Every process a test starts is stopped at its end by pid (tests/gunicorn_server.py,
tests/redis_servers.py); every key lives under the session's prefix (tests/conftest.py),
which is deleted when the session ends.
"""
from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from service.store import RedisStore
from tests.gunicorn_server import GunicornServer

StartGunicorn = Callable[..., GunicornServer]


@pytest.fixture
def test_prefix(key_prefix: str) -> str:
    """A key prefix of this test alone, inside the session's (so it is cleaned up with it)."""
    return f"{key_prefix}e2e-{uuid.uuid4().hex[:8]}:"


@pytest.fixture
def start_gunicorn(tmp_path: Path) -> Iterator[StartGunicorn]:
    """Start service gunicorns: ``start_gunicorn(environment, workers=3)``; all are stopped
    (graceful, then by pid) when the test ends."""
    started: list[GunicornServer] = []

    def start(environment: dict[str, str], **options) -> GunicornServer:
        server = GunicornServer(tmp_path / f"gunicorn{len(started)}", dict(environment), **options)
        started.append(server)
        return server.start()

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def service(start_gunicorn: StartGunicorn, redis_url: str, test_prefix: str) -> GunicornServer:
    """The service under gunicorn (2 workers) on the shared Redis, this test's prefix."""
    return start_gunicorn({"REDIS_URL": redis_url, "KEY_PREFIX": test_prefix}, workers=2)


@pytest.fixture(scope="module")
def module_service(tmp_path_factory: pytest.TempPathFactory, redis_url: str, key_prefix: str) -> Iterator[GunicornServer]:
    """Like ``service``, shared by the tests of one module (many cheap cases on one server)."""
    prefix = f"{key_prefix}e2e-{uuid.uuid4().hex[:8]}:"
    server = GunicornServer(tmp_path_factory.mktemp("gunicorn"), {"REDIS_URL": redis_url, "KEY_PREFIX": prefix})
    try:
        yield server.start()
    finally:
        server.stop()


@pytest.fixture
def truth(redis_url: str, test_prefix: str) -> Iterator[RedisStore]:
    """The store adapter on this test's keys, to read what the service really stored."""
    yield from _store(redis_url, test_prefix)


@pytest.fixture(scope="module")
def module_truth(redis_url: str, module_service: GunicornServer) -> Iterator[RedisStore]:
    """``truth`` for ``module_service``."""
    yield from _store(redis_url, module_service.environment["KEY_PREFIX"])


def _store(redis_url: str, prefix: str) -> Iterator[RedisStore]:
    store = RedisStore(redis_url, prefix)
    yield store
    store.close()
