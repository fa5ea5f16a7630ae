"""Quick-play fixtures: ``start_quick_play(**settings)`` builds the app on the embedded store and
on the real Redis (each test's own key prefix, inside the session's), with the background work
each deployment runs; everything started is stopped when the test ends."""
from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest

from tests.matchmaking.support import QuickPlayService, quick_play_service

StartQuickPlay = Callable[..., QuickPlayService]


def _starter(request: pytest.FixtureRequest, kind: str, key_prefix: str | None) -> Iterator[StartQuickPlay]:
    started: list[QuickPlayService] = []
    redis_url = request.getfixturevalue("redis_url") if kind == "redis" else None

    def start(*, worker: bool = True, **settings: str) -> QuickPlayService:
        prefix = f"{key_prefix or 'memory:'}mm-{uuid.uuid4().hex[:8]}:"
        service = quick_play_service(kind, redis_url, prefix, worker=worker, **settings)
        started.append(service)
        return service

    yield start
    for service in started:
        service.close()


@pytest.fixture(params=["memory", "redis"])
def start_quick_play(request: pytest.FixtureRequest) -> Iterator[StartQuickPlay]:
    """On each store in turn."""
    key_prefix = request.getfixturevalue("key_prefix") if request.param == "redis" else None
    yield from _starter(request, request.param, key_prefix)


@pytest.fixture
def start_on_redis(request: pytest.FixtureRequest, key_prefix: str) -> Iterator[StartQuickPlay]:
    """On Redis only (races between processes, Redis traffic)."""
    yield from _starter(request, "redis", key_prefix)
