"""Presence: ``players[].online`` in the view, and ``presence`` events on streams.

A seat is online while a stream or waiting long-poll of it is open (marked in the store, kept
for a grace after the last one closes, so that a reconnect is not news) or for 30 s after it
acted; a bot always is. Presence is not part of the game's version. On Redis the marks cost a
write per open and close of a process's first and last connection of a seat, never per
request; a process that died is ignored once its heartbeat is old; idle streams cost nothing."""
from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
import redis

from service.games import presence as presence_rule
from service.store import liveness, presence
from service.store.keys import game_keys
from tests.api.conftest import build_app
from tests.api.streams import Reader, bearer
from tests.api.support import Table, play_one, store_of
from tests.api.test_deadlines import clocked
from tests.redis_servers import RedisServer
from tests.store.test_notify import until
from tests.e2e.waiters import changed, command_calls

GRACE = 1.0


@pytest.fixture(autouse=True)
def short_grace(monkeypatch) -> None:
    monkeypatch.setattr(presence, "GRACE_SECONDS", GRACE)


@pytest.fixture(params=["redis", "memory"])
def app(request, redis_url, key_prefix):
    settings = {"STREAM_HEARTBEAT_SECONDS": "1"}
    if request.param == "memory":
        app = build_app(REDIS_URL="memory://", **settings)
    else:
        app = build_app(REDIS_URL=redis_url, KEY_PREFIX=key_prefix, **settings)
    yield app
    store_of(app).close()


def online(table: Table) -> list[bool]:
    return [player["online"] for player in table.view()["players"]]


def stream(table: Table, seat: int | None) -> Reader:
    reader = Reader(table.client, f"/v1/games/{table.game_id}/stream",
                    bearer(None if seat is None else table.tokens[seat]))
    reader.until(bool)
    return reader


def test_a_seat_is_online_while_its_stream_is_open_and_for_a_grace_after(app):
    table = Table.open(app, app.test_client(), "classic", seed=3)
    assert online(table) == [False, False]
    reader = stream(table, 1)
    assert reader.view["players"][1]["online"] is True  # its own view counts it already
    assert online(table) == [False, True]
    reader.stop()
    assert online(table) == [False, True]  # within the grace
    until(lambda: online(table) == [False, False], timeout=GRACE + 3)


def test_a_waiting_long_poll_counts_and_a_plain_read_does_not(app):
    table = Table.open(app, app.test_client(), "classic", seed=3)
    after = table.view()["last_seq"]
    assert table.get(0, "/events", after=after).status_code == 200
    assert online(table) == [False, False]
    waiting = threading.Thread(target=lambda: table.client.get(
        f"/v1/games/{table.game_id}/events?after={after}&wait=2", headers=bearer(table.tokens[0])))
    waiting.start()
    until(lambda: online(table)[0])
    waiting.join()


def test_acting_makes_a_seat_online_for_thirty_seconds(redis_url, key_prefix):
    app = build_app(REDIS_URL=redis_url, KEY_PREFIX=key_prefix)
    try:
        clock = clocked(app)
        table = Table.open(app, app.test_client(), "classic", seed=3)
        actor = table.view()["hand"]["turn"]
        assert play_one(table).status_code == 200
        assert online(table)[actor] is True
        clock.move(presence_rule.ACTED_WINDOW_SECONDS - 1)
        assert online(table)[actor] is True
        clock.move(2)
        assert online(table)[actor] is False
    finally:
        store_of(app).close()


def test_bots_are_always_online(app):
    response = app.test_client().post("/v1/games", json={"variant": "classic",
                                                         "players": [{"name": "Ann"}, {"name": "Robo", "bot": True}]})
    assert [p["online"] for p in response.get_json()["game"]["players"]] == [False, True]


