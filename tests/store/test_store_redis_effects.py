"""What a Redis write does besides the state, in the same script: events trimmed to the
newest, feed entries (webhook deliveries among them) in the shard's feed, the turn deadline's timer, the event count
published on the game's shard channel. Run on one server and on the cluster."""
from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import closing

import pytest
import redis

from service import ids
from service.store import RedisStore, store_from_url
from service.store.feed import DELIVERY_GROUP, FeedEntry
from service.store.errors import StoreError
from service.store.feed_redis import RedisFeed
from tests.redis_servers import RedisServer
from service.store.keys import game_keys
from service.store.timers import DEADLINE_TIMER, Timer
from tests.store.support import effects, new_id


@pytest.fixture(params=["redis", "redis-cluster"])
def redis_store(request: pytest.FixtureRequest) -> Iterator[tuple[RedisStore, redis.Redis | redis.RedisCluster, str]]:
    if request.param == "redis":
        url, prefix = request.getfixturevalue("redis_url"), request.getfixturevalue("key_prefix")
        client = redis.Redis.from_url(url, decode_responses=True)
    else:
        url, prefix = request.getfixturevalue("redis_cluster_url"), "effects:"
        client = redis.RedisCluster.from_url(url.replace("redis+cluster://", "redis://"), decode_responses=True)
    store = store_from_url(url, prefix=prefix, max_events=5)
    yield store, client, prefix
    store.close()
    client.close()


def test_the_oldest_events_are_trimmed_and_numbering_continues(redis_store) -> None:
    store, _, _ = redis_store
    game_id = new_id()
    store.create(game_id, "s", 1, effects("e1", "e2", "e3"))
    store.save(game_id, 1, "s", 2, effects("e4", "e5", "e6", "e7", count=7))
    assert store.events(game_id, 0) == ["e3", "e4", "e5", "e6", "e7"]
    assert store.events(game_id, 5) == ["e6", "e7"]
    assert store.events(game_id, 7) == []


def test_deliveries_go_to_the_games_shard_feed_with_the_save(redis_store) -> None:
    store, client, prefix = redis_store
    game_id = new_id()
    entry = FeedEntry(f"wh_{game_id}_3_turn", "game", game_id, "turn", "", '{"type":"turn"}', "https://hooks.example/x")
    store.create(game_id, "s", 1, effects("e1", feed=(entry,)))
    keys = game_keys(prefix, game_id)
    assert ids.key_slot(keys.feed) == ids.key_slot(keys.state)
    found = [fields for _, fields in client.xrange(keys.feed) if fields["subject"] == game_id]
    assert found == [{"id": entry.id, "kind": "game", "subject": game_id, "type": "turn", "owner": "",
                      "body": entry.body, "url": entry.url}]
    store.save(game_id, 1, "s", 2, effects("e2"))  # no entries: nothing added
    assert len([f for _, f in client.xrange(keys.feed) if f["subject"] == game_id]) == 1


def test_a_webhook_in_the_feed_outlives_a_trimming_that_knows_only_the_other_groups(redis_store) -> None:
    """A background runner of an earlier version trims what its own groups (ratings, streams)
    are done with, and knows nothing of the deliveries' group: the store makes that group
    before it writes a webhook, so the entry waits for the deliveries whichever process of a
    rolling deploy is updated first."""
    store, client, prefix = redis_store
    game_id = new_id()
    shard = ids.shard_of(game_id)
    feed = RedisFeed(client, prefix)
    hook = FeedEntry(f"wh_{game_id}_1_turn", "game", game_id, "turn", "key-1", "{}", "https://hooks.example/x")
    store.create(game_id, "s", 1, effects("e1", feed=(hook,)))
    assert DELIVERY_GROUP in [info["name"] for info in client.xinfo_groups(game_keys(prefix, game_id).feed)]
    for group in ("ratings", "streams"):
        feed.ack(group, feed.read(group, "old-runner", 1000, 0, (shard,)))
    feed.trim(("ratings", "streams"))
    assert [read.entry for read in feed.read(DELIVERY_GROUP, "worker", 1000, 0, (shard,))
            if read.entry.subject == game_id] == [hook]


def test_a_webhook_written_while_redis_is_down_fails_and_makes_the_group_once_it_is_back(tmp_path) -> None:
    """The deliveries' group is made before the write, and the shard counts as ready only once
    it is: a failed attempt (503 for the request) leaves it to be made by the next write."""
    server = RedisServer(tmp_path / "redis").start()
    store = store_from_url(server.url, prefix="down:")
    client = server.client()
    try:
        game_id = new_id()
        hook = FeedEntry(f"wh_{game_id}_1_turn", "game", game_id, "turn", "", "{}", "https://hooks.example/x")
        server.kill()
        with pytest.raises(StoreError):
            store.create(game_id, "s", 1, effects("e1", feed=(hook,)))
        server.start()
        store.create(game_id, "s", 1, effects("e1", feed=(hook,)))
        assert DELIVERY_GROUP in [info["name"] for info in client.xinfo_groups(game_keys("down:", game_id).feed)]
    finally:
        client.close()
        store.close()
        server.stop()


