"""service/store/redis_client.py: every client of the service's Redis is built from the same
URLs, and each gets its options on every connection, on one server and on each node of a
cluster."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from redis import BlockingConnectionPool, Connection, ConnectionPool, Redis
from redis.cluster import RedisCluster
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from service.store.quick_check import QuickCheckConnection
from service.store.redis_client import (
    LIMITER_MAX_CONNECTIONS,
    client_from_url,
    limiter_options,
    split_cluster_flag,
    store_options,
    worker_options,
)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("redis://127.0.0.1:6379/0", ("redis://127.0.0.1:6379/0", False)),
        ("rediss://u:pw@redis.example:6380/1", ("rediss://u:pw@redis.example:6380/1", False)),
        ("unix:///run/redis.sock?db=2", ("unix:///run/redis.sock?db=2", False)),
        ("redis+cluster://node:7000", ("redis://node:7000", True)),
        ("rediss+cluster://node:7000?ssl_cert_reqs=none", ("rediss://node:7000?ssl_cert_reqs=none", True)),
        ("redis://node:7000?cluster=true&db=0", ("redis://node:7000?db=0", True)),
        ("redis://node:7000?cluster=no", ("redis://node:7000", False)),
    ],
)
def test_split_cluster_flag(url: str, expected: tuple[str, bool]) -> None:
    assert split_cluster_flag(url) == expected


def test_another_scheme_is_refused_without_echoing_the_url() -> None:
    with pytest.raises(ValueError, match="'postgres'") as refused:
        split_cluster_flag("postgres://user:secret@db/x")
    assert "secret" not in str(refused.value)


def test_a_single_server_client_is_built_without_connecting() -> None:
    client = client_from_url("redis://127.0.0.1:1/0", decode_responses=True)
    assert type(client) is Redis
    client.close()


def test_a_cluster_url_gives_a_cluster_client(redis_cluster_url: str) -> None:
    client = client_from_url(redis_cluster_url, decode_responses=True)
    try:
        assert isinstance(client, RedisCluster)
        assert client.ping() is True
    finally:
        client.close()


class OwnConnection(Connection):
    """A connection class the store is given."""


@pytest.fixture(params=["redis", "redis-cluster"])
def url(request: pytest.FixtureRequest) -> str:
    return request.getfixturevalue("redis_url" if request.param == "redis" else "redis_cluster_url")


@contextmanager
def answering(url: str, options: dict) -> Iterator[Redis | RedisCluster]:
    """The client ``options`` give, once it answered (a cluster's then knows its nodes)."""
    client = client_from_url(url, **options)
    try:
        assert client.ping() is True
        yield client
    finally:
        client.close()


def pools_of(client: Redis | RedisCluster) -> list[ConnectionPool]:
    if isinstance(client, RedisCluster):
        return [node.redis_connection.connection_pool for node in client.get_nodes()]
    return [client.connection_pool]


def connection_of(pool: ConnectionPool) -> Connection:
    """A connection as the pool hands it out (given back at once)."""
    connection = pool.get_connection()
    pool.release(connection)
    return connection


def retry_of(client: Redis | RedisCluster) -> tuple[int, tuple[type[Exception], ...]]:
    """How often, and after which errors, a command is tried again: by the connection on one
    server; on a cluster by the client, whose nodes' connections try nothing again."""
    if isinstance(client, RedisCluster):
        assert {connection_of(pool).retry.get_retries() for pool in pools_of(client)} == {0}
        return client.retry.get_retries(), RedisCluster.ERRORS_ALLOW_RETRY
    retry = connection_of(client.connection_pool).retry
    return retry.get_retries(), tuple(retry._supported_errors)


def test_the_store_client_blocks_when_a_pool_is_full_and_checks_idle_connections(url: str) -> None:
    with answering(url, store_options()) as client:
        pools = pools_of(client)
        assert len(pools) == (3 if isinstance(client, RedisCluster) else 1)
        for pool in pools:
            assert type(pool) is BlockingConnectionPool
            assert (pool.max_connections, pool.timeout) == (32, 1.0)
            connection = connection_of(pool)
            assert type(connection) is QuickCheckConnection
            assert (connection.socket_timeout, connection.socket_connect_timeout) == (1.0, 1.0)
            assert connection.health_check_interval == 15
            assert connection.encoder.decode_responses is True
        retries, errors = retry_of(client)
    assert retries == 2 and RedisConnectionError in errors
    if not isinstance(client, RedisCluster):
        assert RedisTimeoutError not in errors  # a hung server costs one socket timeout


def test_what_the_store_is_given_reaches_every_node(url: str) -> None:
    options = store_options(connection_class=OwnConnection, max_connections=4, health_check_interval=3)
    with answering(url, options) as client:
        for pool in pools_of(client):
            assert pool.max_connections == 4
            connection = connection_of(pool)
            assert type(connection) is OwnConnection
            assert connection.health_check_interval == 3


def test_the_worker_client_outlasts_its_blocking_reads_and_tries_timeouts_again(url: str) -> None:
    with answering(url, worker_options(2.0)) as client:
        for pool in pools_of(client):
            assert type(pool) is ConnectionPool
            connection = connection_of(pool)
            assert (connection.socket_timeout, connection.socket_connect_timeout) == (7.0, 2.0)
            assert connection.health_check_interval == 15
            assert connection.encoder.decode_responses is True
        retries, errors = retry_of(client)
    assert retries == 3 and {RedisConnectionError, RedisTimeoutError} <= set(errors)


def test_the_limiter_client_gives_up_within_a_quarter_second_with_a_bounded_pool(url: str) -> None:
    with answering(url, limiter_options()) as client:
        for pool in pools_of(client):
            assert isinstance(pool, BlockingConnectionPool)
            assert (pool.max_connections, pool.timeout) == (LIMITER_MAX_CONNECTIONS, 0.25)
            connection = connection_of(pool)
            assert (connection.socket_timeout, connection.socket_connect_timeout) == (0.25, 0.25)
            assert connection.encoder.decode_responses is False
