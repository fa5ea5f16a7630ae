"""Long-polls on Redis (service/store/notify.py): woken by the save's SPUBLISH, silent while
waiting, one subscription per game and process, bounded, and not fooled by a Redis restart.

Redis-specific figures (commands, subscriptions) come from a private redis-server, so that
no other traffic mixes in; the cluster cases run on the session's private cluster."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest
import redis

from service.store import RedisStore, store_from_url
from service.store import notify, shutdown
from service.store.errors import LongPollCapacity
from service.store.keys import game_keys
from tests.redis_servers import RedisServer
from tests.store.support import effects, new_id

PREFIX = "test:"


@pytest.fixture
def own_redis(tmp_path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path / "redis", extra_args=("--appendonly", "yes", "--appendfsync", "always")).start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def short_linger(monkeypatch) -> None:
    """Subscriptions end 0.3 s after their last waiter, instead of seconds."""
    monkeypatch.setattr(notify, "LINGER_SECONDS", 0.3)


@pytest.fixture
def store(own_redis: RedisServer) -> Iterator[RedisStore]:
    built = store_from_url(own_redis.url, prefix=PREFIX, max_waiters=3)
    yield built
    built.close()


def game_with_events(store: RedisStore, count: int = 2) -> str:
    game_id = new_id()
    store.create(game_id, "state", 1, effects(*[f"e{n}" for n in range(1, count + 1)]))
    return game_id


class Waiting:
    """``store.wait_for_events`` in a thread: its result, and when it returned."""

    def __init__(self, store: RedisStore, game_id: str, after: int, timeout: float = 10) -> None:
        self.result: list[str] | BaseException | None = None
        self.returned_at = 0.0
        self.thread = threading.Thread(target=self._run, args=(store, game_id, after, timeout))
        self.thread.start()

    def _run(self, store: RedisStore, game_id: str, after: int, timeout: float) -> None:
        try:
            self.result = store.wait_for_events(game_id, after, timeout)
        except BaseException as error:  # reported by join()
            self.result = error
        self.returned_at = time.monotonic()

    def join(self, timeout: float = 15) -> list[str]:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the waiter did not return"
        if isinstance(self.result, BaseException):
            raise self.result
        return self.result


def until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    """Wait for something the test can observe (subscriptions, counts)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


def subscribers(client: redis.Redis, game_id: str) -> int:
    """Subscriptions to the game's channel on the server (PUBSUB SHARDNUMSUB)."""
    _, count = client.execute_command("PUBSUB", "SHARDNUMSUB", game_keys(PREFIX, game_id).channel)
    return int(count)


def commands(client: redis.Redis) -> dict[str, int]:
    """Calls per command since the server started, leaving out what inspecting it costs."""
    stats = client.info("commandstats")
    return {name: value["calls"] for name, value in stats.items() if name not in ("cmdstat_info", "cmdstat_pubsub|shardnumsub")}


def test_a_save_wakes_the_waiters_of_its_game_at_once(store: RedisStore, own_redis: RedisServer) -> None:
    game_id = game_with_events(store)
    other = game_with_events(store)
    waiters = [Waiting(store, game_id, 2), Waiting(store, game_id, 2), Waiting(store, other, 2, timeout=1)]
    with own_redis.client() as client:
        until(lambda: subscribers(client, game_id) == 1 and subscribers(client, other) == 1)
    saved = time.monotonic()
    store.save(game_id, 1, "state 2", 2, effects("e3", count=3))
    for waiter in waiters[:2]:
        assert waiter.join() == ["e3"]
        assert waiter.returned_at - saved < 0.2
    assert waiters[2].join() == []  # another game's save does not wake it


def test_waiting_sends_redis_nothing_and_the_last_waiter_unsubscribes(store: RedisStore, own_redis: RedisServer) -> None:
    game_id = game_with_events(store)
    with own_redis.client() as client:
        waiters = [Waiting(store, game_id, 2, timeout=2.5) for _ in range(3)]
        until(lambda: store._connection().notifier.waiting == 3)
        time.sleep(0.3)  # the subscription and each waiter's first read are done
        before = commands(client)
        time.sleep(1.5)
        after = commands(client)
        assert after == before, {name: after[name] - before.get(name, 0) for name in after if after[name] != before.get(name)}
        # One subscription per process and game, however many wait on it.
        assert before.get("cmdstat_ssubscribe") == 1
        for waiter in waiters:
            assert waiter.join() == []
        until(lambda: subscribers(client, game_id) == 0)
        assert store._connection().notifier.subscribed_channels() == set()


def test_a_long_poll_right_after_the_last_one_keeps_the_subscription(store: RedisStore, own_redis: RedisServer) -> None:
    game_id = game_with_events(store)
    with own_redis.client() as client:
        before = commands(client)
        for after in (2, 3):  # answered, then asks again at once, like a client following a game
            waiter = Waiting(store, game_id, after)
            until(lambda: store._connection().notifier.waiting == 1)
            store.save(game_id, after - 1, "state", after, effects(f"e{after + 1}", count=after + 1))
            assert waiter.join() == [f"e{after + 1}"]
        spent = {name: calls - before.get(name, 0) for name, calls in commands(client).items()}
        assert spent.get("cmdstat_ssubscribe") == 1 and "cmdstat_sunsubscribe" not in spent
        until(lambda: subscribers(client, game_id) == 0)  # after the linger


