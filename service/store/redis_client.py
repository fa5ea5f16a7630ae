"""redis-py clients from the service's Redis URLs (one server, or a Redis Cluster), and what
each kind of client asks of its connections.

``redis://``, ``rediss://`` and ``unix://`` URLs name one server; ``redis+cluster://`` and
``rediss+cluster://`` (or any of the first two with ``?cluster=true``) name any node of a
cluster. Every client of the service's Redis is built here: the game store's (the API), the
webhook worker's and the rate limiter's. So they all accept the same URLs, and their timeouts,
retries, health checks and pool kinds are set side by side (``store_options``,
``worker_options``, ``limiter_options``).
"""
from __future__ import annotations

import functools
import inspect
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from redis import BlockingConnectionPool, Connection, ConnectionPool, Redis
from redis.backoff import ExponentialWithJitterBackoff
from redis.cluster import REDIS_ALLOWED_KEYS, RedisCluster
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry

from service.store.quick_check import with_quick_check

SCHEMES = ("redis", "rediss", "unix", "redis+cluster", "rediss+cluster")
CLUSTER_SUFFIX = "+cluster"
# What RedisCluster takes for itself rather than for its nodes' connections (retry among them).
_CLUSTER_ARGUMENTS = frozenset(inspect.signature(RedisCluster.__init__).parameters) - {"self", "kwargs"}

# The worker's readers block in XREADGROUP for its block_seconds: a socket timeout only that
# long would cut every idle read off as an error.
WORKER_TIMEOUT_MARGIN_SECONDS = 5.0
# The rate limiter sits in front of every request: a Redis that stopped answering must cost a
# request little (the limiter then counts in its own process for a while).
LIMITER_TIMEOUT_SECONDS = 0.25
# Connections the rate limiter's pool holds at most per node (a count is one quick script):
# under gevent thousands of requests may count at once, and without a bound each would open
# one. A request that finds them all busy for LIMITER_TIMEOUT_SECONDS counts in the process.
LIMITER_MAX_CONNECTIONS = 16


def split_cluster_flag(url: str) -> tuple[str, bool]:
    """The URL as redis-py reads it, and whether it names a cluster.

    Raises ValueError for a scheme this module does not serve (naming only the scheme:
    the rest of a URL may hold a password)."""
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES:
        raise ValueError(f"not a Redis URL scheme: {parts.scheme!r}")
    query = parse_qsl(parts.query, keep_blank_values=True)
    is_cluster = parts.scheme.endswith(CLUSTER_SUFFIX) or any(
        name == "cluster" and value.lower() in ("true", "yes", "1") for name, value in query
    )
    scheme = parts.scheme.removesuffix(CLUSTER_SUFFIX)
    kept = urlencode([(name, value) for name, value in query if name != "cluster"])
    # Built by hand: urlunsplit drops the "//" of "unix:///path", whose netloc is empty.
    return f"{scheme}://{parts.netloc}{parts.path}{'?' if kept else ''}{kept}", is_cluster


def client_from_url(url: str, *, blocking_pool: bool = False, quick_check: bool = False,
                    **options: Any) -> Redis | RedisCluster:
    """A client (with its connection pools) for ``url``; ``options`` go to redis-py's
    connections and pools, on a cluster to every node's (but those RedisCluster takes for
    itself, such as ``retry``, to the cluster client: see ``retry_policy``).

    ``blocking_pool``: at most ``max_connections`` connections per Redis node, a call that finds
    them all busy waiting up to ``timeout`` s for one (else a pool opens as many as are asked for).
    ``quick_check``: plain TCP connections check for unread data off the gevent hub
    (quick_check.py). A single-server client does not connect until its first command; a
    cluster client asks the cluster for its layout at once and raises redis-py's error when
    nobody answers. Raises ValueError for a URL of another scheme."""
    plain_url, is_cluster = split_cluster_flag(url)
    pool_class = BlockingConnectionPool if blocking_pool else ConnectionPool
    if is_cluster:
        return _cluster_client(plain_url, pool_class, quick_check, options)
    pool = pool_class.from_url(plain_url, **options)
    if quick_check:
        pool.connection_class = with_quick_check(pool.connection_class)
    client = Redis(connection_pool=pool)
    client.auto_close_connection_pool = True  # close() disconnects the pool, as from_url's would
    return client


