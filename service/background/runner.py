"""The background runner: feeds every consumer its entries of the feed and fires due timers.

It runs inside ``ginrummy worker`` (beside the webhook deliveries) over Redis, where any number
of workers share the work, and inside the service's own process on the embedded store, where
nothing else could. Threads, all daemons:

- per consumer and per reader shard set of the feed (one for a single Redis, one per shard on
  a cluster): read new entries of the consumer's group (blocking), apply each, acknowledge;
- one maintenance loop: takes over entries that a dead reader left pending longer than the
  lease (``claim_stale``), and trims the feed of what every group has acknowledged;
- one timer loop: claims due timers under a lease and calls the handler of their kind.

An entry is acknowledged only after its consumer applied it, and consumers apply
idempotently (keyed by the entry's id), so a crash at any point leaves it to be applied again
with no second effect: exactly once. A consumer that raises leaves the entry pending; it is
tried again after the lease. A timer whose handler raises fires again when its lease ends.
"""
from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from service.store.errors import StoreError
from service.store.feed import Feed, FeedEntry, Read
from service.store.timers import Timer, TimerCount, Timers

logger = logging.getLogger(__name__)


class Consumer(Protocol):
    """A reader of the feed: its own group, and an idempotent ``apply`` (raises to retry later)."""

    group: str

    def apply(self, entry: FeedEntry) -> None: ...


TimerHandler = Callable[[str], None]


@dataclass(frozen=True)
class RunnerSettings:
    """Seconds, and how many entries or timers one call takes.

    ``lease_seconds``: how long an entry may stay pending with a reader, or a claimed timer
    with its claimer, before another takes it over. ``poll_seconds``: how often the timer loop
    asks Redis what is due (the embedded store wakes it when a timer is set instead).
    ``linger_seconds``: how long a reader waits after a read that found entries before it
    reads again, so that under load a read (and its acknowledgement) takes many entries
    rather than one or two: the webhooks' entries of matches that have no key pass through
    every group, and read one by one they tripled the worker's CPU per move (bench/load.py
    --callbacks: 0.10 ms before, 0.33 ms, 0.12 ms with this pause); a lone entry is still
    read at once. It delays the ratings and the keys' streams under load by as much."""

    batch: int = 64
    block_seconds: float = 1.0
    linger_seconds: float = 0.1
    lease_seconds: float = 30.0
    poll_seconds: float = 0.25
    trim_seconds: float = 5.0


