"""The feed's contract (service/store/feed.py) on the embedded store, one Redis and a Redis
Cluster: groups, readers, take-over of a dead reader's entries, trimming; and the entries that
real saves of a match write, through HTTP."""
from __future__ import annotations

import threading
import time

import pytest
import redis

from service import ids
from service.app import BACKGROUND_EXTENSION
from service.store.areas import Areas, areas_of
from service.store.errors import StoreError
from service.store.feed import Feed, FeedEntry, Read
from service.store.feed_redis import RedisFeed, feed_key
from service.tokens import key_id
from tests.api.conftest import build_app
from tests.api.sessions import Session
from tests.api.support import API_KEY, store_of
from tests.e2e.webhook_stack import expected_webhooks

IDLE = 1.5  # seconds after which a reader counts as dead in these tests
WAIT = 0  # seconds a read may block: the entries are there already, or none will come


def entries(count: int, first: int = 0) -> list[FeedEntry]:
    return [FeedEntry(f"e{n}", "game", f"g{n}", "turn", "owner", f'{{"n": {n}}}') for n in range(first, first + count)]


def append(feed: Feed, written: list[FeedEntry], shard: int | None = None) -> None:
    """Append each entry to ``shard``, or spread them over the shards."""
    for n, entry in enumerate(written):
        feed.append(n % ids.SHARDS if shard is None else shard, (entry,))


def read_all(feed: Feed, group: str, consumer: str, count: int = 3) -> list[Read]:
    """Everything new to ``group`` as ``consumer`` reads it, a few at a time, on every reader's
    shards in turn, until a whole round finds nothing."""
    got: list[Read] = []
    while True:
        found = [read for shards in feed.reader_shards() for read in feed.read(group, consumer, count, WAIT, shards)]
        if not found:
            return got
        got += found


def read_some(feed: Feed, group: str, consumer: str, wanted: int) -> list[Read]:
    """``wanted`` new entries as ``consumer`` reads them (no final round that finds nothing)."""
    got: list[Read] = []
    while len(got) < wanted:
        got += [read for shards in feed.reader_shards() for read in feed.read(group, consumer, wanted, WAIT, shards)]
    return got


def ids_of(reads: list[Read]) -> list[str]:
    return [read.entry.id for read in reads]


def test_every_group_sees_every_entry_once(areas: Areas):
    feed = areas.feed
    written = entries(40)
    append(feed, written)
    for group in ("ratings", "streams"):
        seen = read_all(feed, group, f"{group}-reader")
        assert sorted(ids_of(seen)) == sorted(entry.id for entry in written)
        assert {read.entry for read in seen} == set(written)  # every field as written
        feed.ack(group, seen)
        assert read_all(feed, group, f"{group}-reader") == []
    later = entries(5, first=40)
    append(feed, later)
    for group in ("ratings", "streams"):
        assert sorted(ids_of(read_all(feed, group, "another-reader"))) == sorted(entry.id for entry in later)


def test_the_readers_of_one_group_never_get_the_same_entry(areas: Areas):
    feed = areas.feed
    written = entries(120)
    got: dict[str, list[Read]] = {}
    start = threading.Barrier(3)

    def reader(name: str) -> None:
        start.wait()
        got[name] = read_all(feed, "ratings", name, count=2)

    threads = [threading.Thread(target=reader, args=(name,)) for name in ("one", "two")]
    for thread in threads:
        thread.start()
    start.wait()
    append(feed, written)
    for thread in threads:
        thread.join(30)
    # A reader stops at a round with nothing new: pick up what came after both stopped.
    got["three"] = read_all(feed, "ratings", "three")
    every = [entry_id for reads in got.values() for entry_id in ids_of(reads)]
    assert sorted(every) == sorted(entry.id for entry in written), "an entry read twice, or never"


def test_a_dead_readers_entries_go_to_another_reader_after_the_idle_time(areas: Areas):
    feed = areas.feed
    append(feed, entries(6))
    held = read_some(feed, "ratings", "dies", 6)  # read, never acknowledged
    assert feed.claim_stale("ratings", "lives", IDLE, 100) == []  # not idle long enough yet
    assert read_all(feed, "ratings", "lives") == []  # not new any more: pending with the dead one
    time.sleep(IDLE + 0.1)
    taken = feed.claim_stale("ratings", "lives", IDLE, 100)
    assert sorted(ids_of(taken)) == sorted(ids_of(held))
    assert {read.entry for read in taken} == {read.entry for read in held}
    assert feed.claim_stale("ratings", "other", IDLE, 100) == []  # its new holder is not idle
    feed.ack("ratings", taken)
    time.sleep(IDLE + 0.1)
    assert feed.claim_stale("ratings", "other", IDLE, 100) == []  # acknowledged: nothing left to take
    assert feed.trim(("ratings",)) == 6


