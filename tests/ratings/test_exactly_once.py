"""A finished rated match is applied exactly once whatever fails in between, on the embedded
store, one Redis and a Redis Cluster: the announcement or the acknowledgement failing after the
ratings were applied (the entry is read again after the lease), two runners applying the same
entry at once, two matches of one player applied at once (compare-and-set, computed again).

Each case runs the service's own ratings consumer (service/ratings/applier.py) in runners of
the tests' making, with one part made to fail once or to wait at a barrier."""
from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace

import pytest

from service.api.context import EXTENSION
from service.app import BACKGROUND_EXTENSION
from service.background.runner import Runner, RunnerSettings
from service.ratings.applier import GROUP, RatingsApplier
from service.ratings.bots import BOT_RATINGS
from service.store.areas import Areas, areas_of, redis_areas
from service.store.errors import StoreError
from service.store.feed import FeedEntry, Read
from service.store.ratings import StaleStandings
from service.store.redis_client import client_from_url, worker_options
from tests.api.conftest import build_app
from tests.api.rated import KEY_A, Reads, create_rated, new_ledger, person, public_view, resign
from tests.api.support import store_of

LEASE = 1.0
SHORT = RunnerSettings(batch=8, block_seconds=0.2, lease_seconds=LEASE, poll_seconds=0.05, trim_seconds=0.5)


class Audit:
    """A consumer of its own group in every runner of a test: what the feed holds."""

    group = "audit"

    def __init__(self) -> None:
        self.entries: list[FeedEntry] = []
        self._lock = threading.Lock()

    def apply(self, entry: FeedEntry) -> None:
        with self._lock:
            self.entries.append(entry)

    def announced(self, game_ids: list[str], timeout: float = 5.0) -> list[FeedEntry]:
        """The ``rating_changed`` entries, once each of ``game_ids`` has one (and a little more)."""
        deadline = time.monotonic() + timeout
        while not set(game_ids) <= {entry.subject for entry in self._of("rating_changed")}:
            assert time.monotonic() < deadline, "a rating_changed entry is missing"
            time.sleep(0.02)
        time.sleep(0.5)
        return self._of("rating_changed")

    def _of(self, entry_type: str) -> list[FeedEntry]:
        with self._lock:
            return [entry for entry in self.entries if entry.type == entry_type]


class Served:
    """An app on ``backend`` whose ratings are applied only by the runners a test starts."""

    def __init__(self, backend: tuple[str, str]) -> None:
        self.url, self.prefix = backend
        self.app = build_app(REDIS_URL=self.url, KEY_PREFIX=self.prefix)
        if BACKGROUND_EXTENSION in self.app.extensions:
            self.app.extensions[BACKGROUND_EXTENSION].stop()  # the embedded store's own loop
        self.context = self.app.extensions[EXTENSION]
        self.client = self.app.test_client()
        self.runners: list[Runner] = []
        self.clients = []
        self.audit = Audit()

    def areas(self) -> Areas:
        """The areas as a worker has them: on a client of its own (Redis)."""
        if self.url == "memory://":
            return areas_of(self.context.store, "")
        client = client_from_url(self.url, **worker_options(SHORT.block_seconds))
        self.clients.append(client)
        return redis_areas(self.context.store, client, self.prefix)

    def applier(self, areas: Areas, announce: Callable | None = None, ratings=None) -> RatingsApplier:
        """The service's ratings consumer, as service/background/setup.py builds it."""
        return RatingsApplier(ratings or areas.ratings, announce or self.context.games.note_rating_changes,
                              BOT_RATINGS, self.context.config.glicko2())

    def runner(self, name: str, applier: RatingsApplier, areas: Areas, feed=None,
               settings: RunnerSettings = SHORT) -> Runner:
        runner = Runner(feed or areas.feed, areas.timers, [applier, self.audit], {}, settings, name=name).start()
        self.runners.append(runner)
        return runner

    def close(self) -> None:
        for runner in self.runners:
            runner.stop()
        for runner in self.runners:
            runner.join(10)
        for client in self.clients:
            client.close()
        store_of(self.app).close()


