"""API test fixtures: apps on the real Redis (the session's own key prefix) or in memory.

``redis_url`` and ``key_prefix`` come from tests/conftest.py: a missing Redis fails under
CI=true and skips loudly elsewhere; every key this session writes is deleted at its end.
"""
from __future__ import annotations

from collections.abc import Iterator

import pytest
from flask import Flask
from flask.testing import FlaskClient

from service.app import create_app
from service.store.base import GameStore
from tests.api.support import store_of


def build_app(store: GameStore | None = None, **settings: str) -> Flask:
    return create_app({"LOG_LEVEL": "WARNING", **settings}, store=store)


@pytest.fixture
def redis_app(redis_url: str, key_prefix: str) -> Iterator[Flask]:
    app = build_app(REDIS_URL=redis_url, KEY_PREFIX=key_prefix)
    yield app
    store_of(app).close()


@pytest.fixture(params=["redis", "memory"])
def any_app(request: pytest.FixtureRequest) -> Iterator[Flask]:
    """The app on each store, for tests cheap enough to run twice."""
    if request.param == "memory":
        yield build_app(REDIS_URL="memory://")
    else:
        yield request.getfixturevalue("redis_app")


@pytest.fixture
def client(redis_app: Flask) -> FlaskClient:
    return redis_app.test_client()