def test_claiming_takes_at_most_count_entries_and_leaves_the_rest_pending(areas: Areas):
    feed = areas.feed
    append(feed, entries(5), shard=3)
    read_all(feed, "ratings", "dies")
    time.sleep(0.3)
    first = feed.claim_stale("ratings", "lives", 0.2, 2)
    assert ids_of(first) == ["e0", "e1"]
    feed.ack("ratings", first)
    time.sleep(0.3)
    assert ids_of(feed.claim_stale("ratings", "lives", 0.2, 10)) == ["e2", "e3", "e4"]


def test_trimming_drops_only_what_every_group_acknowledged(areas: Areas):
    feed = areas.feed
    groups = ("ratings", "streams")
    written = entries(10)
    append(feed, written, shard=5)  # one shard: its entries are dropped oldest first
    assert feed.trim(groups) == 0  # nobody read anything
    feed.ack("ratings", read_all(feed, "ratings", "r"))
    assert feed.trim(groups) == 0  # "streams" has not read them yet
    pending = read_all(feed, "streams", "s")
    assert feed.trim(groups) == 0  # read, not acknowledged
    feed.ack("streams", pending[:4])
    assert feed.trim(groups) == 4
    assert feed.trim(groups) == 0
    # A group that starts now sees the entries that were kept, and no dropped one.
    late = read_all(feed, "late", "l")
    assert ids_of(late) == [entry.id for entry in written[4:]]
    feed.ack("late", late)
    feed.ack("streams", pending[4:])
    assert feed.trim((*groups, "late")) == 6
    assert read_all(feed, "later", "l") == []


def test_trimming_a_feed_nobody_wrote_to_drops_nothing(areas: Areas):
    assert areas.feed.trim(()) == 0
    assert areas.feed.trim(("ratings",)) == 0
    assert areas.feed.trim(()) == 0


def test_trimming_waits_for_a_group_that_has_not_read_yet(areas: Areas):
    feed = areas.feed
    append(feed, entries(8))
    feed.ack("ratings", read_all(feed, "ratings", "r"))
    assert feed.trim(("ratings", "streams")) == 0  # "streams" never read: it needs them all
    assert len(read_all(feed, "streams", "s")) == 8


def test_trimming_keeps_a_dead_readers_entries_until_another_acknowledges_them(areas: Areas):
    feed = areas.feed
    append(feed, entries(4), shard=1)
    held = read_all(feed, "ratings", "dies")
    assert feed.trim(("ratings",)) == 0
    time.sleep(0.3)
    feed.ack("ratings", feed.claim_stale("ratings", "lives", 0.2, 10))
    assert feed.trim(("ratings",)) == len(held)


@pytest.mark.parametrize("backend", ["redis", "redis-cluster"], indirect=True)
def test_a_malformed_entry_is_skipped_and_does_not_hold_the_trimming_back(areas: Areas, backend):
    feed = areas.feed
    client = areas.games.client
    key = feed_key(backend[1], 2)
    feed.append(2, tuple(entries(2)))
    client.xadd(key, {"id": "no-other-field"})  # written by no version of the service
    feed.append(2, tuple(entries(2, first=2)))
    seen = read_all(feed, "ratings", "r")
    assert ids_of(seen) == ["e0", "e1", "e2", "e3"]
    feed.ack("ratings", seen)
    assert feed.trim(("ratings",)) == 5
    assert client.xlen(key) == 0


def test_the_saves_of_a_match_append_each_of_its_notices_once(backend):
    url, prefix = backend
    app = build_app(REDIS_URL=url, KEY_PREFIX=prefix)
    if BACKGROUND_EXTENSION in app.extensions:
        # The embedded store's own loop trims what its consumers acknowledged, which is all
        # that runs in its process: stopped, it leaves the entries to this test's group.
        app.extensions[BACKGROUND_EXTENSION].stop()
    try:
        check_the_notices_of_a_match(app, areas_of(store_of(app), prefix), url == "memory://")
    finally:
        store_of(app).close()


