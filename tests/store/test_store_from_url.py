"""Choosing a store by URL."""
from __future__ import annotations

import logging

import pytest

from service.store import MemoryStore, RedisStore, StoreError, store_from_url
from tests.store.support import effects, new_id
from tests.redis_servers import RedisClusterServers, RedisServer



def test_memory_url_gives_a_memory_store_and_warns_it_is_not_shared(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="service.store"):
        store = store_from_url("memory://")
    assert isinstance(store, MemoryStore)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "not shared between processes" in warnings[0].getMessage()


@pytest.mark.parametrize(
    "url",
    [
        "redis://127.0.0.1:6379/0",
        "rediss://user:pw@redis.example:6380/1",
        "unix:///run/redis/redis.sock?db=2",
        "redis+cluster://127.0.0.1:1",
        "redis://127.0.0.1:1?cluster=true",
    ],
)
def test_redis_urls_give_a_redis_store_even_while_redis_is_away(url: str) -> None:
    assert isinstance(store_from_url(url), RedisStore)


@pytest.mark.parametrize(
    "url", ["postgres://user:secret@db/games", "http://127.0.0.1:6379", "games"]
)
def test_an_unknown_scheme_is_refused_by_name_without_echoing_secrets(url: str) -> None:
    scheme = url.partition("://")[0] if "://" in url else ""
    with pytest.raises(ValueError, match=repr(scheme)) as refused:
        store_from_url(url)
    assert "secret" not in str(refused.value)


def test_a_prefix_with_a_hash_tag_is_refused() -> None:
    with pytest.raises(ValueError, match="prefix"):
        store_from_url("redis://127.0.0.1:6379/0", prefix="app:{x}:")


def test_a_unix_socket_url_reaches_redis(tmp_path) -> None:
    socket_path = tmp_path / "redis.sock"
    server = RedisServer(tmp_path / "data", extra_args=("--unixsocket", str(socket_path))).start()
    try:
        store = store_from_url(f"unix://{socket_path}", prefix="unix:")
        game = new_id()
        store.create(game, "state", 1, effects("e"))
        assert store.load(game).state == "state"
        store.close()
    finally:
        server.stop()


def test_the_cluster_query_flag_makes_a_cluster_client(redis_cluster_url: str) -> None:
    node = redis_cluster_url.replace("redis+cluster://", "redis://")
    game_ids = [new_id() for _ in range(32)]  # spread over all three nodes

    cluster_store = store_from_url(f"{node}?cluster=true", prefix="flag:")
    for game_id in game_ids:
        cluster_store.create(game_id, "state", 1, effects())
    cluster_store.close()

    # Without the flag the same URL is one node, which redirects keys it does not own.
    single_node = store_from_url(node, prefix="flag:")
    with pytest.raises(StoreError) as refused:
        for game_id in game_ids:
            single_node.load(game_id)
    assert type(refused.value.__cause__).__name__ == "MovedError"
    single_node.close()


def test_a_cluster_store_built_while_the_cluster_is_away_connects_later(tmp_path) -> None:
    # A node whose port was taken meanwhile starts on another, away from the URL the store
    # was given: the scenario is then played again with a fresh cluster.
    for attempt in range(3):
        cluster = RedisClusterServers(tmp_path / str(attempt))
        url = cluster.url
        store = store_from_url(url, prefix="late:")
        with pytest.raises(StoreError):
            store.check()
        cluster.start()
        try:
            if cluster.url != url:
                continue
            game = new_id()
            store.create(game, "state", 1, effects("e"))
            assert store.load(game).state == "state"
            return
        finally:
            store.close()
            cluster.stop()
    pytest.fail("the cluster's first node never started on the port its URL named")