def test_the_deadline_timer_follows_timed_games_only(redis_store) -> None:
    store, client, prefix = redis_store
    timed, untimed = new_id(), new_id()
    store.create(timed, "s", 1, effects(timed=True, deadline=1234.5))
    store.create(untimed, "s", 1, effects())
    timers, member = game_keys(prefix, timed).timers, Timer(DEADLINE_TIMER, timed).member
    assert ids.key_slot(timers) == ids.key_slot(game_keys(prefix, timed).state)
    assert client.zscore(timers, member) == 1234.5
    store.save(timed, 1, "s", 2, effects(timed=True, deadline=2000.0))
    assert client.zscore(timers, member) == 2000.0
    store.save(timed, 2, "s", 3, effects(timed=True, deadline=None))
    assert client.zscore(timers, member) is None
    assert client.zscore(game_keys(prefix, untimed).timers, Timer(DEADLINE_TIMER, untimed).member) is None
    store.schedule(timed, 3000.0)  # a settle that found the turn not over yet
    assert client.zscore(timers, member) == 3000.0


def test_every_write_publishes_the_event_count_on_the_games_shard_channel(redis_store) -> None:
    store, client, prefix = redis_store
    game_id = new_id()
    channel = game_keys(prefix, game_id).channel
    pubsub = client.pubsub()
    pubsub.ssubscribe(channel)
    try:
        _wait_for(pubsub, "ssubscribe")
        store.create(game_id, "s", 1, effects("e1", "e2"))
        store.save(game_id, 1, "s", 2, effects("e3", count=3))
        assert [_wait_for(pubsub, "smessage")["data"] for _ in range(2)] == ["2", "3"]
    finally:
        pubsub.close()


def _wait_for(pubsub, kind: str, timeout: float = 5.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        message = pubsub.get_sharded_message(timeout=0.2) if hasattr(pubsub, "get_sharded_message") else \
            pubsub.get_message(timeout=0.2)
        if message and message["type"] == kind:
            return message
    raise AssertionError(f"no {kind} within {timeout} s")


def test_archived_events_are_one_compressed_field_of_the_state(redis_url, key_prefix) -> None:
    with closing(store_from_url(redis_url, prefix=key_prefix)) as store, redis.Redis.from_url(redis_url) as client:
        game_id = new_id()
        events = [f"{n}\x1f4\x1f0\x1f1\x1f1\x1f0\x1f9c" for n in range(1, 301)]
        store.create(game_id, "s", 1, effects(*events[:100]))
        store.save(game_id, 1, "s", 2, effects(*events[100:], count=300))
        keys = game_keys(key_prefix, game_id)
        listed = client.memory_usage(keys.events)
        store.archive_events(game_id)
        assert not client.exists(keys.events)
        archived = client.hget(keys.state, "a")
        assert archived.startswith(b"z1:") and len(archived) < listed / 3
        assert client.ttl(keys.state) > 0  # the state keeps its expiry
        assert store.events(game_id, 0) == events and store.events(game_id, 295) == events[295:]


def test_the_oldest_events_trimmed_then_archived_still_read_from_where_they_start(redis_store) -> None:
    store, _, _ = redis_store  # max_events=5
    game_id = new_id()
    store.create(game_id, "s", 1, effects("e1", "e2", "e3"))
    store.save(game_id, 1, "s", 2, effects("e4", "e5", "e6", "e7", count=7))
    store.archive_events(game_id)
    assert store.events(game_id, 0) == ["e3", "e4", "e5", "e6", "e7"]
    assert store.events(game_id, 5) == ["e6", "e7"]
    store.save(game_id, 2, "s", 3, effects("e8", count=8))
    assert store.events(game_id, 6) == ["e7", "e8"]


def test_events_appended_between_reading_and_archiving_leave_the_list_as_it_is(redis_store) -> None:
    store, client, prefix = redis_store
    game_id = new_id()
    store.create(game_id, "s", 1, effects("e1", "e2"))
    keys = game_keys(prefix, game_id)
    archive_script = store._connection().archive
    # The list as read had one event; it has two now: nothing is archived.
    assert archive_script(keys=[keys.state, keys.events], args=[1, "z1:stale"]) == 0
    assert client.hget(keys.state, "a") is None and store.events(game_id, 0) == ["e1", "e2"]


def test_archiving_a_game_that_expired_creates_no_key(redis_store) -> None:
    store, client, prefix = redis_store
    game_id = new_id()
    store.create(game_id, "s", 1, effects("e1"))
    keys = game_keys(prefix, game_id)
    client.delete(keys.state)  # expired between the read of its events and the archiving
    assert store._connection().archive(keys=[keys.state, keys.events], args=[1, "z1:x"]) == 0
    assert not client.exists(keys.state)


def test_a_script_still_missing_after_redis_py_loaded_it_is_run_once_more(private_redis, monkeypatch) -> None:
    # Right after a restart, the load redis-py sends on a miss has been seen not to stick (the
    # run after it missed too). Here the load is made not to stick once, by flushing the
    # scripts right after it: the save still applies, once.
    store = store_from_url(private_redis.url, prefix="flush:")
    client = store._connection().client
    loaded = client.script_load
    flushes = []

    def load_then_flush(script):
        sha = loaded(script)
        if not flushes:
            flushes.append(client.script_flush())
        return sha

    monkeypatch.setattr(client, "script_load", load_then_flush)
    game_id = new_id()
    store.create(game_id, "s", 1, effects("e1"))
    store.save(game_id, 1, "s2", 2, effects("e2", count=2))
    assert flushes and store.load(game_id).version == 2 and store.events(game_id, 0) == ["e1", "e2"]
    store.close()
