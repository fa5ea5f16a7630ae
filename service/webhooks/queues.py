"""The Redis side of the worker: reading the feed (and the outbox of older versions), and
moving entries atomically.

Every change that takes an entry out of one place and puts it into another (pending ->
retry, retry -> dead, ...) is one Lua script over keys of one shard (one hash slot), so a
crash never leaves an entry in both places or in neither, on a single Redis or a cluster.
Scripts start with the ``#!lua`` shebang: a Redis over its memory limit refuses them before
they run instead of half-applying them.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from redis import Redis
from redis.cluster import RedisCluster
from redis.exceptions import NoScriptError, RedisClusterException, RedisError, ResponseError

from service.store.feed_redis import create_group
from service.store.timers_redis import CLAIM_DUE_LUA
from service.webhooks.entries import FEED, GROUP, OUTBOX, Held, ShardKeys

# KEYS: outbox, retry, dead, feed.
# ARGV: group, source ("feed" | "outbox" | "retry"), handle (stream id | retry member),
#       action ("done" | "retry" | "dead"), retry score, retry member, dead MAXLEN, dead fields...
# Returns 1, or 0 when the handle was no longer held (another worker finished it first,
# after a lease expired): then nothing changes, so no delivery is ever scheduled twice.
FINISH_LUA = """#!lua
local released
if ARGV[2] == 'feed' then
  -- the feed drops an entry once every group is done with it (service/store/feed_redis.py)
  released = redis.call('XACK', KEYS[4], ARGV[1], ARGV[3])
elseif ARGV[2] == 'outbox' then
  released = redis.call('XACK', KEYS[1], ARGV[1], ARGV[3])
  -- delivered or moved on: the outbox keeps only what is still to do
  redis.call('XDEL', KEYS[1], ARGV[3])
else
  released = redis.call('ZREM', KEYS[2], ARGV[3])
end
if released == 0 then return 0 end
if ARGV[4] == 'retry' then
  redis.call('ZADD', KEYS[2], ARGV[5], ARGV[6])
elseif ARGV[4] == 'dead' then
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[7], '*', unpack(ARGV, 8))
end
return 1
"""

# KEYS: a stream. ARGV: group, idle ms, the calling consumer's name.
# Checked and deleted in one step: deleting a consumer that holds entries would strand them.
PRUNE_CONSUMERS_LUA = """#!lua
local removed = 0
for _, info in ipairs(redis.call('XINFO', 'CONSUMERS', KEYS[1], ARGV[1])) do
  local fields = {}
  for i = 1, #info, 2 do fields[info[i]] = info[i + 1] end
  if fields['pending'] == 0 and fields['idle'] > tonumber(ARGV[2]) and fields['name'] ~= ARGV[3] then
    redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], fields['name'])
    removed = removed + 1
  end
