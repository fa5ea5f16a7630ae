"""The webhook deliveries of ``ginrummy serve`` alone (the embedded store), which no worker can
reach: a consumer of the process's own feed (group ``delivery``), fed by the in-process
background runner, with threads of its own that deliver.

The runner's single thread must never wait on a receiver (a turn deadline would fire late
behind one that hangs), so ``apply`` only queues the delivery and returns, and the entry is
acknowledged at once: from then on the delivery lives here, in the process, as everything of
the embedded store does (lost at exit). The rest follows the worker: signed by the same
``Sender``, at most ``threads`` attempts at once, a failed attempt tried again after a
full-jitter backoff that doubles up to a cap, given up (logged) after ``max_attempts`` or when
refused. At most ``max_waiting`` deliveries wait at once; beyond, a new one is given up
(logged) instead of the process's memory growing. Threads start when there is work and end
after ``IDLE_SECONDS`` without any, so an app that never calls back holds none.
"""
from __future__ import annotations

import heapq
import itertools
import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import replace

from service.config import Config
from service.observability.jsonlog import FIELDS_ATTRIBUTE
from service.store.feed import DELIVERY_GROUP, FeedEntry
from service.webhook_signing import WebhookSecret
from service.webhooks.entries import Delivery
from service.webhooks.sender import Attempt, Outcome, Sender
from service.webhooks.worker import backoff_seconds, is_last, log_attempt

logger = logging.getLogger(__name__)

IDLE_SECONDS = 30.0
SHARD = 0  # the embedded store's feed has one


class LocalDeliveries:
    """Deliveries of the feed's entries that carry a callback URL; ``close`` ends them."""

    group = DELIVERY_GROUP

    def __init__(self, sender: Sender, *, max_attempts: int, threads: int, max_waiting: int,
                 backoff_base_seconds: float = 1.0, backoff_cap_seconds: float = 300.0,
                 clock: Callable[[], float] = time.time, draw: Callable[[], float] = random.random) -> None:
        self._sender = sender
        self._max_attempts = max_attempts
        self._max_threads = threads
        self._max_waiting = max_waiting
        self._backoff = (backoff_base_seconds, backoff_cap_seconds)
        self._clock = clock
        self._draw = draw
        self._due: list[tuple[float, int, Delivery]] = []  # a heap: (when, order, delivery)
        self._order = itertools.count()
        self._changed = threading.Condition()
        self._threads = 0
        self._idle = 0  # threads waiting for work
        self._closed = False

    @property
    def waiting(self) -> int:
        """Deliveries queued, due now or later (not those being attempted)."""
        with self._changed:
            return len(self._due)

    def apply(self, entry: FeedEntry) -> None:
        """Queue the entry's first attempt (nothing without a URL); returns at once."""
        if entry.url:
            now = self._clock()
            # The stream id the worker would see: the save's time, from which latency is told.
            self._queue(Delivery.of_entry(entry, f"{int(now * 1000)}-0"), now)

    def close(self) -> None:
        """Stop the threads after their attempts in flight; what waits is dropped."""
        with self._changed:
            self._closed = True
            self._due.clear()
            self._changed.notify_all()
        self._sender.close()

    def _queue(self, delivery: Delivery, due: float) -> None:
        with self._changed:
            if self._closed:
                return
            if len(self._due) >= self._max_waiting:
                logger.warning("webhook given up: too many deliveries wait", extra={FIELDS_ATTRIBUTE: {
                    "webhook_id": delivery.webhook_id, "waiting": len(self._due)}})
                return
            heapq.heappush(self._due, (due, next(self._order), delivery))
            if self._idle == 0 and self._threads < self._max_threads:
                self._threads += 1
                threading.Thread(target=self._run, name="webhook-local", daemon=True).start()
            self._changed.notify()

    def _next(self) -> Delivery | None:
        """The next due delivery, waiting for it; None when this thread should end (closed, or
        idle for IDLE_SECONDS while another thread, or nothing, is left to wait)."""
        with self._changed:
            idle_since = time.monotonic()
            self._idle += 1
            try:
                while not self._closed:
                    now = self._clock()
                    if self._due and self._due[0][0] <= now:
                        return heapq.heappop(self._due)[2]
                    if time.monotonic() - idle_since >= IDLE_SECONDS and (not self._due or self._threads > 1):
                        break
                    self._changed.wait(min(self._due[0][0] - now, IDLE_SECONDS) if self._due else IDLE_SECONDS)
                self._threads -= 1
                return None
            finally:
                self._idle -= 1

    def _run(self) -> None:
        while (delivery := self._next()) is not None:
            try:
                self._record(delivery, self._sender.deliver(delivery.url, delivery.webhook_id, delivery.body))
            except Exception:  # noqa: BLE001 - the thread goes on with the next delivery
                logger.exception("delivering a webhook failed")

    def _record(self, delivery: Delivery, result: Attempt) -> None:
        if result.outcome is Outcome.DELIVERED:
            log_attempt(logging.INFO, "webhook delivered", SHARD, delivery, result)
        elif is_last(delivery, result, self._max_attempts):
            log_attempt(logging.WARNING, "webhook given up", SHARD, delivery, result)
        else:
            delay = backoff_seconds(delivery.attempt, *self._backoff, self._draw)
            log_attempt(logging.INFO, "webhook attempt failed; retry scheduled", SHARD, delivery, result,
                        retry_in_seconds=round(delay, 3))
            self._queue(replace(delivery, attempt=delivery.attempt + 1), self._clock() + delay)


def local_deliveries(config: Config) -> LocalDeliveries | None:
    """The deliveries of a process on the embedded store; None without WEBHOOK_SECRET (nothing
    can be signed: callbacks are then not called, as on Redis without a worker)."""
    if not config.webhook_secret:
        if config.webhook_allowed_hosts:
            logger.warning("WEBHOOK_ALLOWED_HOSTS is set but WEBHOOK_SECRET is not: no callback will be called")
        return None
    return LocalDeliveries(Sender(WebhookSecret.parse(config.webhook_secret), allow_private=config.webhook_allow_private),
                           max_attempts=config.webhook_max_attempts, threads=config.webhook_concurrency,
                           max_waiting=config.webhook_max_waiting)
