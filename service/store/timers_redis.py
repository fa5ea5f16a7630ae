"""Timers on Redis: a sorted set per shard, ``P{s<k>}:timers``, member ``kind|subject``, score
the time it is due. A subject placed in a shard (a game, a ticket) has its timers in its own
slot, so the script that changes it may set them atomically (``timers_key``): a game's save
sets its turn deadline so.

Versions before turn deadlines were timers kept them in a set of their own per shard,
``P{s<k>}:due`` (member: the game id). While such a version still runs beside this one (a
rolling deploy), it writes there: claiming moves those entries into the shard's timers first,
in the same script, so they fire as ``deadline`` timers. Once no process of such a version is
left, the sets stay empty and cost one ZCOUNT each per poll on a single Redis."""
from __future__ import annotations

from redis import Redis
from redis.cluster import RedisCluster

from service import ids
from service.store.redis_errors import store_errors
from service.store.keys import shard_prefix, timers_key
from service.store.timers import DEADLINE_TIMER, Timer, Timers, shard_of_subject

# KEYS: a sorted set scored by due time. ARGV: now, lease until, count.
# Takes up to ``count`` due members and pushes their score to the lease's end: a claimer that
# dies holding them lets them come due again then.
_CLAIM_DUE = """
local due = redis.call('ZRANGE', KEYS[1], '-inf', ARGV[1], 'BYSCORE', 'LIMIT', 0, ARGV[3])
for _, member in ipairs(due) do
  redis.call('ZADD', KEYS[1], 'XX', ARGV[2], member)
end
return due
"""
CLAIM_DUE_LUA = "#!lua" + _CLAIM_DUE

# KEYS: the shard's timers, its legacy deadline set. ARGV: as CLAIM_DUE_LUA.
# The legacy set's due games become deadline timers first. LT: of two entries for one game the
# earlier wins; firing early is harmless, as settling a game whose turn is not over yet only
# sets its deadline again.
CLAIM_TIMERS_LUA = """#!lua
local legacy = redis.call('ZRANGE', KEYS[2], '-inf', ARGV[1], 'BYSCORE', 'LIMIT', 0, ARGV[3], 'WITHSCORES')
for i = 1, #legacy, 2 do
  redis.call('ZADD', KEYS[1], 'LT', legacy[i + 1], '%s' .. legacy[i])
  redis.call('ZREM', KEYS[2], legacy[i])
end
""" % Timer(DEADLINE_TIMER, "").member + _CLAIM_DUE

# KEYS: a sorted set. ARGV: member, the lease score its claim set.
# Removes the member only if nobody set it again since the claim.
RELEASE_CLAIMED_LUA = """#!lua
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score and tonumber(score) == tonumber(ARGV[2]) then
  return redis.call('ZREM', KEYS[1], ARGV[1])
end
return 0
"""


def legacy_deadlines_key(prefix: str, shard: int) -> str:
    return f"{shard_prefix(prefix, shard)}:due"


class RedisTimers(Timers):
    def __init__(self, client: Redis | RedisCluster, prefix: str) -> None:
        self._client = client
        self._keys = [timers_key(prefix, shard) for shard in range(ids.SHARDS)]
        self._legacy = dict(zip(self._keys, (legacy_deadlines_key(prefix, shard) for shard in range(ids.SHARDS))))
        self._claim = client.register_script(CLAIM_TIMERS_LUA)
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
                for member in self._claim(keys=[key, self._legacy[key]],
                                          args=[repr(now), repr(lease_until), count - len(claimed)]):
                    claimed.append(Timer.from_member(member, lease_until))
                if len(claimed) >= count:
                    break
        return claimed

    def release(self, timer: Timer) -> None:
        with store_errors():
            self._release(keys=[self._key(timer.subject)], args=[timer.member, repr(timer.lease)])

    def _keys_due(self, now: float) -> list[str]:
        """The shards' sets with something due (in them or in their legacy sets): one round trip
        on a single Redis; on a cluster (keys in different slots) every set, each claimed from in
        turn."""
        if isinstance(self._client, RedisCluster):
            return list(self._keys)
        pipe = self._client.pipeline(transaction=False)
        for key in self._keys:
            pipe.zcount(key, "-inf", repr(now))
            pipe.zcount(self._legacy[key], "-inf", repr(now))
        found = pipe.execute()
        return [key for key, due, legacy in zip(self._keys, found[::2], found[1::2]) if due or legacy]

    def _key(self, subject: str) -> str:
        return self._keys[shard_of_subject(subject)]