@pytest.fixture
def served(backend) -> Iterator[Served]:
    built = Served(backend)
    yield built
    built.close()


def wait_until(probe: Callable[[], object], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not probe():
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        time.sleep(0.02)


def players(*names: str) -> list[str]:
    run = uuid.uuid4().hex[:6]
    return [f"{name}-{run}" for name in names]


def finish(served: Served, *names: str, resigning: int = 1) -> str:
    """A rated classic match between ``names``, ended by a resignation; its id."""
    match = create_rated(served.client, KEY_A, "classic", [person(name) for name in names])
    resign(served.client, match, resigning)
    return match.game_id


def rated_view(served: Served, game_id: str, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        view = public_view(served.client, game_id)
        if view["result"]["rating_changes"] is not None:
            return view
        assert time.monotonic() < deadline, f"{game_id} not rated within {timeout} s"
        time.sleep(0.02)


def check_applied_once(served: Served, game_ids: list[str], views: list[dict] | None = None) -> None:
    """Every read agrees with the matches applied once each, in the order the histories show;
    one ``rating_changed`` per match in the feed."""
    views = views or [rated_view(served, game_id, 1) for game_id in game_ids]
    ledger = new_ledger()
    for view in views:
        ledger.rate("A", view)
    Reads(served.client, ledger, KEY_A, "A").check_everything()
    announced = served.audit.announced(game_ids)
    assert sorted(entry.subject for entry in announced) == sorted(game_ids)
    for entry, view in zip(sorted(announced, key=lambda e: e.subject), sorted(views, key=lambda v: v["id"])):
        assert entry.payload()["data"]["rating_changes"] == view["result"]["rating_changes"]


class FailingOnce:
    """Calls ``inner``; the first call fails after ``inner`` did its work, or before."""

    def __init__(self, inner: Callable, error: Exception, after: bool = True) -> None:
        self.inner, self.error, self.after = inner, error, after
        self.calls = 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        if self.calls == 1 and not self.after:
            raise self.error
        answer = self.inner(*args, **kwargs)
        if self.calls == 1:
            raise self.error
        return answer


@pytest.mark.parametrize("after", [False, True], ids=["before-showing", "after-showing"])
def test_an_announcement_that_fails_once_is_made_again_and_the_ratings_change_once(served: Served, after: bool):
    ann, bob = players("ann", "bob")
    areas = served.areas()
    announce = FailingOnce(served.context.games.note_rating_changes, StoreError(), after=after)
    served.runner("only", served.applier(areas, announce=announce), areas)
    game_id = finish(served, ann, bob)
    view = rated_view(served, game_id, LEASE + 5)
    wait_until(lambda: announce.calls >= 2, LEASE + 5, "the entry read again after the lease")
    time.sleep(LEASE + 0.5)  # nothing more comes of it
    assert announce.calls == 2
    check_applied_once(served, [game_id], [view])


class Counting:
    def __init__(self, inner: Callable) -> None:
        self.inner = inner
        self.calls = 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.inner(*args, **kwargs)


class AckFailingOnce:
    """The feed, whose first acknowledgement of a match's end by the ratings is lost."""

    def __init__(self, feed) -> None:
        self._feed = feed
        self.failed = 0

    def __getattr__(self, name):
        return getattr(self._feed, name)

    def ack(self, group: str, reads: list[Read]) -> None:
        if not self.failed and group == GROUP and any(read.entry.type == "match_over" for read in reads):
            self.failed = 1
            raise StoreError()
        self._feed.ack(group, reads)


def test_an_acknowledgement_lost_after_applying_changes_nothing_the_second_time(served: Served):
    ann, bob = players("ann", "bob")
    areas = served.areas()
    announce = Counting(served.context.games.note_rating_changes)
    feed = AckFailingOnce(areas.feed)
    served.runner("only", served.applier(areas, announce=announce), areas, feed=feed)
    game_id = finish(served, ann, bob)
    view = rated_view(served, game_id, 2)
    # Read again after the lease: the applier finds it applied, and announces again.
    wait_until(lambda: announce.calls >= 2, LEASE + 5, "the entry read again after the lease")
    assert feed.failed == 1
    time.sleep(LEASE + 0.5)
    assert announce.calls == 2  # acknowledged the second time
    check_applied_once(served, [game_id], [view])


def test_an_entry_applied_twice_at_once_changes_the_ratings_once(served: Served):
    """Its first reader is slow to announce, past its lease: the entry is taken over (by the
    other runner, or by the first runner's own take-over loop) and both announce at once."""
    ann, bob = players("ann", "bob")
    together = threading.Barrier(2, timeout=10)
    calls = []
    note = served.context.games.note_rating_changes

    def announce(game_id, changes):
        calls.append(game_id)
        together.wait()  # the first waits here until the entry was applied again
        note(game_id, changes)

    for name in ("slow", "other"):
        areas = served.areas()
        served.runner(name, served.applier(areas, announce=announce), areas)
    game_id = finish(served, ann, bob)
    view = rated_view(served, game_id, LEASE + 10)
    time.sleep(LEASE + 0.5)
    assert calls == [game_id, game_id]
    check_applied_once(served, [game_id], [view])


class ShardByShard:
    """The feed read one shard per reader, as on a cluster. On one Redis a read covers every
    shard and takes up to ``batch`` entries of each: one runner could hold both matches' ends
    at once and apply them one after the other, never together."""

    def __init__(self, feed) -> None:
        self._feed = feed

    def __getattr__(self, name):
        return getattr(self._feed, name)

    def reader_shards(self) -> list[tuple[int, ...]]:
        return [(shard,) for shards in self._feed.reader_shards() for shard in shards]


class Together:
    """A ratings store whose first two reads of standings (by any reader: two runners, or two
    readers of one runner on a cluster) wait for each other: both compute from the same
    standings, and one of them must be refused and compute again."""

    def __init__(self, inner, meeting: threading.Barrier, first_two: Iterator[int]) -> None:
        self._inner = inner
        self._meeting = meeting
        self._first_two = first_two
        self.refused = 0

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def standings(self, *args):
        found = self._inner.standings(*args)
        if next(self._first_two, None) is not None:
            self._meeting.wait()
        return found

    def apply(self, *args):
        try:
            return self._inner.apply(*args)
        except StaleStandings:
            self.refused += 1
            raise


def test_two_matches_of_one_player_applied_at_once_both_count(served: Served):
    """Two runners, each with one of the matches (one entry per read, a lease longer than the
    test: neither takes the other's over), read the standings before either applies."""
    ann, bob, cy = players("ann", "bob", "cy")
    barrier = threading.Barrier(2, timeout=10)
    first_two = iter(range(2))  # next() is atomic under the GIL: two calls get a number
    one_at_a_time = replace(SHORT, batch=1, lease_seconds=60.0)
    stores = []
    for name in ("one", "two"):
        areas = served.areas()
        stores.append(Together(areas.ratings, barrier, first_two))
        served.runner(name, served.applier(areas, ratings=stores[-1]), areas, feed=ShardByShard(areas.feed),
                      settings=one_at_a_time)
    first = create_rated(served.client, KEY_A, "classic", [person(ann), person(bob)])
    second = create_rated(served.client, KEY_A, "classic", [person(cy), person(ann)])
    resign(served.client, first, 1)
    resign(served.client, second, 0)
    views = {match.game_id: rated_view(served, match.game_id, 15) for match in (first, second)}
    assert not barrier.broken
    assert sum(store.refused for store in stores) == 1  # one computed again, from the other's result
    history = served.client.get(f"/v1/players/{ann}/ratings/classic/history",
                                headers={"X-API-Key": KEY_A}).get_json()["history"]
    order = [row["game_id"] for row in reversed(history)]
    assert sorted(order) == sorted(views)
    check_applied_once(served, order, [views[game_id] for game_id in order])