def _cluster_client(url: str, pool_class: type[ConnectionPool], quick_check: bool,
                    options: dict[str, Any]) -> RedisCluster:
    # RedisCluster gives its nodes' pools only the options named in REDIS_ALLOWED_KEYS and
    # drops the others without a word (health_check_interval among them): those are bound
    # to the pool class, which builds every node's pool.
    dropped = {name: value for name, value in options.items()
               if name not in REDIS_ALLOWED_KEYS and name not in _CLUSTER_ARGUMENTS}
    kept = {name: value for name, value in options.items() if name not in dropped}
    if quick_check and url.startswith("redis://"):
        kept["connection_class"] = with_quick_check(kept.get("connection_class", Connection))
    node_pool = functools.partial(pool_class, **dropped) if dropped else pool_class
    return RedisCluster.from_url(url, connection_pool_class=node_pool, **kept)


def retry_policy(*, retries: int, base: float, cap: float, timeouts: bool) -> Retry:
    """Try a command again after a connection error (and with ``timeouts`` after a timeout)
    up to ``retries`` times, after an exponential backoff with jitter from ``base`` to ``cap`` s.

    On a cluster only ``retries`` counts: RedisCluster gives its nodes' connections no
    retries and itself tries again, after reading the cluster's layout anew, on connection
    errors, timeouts and a cluster that is down, whatever the policy names."""
    errors = (RedisConnectionError, RedisTimeoutError) if timeouts else (RedisConnectionError,)
    return Retry(ExponentialWithJitterBackoff(base=base, cap=cap), retries=retries, supported_errors=errors)


def store_options(**overrides: Any) -> dict[str, Any]:
    """``client_from_url`` options of the game store's client; ``overrides`` replace any but
    ``decode_responses``.

    A down or hung Redis makes a call fail within about two seconds instead of blocking a
    worker; under gevent thousands of requests may run at once, and the pool keeps them to a
    bounded number of connections."""
    return {
        # Connection errors are usually a pooled connection that died: tried again twice,
        # quickly. A write that did reach Redis before its connection broke is never applied
        # twice: the repeat is refused (VersionConflict, or "id taken" for create). On one
        # server timeouts are not tried again, so a hung server costs one socket timeout.
        "retry": retry_policy(retries=2, base=0.05, cap=0.25, timeouts=False),
        "socket_timeout": 1.0,
        "socket_connect_timeout": 1.0,
        # Ping a pooled connection idle this long before reusing it, so one that died
        # (server restart, idle cut by a proxy) is replaced instead of failing a request.
        "health_check_interval": 15,
        "blocking_pool": True,
        "max_connections": 32,
        "timeout": 1.0,
        "quick_check": True,
        **overrides,
        "decode_responses": True,
    }


def worker_options(block_seconds: float) -> dict[str, Any]:
    """``client_from_url`` options of the webhook worker's client, whose reads block up to
    ``block_seconds``."""
    return {
        "decode_responses": True,
        "socket_timeout": block_seconds + WORKER_TIMEOUT_MARGIN_SECONDS,
        "socket_connect_timeout": 2.0,
        "health_check_interval": 15,
        # A repeated script is harmless (a second FINISH finds nothing to release), so
        # connection errors and timeouts are simply tried again.
        "retry": retry_policy(retries=3, base=0.1, cap=1.0, timeouts=True),
    }


def limiter_options() -> dict[str, Any]:
    """``client_from_url`` options of the rate limiter's client."""
    return {"socket_timeout": LIMITER_TIMEOUT_SECONDS, "socket_connect_timeout": LIMITER_TIMEOUT_SECONDS,
            "blocking_pool": True, "max_connections": LIMITER_MAX_CONNECTIONS, "timeout": LIMITER_TIMEOUT_SECONDS}
