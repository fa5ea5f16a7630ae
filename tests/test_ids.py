"""Game ids land in a shard's hash slot, and the slot function is Redis Cluster's."""
from __future__ import annotations

from collections import Counter

from redis.crc import key_slot as redis_key_slot

from service import ids


def test_the_slot_function_is_redis_clusters():
    for key in ("plain", "a{tag}b", "{}x", "x{}{y}", "ginrummy:{g_abc}:s", "{s3}", "é{ü}"):
        assert ids.key_slot(key) == redis_key_slot(key.encode())


def test_every_new_id_shares_its_slot_with_its_shard_tag():
    for _ in range(500):
        game_id = ids.new_game_id()
        assert ids.is_game_id(game_id)
        shard = ids.shard_of(game_id)
        assert ids.key_slot(f"p:{{{game_id}}}:s") == ids.key_slot(f"p:{{{ids.shard_tag(shard)}}}:outbox")


def test_new_ids_spread_over_every_shard():
    counts = Counter(ids.shard_of(ids.new_game_id()) for _ in range(ids.SHARDS * 200))
    assert set(counts) == set(range(ids.SHARDS))
    assert min(counts.values()) > 100  # uniform would be 200 each


def test_derived_ids_repeat_for_the_same_inputs_only():
    first = ids.derived_game_id(b"key", "rematch:g_x")
    assert first == ids.derived_game_id(b"key", "rematch:g_x")
    assert ids.is_game_id(first)
    assert first != ids.derived_game_id(b"key", "rematch:g_y")
    assert first != ids.derived_game_id(b"other", "rematch:g_x")


def test_text_that_is_not_a_drawn_id_is_no_game_id():
    drawn = ids.new_game_id()
    for text in ("", "g_", "nonsense", "g_" + "A" * 23, drawn + "x", "G" + drawn[1:]):
        assert not ids.is_game_id(text)
