"""Each load and each write of the Redis store is one round trip (what a request costs)."""
from __future__ import annotations

import threading

import pytest
import redis

from service.store import IdempotentResponse, RedisStore, store_from_url
from tests.store.support import effects, new_id
from tests.redis_servers import RedisServer

STATE = "x" * 1500  # about the size of a serialised game


class CountingConnection(redis.Connection):
    """Counts writes to the socket: a pipeline or a script is one write, then its replies."""

    sends = threading.local()

    def send_packed_command(self, command, check_health=True):
        CountingConnection.sends.count = getattr(CountingConnection.sends, "count", 0) + 1
        super().send_packed_command(command, check_health)


def round_trips(call, *args, **kwargs) -> int:
    """How many times ``call(*args, **kwargs)`` writes to Redis, in this thread."""
    CountingConnection.sends.count = 0
    call(*args, **kwargs)
    return CountingConnection.sends.count


@pytest.fixture
def counted_store(private_redis: RedisServer):
    built = store_from_url(private_redis.url, prefix="rt:", connection_class=CountingConnection)
    # Warm up: connect and load the scripts, which happens once per process.
    warm = new_id()
    built.create(warm, STATE, 1, effects("e"))
    built.save(warm, 1, STATE, 2, effects("e"))
    built.events(warm, 0)
    built.game = new_id()
    built.create(built.game, STATE, 1, effects("e1"))
    yield built
    built.close()


def test_each_call_is_one_round_trip(counted_store: RedisStore) -> None:
    game = counted_store.game
    reply = IdempotentResponse("key", "response", 60)
    assert round_trips(counted_store.save, game, 1, STATE, 2, effects("e2", "e3", reply=reply)) == 1
    assert round_trips(counted_store.load, game, idempotency_key="key") == 1
    assert round_trips(counted_store.load, game) == 1
    assert round_trips(counted_store.events, game, 1) == 1
    counted_store.archive_events(game)
    assert round_trips(counted_store.events, game, 0) == 1  # the archive read with the list
    assert round_trips(counted_store.create, new_id(), STATE, 1, effects("e1")) == 1
    assert round_trips(counted_store.check) == 1


def test_the_server_runs_one_script_per_save_and_two_reads_per_load(
    private_redis: RedisServer, counted_store: RedisStore
) -> None:
    with private_redis.client() as admin:
        admin.config_resetstat()
        counted_store.save(counted_store.game, 1, STATE, 2, effects("e2", reply=IdempotentResponse("k", "r", 60)))
        counted_store.load(counted_store.game, idempotency_key="k")
        calls = {
            name.removeprefix("cmdstat_"): stats["calls"]
            for name, stats in admin.info("commandstats").items()
        }
    assert calls["evalsha"] == 1 and "eval" not in calls and "script|load" not in calls
    assert calls["hmget"] == 1 and calls["get"] == 1
