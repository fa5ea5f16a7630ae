"""Fixtures of the webhook tests: a verifying receiver, in-process workers on the test Redis."""
from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator

import pytest
from redis import Redis

from service.store.redis_client import client_from_url, worker_options
from service.webhooks.sender import Sender
from service.webhook_signing import WebhookSecret
from service.webhooks.worker import Worker, WorkerSettings
from tests.webhooks.receiver import Receiver
from tests.webhooks.support import new_secret

# Short timings: tests observe each step instead of waiting for production pauses.
TEST_SETTINGS = {
    "lease_seconds": 30.0,
    "poll_seconds": 0.05,
    "block_seconds": 0.2,
    "backoff_base_seconds": 0.05,
    "backoff_cap_seconds": 0.2,
}
_numbers = itertools.count()


@pytest.fixture
def secret() -> str:
    return new_secret()


@pytest.fixture
def prefix(key_prefix: str) -> str:
    """A prefix of this test alone, inside the session's private prefix."""
    return f"{key_prefix}t{next(_numbers)}:"


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[Redis]:
    client = Redis.from_url(redis_url, decode_responses=True)
    yield client
    client.close()


@pytest.fixture
def receiver(secret: str) -> Iterator[Receiver]:
    running = Receiver(secret).start()
    yield running
    running.close()


@pytest.fixture
def start_worker(redis_url: str, prefix: str, secret: str) -> Iterator[Callable[..., Worker]]:
    """Start an in-process worker: ``start_worker(clock=..., allow_private=..., total_timeout=...,
    url=..., consumer=..., **WorkerSettings fields)``; all are stopped at the end."""
    started: list[tuple[Worker, Sender, object]] = []

    def start(
        *, clock=None, allow_private: bool = True, total_timeout: float = 2.0,
        url: str | None = None, consumer: str | None = None, **settings,
    ) -> Worker:
        settings = WorkerSettings(**{**TEST_SETTINGS, **settings})
        client = client_from_url(url or redis_url, **worker_options(settings.block_seconds))
        clock_options = {} if clock is None else {"clock": clock}
        sender = Sender(
            WebhookSecret.parse(secret), allow_private=allow_private, total_timeout=total_timeout, **clock_options
        )
        worker = Worker(
            client, prefix=prefix, sender=sender, settings=settings,
            consumer=consumer or f"test-worker-{next(_numbers)}", **clock_options,
        )
        worker.start()
        started.append((worker, sender, client))
        return worker

    yield start
    for worker, _, _ in started:
        worker.stop()
    for worker, sender, client in started:
        worker.join(15)
        sender.close()
        client.close()
