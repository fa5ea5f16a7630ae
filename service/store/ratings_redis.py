"""Ratings on Redis. Every key of one scope and variant carries the hash tag
``{r:<scope>:<variant>}`` (one slot: one script applies a whole match):

- ``P{r:..}:p:<player>`` hash: the player's standing (``ext``, ``name``, ``r``, ``rd``, ``vol``,
  ``games``, ``wins``, ``losses``, ``draws``); ``<player>`` is a hash of the external id;
- ``P{r:..}:h:<player>`` list: the player's rated matches, newest first (at most
  ``HISTORY_KEPT``);
- ``P{r:..}:board`` sorted set: the players who are not provisional, scored by rating;
- ``P{r:..}:a:<game id>`` string: the changes a match made, kept ``APPLIED_TTL_SECONDS``: the
  mark that makes applying a match twice change nothing.
"""
from __future__ import annotations

import hashlib
import json

import orjson
from redis import Redis
from redis.cluster import RedisCluster

from service.store.ratings import BoardRow, Change, HistoryEntry, RatingStore, StaleStandings, Standing
from service.store.redis_errors import store_errors

HISTORY_KEPT = 1000
# Longer than any entry can wait in the feed to be applied again (it is trimmed long before).
APPLIED_TTL_SECONDS = 30 * 86400
_FIELDS = ("ext", "name", "r", "rd", "vol", "games", "wins", "losses", "draws")
_PER_CHANGE = 13

# KEYS: applied mark, board, then (player, history) per change.
# ARGV: 1 record, 2 mark ttl, 3 history kept, then per change: expected games (-1: none yet),
#       ext, name, r, rd, vol, games, wins, losses, draws, history entry, ranked (1/0), member.
APPLY_LUA = """#!lua
local done = redis.call('GET', KEYS[1])
if done then return {'done', done} end
local per = %d
local changes = (#ARGV - 3) / per
for c = 0, changes - 1 do
  local at = 4 + c * per
  local games = redis.call('HGET', KEYS[3 + c * 2], 'games')
  if (games or '-1') ~= ARGV[at] then return {'stale', ''} end
end
for c = 0, changes - 1 do
  local at = 4 + c * per
  local player, history = KEYS[3 + c * 2], KEYS[4 + c * 2]
  redis.call('HSET', player, 'ext', ARGV[at + 1], 'name', ARGV[at + 2], 'r', ARGV[at + 3], 'rd', ARGV[at + 4],
             'vol', ARGV[at + 5], 'games', ARGV[at + 6], 'wins', ARGV[at + 7], 'losses', ARGV[at + 8],
             'draws', ARGV[at + 9])
  redis.call('LPUSH', history, ARGV[at + 10])
  redis.call('LTRIM', history, 0, tonumber(ARGV[3]) - 1)
  if ARGV[at + 11] == '1' then
    redis.call('ZADD', KEYS[2], ARGV[at + 3], ARGV[at + 12])
  else
    redis.call('ZREM', KEYS[2], ARGV[at + 12])
  end
end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
return {'applied', ARGV[1]}
""" % _PER_CHANGE


# KEYS: player hashes. Returns their standings as one JSON text (an array of arrays of _FIELDS,
# null for a missing player): a page of 50 rows is one reply to parse instead of 50.
STANDINGS_LUA = """#!lua flags=no-writes
local rows = {}
for k = 1, #KEYS do
  local found = redis.call('HMGET', KEYS[k], %s)
  if found[1] then rows[k] = found else rows[k] = cjson.null end
end
return cjson.encode(rows)
""" % ", ".join(f"'{name}'" for name in _FIELDS)


def player_key_id(external_id: str) -> str:
    return hashlib.sha256(external_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class RedisRatings(RatingStore):
    def __init__(self, client: Redis | RedisCluster, prefix: str) -> None:
        self._client = client
        self._prefix = prefix
        self._apply = client.register_script(APPLY_LUA)
        self._standings = client.register_script(STANDINGS_LUA)

    def standings(self, scope: str, variant: str, external_ids: list[str]) -> list[Standing | None]:
        tag = self._tag(scope, variant)
        return self._read([f"{tag}:p:{player_key_id(external_id)}" for external_id in external_ids])

    def _read(self, keys: list[str]) -> list[Standing | None]:
        if not keys:
            return []
        with store_errors():
            rows = orjson.loads(self._standings(keys=keys))
        # cjson writes an array with a null at its end as a shorter one: what is missing is null.
        return [_standing(row) if row else None for row in rows + [None] * (len(keys) - len(rows))]

    def apply(self, scope: str, variant: str, game_id: str, changes: list[Change], record: str) -> str:
        tag = self._tag(scope, variant)
        keys = [f"{tag}:a:{game_id}", f"{tag}:board"]
        args: list = [record, APPLIED_TTL_SECONDS, HISTORY_KEPT]
        for change in changes:
            member = player_key_id(change.after.external_id)
            keys += [f"{tag}:p:{member}", f"{tag}:h:{member}"]
            after = change.after
            args += [-1 if change.before is None else change.before.games, after.external_id, after.name,
                     repr(after.rating), repr(after.rd), repr(after.volatility), after.games, after.wins,
                     after.losses, after.draws, json.dumps(change.history.__dict__, separators=(",", ":")),
                     1 if change.ranked else 0, member]
        with store_errors():
            outcome, kept = self._apply(keys=keys, args=args)
        if outcome == "stale":
            raise StaleStandings(game_id)
        return kept

    def applied(self, scope: str, variant: str, game_id: str) -> str | None:
        with store_errors():
            return self._client.get(f"{self._tag(scope, variant)}:a:{game_id}")

    def history(self, scope: str, variant: str, external_id: str, start: int, count: int) -> list[HistoryEntry]:
        key = f"{self._tag(scope, variant)}:h:{player_key_id(external_id)}"
        with store_errors():
            found = self._client.lrange(key, start, start + count - 1)
        return [HistoryEntry(**json.loads(text)) for text in found]

    def rank(self, scope: str, variant: str, external_id: str) -> int | None:
        with store_errors():
            found = self._client.zrevrank(f"{self._tag(scope, variant)}:board", player_key_id(external_id))
        return None if found is None else found + 1

    def board(self, scope: str, variant: str, start: int, count: int) -> list[BoardRow]:
        tag = self._tag(scope, variant)
        with store_errors():
            members = self._client.zrevrange(f"{tag}:board", start, start + count - 1)
        found = self._read([f"{tag}:p:{member}" for member in members])
        return [BoardRow(start + offset + 1, standing) for offset, standing in enumerate(found)
                if standing is not None]

    def board_size(self, scope: str, variant: str) -> int:
        with store_errors():
            return self._client.zcard(f"{self._tag(scope, variant)}:board")

    def _tag(self, scope: str, variant: str) -> str:
        return f"{self._prefix}{{r:{scope}:{variant}}}"


def _standing(found: list[str]) -> Standing:
    ext, name, rating, rd, volatility, games, wins, losses, draws = found
    return Standing(ext, name, float(rating), float(rd), float(volatility), int(games), int(wins), int(losses),
                    int(draws))
