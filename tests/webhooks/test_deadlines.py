"""Turn deadlines fired by the worker through the injected ``settle``, on a clock the test moves."""
from __future__ import annotations

import threading
import time

import pytest

from service.webhooks.entries import ShardKeys
from tests.webhooks.support import FakeClock, game_in_shard, metric, wait_until

pytestmark = pytest.mark.timeout(60)

LEASE = 30.0


class Settler:
    """Records settle calls; ``fail`` holds game ids whose next settle raises."""

    def __init__(self, then=None) -> None:
        self.calls: list[str] = []
        self.fail: set[str] = set()
        self._then = then
        self._lock = threading.Lock()

    def __call__(self, game_id: str) -> None:
        with self._lock:
            self.calls.append(game_id)
            if game_id in self.fail:
                self.fail.discard(game_id)
                raise RuntimeError("the store is away")
        if self._then is not None:
            self._then(game_id)

    def count(self, game_id: str) -> int:
        with self._lock:
            return self.calls.count(game_id)


def schedule(client, prefix: str, game_id: str, deadline: float) -> None:
    """What the service's save script does for a game with a turn deadline."""
    client.zadd(ShardKeys.for_game(prefix, game_id).due, {game_id: deadline})


def test_due_deadlines_are_settled_on_time_and_later_ones_wait(start_worker, redis_client, prefix: str) -> None:
    clock = FakeClock()
    settle = Settler()
    due_now, due_later = game_in_shard(3), game_in_shard(11)
    schedule(redis_client, prefix, due_now, clock() - 1)
    schedule(redis_client, prefix, due_later, clock() + 60)
    worker = start_worker(clock=clock, settle=settle, lease_seconds=LEASE)
    wait_until(lambda: settle.count(due_now) == 1, what="the due deadline settled")
    wait_until(lambda: redis_client.zscore(ShardKeys.for_game(prefix, due_now).due, due_now) is None,
               what="the settled deadline removed")
    time.sleep(0.2)
    assert settle.calls == [due_now]  # the other is not due yet

    clock.advance(61)
    wait_until(lambda: settle.count(due_later) == 1, what="the later deadline settled once due")
    assert settle.calls == [due_now, due_later]
    wait_until(lambda: metric(worker, "turn_deadlines_fired_total") == 2, what="counted")


def test_a_failed_settle_is_tried_again_after_the_lease(start_worker, redis_client, prefix: str) -> None:
    clock = FakeClock()
    settle = Settler()
    game_id = game_in_shard(5)
    settle.fail.add(game_id)
    due = ShardKeys.for_game(prefix, game_id).due
    schedule(redis_client, prefix, game_id, clock() - 1)
    worker = start_worker(clock=clock, settle=settle, lease_seconds=LEASE)
    wait_until(lambda: settle.count(game_id) == 1, what="first settle")
    leased = wait_until(lambda: redis_client.zscore(due, game_id), what="lease visible")
    assert leased == pytest.approx(clock() + LEASE, abs=1)  # kept, under lease
    time.sleep(0.2)
    assert settle.count(game_id) == 1  # not before the lease ends

    clock.advance(LEASE + 1)
    wait_until(lambda: settle.count(game_id) == 2, what="settled again after the lease")
    wait_until(lambda: redis_client.zscore(due, game_id) is None, what="removed once settled")
    assert metric(worker, "turn_deadline_failures_total") == 1


def test_a_deadline_rescheduled_by_the_settle_is_kept(start_worker, redis_client, prefix: str) -> None:
    """settle saves the game, and that save schedules the next turn's deadline: the worker
    must not remove the new deadline when it releases the one it fired."""
    clock = FakeClock()
    game_id = game_in_shard(7)
    due = ShardKeys.for_game(prefix, game_id).due
    next_deadline = clock() + 600
    settle = Settler(then=lambda game: schedule(redis_client, prefix, game, next_deadline))
    schedule(redis_client, prefix, game_id, clock() - 1)
    start_worker(clock=clock, settle=settle, lease_seconds=LEASE)
    wait_until(lambda: settle.count(game_id) == 1, what="settled")
    wait_until(lambda: redis_client.zscore(due, game_id) == next_deadline, what="the next deadline in place")
    time.sleep(0.2)
    assert redis_client.zscore(due, game_id) == next_deadline
    assert settle.calls == [game_id]


def test_two_workers_fire_each_deadline_once(start_worker, redis_client, prefix: str) -> None:
    clock = FakeClock()
    settle = Settler()
    games = [game_in_shard(shard % 16) for shard in range(40)]
    for game_id in games:
        schedule(redis_client, prefix, game_id, clock() - 1)
    start_worker(clock=clock, settle=settle, lease_seconds=LEASE)
    start_worker(clock=clock, settle=settle, lease_seconds=LEASE)
    wait_until(lambda: len(settle.calls) >= len(games), what="all settled")
    time.sleep(0.2)
    assert sorted(settle.calls) == sorted(games)