end
return removed
"""


@dataclass(frozen=True)
class FinishStep:
    """Releasing a held delivery (``source`` FEED or OUTBOX with its stream id, or RETRY with
    its member as ``handle``), and in the same step doing ``action``: "done", "retry" (at
    ``retry_at``, as ``retry_member``) or "dead" (with ``dead_fields``)."""

    shard: int
    source: str
    handle: str
    action: str
    retry_at: float = 0.0
    retry_member: str = ""
    dead_fields: dict[str, str] | None = None


class Queues:
    """A shard's queues on one client (single Redis or cluster), for consumer ``consumer``.

    Every method raises redis-py's errors (the worker retries or logs them)."""

    def __init__(self, client: Redis | RedisCluster, prefix: str, consumer: str, dead_maxlen: int) -> None:
        self._client = client
        self._prefix = prefix
        self.consumer = consumer
        self._dead_maxlen = dead_maxlen
        self._finish = client.register_script(FINISH_LUA)
        self._claim_due = client.register_script(CLAIM_DUE_LUA)
        self._prune_consumers = client.register_script(PRUNE_CONSUMERS_LUA)
        self._autoclaim_cursor: dict[tuple[int, str], str] = {}
        self._keys: dict[int, ShardKeys] = {}
        self._read_from: dict[str, tuple[int, str]] = {}  # stream key -> (shard, source)

    def keys(self, shard: int) -> ShardKeys:
        keys = self._keys.get(shard)
        if keys is None:
            keys = self._keys[shard] = ShardKeys.of(self._prefix, shard)
            self._read_from[keys.feed] = (shard, FEED)
            self._read_from[keys.outbox] = (shard, OUTBOX)
        return keys

    def ensure_group(self, shard: int) -> None:
        """Create the consumer group (and the streams) unless it exists, on the feed and the outbox.

        From id 0: a group created after entries arrived (or re-created after Redis lost it)
        must see all of them; the feed is not trimmed past what a group has not read, and the
        outbox only ever holds entries still to deliver."""
        for source in (FEED, OUTBOX):
            create_group(self._client, self.keys(shard).stream(source), GROUP)

    def read(self, shards: Sequence[int], count: int, block_ms: int) -> list[Held]:
        """New deliveries for this consumer, up to ``count`` per stream, waiting up to
        ``block_ms`` for one; feed entries without a URL are acknowledged on the way. Several
        shards in one call on a single Redis only: on a cluster they live in different slots
        (a shard's feed and outbox share one)."""
        streams = {self.keys(shard).stream(source): ">" for shard in shards for source in (FEED, OUTBOX)}
        try:
            answer = self._client.xreadgroup(GROUP, self.consumer, streams, count=count, block=block_ms)
        except ResponseError as error:
            if "NOGROUP" not in str(error):
                raise
            for shard in shards:  # a stream was deleted, or Redis restarted without it
                self.ensure_group(shard)
            return []
        if not answer:
            return []
        # A single Redis answers a list of [stream, entries]; RESP3 would give a dict.
        streams_read = answer.items() if isinstance(answer, dict) else answer
        return self._to_deliver([Held(*self._read_from[stream], stream_id, fields)
                                 for stream, entries in streams_read for stream_id, fields in entries
                                 if fields is not None])

    def autoclaim(self, shard: int, min_idle_ms: int, count: int) -> list[Held]:
        """Take over up to ``count`` entries of each stream of the shard that other consumers
        (dead ones, normally) have held longer than ``min_idle_ms``; continues where the
        previous call stopped."""
        taken = []
        for source in (FEED, OUTBOX):
            start = self._autoclaim_cursor.get((shard, source), "0-0")
            try:
                cursor, claimed, *_ = self._client.xautoclaim(
                    self.keys(shard).stream(source), GROUP, self.consumer, min_idle_ms, start_id=start, count=count
                )
            except ResponseError as error:
                if "NOGROUP" not in str(error):
                    raise
                self.ensure_group(shard)
                return []
            self._autoclaim_cursor[(shard, source)] = cursor
            taken += [Held(shard, source, stream_id, fields) for stream_id, fields in claimed
                      if stream_id is not None and fields is not None]
        return self._to_deliver(taken)

    def prune_consumers(self, shard: int, idle_ms: int) -> int:
        """Forget consumers that hold nothing and were idle longer than ``idle_ms`` (every
        restarted worker has a new name); returns how many. A live consumer removed by
        mistake is re-created by its next read, with nothing lost."""
        return sum(self._prune_consumers(keys=[self.keys(shard).stream(source)], args=[GROUP, idle_ms, self.consumer])
                   for source in (FEED, OUTBOX))

    def _to_deliver(self, held: list[Held]) -> list[Held]:
        """``held`` without the feed entries that carry no URL (no webhook: most of the feed),
        which are acknowledged now."""
        skipped: dict[str, list[str]] = {}
        for entry in held:
            if entry.source == FEED and not entry.url:
                skipped.setdefault(self.keys(entry.shard).feed, []).append(entry.stream_id)
        if not skipped:
            return held
        if isinstance(self._client, RedisCluster):
            for feed, stream_ids in skipped.items():
                self._client.xack(feed, GROUP, *stream_ids)
        else:
            pipe = self._client.pipeline(transaction=False)
            for feed, stream_ids in skipped.items():
                pipe.xack(feed, GROUP, *stream_ids)
            pipe.execute()
        return [entry for entry in held if entry.source != FEED or entry.url]

    def shards_due(self, shards: Sequence[int], now: float) -> list[int]:
        """The shards among ``shards`` whose retry set has a member due at
        ``now``. One round trip on a single Redis, so that a worker with nothing due asks
        once per poll rather than once per shard; on a cluster every shard (its keys live in
        different slots), to be claimed one by one as before."""
        if isinstance(self._client, RedisCluster):
            return list(shards)
        pipe = self._client.pipeline(transaction=False)
        for shard in shards:
            pipe.zcount(self.keys(shard).retry, "-inf", repr(now))
        return [shard for shard, due in zip(shards, pipe.execute()) if due]

    def claim_retries(self, shard: int, now: float, lease_until: float, count: int) -> list[str]:
        """Up to ``count`` retry members due at ``now``, leased until ``lease_until``."""
        return self._claim_due(keys=[self.keys(shard).retry], args=[repr(now), repr(lease_until), count])

    def finish(self, steps: Sequence[FinishStep]) -> list[bool | Exception]:
        """Do every step, in one round trip on a single Redis (a pipeline, not a
        transaction: each step is atomic on its own). Per step: whether the delivery was
        still held (False: someone else finished it first, and nothing changed), or the
        error Redis answered for it.

        Raises redis-py's errors when the round trip itself fails; any step may then be
        done or not, and doing one again is harmless (it finds nothing held)."""
        if isinstance(self._client, RedisCluster):
            # A cluster's pipelines refuse scripts: one call per step.
            return [self._finish_one(step) for step in steps]
        answers = self._finish_pipelined(steps)
        lost = [index for index, answer in enumerate(answers) if isinstance(answer, NoScriptError)]
        if lost:
            # Redis lost its scripts (a restart without them, SCRIPT FLUSH): load it again.
            self._finish.sha = self._client.script_load(FINISH_LUA)
            for index, answer in zip(lost, self._finish_pipelined([steps[index] for index in lost])):
                answers[index] = answer
        return [answer if isinstance(answer, RedisError) else bool(answer) for answer in answers]

    def _finish_arguments(self, step: FinishStep) -> tuple[list[str], list]:
        keys = self.keys(step.shard)
        flat = [item for pair in (step.dead_fields or {}).items() for item in pair]
        return ([keys.outbox, keys.retry, keys.dead, keys.feed],
                [GROUP, step.source, step.handle, step.action, repr(step.retry_at), step.retry_member,
                 self._dead_maxlen, *flat])

    def _finish_one(self, step: FinishStep) -> bool | Exception:
        keys, args = self._finish_arguments(step)
        try:
            return bool(self._finish(keys=keys, args=args))
        except (RedisError, RedisClusterException) as error:
            return error

    def _finish_pipelined(self, steps: Sequence[FinishStep]) -> list:
        pipe = self._client.pipeline(transaction=False)
        for step in steps:
            keys, args = self._finish_arguments(step)
            pipe.evalsha(self._finish.sha, len(keys), *keys, *args)
        return pipe.execute(raise_on_error=False)
