"""The feed on Redis: one stream per shard, ``P{s<k>}:feed``, read in consumer groups.

The stream of a shard shares its slot with the shard's games (service/ids.py), so the scripts
that save a game append to it atomically (service/store/redis.py). A single Redis serves every
shard to one blocking XREADGROUP; on a cluster each shard's stream lives on its own slot and is
read on its own (``reader_shards``).
"""
from __future__ import annotations

from collections.abc import Sequence

from redis import Redis
from redis.cluster import RedisCluster
from redis.exceptions import ResponseError

from service import ids
from service.store.redis_errors import store_errors
from service.store.feed import FEED_MAX_LENGTH, Feed, FeedEntry, MalformedFeedEntry, Read
from service.store.keys import shard_prefix
from service.store.streams import id_order


def feed_key(prefix: str, shard: int) -> str:
    return f"{shard_prefix(prefix, shard)}:feed"


def create_group(client: Redis | RedisCluster, key: str, group: str) -> None:
    """Make consumer group ``group`` of stream ``key`` (and the stream) unless it exists.

    From id 0: a group made after entries arrived still sees those not trimmed, and nothing is
    trimmed before every known group exists. Raises redis-py's errors."""
    try:
        client.xgroup_create(key, group, id="0", mkstream=True)
    except ResponseError as error:
        if "BUSYGROUP" not in str(error):
            raise


class RedisFeed(Feed):
    """The feed of every shard on one client (a single Redis or a cluster)."""

    def __init__(self, client: Redis | RedisCluster, prefix: str) -> None:
        self._client = client
        self._keys = [feed_key(prefix, shard) for shard in range(ids.SHARDS)]
        self._shard_of = {key: shard for shard, key in enumerate(self._keys)}
        self._ready: set[tuple[str, int]] = set()

    @property
    def is_cluster(self) -> bool:
        return isinstance(self._client, RedisCluster)

    def reader_shards(self) -> list[tuple[int, ...]]:
        """The shard sets one blocking read may cover: all at once on a single Redis, one each
        on a cluster."""
        if self.is_cluster:
            return [(shard,) for shard in range(ids.SHARDS)]
        return [tuple(range(ids.SHARDS))]

    def append(self, shard: int, entries: tuple[FeedEntry, ...]) -> None:
        with store_errors():
            pipe = self._client.pipeline(transaction=False)
            for entry in entries:
                pipe.xadd(self._keys[shard], dict(zip(entry.fields()[::2], entry.fields()[1::2])),
                          maxlen=FEED_MAX_LENGTH, approximate=True)
            pipe.execute()

    def read(self, group: str, consumer: str, count: int, block_seconds: float,
             shards: Sequence[int] | None = None) -> list[Read]:
        shards = tuple(range(ids.SHARDS)) if shards is None else tuple(shards)
        with store_errors():
            self._ensure(group, shards)
            streams = {self._keys[shard]: ">" for shard in shards}
            # BLOCK 0 would wait for ever, and any BLOCK until Redis' next timer tick (up to
            # 100 ms): a read that may not wait has none.
            block = max(int(block_seconds * 1000), 1) if block_seconds > 0 else None
            try:
                answer = self._client.xreadgroup(group, consumer, streams, count=count, block=block)
            except ResponseError as error:
                if "NOGROUP" not in str(error):
                    raise
                self._ready.difference_update((group, shard) for shard in shards)
                return []
            streams_read = answer.items() if isinstance(answer, dict) else (answer or [])
            return [read for stream, found in streams_read
                    for read in self._reads(group, self._shard_of[stream], found)]

    def ack(self, group: str, reads: list[Read]) -> None:
        if not reads:
            return
        with store_errors():
            if self.is_cluster:
                for read in reads:
                    self._client.xack(self._keys[read.shard], group, read.stream_id)
                return
            pipe = self._client.pipeline(transaction=False)
            for read in reads:
                pipe.xack(self._keys[read.shard], group, read.stream_id)
            pipe.execute()

    def claim_stale(self, group: str, consumer: str, idle_seconds: float, count: int,
                    shards: Sequence[int] | None = None) -> list[Read]:
        claimed: list[Read] = []
        with store_errors():
            for shard in range(ids.SHARDS) if shards is None else shards:
                self._ensure(group, (shard,))
                try:
                    _, found, *_ = self._client.xautoclaim(self._keys[shard], group, consumer,
                                                           int(idle_seconds * 1000), start_id="0-0", count=count)
                except ResponseError as error:
                    if "NOGROUP" not in str(error):
                        raise
                    self._ready.discard((group, shard))
                    continue
                claimed += self._reads(group, shard, found)
        return claimed

    def trim(self, groups: tuple[str, ...]) -> int:
        """Per shard: the oldest entry some group still needs (pending, or not yet read), and
        XTRIM MINID to it. Groups are created first, so an entry is never trimmed before a
        consumer that has not started yet could read it."""
        dropped = 0
        with store_errors():
            for shard, key in enumerate(self._keys):
                self._ensure_all(groups, shard)
                needed = self._oldest_needed(key)
                if needed is not None:
                    # Exact: trimmed with "~", Redis drops only whole nodes (100 entries) of a stream.
                    dropped += self._client.xtrim(key, minid=needed, approximate=False)
        return dropped

    def _oldest_needed(self, key: str) -> str | None:
        """The smallest id any group still needs; None when nothing can be dropped yet."""
        oldest: tuple[int, int] | None = None
        try:
            groups = self._client.xinfo_groups(key)
        except ResponseError as error:
            if "no such key" not in str(error):
                raise
            return None  # no group made it yet, nor any save wrote to it: nothing to drop
        for info in groups:
            last = id_order(info["last-delivered-id"])
            candidate = (last[0], last[1] + 1)
            if info.get("pending"):
                # None when its readers acknowledged them all since XINFO: the last delivered then.
                first_pending = self._client.xpending(key, info["name"])["min"]
                if first_pending is not None:
                    candidate = id_order(first_pending)
            oldest = candidate if oldest is None else min(oldest, candidate)
        if oldest is None or oldest == (0, 1):
            return None
        return f"{oldest[0]}-{oldest[1]}"

    def _ensure(self, group: str, shards: Sequence[int]) -> None:
        for shard in shards:
            if (group, shard) not in self._ready:
                self._ensure_all((group,), shard)

    def _ensure_all(self, groups: tuple[str, ...], shard: int) -> None:
        for group in groups:
            create_group(self._client, self._keys[shard], group)
            self._ready.add((group, shard))

    def _reads(self, group: str, shard: int, found) -> list[Read]:
        reads, unreadable = [], []
        for stream_id, fields in found:
            try:
                reads.append(Read(shard, stream_id, FeedEntry.from_fields(fields or {})))
            except MalformedFeedEntry:
                unreadable.append(stream_id)  # written by no version of this service: nothing to apply
        if unreadable:
            # Acknowledged at once: left pending, it would hold the trimming back for good.
            self._client.xack(self._keys[shard], group, *unreadable)
        return reads

