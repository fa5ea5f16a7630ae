"""Finishing deliveries in batches, reading every shard in one call and finding the shards
with due work in one round trip, on real Redis."""
from __future__ import annotations

import threading

import pytest

from service.webhooks.entries import FEED, GROUP, Held, ShardKeys
from service.webhooks.finishing import Finisher
from service.webhooks.queues import FinishStep, Queues
from tests.e2e.waiters import changed, command_calls
from tests.redis_servers import RedisServer
from tests.webhooks.support import add_entry, game_in_shard

pytestmark = pytest.mark.timeout(60)


def read_one_per_shard(queues: Queues, client, prefix: str, shards: tuple[int, ...]) -> list[Held]:
    for shard in shards:
        queues.ensure_group(shard)
        add_entry(client, prefix, "http://127.0.0.1:9/x", game_id=game_in_shard(shard))
    return queues.read(shards, 10, 100)


def pending(client, prefix: str, shard: int) -> int:
    """How many of the shard's feed entries the deliveries' group holds unfinished."""
    return client.xpending(ShardKeys.of(prefix, shard).feed, GROUP)["pending"]


def test_one_read_gives_the_new_entries_of_every_shard_with_their_shard(redis_client, prefix: str) -> None:
    queues = Queues(redis_client, prefix, "reader", 100)
    entries = read_one_per_shard(queues, redis_client, prefix, (0, 7, 15))
    assert sorted(shard for shard, *_ in entries) == [0, 7, 15]
    for shard, source, stream_id, fields in entries:
        [(added_id, added)] = redis_client.xrange(ShardKeys.of(prefix, shard).feed)
        assert (source, stream_id, fields) == (FEED, added_id, added)
        assert redis_client.xpending(ShardKeys.of(prefix, shard).feed, GROUP)["consumers"] == [{"name": "reader", "pending": 1}]
    assert queues.read((0, 7, 15), 10, 50) == []  # nothing new


def test_a_batch_of_steps_is_finished_at_once_each_step_on_its_own(redis_client, prefix: str) -> None:
    queues = Queues(redis_client, prefix, "reader", 100)
    (s0, _, id0, _), (s1, _, id1, _), (s2, _, id2, fields2) = sorted(read_one_per_shard(queues, redis_client, prefix, (1, 2, 3)))
    steps = [
        FinishStep(s0, FEED, id0, "done"),
        FinishStep(s1, FEED, id1, "retry", 123.5, '{"attempt":2}'),
        FinishStep(s2, FEED, id2, "dead", dead_fields={**fields2, "reason": "http 503"}),
        FinishStep(s0, FEED, id0, "done"),  # finished already, by the first step
    ]
    assert queues.finish(steps) == [True, True, True, False]
    assert all(pending(redis_client, prefix, shard) == 0 for shard in (1, 2, 3))
    assert redis_client.zrange(ShardKeys.of(prefix, 2).retry, 0, -1, withscores=True) == [('{"attempt":2}', 123.5)]
    [(_, dead)] = redis_client.xrange(ShardKeys.of(prefix, 3).dead)
    assert dead == {**fields2, "reason": "http 503"}


def test_finishing_survives_redis_losing_its_scripts(prefix: str, tmp_path) -> None:
    server = RedisServer(tmp_path / "redis").start()
    client = server.client()
    try:
        queues = Queues(client, prefix, "reader", 100)
        [(shard, _, stream_id, _)] = read_one_per_shard(queues, client, prefix, (4,))
        client.script_flush()
        assert queues.finish([FinishStep(shard, FEED, stream_id, "done")]) == [True]
        assert pending(client, prefix, shard) == 0
    finally:
        client.close()
        server.stop()


class CountingQueues(Queues):
    """Queues that keep the size of each finishing round trip."""

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.batches: list[int] = []

    def finish(self, steps):
        self.batches.append(len(steps))
        return super().finish(steps)


class HeldQueues(CountingQueues):
    """Queues whose first finishing round trip waits for ``release``; each one's size is kept."""

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.sending = threading.Event()
        self.release = threading.Event()

    def finish(self, steps):
        self.sending.set()
        self.release.wait(10)
        return super().finish(steps)


