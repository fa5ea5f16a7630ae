"""The background runner (service/background/runner.py) on the embedded store, one Redis and a
Redis Cluster: several runners fire each timer once; a timer whose runner died fires again
after the lease; each feed entry is applied by one runner of a group, and an entry whose
reader failed is applied again after the lease."""
from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator

import pytest

from service import ids
from service.background.runner import Runner, RunnerSettings
from service.store.areas import Areas, redis_areas
from service.store.feed import FeedEntry
from service.store.redis_client import client_from_url, worker_options

LEASE = 2.0
QUICK = RunnerSettings(batch=8, block_seconds=0.2, lease_seconds=LEASE, poll_seconds=0.02, trim_seconds=0.5)


def wait_until(probe: Callable[[], object], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not probe():
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        time.sleep(0.02)


class Recorder:
    """Timer handlers and feed consumers that note who handled what."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.fired: list[tuple[str, str]] = []  # (subject, runner)
        self.applied: list[tuple[str, str]] = []  # (entry id, runner)

    def handler(self, runner: str) -> Callable[[str], None]:
        def fire(subject: str) -> None:
            with self.lock:
                self.fired.append((subject, runner))
        return fire

    def consumer(self, runner: str, group: str = "ratings", fails: set[str] = frozenset()):
        recorder = self

        class Consumer:
            def __init__(self) -> None:
                self.group = group

            def apply(self, entry: FeedEntry) -> None:
                with recorder.lock:
                    if entry.id in fails:
                        fails.discard(entry.id)  # once
                        raise RuntimeError("a consumer that fails once")
                    recorder.applied.append((entry.id, runner))

        return Consumer()


@pytest.fixture
def runners(areas: Areas, backend: tuple[str, str]) -> Iterator[Callable[..., Runner]]:
    """Start runners on ``areas``: ``runners(name, consumers, handlers, settings, feed)``; all
    are stopped at the end. On Redis each has a client of its own, as each worker process has
    (the store's pool is sized for requests, not for a worker's blocking readers)."""
    url, prefix = backend
    started: list[Runner] = []
    clients = []

    def start(name: str, consumers=(), handlers=None, settings: RunnerSettings = QUICK, feed=None) -> Runner:
        own = areas
        if url != "memory://":
            clients.append(client_from_url(url, **worker_options(settings.block_seconds)))
            own = redis_areas(areas.games, clients[-1], prefix)
        runner = Runner(feed or own.feed, own.timers, list(consumers), handlers or {}, settings, name=name).start()
        started.append(runner)
        return runner

    yield start
    for runner in started:
        runner.stop()
    for runner in started:
        assert runner.join(10), "a runner's loops did not end"
    for client in clients:
        client.close()


def test_several_runners_fire_each_timer_once(areas: Areas, runners):
    recorder = Recorder()
    subjects = [ids.new_game_id() if n % 2 else f"invite-{n}" for n in range(60)]
    now = time.time()
    for n, subject in enumerate(subjects):
        areas.timers.set("ticket", subject, now + (n % 10) / 20)
    for number in range(4):
        runners(f"runner-{number}", handlers={"ticket": recorder.handler(f"runner-{number}")})
    wait_until(lambda: len(recorder.fired) >= len(subjects), 20, "every timer fired")
    time.sleep(1.0)  # time enough to fire any of them twice (the lease is longer: none may be due again)
    assert Counter(subject for subject, _ in recorder.fired) == Counter(subjects)
    assert areas.timers.claim_due(time.time() + 10 * LEASE, time.time() + 20 * LEASE, 100) == []  # released


def test_a_timer_claimed_by_a_runner_that_died_fires_after_the_lease(areas: Areas, runners):
    recorder = Recorder()
    areas.timers.set("ticket", "t-1", time.time())
    claimed_at = time.time()
    # What a runner does just before it is killed: claim, and never fire nor release.
    [held] = areas.timers.claim_due(claimed_at, claimed_at + LEASE, 10)
    assert held.subject == "t-1"
    runners("survivor", handlers={"ticket": recorder.handler("survivor")})
    time.sleep(LEASE / 2)
    assert recorder.fired == []  # the lease still holds it
    wait_until(lambda: recorder.fired, LEASE + 5, "the timer fired again")
    assert time.time() >= claimed_at + LEASE
    time.sleep(0.5)
    assert recorder.fired == [("t-1", "survivor")]


def test_a_timer_whose_handler_fails_fires_again_after_the_lease(areas: Areas, runners):
    calls: list[float] = []

    def flaky(subject: str) -> None:
        calls.append(time.time())
        if len(calls) == 1:
            raise RuntimeError("a handler that fails once")

    areas.timers.set("ticket", "t-1", time.time())
    runners("only", handlers={"ticket": flaky})
    wait_until(lambda: len(calls) >= 2, LEASE + 5, "fired again")
    assert calls[1] - calls[0] >= LEASE - 0.1
    time.sleep(0.5)
    assert len(calls) == 2  # then released


def test_each_fired_timer_of_a_known_kind_is_counted_as_handled_or_failed(areas: Areas):
    """What the worker's metrics hear (timers_fired_total, timer_failures_total by kind)."""
    counted: list[tuple[str, bool]] = []

    def fails(subject: str) -> None:
        raise RuntimeError("a handler that fails")

    runner = Runner(areas.feed, areas.timers, [], {"ticket": Recorder().handler("once"), "invite": fails}, QUICK,
                    name="once", count_timer=lambda kind, handled: counted.append((kind, handled)))
    for n, kind in enumerate(("ticket", "ticket", "invite", "unknown")):
        areas.timers.set(kind, f"s{n}", time.time())
    runner.run_once()
    assert sorted(counted) == [("invite", False), ("ticket", True), ("ticket", True)]


def feed_entries(count: int) -> list[FeedEntry]:
    return [FeedEntry(f"e{n}", "game", f"g{n}", "match_over", "owner", "{}") for n in range(count)]


def append(areas: Areas, entries: list[FeedEntry]) -> None:
    for n, entry in enumerate(entries):
        areas.feed.append(n % ids.SHARDS, (entry,))


def test_each_entry_goes_to_one_runner_of_a_group_and_every_group_gets_it(areas: Areas, runners):
    recorder = Recorder()
    for number in range(3):
        runners(f"runner-{number}", consumers=[recorder.consumer(f"runner-{number}"),
                                               recorder.consumer(f"runner-{number}", group="streams")])
    written = feed_entries(50)
    append(areas, written)
    wait_until(lambda: len(recorder.applied) >= 2 * len(written), 40, "every entry applied by both groups")
    time.sleep(0.5)
    assert Counter(entry_id for entry_id, _ in recorder.applied) == Counter({entry.id: 2 for entry in written})


def test_an_entry_that_failed_is_applied_again_after_the_lease_and_then_trimmed(areas: Areas, runners):
    recorder = Recorder()
    written = feed_entries(6)
    runners("only", consumers=[recorder.consumer("only", fails={"e3"})])
    append(areas, written)
    wait_until(lambda: len(recorder.applied) == 5, 10, "the others applied")
    time.sleep(LEASE / 2)
    assert "e3" not in [entry_id for entry_id, _ in recorder.applied]  # pending until the lease ends
    wait_until(lambda: len(recorder.applied) == 6, LEASE + 5, "applied again")
    assert sorted(entry_id for entry_id, _ in recorder.applied) == sorted(entry.id for entry in written)
    # Acknowledged by its only group: the maintenance loop drops it all.
    time.sleep(3 * QUICK.trim_seconds)
    assert _kept(areas) == []


def _kept(areas: Areas) -> list:
    """What a group starting now would still read."""
    return [read for shards in areas.feed.reader_shards()
            for read in areas.feed.read("audit", "a", 100, 0, shards)]


def test_run_once_does_everything_due_on_the_calling_thread(areas: Areas):
    recorder = Recorder()
    runner = Runner(areas.feed, areas.timers, [recorder.consumer("once")], {"ticket": recorder.handler("once")},
                    QUICK, name="once")
    append(areas, feed_entries(20))
    for n in range(20):
        areas.timers.set("ticket", f"s{n}", time.time())
    areas.timers.set("ticket", "later", time.time() + 60)
    runner.run_once()
    assert sorted(entry_id for entry_id, _ in recorder.applied) == sorted(f"e{n}" for n in range(20))
    assert sorted(subject for subject, _ in recorder.fired) == sorted(f"s{n}" for n in range(20))
    assert _kept(areas) == []  # trimmed, as everything was acknowledged


def test_run_once_applies_again_after_the_lease_what_failed(areas: Areas):
    """The embedded store's loop: an entry whose consumer raised is tried again by a later
    round once its lease has passed, as the threads' take-over loop does on Redis."""
    recorder = Recorder()
    runner = Runner(areas.feed, areas.timers, [recorder.consumer("once", fails={"e1"})], {}, QUICK, name="once")
    append(areas, feed_entries(3))
    runner.run_once()
    assert sorted(entry_id for entry_id, _ in recorder.applied) == ["e0", "e2"]
    runner.run_once()
    assert len(recorder.applied) == 2  # still within its lease
    time.sleep(LEASE + 0.1)
    runner.run_once()
    assert sorted(entry_id for entry_id, _ in recorder.applied) == ["e0", "e1", "e2"]
    assert _kept(areas) == []  # and, acknowledged at last, trimmed


def test_the_feed_is_kept_for_a_group_read_elsewhere_until_that_group_is_done(areas: Areas):
    """The worker's deliveries read the feed beside the runner (group ``delivery``): what the
    runner's consumers are done with stays until that group is too, even before it ever read."""
    recorder = Recorder()
    runner = Runner(areas.feed, areas.timers, [recorder.consumer("once")], {}, QUICK, name="once",
                    read_elsewhere=("delivery",))
    append(areas, feed_entries(4))
    runner.run_once()
    assert len(recorder.applied) == 4
    assert len(_kept(areas)) == 4  # "delivery" has not read them
    elsewhere = [read for shards in areas.feed.reader_shards()
                 for read in areas.feed.read("delivery", "worker", 100, 0, shards)]
    areas.feed.ack("delivery", elsewhere)
    runner.run_once()
    assert _kept(areas) == []


class TrimFailsOnce:
    """The feed, whose first trimming fails with an error no store raises on purpose."""

    def __init__(self, feed) -> None:
        self._feed = feed
        self.failed = False

    def __getattr__(self, name):
        return getattr(self._feed, name)

    def trim(self, groups):
        if not self.failed:
            self.failed = True
            raise RuntimeError("a bug, or a store's answer no one expected")
        return self._feed.trim(groups)


def test_the_take_over_loop_outlives_an_unexpected_error(areas: Areas, runners):
    recorder = Recorder()
    append(areas, feed_entries(4))
    held = [read for shards in areas.feed.reader_shards()
            for read in areas.feed.read("ratings", "dies", 100, 0, shards)]
    assert len(held) == 4  # read by a reader that dies
    feed = TrimFailsOnce(areas.feed)
    runners("heir", consumers=[recorder.consumer("heir")], feed=feed)
    wait_until(lambda: feed.failed, 5, "the trimming failed")
    wait_until(lambda: len(recorder.applied) == 4, LEASE + 5, "the dead reader's entries taken over")