def test_beyond_max_waiters_a_long_poll_is_refused_with_503(store: RedisStore) -> None:
    game_id = game_with_events(store)
    waiters = [Waiting(store, game_id, 2, timeout=1.5) for _ in range(3)]
    until(lambda: store._connection().notifier.waiting == 3)
    with pytest.raises(LongPollCapacity) as refused:
        store.wait_for_events(game_id, 2, timeout=1)
    assert (refused.value.status, refused.value.code) == (503, "long_poll_capacity")
    assert refused.value.headers["Retry-After"].isdigit()
    for waiter in waiters:
        waiter.join()
    assert store.wait_for_events(game_id, 1, timeout=1) == ["e2"]  # the slots are free again


def test_a_redis_restart_wakes_the_waiters_to_read_again(store: RedisStore, own_redis: RedisServer) -> None:
    game_id = game_with_events(store)
    waiter = Waiting(store, game_id, 2, timeout=20)
    with own_redis.client() as client:
        until(lambda: subscribers(client, game_id) == 1)
    own_redis.kill()
    own_redis.start()  # same port, same append-only file
    # A save while the subscription is down is not published to this process; once the
    # subscription is back the waiter reads again and finds it.
    store.save(game_id, 1, "state 2", 2, effects("e3", count=3))
    restarted = time.monotonic()
    assert waiter.join() == ["e3"]
    assert waiter.returned_at - restarted < 5  # reconnect backoff is at most 2 s
    # And the next waiter is woken by publications again.
    second = Waiting(store, game_id, 3)
    with own_redis.client() as client:
        until(lambda: subscribers(client, game_id) == 1)
    store.save(game_id, 2, "state 3", 3, effects("e4", count=4))
    assert second.join() == ["e4"]


def test_closing_the_store_answers_its_waiters_at_once(store: RedisStore) -> None:
    game_id = game_with_events(store)
    waiter = Waiting(store, game_id, 2, timeout=20)
    until(lambda: store._connection().notifier.waiting == 1)
    closed = time.monotonic()
    store._connection().notifier.wake_all(notify.Wake.SHUTDOWN)
    assert waiter.join() == []
    assert waiter.returned_at - closed < 0.5


def test_stop_waiting_answers_every_waiter_and_every_later_one_at_once(store: RedisStore, monkeypatch) -> None:
    monkeypatch.setattr(shutdown, "_stopping", False)  # restored afterwards: it is process-wide
    game_id = game_with_events(store)
    waiter = Waiting(store, game_id, 2, timeout=20)
    until(lambda: store._connection().notifier.waiting == 1)
    shutdown.stop_waiting()
    assert waiter.join() == []
    started = time.monotonic()
    assert store.wait_for_events(game_id, 2, timeout=20) == []
    assert store.wait_for_events(game_id, 1, timeout=20) == ["e2"]  # still reads what is there
    assert time.monotonic() - started < 0.5


def test_on_a_cluster_each_game_is_woken_through_its_own_node(redis_cluster_url: str) -> None:
    store = store_from_url(redis_cluster_url, prefix=PREFIX)
    try:
        # Game ids fall in 16 shards spread over the 3 masters: 48 games leave none out
        # (but with odds of about 1 in 10^8).
        games = [game_with_events(store) for _ in range(48)]
        waiters = [Waiting(store, game_id, 2) for game_id in games]
        until(lambda: store._connection().notifier.waiting == len(games))
        saved = time.monotonic()
        for game_id in games:
            store.save(game_id, 1, "state 2", 2, effects("e3", count=3))
        for waiter in waiters:
            assert waiter.join() == ["e3"]
            assert waiter.returned_at - saved < 1.0
        notifier = store._connection().notifier
        assert len(notifier._subscribers) == 3  # one subscription connection per master
        until(lambda: notifier.subscribed_channels() == set())
    finally:
        store.close()


def test_many_concurrent_callers_share_at_most_32_connections(own_redis: RedisServer) -> None:
    # Under gevent every request is a greenlet: thousands at once must not each open a connection.
    # The cap is the subject here, not the pool's wait: 100 OS threads contending for the GIL on
    # a busy CI machine once kept one waiting past the default second (a 503 under gevent).
    store = RedisStore(own_redis.url, prefix=PREFIX, max_waiters=3, timeout=10.0)
    try:
        callers_share_the_capped_pool(store, own_redis)
    finally:
        store.close()


def callers_share_the_capped_pool(store: RedisStore, own_redis: RedisServer) -> None:
    game_id = game_with_events(store)
    start = threading.Barrier(100)
    failures: list[BaseException] = []

    def reader() -> None:
        start.wait()
        try:
            for _ in range(20):
                store.events(game_id, 0)
        except BaseException as error:  # reported below
            failures.append(error)

    threads = [threading.Thread(target=reader) for _ in range(100)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    with own_redis.client() as client:
        others = int(client.info("clients")["connected_clients"]) - 1  # this inspecting one
    assert others <= 32