def default_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class Runner:
    """Runs ``consumers`` and ``timer_handlers``; ``read_elsewhere`` names the groups of the
    feed's other readers (the webhook deliveries), whose entries the trimming keeps too."""

    def __init__(self, feed: Feed, timers: Timers, consumers: list[Consumer],
                 timer_handlers: dict[str, TimerHandler], settings: RunnerSettings = RunnerSettings(),
                 name: str | None = None, clock: Callable[[], float] = time.time,
                 count_timer: TimerCount | None = None, read_elsewhere: tuple[str, ...] = ()) -> None:
        self.feed = feed
        self.timers = timers
        self.consumers = list(consumers)
        self.timer_handlers = dict(timer_handlers)
        self.settings = settings
        self.name = name or default_name()
        self._clock = clock
        self._count_timer = count_timer or (lambda kind, handled: None)
        self._read_elsewhere = read_elsewhere
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._started = False
        self._start_lock = threading.Lock()

    @property
    def groups(self) -> tuple[str, ...]:
        """Every group the feed is kept for."""
        return (*(consumer.group for consumer in self.consumers), *self._read_elsewhere)

    def start(self) -> Runner:
        """Start the loops (once; later calls do nothing)."""
        with self._start_lock:
            if self._started:
                return self
            self._started = True
            for consumer in self.consumers:
                for shards in self.feed.reader_shards():
                    self._spawn(f"feed-{consumer.group}", self._read_loop, consumer, shards)
            self._spawn("feed-maintenance", self._maintenance_loop)
            if self.timer_handlers:
                self._spawn("timers", self._timer_loop)
        return self

    def stop(self) -> None:
        self._stopping.set()

    @property
    def stopped(self) -> bool:
        return self._stopping.is_set()

    def join(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s for the loops to end; whether they all did."""
        ends = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(ends - time.monotonic(), 0))
        return not any(thread.is_alive() for thread in self._threads)

    def _spawn(self, name: str, target, *args) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    def run_once(self) -> None:
        """Everything there is to do now, on the calling thread: every consumer's new entries
        and those it failed to apply longer than the lease ago, the due timers, the trimming
        (the embedded store's loop, service/background/in_process.py)."""
        for consumer in self.consumers:
            for shards in self.feed.reader_shards():
                while reads := self.feed.read(consumer.group, self.name, self.settings.batch, 0, shards):
                    self._apply(consumer, reads)
            self._apply_stale(consumer)
        while claimed := self._claim_timers():
            for timer in claimed:
                self._fire(timer)
            if len(claimed) < self.settings.batch:
                break
        self.feed.trim(self.groups)

    # --- the feed -------------------------------------------------------------------------

    def _read_loop(self, consumer: Consumer, shards: tuple[int, ...]) -> None:
        while not self._stopping.is_set():
            try:
                reads = self.feed.read(consumer.group, self.name, self.settings.batch, self.settings.block_seconds,
                                       shards)
            except StoreError:
                self._stopping.wait(self.settings.poll_seconds)
                continue
            self._apply(consumer, reads)
            if reads and self.settings.linger_seconds:
                self._stopping.wait(self.settings.linger_seconds)

    def _apply(self, consumer: Consumer, reads: list[Read]) -> None:
        done = []
        for read in reads:
            try:
                consumer.apply(read.entry)
            except Exception:  # noqa: BLE001 - kept pending, tried again after the lease
                logger.exception("%s could not apply feed entry %s", consumer.group, read.entry.id)
                continue
            done.append(read)
        try:
            self.feed.ack(consumer.group, done)
        except StoreError:
            pass  # applied and not acknowledged: read again after the lease, and applied as a no-op

    def _apply_stale(self, consumer: Consumer) -> None:
        """Take over and apply the entries left pending longer than the lease (their reader
        died, or failed to apply them)."""
        stale = self.feed.claim_stale(consumer.group, self.name, self.settings.lease_seconds, self.settings.batch)
        self._apply(consumer, stale)

    def _maintenance_loop(self) -> None:
        interval = min(self.settings.lease_seconds / 4, self.settings.trim_seconds)
        next_trim = 0.0
        while not self._stopping.wait(interval):
            try:
                for consumer in self.consumers:
                    self._apply_stale(consumer)
                if time.monotonic() >= next_trim:
                    self.feed.trim(self.groups)
                    next_trim = time.monotonic() + self.settings.trim_seconds
            except StoreError:
                continue
            except Exception:  # noqa: BLE001 - ended, the loop would leave dead readers' entries for good
                logger.exception("feed maintenance failed")

    # --- timers ---------------------------------------------------------------------------

    def _claim_timers(self) -> list[Timer]:
        now = self._clock()
        return self.timers.claim_due(now, now + self.settings.lease_seconds, self.settings.batch)

    def _timer_loop(self) -> None:
        while not self._stopping.is_set():
            try:
                claimed = self._claim_timers()
            except StoreError:
                claimed = []
            for timer in claimed:
                self._fire(timer)
            if len(claimed) < self.settings.batch:
                self._stopping.wait(self.settings.poll_seconds)

    def _fire(self, timer: Timer) -> None:
        """Hand the timer to its kind's handler, then release it; what fails fires again when
        its lease ends."""
        handler = self.timer_handlers.get(timer.kind)
        if handler is None:
            logger.warning("no handler for timers of kind %r: dropped", timer.kind)
        else:
            try:
                handler(timer.subject)
            except Exception:  # noqa: BLE001 - fires again when its lease ends
                self._count_timer(timer.kind, False)
                logger.exception("timer %s failed", timer.member)
                return
            self._count_timer(timer.kind, True)
        try:
            self.timers.release(timer)
        except StoreError:
            logger.warning("releasing timer %s failed: it fires again when its lease ends", timer.member)
