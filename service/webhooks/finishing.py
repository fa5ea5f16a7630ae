"""Finishing deliveries in batches: one Redis round trip for all that ended meanwhile.

Under load, deliveries end by the hundred per second; a round trip each would cost the
worker more CPU than the deliveries themselves. So the thread that hands in a step while no
other is sending becomes the sender: it sends whatever steps are waiting in one pipeline,
calls each step's ``then`` with whether the delivery was finished by it, and goes on while
more are waiting. A thread that hands in a step meanwhile moves on at once. So batches grow
with the load, a lone step goes out at once, and no thread hands work to another (a thread
switch per delivery would cost as much as the round trip saved).

A thread that delivers several entries in turn holds its steps back (``holding``) and hands
them in together when it is done: handed in one by one, they went out in batches of 1.5 on
average (one round trip per delivery, a quarter of the worker's CPU).
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from redis.exceptions import RedisClusterException, RedisError

from service.observability.jsonlog import FIELDS_ATTRIBUTE
from service.webhooks.queues import FinishStep, Queues

logger = logging.getLogger(__name__)

REDIS_ERRORS = (RedisError, RedisClusterException)
# A finishing step that cannot reach Redis is tried again this often, with these pauses
# (about 6 s in all): long enough to ride out a failover, short enough for a shutdown.
RETRY_PAUSES = (0.1, 0.2, 0.4, 0.8, 1.6, 3.2)
MAX_BATCH = 128

Then = Callable[[bool], None]


def with_redis_retries(what: str, step: Callable[[], object]) -> object:
    """``step()``, tried again after each RETRY_PAUSES while Redis fails; None (logged)
    when it never succeeded: what it was to change then comes back after its lease."""
    for pause in (*RETRY_PAUSES, None):
        try:
            return step()
        except REDIS_ERRORS as error:
            if pause is None:
                logger.error(f"{what} failed; left for the lease to bring back",
                             extra={FIELDS_ATTRIBUTE: {"error": f"{type(error).__name__}: {error}"}})
                return None
            time.sleep(pause)
    return None


class Finisher:
    """Sends finishing steps to Redis in batches, on the threads that hand them in."""

    def __init__(self, queues: Queues) -> None:
        self._queues = queues
        self._waiting: list[tuple[FinishStep, Then]] = []
        self._lock = threading.Lock()
        self._sending = False
        self._held = threading.local()

    def submit(self, step: FinishStep, then: Then) -> None:
        """Finish ``step``, now or in the batch another thread is about to send;
        ``then(finished)`` is called on the thread that sent it. Returns once every step
        handed in while this one was sending is finished too. Within ``holding``, the step
        only joins the held ones."""
        held = getattr(self._held, "steps", None)
        if held is not None:
            held.append((step, then))
            return
        self._hand_in([(step, then)])

    @contextmanager
    def holding(self) -> Iterator[None]:
        """Steps this thread submits inside the block are handed in together at its end."""
        held: list[tuple[FinishStep, Then]] = []
        self._held.steps = held
        try:
            yield
        finally:
            self._held.steps = None
            if held:
                self._hand_in(held)

    def _hand_in(self, steps: list[tuple[FinishStep, Then]]) -> None:
        with self._lock:
            self._waiting += steps
            if self._sending:
                return
            self._sending = True
        while True:
            with self._lock:
                if not self._waiting:
                    self._sending = False
                    return
                batch = self._waiting[:MAX_BATCH]
                del self._waiting[:MAX_BATCH]
            for (_, then_of_step), finished in zip(batch, self._finish([step for step, _ in batch])):
                try:
                    then_of_step(finished)
                except Exception:
                    logger.exception("after finishing a delivery")

    def _finish(self, steps: list[FinishStep]) -> list[bool]:
        """Whether each step was finished here; a step Redis refused is tried again with the
        rest of the retries, not the steps already done (those would then look finished by
        someone else)."""
        answers: dict[int, bool] = {}

        def step() -> None:
            pending = [index for index in range(len(steps)) if index not in answers]
            failure = None
            for index, answer in zip(pending, self._queues.finish([steps[index] for index in pending])):
                if isinstance(answer, Exception):
                    failure = answer
                else:
                    answers[index] = answer
            if failure is not None:
                raise failure

        with_redis_retries(f"finishing {len(steps)} deliveries", step)
        return [answers.get(index, False) for index in range(len(steps))]