def test_steps_handed_in_while_one_is_sent_go_together_in_the_next_round_trip(redis_client, prefix: str) -> None:
    queues = HeldQueues(redis_client, prefix, "reader", 100)
    entries = read_one_per_shard(queues, redis_client, prefix, tuple(range(16)))
    finisher = Finisher(queues)
    heard: list[tuple[str, bool]] = []

    def submit(shard: int, stream_id: str) -> None:
        finisher.submit(FinishStep(shard, FEED, stream_id, "done"),
                        lambda finished: heard.append((stream_id, finished)))

    (first_shard, _, first_id, _), *rest = entries
    sender = threading.Thread(target=submit, args=(first_shard, first_id))
    sender.start()
    assert queues.sending.wait(5)
    for shard, _, stream_id, _ in rest:
        submit(shard, stream_id)  # returns at once: the sender takes it along
    submit(0, "1-1")  # held by nobody: not finished here
    assert heard == []
    queues.release.set()
    sender.join(10)
    assert queues.batches == [1, 16]
    assert sorted(heard) == sorted([(stream_id, True) for _, _, stream_id, _ in entries] + [("1-1", False)])


def test_a_step_handed_in_alone_is_finished_before_submit_returns(redis_client, prefix: str) -> None:
    queues = Queues(redis_client, prefix, "reader", 100)
    [(shard, _, stream_id, _)] = read_one_per_shard(queues, redis_client, prefix, (5,))
    heard: list[bool] = []
    Finisher(queues).submit(FinishStep(shard, FEED, stream_id, "done"), heard.append)
    assert heard == [True]


def test_steps_redis_cannot_take_are_tried_again_until_it_can(prefix: str, tmp_path) -> None:
    server = RedisServer(tmp_path / "redis", extra_args=("--appendonly", "yes", "--appendfsync", "always")).start()
    client = server.client()
    try:
        queues = Queues(client, prefix, "reader", 100)
        [(shard, _, stream_id, _)] = read_one_per_shard(queues, client, prefix, (6,))
        server.kill()
        threading.Timer(0.5, server.start).start()  # back within the retries' pauses
        heard: list[bool] = []
        Finisher(queues).submit(FinishStep(shard, FEED, stream_id, "done"), heard.append)
        assert heard == [True]
        assert pending(client, prefix, shard) == 0
    finally:
        client.close()
        server.stop()


def test_steps_held_by_a_thread_go_together_when_it_is_done(redis_client, prefix: str) -> None:
    queues = CountingQueues(redis_client, prefix, "reader", 100)
    entries = read_one_per_shard(queues, redis_client, prefix, tuple(range(5)))
    finisher = Finisher(queues)
    heard: list[tuple[str, bool]] = []
    with finisher.holding():
        for shard, _, stream_id, _ in entries:
            finisher.submit(FinishStep(shard, FEED, stream_id, "done"),
                            lambda finished, stream_id=stream_id: heard.append((stream_id, finished)))
        assert heard == [] and queues.batches == []
        assert all(pending(redis_client, prefix, shard) == 1 for shard in range(5))
    assert queues.batches == [5]
    assert sorted(heard) == sorted((stream_id, True) for _, _, stream_id, _ in entries)
    finisher.submit(FinishStep(0, FEED, "1-1", "done"), lambda finished: heard.append(("1-1", finished)))
    assert queues.batches == [5, 1]  # not held any more


def test_the_shards_with_due_work_are_found_in_one_round_trip(prefix: str, tmp_path) -> None:
    # A private server: its command count is this test's alone (the shared one serves the
    # other tests of the session meanwhile).
    server = RedisServer(tmp_path / "redis").start()
    client = server.client()
    try:
        queues = Queues(client, prefix, "reader", 100)
        client.zadd(ShardKeys.of(prefix, 2).retry, {"due": 100.0})
        client.zadd(ShardKeys.of(prefix, 5).retry, {"later": 300.0})
        pipelines = []
        pipeline = client.pipeline
        client.pipeline = lambda *args, **kwargs: pipelines.append(1) or pipeline(*args, **kwargs)
        before = command_calls(client)
        assert queues.shards_due(tuple(range(16)), 200.0) == [2]
        assert queues.shards_due(tuple(range(16)), 300.0) == [2, 5]  # due at its score
        assert queues.shards_due((0, 1, 3), 1e12) == []
        assert len(pipelines) == 3  # one round trip per call, nothing sent outside it
        assert changed(before, command_calls(client)) == {"zcount": 16 + 16 + 3}
    finally:
        client.close()
        server.stop()

