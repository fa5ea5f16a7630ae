"""Timers on Redis: a sorted set per shard, ``P{s<k>}:timers``, member ``kind|subject``, score
the time it is due. A subject placed in a shard (a ticket) has its timers in its own slot, so
the script that changes it may set them atomically (``timers_key``)."""
from __future__ import annotations

from redis import Redis
from redis.cluster import RedisCluster

from service import ids
from service.store.redis_errors import store_errors
from service.store.keys import shard_prefix
from service.store.timers import Timer, Timers, shard_of_subject

# KEYS: a sorted set scored by due time. ARGV: now, lease until, count.
# Takes up to ``count`` due members and pushes their score to the lease's end: a claimer that
# dies holding them lets them come due again then.
CLAIM_DUE_LUA = """#!lua
local due = redis.call('ZRANGE', KEYS[1], '-inf', ARGV[1], 'BYSCORE', 'LIMIT', 0, ARGV[3])
for _, member in ipairs(due) do
  redis.call('ZADD', KEYS[1], 'XX', ARGV[2], member)
end
return due
"""

# KEYS: a sorted set. ARGV: member, the lease score its claim set.
# Removes the member only if nobody set it again since the claim.
RELEASE_CLAIMED_LUA = """#!lua
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score and tonumber(score) == tonumber(ARGV[2]) then
  return redis.call('ZREM', KEYS[1], ARGV[1])
end
return 0
"""


def timers_key(prefix: str, shard: int) -> str:
    return f"{shard_prefix(prefix, shard)}:timers"


class RedisTimers(Timers):
    def __init__(self, client: Redis | RedisCluster, prefix: str) -> None:
        self._client = client
        self._keys = [timers_key(prefix, shard) for shard in range(ids.SHARDS)]
        self._claim = client.register_script(CLAIM_DUE_LUA)
        self._release = client.register_script(RELEASE_CLAIMED_LUA)

    def set(self, kind: str, subject: str, at: float) -> None:
        with store_errors():
            self._client.zadd(self._key(subject), {Timer(kind, subject).member: at})

    def cancel(self, kind: str, subject: str) -> None:
        with store_errors():
            self._client.zrem(self._key(subject), Timer(kind, subject).member)

    def claim_due(self, now: float, lease_until: float, count: int) -> list[Timer]:
        claimed: list[Timer] = []
        with store_errors():
            for key in self._keys_due(now):
                for member in self._claim(keys=[key], args=[repr(now), repr(lease_until), count - len(claimed)]):
                    claimed.append(Timer.from_member(member, lease_until))
                if len(claimed) >= count:
                    break
        return claimed

    def release(self, timer: Timer) -> None:
        with store_errors():
            self._release(keys=[self._key(timer.subject)], args=[timer.member, repr(timer.lease)])

    def _keys_due(self, now: float) -> list[str]:
        """The shards' sets with something due: one round trip on a single Redis; on a cluster
        (keys in different slots) every set, each claimed from in turn."""
        if isinstance(self._client, RedisCluster):
            return list(self._keys)
        pipe = self._client.pipeline(transaction=False)
        for key in self._keys:
            pipe.zcount(key, "-inf", repr(now))
        return [key for key, due in zip(self._keys, pipe.execute()) if due]

    def _key(self, subject: str) -> str:
        return self._keys[shard_of_subject(subject)]