def test_presence_changes_neither_the_version_nor_the_etag(app):
    table = Table.open(app, app.test_client(), "classic", seed=3)
    etag = table.get(None).headers["ETag"]
    reader = stream(table, 0)
    assert table.get(None).headers["ETag"] == etag
    seat = table.view()["hand"]["turn"]
    assert table.act(seat, "pass", headers={"If-Match": etag}).status_code == 200
    reader.stop()


def test_presence_events_come_after_the_grace_and_a_quick_reconnect_is_not_news(app):
    table = Table.open(app, app.test_client(), "classic", seed=3)
    watcher = stream(table, None)
    player = stream(table, 1)
    watcher.until(lambda events: any(e.event == "presence" for e in events))
    assert watcher.presence() == [{"seat": 1, "online": True}]
    player.stop()
    player = stream(table, 1)  # back within the grace
    time.sleep(GRACE + 1)
    assert watcher.presence() == [{"seat": 1, "online": True}]
    player.stop()
    watcher.until(lambda events: len(watcher.presence()) == 2, timeout=GRACE + 5)
    assert watcher.presence()[-1] == {"seat": 1, "online": False}
    watcher.stop()


# --- Redis: processes, liveness and what it costs ----------------------------------------

@pytest.fixture
def own_redis(tmp_path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path / "redis").start()
    yield server
    server.stop()


@pytest.fixture
def quick_beats(monkeypatch) -> None:
    monkeypatch.setattr(liveness, "BEAT_SECONDS", 0.2)
    monkeypatch.setattr(liveness, "FOLLOWER_READ_SECONDS", 0.3)


def test_the_marks_of_a_process_that_stopped_beating_are_ignored(own_redis, quick_beats):
    app = build_app(REDIS_URL=own_redis.url, KEY_PREFIX="p:", STREAM_HEARTBEAT_SECONDS="1")
    client = redis.Redis.from_url(own_redis.url, decode_responses=True)
    try:
        table = Table.open(app, app.test_client(), "classic", seed=3)
        marks = game_keys("p:", table.game_id).presence
        client.hset(marks, "never-beat.1:0", 1)  # a process nobody knows: ignored
        assert online(table) == [False, False]
        client.zadd("p:processes", {"crashes-soon.1": time.time() + 1.5})
        client.hset(marks, "crashes-soon.1:1", 1)
        watcher = stream(table, None)  # a mark of a process it has not seen: it reads the processes again
        assert watcher.view["players"][1]["online"] is True
        # Its heartbeat runs out: the watcher's process sees it gone and tells its streams.
        watcher.until(lambda events: watcher.presence() == [{"seat": 1, "online": False}], timeout=5)
        assert online(table) == [False, False]
        watcher.stop()
    finally:
        client.close()
        store_of(app).close()


def test_a_process_that_began_after_the_last_read_counts_at_once(own_redis):
    """A process that just read who is alive (its own first mark beat) sees at once the mark of
    one that registered after that read: a mark is written after its process's first beat."""
    app = build_app(REDIS_URL=own_redis.url, KEY_PREFIX="p:", STREAM_HEARTBEAT_SECONDS="1")
    client = redis.Redis.from_url(own_redis.url, decode_responses=True)
    try:
        table = Table.open(app, app.test_client(), "classic", seed=3)
        player = stream(table, 1)  # this process beats: it has read the processes just now
        client.zadd("p:processes", {"began-later.1": time.time() + 15})
        client.hset(game_keys("p:", table.game_id).presence, "began-later.1:0", 1)
        assert online(table) == [True, True]
        player.stop()
    finally:
        client.close()
        store_of(app).close()


