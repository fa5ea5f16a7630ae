"""Helpers of the webhook tests: a clock the tests move, feed (and outbox) entries, polling Redis."""
from __future__ import annotations

import base64
import json
import secrets
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from prometheus_client.parser import text_string_to_metric_families
from redis import Redis
from redis.cluster import RedisCluster

from service import ids
from service.store.feed import NO_OWNER, FeedEntry
from service.store.streams import id_order
from service.webhooks.entries import FEED, GROUP, OUTBOX, ShardKeys

T = TypeVar("T")


def new_secret() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


class FakeClock:
    """Seconds since the epoch, starting at the real time, moving only when told to (the
    receiver's standardwebhooks check allows timestamps within 5 minutes of real time)."""

    def __init__(self) -> None:
        self._now = time.time()
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds

    def set(self, now: float) -> None:
        with self._lock:
            self._now = max(self._now, now)


def body_for(game_id: str, event_type: str = "turn", **data: object) -> str:
    return json.dumps(
        {"type": event_type, "timestamp": "2026-01-01T00:00:00Z", "data": {"game": game_id, **data}},
        separators=(",", ":"),
    )


def add_entry(
    client: Redis | RedisCluster, prefix: str, url: str, *, game_id: str | None = None,
    event_type: str = "turn", webhook_id: str | None = None, stream: str = FEED,
) -> dict[str, str]:
    """XADD a delivery to the game's shard as the service's save script does (``stream`` FEED),
    or as a version before the feed did (OUTBOX); returns what the delivery holds (the
    fields of its retry members and dead letters)."""
    game_id = game_id or ids.new_game_id()
    fields = {
        "id": webhook_id or f"wh_{game_id}_{secrets.token_hex(4)}",
        "url": url,
        "body": body_for(game_id, event_type, seat=0),
        "game": game_id,
        "type": event_type,
    }
    keys = ShardKeys.for_game(prefix, game_id)
    if stream == OUTBOX:
        client.xadd(keys.outbox, fields)
    else:
        entry = FeedEntry(fields["id"], "game", game_id, event_type, NO_OWNER, fields["body"], url)
        client.xadd(keys.feed, dict(zip(entry.fields()[::2], entry.fields()[1::2])))
    return fields


def game_in_shard(shard: int) -> str:
    """A fresh game id of ``shard``."""
    while True:
        game_id = ids.new_game_id()
        if ids.shard_of(game_id) == shard:
            return game_id


def wait_until(probe: Callable[[], T], timeout: float = 10.0, what: str = "condition") -> T:
    """The first truthy value of ``probe()``, asked every 20 ms; AssertionError on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not reached within {timeout} s")
        time.sleep(0.02)


def all_keys(prefix: str) -> list[ShardKeys]:
    return [ShardKeys.of(prefix, shard) for shard in range(ids.SHARDS)]


def read_and_acknowledged(client: Redis | RedisCluster, feed: str) -> bool:
    """Whether the deliveries' group has read every entry of ``feed`` and holds none."""
    if client.xlen(feed) == 0:
        return True
    group = next((info for info in client.xinfo_groups(feed) if info["name"] == GROUP), None)
    if group is None or group["pending"]:
        return False
    return id_order(group["last-delivered-id"]) >= id_order(client.xinfo_stream(feed)["last-generated-id"])


def deliveries_settled(client: Redis | RedisCluster, prefix: str) -> bool:
    """Nothing left to deliver: every feed read and acknowledged by the deliveries' group, every
    outbox and retry set empty (outbox entries are deleted once finished, and a postponed
    delivery waits in the retry set)."""
    return all(read_and_acknowledged(client, keys.feed) and client.xlen(keys.outbox) == 0
               and client.zcard(keys.retry) == 0 for keys in all_keys(prefix))


def metric(worker, name: str, **labels: str) -> float:
    """The sum of ``worker``'s samples named ``name`` carrying ``labels``, as /metrics shows them."""
    text = worker.metrics.exposition().decode()
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name and labels.items() <= sample.labels.items()
    )
