"""The delivery worker: reads every shard's feed in its own group, delivers, retries.

The webhook deliveries are one consumer of the feed (service/store/feed.py) among others:
entries with a callback URL are delivered, the rest acknowledged unread. The outbox of older
versions is read in the same call (entries.py), for a rolling deploy.

Threads, all daemons, over one Redis client (single server or cluster):

- on a single Redis, one reader: ``XREADGROUP ... BLOCK`` over every shard's streams at once;
  on a cluster, one reader per shard (streams of different shards live in different slots,
  so one call cannot read several);
- a retry loop: claims due members of each shard's retry set and delivers them;
- a claim loop: ``XAUTOCLAIM``s what a dead consumer left pending longer than a lease.

Deliveries run on a bounded pool (a read's deliveries to a quick receiver several
to a task, see _start_stream_entries); ended deliveries are released (and their retry or dead
letter scheduled) in batches (finishing.py). Every worker is a consumer of
the same group (its name is host:pid), so any number of them share the work; each entry is read by one
consumer, and retry members are claimed atomically with a lease. A worker that
crashes loses nothing: its pending entries are claimed by another after the lease, its
leased members come due again when the lease ends. Delivery is therefore at least once.
"""
from __future__ import annotations

import logging
import os
import random
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple
from urllib.parse import urlsplit

from redis import Redis
from redis.cluster import RedisCluster

from service import ids
from service.observability.jsonlog import FIELDS_ATTRIBUTE, iso_utc
from service.webhooks.entries import RETRY, Delivery, Held, MalformedEntry
from service.webhooks.finishing import REDIS_ERRORS, Finisher
from service.webhooks.host_slots import HostSlots, receiver_of
from service.webhooks.metrics import WorkerMetrics
from service.webhooks.pool import BoundedPool
from service.webhooks.queues import FinishStep, Queues
from service.webhooks.sender import Attempt, Outcome, Sender
from service.webhooks.speeds import ReceiverSpeeds

logger = logging.getLogger(__name__)

Clock = Callable[[], float]