def check_the_notices_of_a_match(app, areas: Areas, embedded: bool) -> None:
    session = Session.open(app, "classic", [("Ann", None), ("Bob", None)], seed=11)
    session.play_until(lambda: session.replay.counts.get("hand_scored", 0) >= 1)
    for _ in range(3):
        session.play_move(session.to_act())
    assert session.post(session.to_act(), "resign").status_code == 200
    session.sync()

    seen = read_all(areas.feed, "audit", "a")
    of_game = [read for read in seen if read.entry.subject == session.game_id]
    events = [session.truth[seq] for seq in sorted(session.truth)]
    expected = expected_webhooks(session.game_id, events, {0, 1})
    assert sorted(ids_of(of_game)) == sorted(want.webhook_id for want in expected)
    assert {"turn", "hand_over", "match_over"} <= {want.type for want in expected}
    for read, want in zip(sorted(of_game, key=lambda r: r.entry.id), sorted(expected, key=lambda w: w.webhook_id)):
        entry = read.entry
        assert (entry.kind, entry.type, entry.owner) == ("game", want.type, key_id(API_KEY))
        payload = entry.payload()
        assert payload["type"] == want.type and payload["data"]["version"] == want.version
        assert payload["data"]["game_id"] == session.game_id and payload["data"]["rated"] is False
        # On Redis, in the game's own shard (the slot its save script writes).
        assert read.shard == (0 if embedded else ids.shard_of(session.game_id))


def test_a_match_created_without_an_api_key_feeds_nothing(backend):
    url, prefix = backend
    app = build_app(REDIS_URL=url, KEY_PREFIX=prefix, ALLOW_ANONYMOUS_CREATE="true")
    if BACKGROUND_EXTENSION in app.extensions:
        app.extensions[BACKGROUND_EXTENSION].stop()
    try:
        client = app.test_client()
        created = {}
        for key in (None, API_KEY):
            response = client.post("/v1/games", headers={"X-API-Key": key},
                                   json={"variant": "classic", "players": [{"name": "A"}, {"name": "B"}]})
            assert response.status_code == 201
            created[key] = response.get_json()["game"]["id"]
        seen = read_all(areas_of(store_of(app), prefix).feed, "audit", "a")
        assert {read.entry.subject for read in seen} == {created[API_KEY]}  # its first turn
    finally:
        store_of(app).close()


class AckedMeanwhile:
    """A client on which another reader acknowledges everything between this one's XINFO
    GROUPS and its next command (once)."""

    def __init__(self, client, meanwhile) -> None:
        self._client = client
        self._meanwhile = meanwhile

    def __getattr__(self, name):
        return getattr(self._client, name)

    def xinfo_groups(self, key):
        found = self._client.xinfo_groups(key)
        if any(info["pending"] for info in found) and self._meanwhile is not None:
            self._meanwhile()
            self._meanwhile = None
        return found


@pytest.mark.parametrize("backend", ["redis"], indirect=True)
def test_trimming_copes_with_entries_acknowledged_while_it_looks(areas: Areas, backend):
    written = entries(4)
    append(areas.feed, written, shard=6)
    reads = read_all(areas.feed, "ratings", "r")
    racing = RedisFeed(AckedMeanwhile(areas.games.client, lambda: areas.feed.ack("ratings", reads)), backend[1])
    assert racing.trim(("ratings",)) == len(written)
    assert read_all(areas.feed, "late", "l") == []


class Recording:
    """A client that notes the BLOCK of every XREADGROUP it sends."""

    def __init__(self, client) -> None:
        self._client = client
        self.blocks: list[int | None] = []

    def __getattr__(self, name):
        return getattr(self._client, name)

    def xreadgroup(self, *args, block=None, **kwargs):
        self.blocks.append(block)
        return self._client.xreadgroup(*args, block=block, **kwargs)


@pytest.mark.parametrize("backend", ["redis"], indirect=True)
def test_a_read_that_may_not_wait_does_not_block(areas: Areas, backend):
    """Redis answers a blocking read that found nothing at its next timer tick (up to 100 ms at
    its default hz), however short the BLOCK: a read of every shard of a cluster, one by one,
    took over a second when nothing was new."""
    client = Recording(areas.games.client)
    feed = RedisFeed(client, backend[1])
    append(feed, entries(1))
    assert len(feed.read("ratings", "r", 10, 0, None)) == 1
    assert feed.read("ratings", "r", 10, 0, None) == []
    assert feed.read("ratings", "r", 10, 0.05, None) == []
    assert client.blocks == [None, None, 50]


class AckRefused:
    """A client whose XACK fails as a connection that broke would."""

    def __init__(self, client) -> None:
        self._client = client

    def __getattr__(self, name):
        return getattr(self._client, name)

    def xack(self, *args):
        raise redis.ConnectionError("the connection broke")


@pytest.mark.parametrize("backend", ["redis"], indirect=True)
def test_a_failure_while_skipping_a_malformed_entry_is_a_store_error(areas: Areas, backend):
    """What a reader's loop expects of a failing store (it goes on after a StoreError): never
    a redis-py error of its own."""
    areas.games.client.xadd(feed_key(backend[1], 4), {"id": "no-other-field"})
    with pytest.raises(StoreError):
        RedisFeed(AckRefused(areas.games.client), backend[1]).read("ratings", "r", 10, 0, None)
