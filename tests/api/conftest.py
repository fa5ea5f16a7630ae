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
from tests.api.support import API_KEY, SERVER_SECRET, store_of


class KeyedClient(FlaskClient):
    """A test client that creates games with the tests' API key, as the service's users do
    (a creation that names its own X-API-Key, or none with ``headers={"X-API-Key": None}``,
    keeps it)."""

    def open(self, *args, **kwargs):
        request = args[0] if args else kwargs.get("path", "/")
        path = request if isinstance(request, str) else getattr(request, "path", "")
        if kwargs.get("method") == "POST" and path == "/v1/games":
            headers = dict(kwargs.get("headers") or {})
            headers.setdefault("X-API-Key", API_KEY)
            kwargs["headers"] = {name: value for name, value in headers.items() if value is not None}
        return super().open(*args, **kwargs)


def build_app(store: GameStore | None = None, **settings: str) -> Flask:
    app = create_app({"LOG_LEVEL": "WARNING", "API_KEYS": API_KEY, "SERVER_SECRET": SERVER_SECRET, **settings},
                     store=store)
    app.test_client_class = KeyedClient
    return app


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
