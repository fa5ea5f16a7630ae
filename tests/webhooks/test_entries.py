"""Shard keys and the entries that travel between the feed (or outbox), the retry set and the dead letters."""
from __future__ import annotations

import json

import pytest

from service import ids
from service.store.feed import FeedEntry
from service.webhooks.entries import FEED, OUTBOX, Delivery, Held, MalformedEntry, ShardKeys
from tests.webhooks.support import game_in_shard

FIELDS = {"id": "wh_1", "url": "https://hooks.example/x", "body": '{"type":"turn"}', "game": "g_1", "type": "turn"}


def test_a_games_shard_keys_share_its_cluster_slot() -> None:
    game_id = game_in_shard(6)
    keys = ShardKeys.for_game("gr:", game_id)
    assert keys == ShardKeys.of("gr:", 6)
    assert (keys.feed, keys.outbox, keys.retry, keys.dead) == (
        "gr:{s6}:feed", "gr:{s6}:outbox", "gr:{s6}:retry", "gr:{s6}:dead"
    )
    slots = {ids.key_slot(key) for key in (keys.feed, keys.outbox, keys.retry, keys.dead, f"gr:{{{game_id}}}:s")}
    assert len(slots) == 1


def test_an_id_of_no_shard_has_no_keys() -> None:
    with pytest.raises(ValueError, match="not a game id"):
        ShardKeys.for_game("gr:", "g_nothing")


def test_a_retry_member_carries_the_next_attempt_and_everything_else_unchanged() -> None:
    first = Delivery.from_stream("1700000000123-4", FIELDS)
    assert first.attempt == 1 and first.enqueued_at == 1700000000.123
    member = first.retry_member()
    second = Delivery.from_retry_member(member)
    assert second == Delivery(**{**first.__dict__, "attempt": 2})
    assert Delivery.from_retry_member(second.retry_member()).attempt == 3
    assert json.loads(member)["sid"] == "1700000000123-4"


def test_a_postponed_member_keeps_its_attempt_and_counts_the_postponements() -> None:
    first = Delivery.from_stream("1700000000123-4", FIELDS)
    once = Delivery.from_retry_member(first.postponed_member())
    twice = Delivery.from_retry_member(once.postponed_member())
    assert (once.attempt, once.postponed) == (1, 1) and (twice.attempt, twice.postponed) == (1, 2)
    # A real attempt starts the count again.
    assert Delivery.from_retry_member(twice.retry_member()).postponed == 0
    assert "postponed" not in json.loads(first.retry_member())  # members as they were without it


@pytest.mark.parametrize(
    "member",
    [json.dumps({**FIELDS, "sid": "1-0", "attempt": 1, "postponed": -1}),
     json.dumps({**FIELDS, "sid": "1-0", "attempt": 1, "postponed": "2"}), "not json", "[]", json.dumps({**FIELDS, "attempt": 2}), json.dumps({**FIELDS, "sid": "1-0", "attempt": 0}),
     json.dumps({**FIELDS, "sid": "1-0", "attempt": "2"}), json.dumps({"sid": "1-0", "attempt": 2})],
)
def test_a_malformed_retry_member_is_refused(member: str) -> None:
    with pytest.raises(MalformedEntry):
        Delivery.from_retry_member(member)


def test_unknown_event_types_share_one_metric_label() -> None:
    assert Delivery.from_stream("1-0", FIELDS).metric_type == "turn"
    assert Delivery.from_stream("1-0", {**FIELDS, "type": "x" * 50}).metric_type == "other"


def test_a_feed_entry_and_an_outbox_entry_of_the_same_event_are_the_same_delivery() -> None:
    entry = FeedEntry("wh_1", "game", "g_1", "turn", "key-1", '{"type":"turn"}', "https://hooks.example/x")
    from_feed = Held(3, FEED, "1700000000123-4", dict(zip(entry.fields()[::2], entry.fields()[1::2]))).delivery()
    from_outbox = Held(3, OUTBOX, "1700000000123-4", FIELDS).delivery()
    assert from_feed == from_outbox == Delivery.from_stream("1700000000123-4", FIELDS)


def test_a_feed_entry_missing_a_field_is_malformed() -> None:
    with pytest.raises(MalformedEntry, match="body"):
        Held(3, FEED, "1-0", {"id": "wh_1", "kind": "game", "subject": "g_1", "type": "turn", "owner": "",
                               "url": "https://hooks.example/x"}).delivery()
