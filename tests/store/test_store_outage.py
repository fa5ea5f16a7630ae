"""A Redis that dies or hangs makes every call fail fast with StoreError, and the same
store object works again once Redis is back."""
from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from service.store import GameStore, IdempotentResponse, StoreError, store_from_url
from tests.store.support import effects, new_id
from tests.redis_servers import RedisServer

# The promise to the service: a request on a broken Redis becomes a 503 this fast.
DEADLINE = 2.0
TTL = 60


def every_call(store: GameStore, game_id: str) -> dict[str, Callable[[], object]]:
    """One call of each store method on ``game_id`` (at version 1)."""
    return {
        "create": lambda: store.create(new_id(), "s", 1, effects("e")),
        "load": lambda: store.load(game_id, idempotency_key="k"),
        "save": lambda: store.save(game_id, 1, "during outage", 2, effects("e", reply=IdempotentResponse("k", "r", TTL))),
        "events": lambda: store.events(game_id, 0),
        "wait_for_events": lambda: store.wait_for_events(game_id, 1, timeout=10),
        "check": store.check,
    }


def assert_each_fails_fast(calls: dict[str, Callable[[], object]]) -> None:
    for name, call in calls.items():
        started = time.monotonic()
        with pytest.raises(StoreError):
            call()
        assert time.monotonic() - started < DEADLINE, f"{name} took too long to fail"


@pytest.fixture
def store_on(private_redis: RedisServer):
    built = store_from_url(private_redis.url, prefix="test:")
    yield built
    built.close()


def test_a_dead_redis_fails_every_call_fast_and_a_restart_heals_the_same_store(
    private_redis: RedisServer, store_on: GameStore
) -> None:
    game = new_id()
    store_on.create(game, "state 1", 1, effects("e1"))
    store_on.check()  # leaves a pooled connection that the crash breaks

    private_redis.kill()
    assert_each_fails_fast(every_call(store_on, game))

    private_redis.start()  # same port and append-only file
    assert store_on.load(game).state == "state 1"
    store_on.save(game, 1, "state 2", 2, effects("e2"))
    assert store_on.events(game, 0) == ["e1", "e2"]
    store_on.check()


def test_a_hung_redis_fails_every_call_fast_and_recovers(
    private_redis: RedisServer, store_on: GameStore
) -> None:
    game = new_id()
    store_on.create(game, "state 1", 1, effects("e1"))

    private_redis.pause()
    try:
        assert_each_fails_fast(every_call(store_on, game))
    finally:
        private_redis.resume()

    # The paused server still holds the commands sent to it and runs them on resuming:
    # a write that timed out may or may not have happened, which is what the version
    # check and idempotency keys are for.
    assert store_on.load(game).version in (1, 2)
    store_on.check()