@dataclass(frozen=True)
class WorkerSettings:
    """How the worker paces itself. Times are in seconds.

    ``lease_seconds`` is how long a claimed retry stays with the worker that
    claimed it, and how long a read entry may stay pending before another consumer takes
    it over; it must exceed the longest delivery attempt (10 s), or a slow delivery can be
    taken over and sent twice.

    ``linger_seconds`` is how long the reader waits after a read that found entries before
    it reads again: under load the next read then brings several entries (and their
    deliveries end together, so their finishing goes in one round trip) instead of one each;
    a lone event still goes out at once. 20 ms, against 5 ms, cut the worker's CPU per
    move by ~40 % under bench/load.py --callbacks and raised the delivery latency's p50 by
    ~10 ms, which a push notification does not feel.

    ``per_receiver`` is how many of the ``concurrency`` deliveries may go to one receiver
    (scheme and authority of the URL) at once; 0, the default, keeps a quarter of them for the
    other receivers (host_slots.py), so a lone receiver still gets most of the worker. A
    delivery over it to a quick receiver (below) waits up to ``share_wait_seconds`` for one of
    its receiver's deliveries to end (a burst to a healthy receiver, whose deliveries take
    milliseconds, goes on at once). Otherwise, or when that wait runs out, it is put off to
    the retry set at once (waiting on a receiver that hangs would hold one of the worker's
    slots for nothing), without counting as an attempt: ``postpone_seconds``
    (up to twice that, with jitter), doubled each time the same attempt is put off again up to
    ``postpone_cap_seconds``, so the deliveries piling up for a receiver that hangs for long
    come back a few times a minute each instead of every second or two.

    A receiver whose last delivery took less than ``quick_seconds`` is quick: one pool task
    delivers as many of a read's entries to it, one after another, as its last delivery's
    time fits into ``turn_seconds`` (see Worker._start_stream_entries): at loopback speed a
    whole read goes on one thread, a receiver taking 10 ms gets a thread per delivery. Such a
    task sends up to ``together`` of them at once, each on a connection of its own, before
    it reads their answers (Sender.deliver_together): the thread then sleeps once for all of
    them, and the receiver gets them side by side. Against the bench receiver on loopback,
    8 at once rather than one after another cut the worker's CPU per delivery by ~17 % and
    the receiver's by ~20 %. The worker process keeps as many connections to each receiver
    open between deliveries (connections.py), so that they are reused rather than opened anew.
    So at most ``concurrency`` × ``together`` deliveries, each with its connection, are in
    flight at once (256 by default), and at most ``receiver_limit`` of them to one receiver."""

    concurrency: int = 32
    per_receiver: int = 0
    share_wait_seconds: float = 0.25
    postpone_seconds: float = 1.0
    postpone_cap_seconds: float = 30.0
    max_attempts: int = 8
    backoff_base_seconds: float = 1.0
    backoff_cap_seconds: float = 300.0
    lease_seconds: float = 60.0
    poll_seconds: float = 0.5
    block_seconds: float = 1.0
    linger_seconds: float = 0.02
    quick_seconds: float = 0.05
    turn_seconds: float = 0.01
    together: int = 8
    batch: int = 16
    dead_maxlen: int = 100_000
    prune_idle_seconds: float = 3600.0
    shards: tuple[int, ...] = field(default_factory=lambda: tuple(range(ids.SHARDS)))

    def __post_init__(self) -> None:
        if min(self.concurrency, self.max_attempts, self.batch, self.together) < 1:
            raise ValueError("concurrency, max_attempts, batch and together must be at least 1")
        if not 0 <= self.per_receiver <= self.concurrency:
            raise ValueError("per_receiver must be between 0 (three quarters of concurrency) and concurrency")
        if min(self.backoff_base_seconds, self.backoff_cap_seconds, self.lease_seconds,
               self.poll_seconds, self.block_seconds, self.postpone_seconds) <= 0:
            raise ValueError("every time setting must be positive")
        if self.postpone_cap_seconds < self.postpone_seconds:
            raise ValueError("postpone_cap_seconds must not be below postpone_seconds")
        if min(self.linger_seconds, self.share_wait_seconds, self.quick_seconds, self.turn_seconds) < 0:
            raise ValueError("linger_seconds, share_wait_seconds, quick_seconds and turn_seconds must not be negative")

    @property
    def receiver_limit(self) -> int:
        return self.per_receiver or self.concurrency - self.concurrency // 4


class _Job(NamedTuple):
    """A delivery to attempt, and where it came from: ``source`` FEED or OUTBOX (``handle``
    the entry's stream id) or RETRY (``handle`` the retry member)."""

    shard: int
    source: str
    handle: str
    delivery: Delivery


def backoff_seconds(attempt: int, base: float, cap: float, draw: Callable[[], float] = random.random) -> float:
    """The pause after failed attempt ``attempt`` (from 1): "full jitter", uniform in
    [0, min(cap, base * 2 ** (attempt - 1))], so receivers recovering from an outage are not
    hit by every waiting delivery at the same moment."""
    return draw() * min(cap, base * 2 ** (attempt - 1))


def is_last(delivery: Delivery, result: Attempt, max_attempts: int) -> bool:
    """Whether an attempt that did not deliver ends its delivery: refused (another try would
    be refused too), or its ``max_attempts``-th."""
    return result.outcome is Outcome.REFUSED or delivery.attempt >= max_attempts


def postponed_wait(postponed: int, base: float, cap: float, draw: Callable[[], float] = random.random) -> float:
    """The wait of an attempt put off ``postponed`` times before (from 0): ``base`` doubled
    each time up to ``cap``, then up to twice that (jitter spreads a receiver's backlog)."""
    return min(cap, base * 2 ** min(postponed, 32)) * (1 + draw())


