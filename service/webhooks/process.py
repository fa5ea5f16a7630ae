"""The ``ginrummy worker`` process: settings, Redis, signals, probes, graceful shutdown.

SIGTERM or SIGINT stops reading and claiming at once; deliveries and timers in flight get
WORKER_GRACEFUL_SECONDS to finish, then the process exits 0. Whatever was cut off stays
held in Redis and is taken over by another worker when its lease ends.
"""
from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable
from typing import Any, Protocol
from urllib.parse import urlsplit

from redis import Redis
from redis.cluster import RedisCluster
from redis.exceptions import RedisClusterException, RedisError

from service.config import Config, ConfigError
from service.observability.jsonlog import FIELDS_ATTRIBUTE, configure_logging
from service.store.redis_client import SCHEMES, client_from_url, worker_options
from service.store.timers import TimerCount
from service.webhooks.connections import IdleConnections
from service.webhooks.health import HealthServer
from service.webhooks.metrics import WorkerMetrics
from service.webhooks.sender import TOTAL_TIMEOUT_SECONDS, Sender
from service.webhook_signing import WebhookSecret
from service.webhooks.worker import Worker, WorkerSettings

logger = logging.getLogger(__name__)


class Background(Protocol):
    """What the worker runs beside its deliveries (service/background/runner.py)."""

    def start(self) -> Background: ...
    def stop(self) -> None: ...
    def join(self, timeout: float) -> bool: ...


CONNECT_RETRY_SECONDS = 1.0


def run_worker(config: Config, *, host: str = "0.0.0.0",
               background: Callable[[Redis | RedisCluster, TimerCount], Background] | None = None,
               **tuning: Any) -> int:
    """Run the worker until SIGTERM or SIGINT; returns the exit status (0).

    ``background`` builds, on the worker's client, the runner of the feed's other consumers and
    of the timers (service/background; turn deadlines are timers), started and stopped with the
    deliveries; it counts the timers it fires into the worker's metrics.
    ``tuning`` overrides WorkerSettings fields (lease_seconds, backoff_base_seconds, ...)
    beyond what the configuration sets. Must run on the main thread (signal handlers).
    Raises ConfigError without WEBHOOK_SECRET or without a Redis REDIS_URL, OSError when
    WORKER_PORT cannot be bound."""
    configure_logging(config.log_level)
    if not config.webhook_secret:
        raise ConfigError("WEBHOOK_SECRET must be set to run the worker (whsec_ + base64 of 32 random bytes)")
    if urlsplit(config.redis_url).scheme not in SCHEMES:
        raise ConfigError("REDIS_URL must name a Redis to run the worker (the embedded store is not shared)")
    settings = WorkerSettings(
        concurrency=config.webhook_concurrency, max_attempts=config.webhook_max_attempts, **tuning
    )
    if settings.lease_seconds <= TOTAL_TIMEOUT_SECONDS:
        logger.warning("the lease is not longer than a delivery attempt: a slow delivery may be sent twice",
                       extra={FIELDS_ATTRIBUTE: {"lease_seconds": settings.lease_seconds}})
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())

    metrics = WorkerMetrics.create()
    running: dict[str, Worker] = {}
    health = HealthServer(
        host, config.worker_port,
        is_ready=lambda: "worker" in running and running["worker"].is_ready(),
        metrics=metrics.exposition, metrics_token=config.metrics_token,
    ).start()
    logger.info("worker listening", extra={FIELDS_ATTRIBUTE: {"host": host, "port": health.port}})
    client = _connect(config.redis_url, worker_options(settings.block_seconds), stop)
    if client is not None:
        # As many kept connections per receiver as a task sends requests to it at once.
        sender = Sender(WebhookSecret.parse(config.webhook_secret), allow_private=config.webhook_allow_private,
                        idle=IdleConnections(per_key=settings.together))
        worker = Worker(client, prefix=config.key_prefix, sender=sender, settings=settings, metrics=metrics)
        running["worker"] = worker
        worker.start()
        runner = None if background is None else background(client, metrics.count_timer).start()
        while not stop.wait(1.0):
            pass
        logger.info("stopping: finishing deliveries in flight",
                    extra={FIELDS_ATTRIBUTE: {"graceful_seconds": config.worker_graceful_seconds}})
        worker.stop()
        if runner is not None:
            runner.stop()
        worker.join(config.worker_graceful_seconds)
        if runner is not None:
            runner.join(config.worker_graceful_seconds)
        sender.close()
        client.close()
    health.close()
    return 0


def _connect(url: str, options: dict[str, Any], stop: threading.Event) -> Redis | RedisCluster | None:
    """The client, built once Redis answers; None if stopped first. A cluster client needs
    the cluster's layout to exist, so while nobody answers the worker waits (not ready)."""
    waiting_logged = False
    while not stop.is_set():
        try:
            return client_from_url(url, **options)
        except (RedisError, RedisClusterException) as error:
            if not waiting_logged:
                logger.warning("waiting for Redis", extra={FIELDS_ATTRIBUTE: {"error": f"{type(error).__name__}"}})
                waiting_logged = True
            stop.wait(CONNECT_RETRY_SECONDS)
    return None