def test_a_closed_store_stops_retrying_its_presence_writes(own_redis, quick_beats, caplog):
    """Redis goes away while a seat's unmark is due: the writes are retried until the store is
    closed, then nothing of it runs on (no thread left reconnecting to a store nobody uses)."""
    app = build_app(REDIS_URL=own_redis.url, KEY_PREFIX="p:", STREAM_HEARTBEAT_SECONDS="1")
    table = Table.open(app, app.test_client(), "classic", seed=3)
    stream(table, 0).stop()  # marked; the unmark comes after the grace
    own_redis.stop()

    def complaints() -> int:
        return sum("not written" in r.getMessage() or "cannot beat" in r.getMessage() for r in caplog.records)

    with caplog.at_level("WARNING"):
        until(lambda: complaints() >= 2, timeout=GRACE + 5)  # retrying
        store_of(app).close()
        time.sleep(1.5)  # a round already under way ends
        after_close = complaints()
        time.sleep(3)
        assert complaints() == after_close


def test_gone_processes_cost_one_read_then_none(own_redis):
    """Two names nobody knows in one game's marks: one read of the live processes answers both."""
    app = build_app(REDIS_URL=own_redis.url, KEY_PREFIX="p:")
    client = redis.Redis.from_url(own_redis.url, decode_responses=True)
    try:
        table = Table.open(app, app.test_client(), "classic", seed=3)
        client.hset(game_keys("p:", table.game_id).presence, mapping={"long-gone.1:0": 1, "long-gone.2:1": 1})
        before = command_calls(client)
        assert online(table) == [False, False]
        assert changed(before, command_calls(client)).get("zrangebyscore") == 1
        before = command_calls(client)
        for _ in range(3):
            assert online(table) == [False, False]
        assert "zrangebyscore" not in changed(before, command_calls(client))
    finally:
        client.close()
        store_of(app).close()


def test_the_names_remembered_as_gone_are_bounded(own_redis, monkeypatch):
    """Past GONE_KEPT names the oldest judged is forgotten: it costs a read again, the newest not."""
    monkeypatch.setattr(liveness, "GONE_KEPT", 2)
    client = redis.Redis.from_url(own_redis.url, decode_responses=True)
    live = liveness.Liveness(lambda: client, "p:processes", lambda: False, lambda: False, lambda: None,
                             lambda older_than: None)

    def reads(name: str) -> int:
        before = command_calls(client)
        assert live.is_live(name, time.monotonic()) is False
        return changed(before, command_calls(client)).get("zrangebyscore", 0)

    try:
        assert [reads(name) for name in ("a", "b", "c")] == [1, 1, 1]
        assert [reads("c"), reads("b"), reads("a")] == [0, 0, 1]
    finally:
        client.close()


def test_a_seat_polling_again_and_again_marks_itself_once(own_redis):
    app = build_app(REDIS_URL=own_redis.url, KEY_PREFIX="p:")
    client = redis.Redis.from_url(own_redis.url, decode_responses=True)
    try:
        table = Table.open(app, app.test_client(), "classic", seed=3)
        after = table.view()["last_seq"]
        before = command_calls(client)
        for _ in range(5):
            response = table.client.get(f"/v1/games/{table.game_id}/events?after={after}&wait=0.2",
                                        headers=bearer(table.tokens[0]))
            assert response.status_code == 200
        polled = changed(before, command_calls(client))
        assert polled.get("hset") == 1 and "hdel" not in polled, polled
        until(lambda: changed(before, command_calls(client)).get("hdel") == 1, timeout=GRACE + 3)
    finally:
        client.close()
        store_of(app).close()


def test_idle_streams_cost_redis_nothing(own_redis):
    app = build_app(REDIS_URL=own_redis.url, KEY_PREFIX="p:", STREAM_HEARTBEAT_SECONDS="1")
    client = redis.Redis.from_url(own_redis.url, decode_responses=True)
    try:
        table = Table.open(app, app.test_client(), "classic", seed=3)
        readers = [stream(table, None) for _ in range(3)]
        time.sleep(0.5)  # the last subscription confirmed
        before = command_calls(client)
        time.sleep(3)  # three heartbeats each
        assert changed(before, command_calls(client)) == {}
        assert all(reader.chunks.count(b": keep-alive\n\n") >= 2 for reader in readers)
        for reader in readers:
            reader.stop()
    finally:
        client.close()
        store_of(app).close()