def default_consumer_name() -> str:
    """host:pid, unique among the workers alive at one time."""
    return f"{socket.gethostname()}:{os.getpid()}"


class Worker:
    """The delivery worker over ``client``; ``start`` it, then ``stop`` and ``join`` it.

    ``clock`` gives seconds
    since the epoch (tests move it); ``draw`` gives the jitter in [0, 1)."""

    def __init__(
        self,
        client: Redis | RedisCluster,
        *,
        prefix: str,
        sender: Sender,
        settings: WorkerSettings | None = None,
        consumer: str | None = None,
        clock: Clock = time.time,
        metrics: WorkerMetrics | None = None,
        draw: Callable[[], float] = random.random,
    ) -> None:
        self.settings = settings or WorkerSettings()
        self.metrics = metrics or WorkerMetrics.create()
        self._client = client
        self._queues = Queues(client, prefix, consumer or default_consumer_name(), self.settings.dead_maxlen)
        self._sender = sender
        self._clock = clock
        self._draw = draw
        self._pool = BoundedPool(self.settings.concurrency, "webhook-task")
        self._receivers = HostSlots(self.settings.receiver_limit)
        self._finisher = Finisher(self._queues)
        self._readers_per_shard = isinstance(client, RedisCluster)
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        # Entries read that this worker is delivering now; its own XAUTOCLAIM must skip them.
        self._in_flight: set[tuple[int, str, str]] = set()
        self._in_flight_lock = threading.Lock()
        self._speeds = ReceiverSpeeds(self.settings.quick_seconds)

    @property
    def consumer(self) -> str:
        return self._queues.consumer

    def start(self) -> None:
        """Start the threads; returns at once. Redis need not be reachable yet."""
        shards = self.settings.shards
        loops: list[tuple[str, Callable[[], None]]] = (
            [(f"feed-reader-s{shard}", lambda shard=shard: self._read_loop((shard,))) for shard in shards]
            if self._readers_per_shard else [("feed-reader", lambda: self._read_loop(shards))]
        )
        loops += [("retry-loop", self._retry_loop), ("claim-loop", self._claim_loop)]
        for name, loop in loops:
            thread = threading.Thread(target=loop, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        logger.info("worker started", extra={FIELDS_ATTRIBUTE: {"consumer": self.consumer}})

    def stop(self) -> None:
        """Stop reading and claiming (in-flight work goes on); returns at once."""
        self._stopping.set()

    def join(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s for the loops to end and in-flight work to finish.

        Returns whether everything finished (what did not stays held in Redis and is taken
        over after its lease)."""
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(deadline - time.monotonic(), 0))
        finished = self._pool.wait_idle(max(deadline - time.monotonic(), 0))
        self._pool.close()
        finished = finished and not any(thread.is_alive() for thread in self._threads)
        logger.info("worker stopped", extra={FIELDS_ATTRIBUTE: {"consumer": self.consumer, "clean": finished}})
        return finished

    def is_ready(self) -> bool:
        """Whether Redis answers a PING now."""
        try:
            return bool(self._client.ping())
        except REDIS_ERRORS:
            return False

    # --- loops ----------------------------------------------------------------------------

    def _read_loop(self, shards: tuple[int, ...]) -> None:
        failures = _FailureLog(f"reading the feed of shard {shards[0]}" if len(shards) == 1
                               else "reading the feeds")
        block_ms = int(self.settings.block_seconds * 1000)
        group_ready = False
        while not self._stopping.is_set():
            free = self._pool.wait_for_free(self.settings.block_seconds)
            if not free:
                continue
            try:
                if not group_ready:
                    for shard in shards:
                        self._queues.ensure_group(shard)
                    group_ready = True
                entries = self._queues.read(shards, min(self.settings.batch, free), block_ms)
            except REDIS_ERRORS as error:
                failures.failed(error)
                self._stopping.wait(self.settings.poll_seconds)
                continue
            failures.recovered()
            self._start_stream_entries(entries)
            if entries and self.settings.linger_seconds:
                self._stopping.wait(self.settings.linger_seconds)

    def _retry_loop(self) -> None:
        """Every poll, in each shard whose retry set has something due, claim (under a lease)
        as many due retries as the pool has room for and hand them to the pool."""
        failures = _FailureLog("claiming due retries")
        while not self._stopping.is_set():
            try:
                for shard in self._queues.shards_due(self.settings.shards, self._clock()):
                    free = self._pool.free()
                    if not free:
                        break
                    now = self._clock()
                    for member in self._queues.claim_retries(shard, now, now + self.settings.lease_seconds,
                                                             min(self.settings.batch, free)):
                        self._pool.submit(lambda member=member, shard=shard: self._deliver_retry(shard, member))
                failures.recovered()
            except REDIS_ERRORS as error:
                failures.failed(error)
            self._stopping.wait(self.settings.poll_seconds)

    def _claim_loop(self) -> None:
        failures = _FailureLog("taking over entries of stopped consumers")
        lease_ms = int(self.settings.lease_seconds * 1000)
        # Often enough that an abandoned entry waits little more than the lease.
        interval = min(max(self.settings.lease_seconds / 4, self.settings.poll_seconds), 15.0)
        next_prune = time.monotonic()
        while not self._stopping.wait(interval):
            try:
                for shard in self.settings.shards:
                    free = self._pool.free()
                    if not free:
                        break
                    for held in self._queues.autoclaim(shard, lease_ms, min(self.settings.batch, free)):
                        self._start_stream_entry(held, claimed=True)
                if time.monotonic() >= next_prune:
                    for shard in self.settings.shards:
                        self._queues.prune_consumers(shard, int(self.settings.prune_idle_seconds * 1000))
                    next_prune = time.monotonic() + self.settings.lease_seconds
                failures.recovered()
            except REDIS_ERRORS as error:
                failures.failed(error)

    # --- tasks ----------------------------------------------------------------------------

    def _start_stream_entries(self, entries: list[Held]) -> None:
        """Deliver what one read brought. A receiver whose last delivery was quick gets its
        entries on as few pool tasks as its speed allows (ReceiverSpeeds.in_turn), which take
        them in turn: handing each delivery to a thread of its own cost about a third of the
        worker's CPU. Any other receiver gets a task per entry, so one that hangs holds up
        only its own."""
        by_receiver: dict[str, deque[Held]] = {}
        for held in entries:
            if self._claim_in_flight(held):
                by_receiver.setdefault(receiver_of(held.url), deque()).append(held)
        for receiver, queued in by_receiver.items():
            if self._speeds.is_quick(receiver):
                in_turn = self._speeds.in_turn(receiver, self.settings.turn_seconds)
                for _ in range(-(-len(queued) // in_turn)):
                    self._pool.submit(lambda receiver=receiver, queued=queued: self._take_in_turn(receiver, queued))
            else:
                for held in queued:
                    self._pool.submit(lambda held=held: self._deliver_stream_entries([held]))

    def _take_in_turn(self, receiver: str, queued: deque[Held]) -> None:
        """Deliver the entries left in ``queued`` (other tasks take from it too), up to
        ``together`` at once (Sender.deliver_together), while their receiver stays quick; once
        it is not, put the rest off to the retry set instead of holding them behind a slow
        delivery. Their finishing steps go to Redis together at the end (finishing.py)."""
        with self._finisher.holding():
            while True:
                taken = []
                while len(taken) < self.settings.together:
                    try:
                        taken.append(queued.popleft())
                    except IndexError:
                        break
                if not taken:
                    return
                try:
                    self._deliver_stream_entries(taken, put_off=not self._speeds.is_quick(receiver))
                except Exception:
                    logger.exception("delivering read entries failed")

    def _claim_in_flight(self, held: Held) -> bool:
        """Mark a read entry as this worker's to deliver; False when it already is."""
        with self._in_flight_lock:
            if held[:3] in self._in_flight:
                return False
            self._in_flight.add(held[:3])
            return True

    def _start_stream_entry(self, held: Held, claimed: bool = False) -> None:
        if not self._claim_in_flight(held):
            return  # our own delivery of it is still running: not abandoned
        if claimed:
            logger.info("took over an abandoned entry", extra={FIELDS_ATTRIBUTE: {
                "shard": held.shard, "source": held.source, "stream_id": held.stream_id}})
        self._pool.submit(lambda: self._deliver_stream_entries([held]))

    def _deliver_stream_entries(self, entries: list[Held], put_off: bool = False) -> None:
        """Attempt read entries together or, ``put_off``, send them to the retry set without
        an attempt."""
        try:
            jobs = []
            for held in entries:
                shard, source, stream_id, fields = held
                try:
                    delivery = held.delivery()
                except MalformedEntry as error:
                    self._dead_letter_malformed(shard, source, stream_id, fields, str(error))
                    continue
                if put_off:
                    self._postpone(shard, source, stream_id, delivery)
                else:
                    jobs.append(_Job(shard, source, stream_id, delivery))
            self._attempt(jobs)
        except BaseException:
            for held in entries:
                self._forget_in_flight(held.shard, held.source, held.stream_id)
            raise

    def _forget_in_flight(self, shard: int, source: str, stream_id: str) -> None:
        with self._in_flight_lock:
            self._in_flight.discard((shard, source, stream_id))

    def _deliver_retry(self, shard: int, member: str) -> None:
        try:
            delivery = Delivery.from_retry_member(member)
        except MalformedEntry as error:
            self._dead_letter_malformed(shard, RETRY, member, {"member": member}, str(error))
            return
        self._attempt([_Job(shard, RETRY, member, delivery)])

    def _attempt(self, jobs: list[_Job]) -> None:
        """Attempt every job at once (Sender.deliver_together); a job whose receiver has no
        slot free is put off."""
        going = []
        for job in jobs:
            receiver = receiver_of(job.delivery.url)
            quick = self._speeds.is_quick(receiver)
            if self._receivers.take(receiver, self.settings.share_wait_seconds if quick else 0.0):
                going.append((job, receiver))
                continue
            if quick:
                self._speeds.mark_slow(receiver)
            self._postpone(job.shard, job.source, job.handle, job.delivery)
        if not going:
            return
        started = time.monotonic()
        try:
            results = self._sender.deliver_together(
                [(job.delivery.url, job.delivery.webhook_id, job.delivery.body) for job, _ in going])
        finally:
            # What the thread spent per delivery: the pace of a quick receiver (speeds.py).
            each = (time.monotonic() - started) / len(going)
            for _, receiver in going:
                self._receivers.give_back(receiver)
                self._speeds.note(receiver, each)
        for (job, _), result in zip(going, results):
            self._record(job, result)

    def _record(self, job: _Job, result: Attempt) -> None:
        """Count an attempt, and release its delivery or schedule what follows it."""
        shard, source, handle, delivery = job
        self.metrics.attempts.labels(type=delivery.metric_type).inc()
        self.metrics.deliveries.labels(outcome=result.outcome.value).inc()
        if result.outcome is Outcome.DELIVERED:
            latency = max(self._clock() - delivery.enqueued_at, 0.0)
            self._finish(FinishStep(shard, source, handle, "done"), lambda: self.metrics.latency.observe(latency))
            log_attempt(logging.INFO, "webhook delivered", shard, delivery, result)
        elif is_last(delivery, result, self.settings.max_attempts):
            self._dead_letter(shard, source, handle, delivery, result)
            log_attempt(logging.WARNING, "webhook given up", shard, delivery, result)
        else:
            delay = backoff_seconds(
                delivery.attempt, self.settings.backoff_base_seconds, self.settings.backoff_cap_seconds, self._draw
            )
            retry_at = self._clock() + delay
            self._finish(FinishStep(shard, source, handle, "retry", retry_at, delivery.retry_member()),
                         self.metrics.retries_scheduled.inc)
            log_attempt(logging.INFO, "webhook attempt failed; retry scheduled", shard, delivery, result,
                         retry_in_seconds=round(delay, 3))

    def _postpone(self, shard: int, source: str, handle: str, delivery: Delivery) -> None:
        retry_at = self._clock() + postponed_wait(
            delivery.postponed, self.settings.postpone_seconds, self.settings.postpone_cap_seconds, self._draw)
        self._finish(FinishStep(shard, source, handle, "retry", retry_at, delivery.postponed_member()),
                     self.metrics.postponed.inc)

    def _dead_letter(self, shard: int, source: str, handle: str, delivery: Delivery, result: Attempt) -> None:
        dead_fields = {
            **delivery.fields(),
            "stream_id": delivery.stream_id,
            "attempts": str(delivery.attempt),
            "outcome": result.outcome.value,
            "reason": result.reason,
            "failed_at": iso_utc(self._clock()),
        }
        self._finish(FinishStep(shard, source, handle, "dead", dead_fields=dead_fields),
                     self.metrics.dead_letters.labels(reason=result.outcome.value).inc)

    def _dead_letter_malformed(self, shard: int, source: str, handle: str, fields: dict[str, str], reason: str) -> None:
        dead_fields = {**fields, "outcome": "malformed", "reason": reason, "failed_at": iso_utc(self._clock())}
        self._finish(FinishStep(shard, source, handle, "dead", dead_fields=dead_fields),
                     self.metrics.dead_letters.labels(reason="malformed").inc)
        logger.warning("malformed entry given up", extra={FIELDS_ATTRIBUTE: {"shard": shard, "reason": reason}})

    def _finish(self, step: FinishStep, count: Callable[[], object]) -> None:
        """Release a delivery and schedule what follows, now or in a batch another thread
        is sending (see finishing.py); ``count()`` once done, unless another worker had
        finished it already or Redis stayed unreachable (it then comes back after its
        lease: delivered again, at least once). A read entry stays this worker's own
        until then."""
        def then(finished: bool) -> None:
            if step.source != RETRY:
                self._forget_in_flight(step.shard, step.source, step.handle)
            if finished:
                count()

        self._finisher.submit(step, then)


def log_attempt(level: int, message: str, shard: int, delivery: Delivery, result: Attempt, **more: object) -> None:
    """One JSON log line about an attempt (the embedded store's deliveries log the same)."""
    # Only built when it is written: at the deployed level, most attempts log nothing.
    if logger.isEnabledFor(level):
        logger.log(level, message, extra={FIELDS_ATTRIBUTE: {
            "webhook_id": delivery.webhook_id, "game": delivery.game, "type": delivery.type,
            "shard": shard, "attempt": delivery.attempt, "outcome": result.outcome.value,
            "host": urlsplit(delivery.url).hostname, "status": result.status, "reason": result.reason, **more,
        }})


class _FailureLog:
    """Logs the first failure of a streak and the recovery, not every failed poll (16
    readers polling a Redis that is down would otherwise log 16 lines a second)."""

    def __init__(self, what: str) -> None:
        self._what = what
        self._failing = False

    def failed(self, error: Exception) -> None:
        if not self._failing:
            self._failing = True
            logger.warning(f"{self._what} failed; retrying",
                           extra={FIELDS_ATTRIBUTE: {"error": f"{type(error).__name__}: {error}"}})

    def recovered(self) -> None:
        if self._failing:
            self._failing = False
            logger.info(f"{self._what} works again")
