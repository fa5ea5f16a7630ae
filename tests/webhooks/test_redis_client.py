"""service/store/redis_client.py: the worker builds its client from the same URLs as the store."""
from __future__ import annotations

import pytest
from redis import Redis
from redis.cluster import RedisCluster

from service.store.redis_client import client_from_url, split_cluster_flag


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
