"""The Lua scripts of a game's writes and reads on Redis (service/store/redis.py runs them).

Each touches the keys of one game and of its shard only (one hash slot: service/store/keys.py),
so the same scripts run on a single server and on a cluster. Writing ones carry the ``#!lua``
shebang: a Redis over its ``maxmemory`` refuses them before they run (nothing half written).
"""
from __future__ import annotations

from service.store import notify
from service.store.feed import FEED_MAX_LENGTH
from service.store.timers import DEADLINE_TIMER, Timer

_DEADLINE_MEMBER = Timer(DEADLINE_TIMER, "").member

# Shared by both scripts: append events (trimming the oldest beyond the maximum), feed entries
# (webhook deliveries among them) and the turn deadline's timer (KEYS[4], the shard's timers,
# member ``deadline|<game id>``); ARGV[i] is the count of events, then the events, then the
# count of feed entries and their fields (7 pairs each). KEYS[5] is the shard's feed. Returns
# nothing.
_EFFECTS_LUA = """
-- A key lives at least ``seconds`` more (a longer life it already has is kept).
local function keep_at_least(key, seconds)
  local left = redis.call('TTL', key)
  if left == -1 or (left >= 0 and left < seconds) then
    redis.call('EXPIRE', key, seconds)
  end
end

-- Append the feed entries found from ARGV[i] on: their count, then their fields (7 pairs each).
local function announce(i, feed)
  for e = 0, tonumber(ARGV[i]) - 1 do
    local at = i + 1 + e * 14
    redis.call('XADD', feed, 'MAXLEN', '~', %d, '*', unpack(ARGV, at, at + 13))
  end
end

local function effects(i, ttl, game, deadline, max_events, channel, event_count)
  local n = tonumber(ARGV[i])
  if n > 0 then
    local length = redis.call('RPUSH', KEYS[2], unpack(ARGV, i + 1, i + n))
    local excess = length - max_events
    if excess > 0 then
      redis.call('LTRIM', KEYS[2], excess, -1)
      redis.call('HINCRBY', KEYS[1], 'o', excess)
    end
  end
  redis.call('EXPIRE', KEYS[2], ttl)
  announce(i + n + 1, KEYS[5])
  if deadline == '-' then
    redis.call('ZREM', KEYS[4], '%s' .. game)
  elseif deadline ~= '' then
    redis.call('ZADD', KEYS[4], deadline, '%s' .. game)
  end
  redis.call('SPUBLISH', channel, event_count)
end
""" % (FEED_MAX_LENGTH, _DEADLINE_MEMBER, _DEADLINE_MEMBER)

# KEYS: state, events, tombstone, timers, feed, then each claim's hash and queue (the
#       hash again when it has none), then the index keys.
# ARGV: 1 the claims (JSON: per claim v version, e expected status, s new status, d new data,
#       c its channel, m its member in its queue, t its timer member or ''), 2 the number of
#       claims, then 3 version, 4 state, 5 ttl, 6 tombstone ttl, 7 expires at, 8 fingerprint,
#       9 game id, 10 deadline, 11 index score, 12 channel, 13 event count, 14 max events,
#       15... effects
# Returns the existing game (v, s, f), 'lost' when a claim no longer holds, or false: created.
CREATE_LUA = "#!lua\n" + _EFFECTS_LUA + """
local found = redis.call('HMGET', KEYS[1], 'v', 's', 'f')
if found[1] then return found end
local claims = cjson.decode(ARGV[1])
local claimed = tonumber(ARGV[2])
for c = 1, claimed do
  local held = redis.call('HMGET', KEYS[4 + c * 2], 's', 'v')
  if held[1] ~= claims[c].e or tonumber(held[2]) ~= claims[c].v then return 'lost' end
end
-- a list left over from an expired game with this id must not leak into the new one
redis.call('DEL', KEYS[2])
local ttl = tonumber(ARGV[5])
redis.call('HSET', KEYS[1], 'v', ARGV[3], 's', ARGV[4], 'f', ARGV[8], 'o', 0)
redis.call('EXPIRE', KEYS[1], ttl)
redis.call('SET', KEYS[3], ARGV[7], 'EX', ttl + tonumber(ARGV[6]))
for k = 6 + claimed * 2, #KEYS do
  redis.call('ZADD', KEYS[k], ARGV[11], ARGV[9])
  keep_at_least(KEYS[k], ttl + tonumber(ARGV[6]))
end
for c = 1, claimed do
  local claim = claims[c]
  redis.call('HSET', KEYS[4 + c * 2], 's', claim.s, 'v', claim.v + 1, 'd', claim.d)
  if KEYS[5 + c * 2] ~= KEYS[4 + c * 2] then redis.call('ZREM', KEYS[5 + c * 2], claim.m) end
  if claim.t ~= '' then redis.call('ZREM', KEYS[4], claim.t) end
  redis.call('SPUBLISH', claim.c, claim.v + 1)
end
effects(15, ttl, ARGV[9], ARGV[10], tonumber(ARGV[14]), ARGV[12], ARGV[13])
return false
"""

# KEYS: state, events, tombstone, timers, feed, reply, then the (active, finished) index pairs
#       of the game's players: kept as long as the game's tombstone.
# ARGV: 1 expected version, 2 version, 3 state, 4 ttl, 5 tombstone ttl, 6 expires at,
#       7 game id, 8 deadline, 9 channel, 10 event count, 11 max events, 12 reply ttl
#       (0: none), 13 reply, 14 '1': the match ended (active -> finished), 15... effects
SAVE_LUA = "#!lua\n" + _EFFECTS_LUA + """
local current = redis.call('HGET', KEYS[1], 'v')
if not current then return 'missing' end
if current ~= ARGV[1] then return 'conflict' end
local ttl = tonumber(ARGV[4])
redis.call('HSET', KEYS[1], 'v', ARGV[2], 's', ARGV[3])
redis.call('EXPIRE', KEYS[1], ttl)
redis.call('SET', KEYS[3], ARGV[6], 'EX', ttl + tonumber(ARGV[5]))
if ARGV[12] ~= '0' then redis.call('SET', KEYS[6], ARGV[13], 'EX', ARGV[12]) end
local kept = ttl + tonumber(ARGV[5])
for k = 7, #KEYS, 2 do
  if ARGV[14] == '1' then
    local score = redis.call('ZSCORE', KEYS[k], ARGV[7])
    if score then
      redis.call('ZREM', KEYS[k], ARGV[7])
      redis.call('ZADD', KEYS[k + 1], score, ARGV[7])
    end
  end
  keep_at_least(KEYS[k], kept)
  keep_at_least(KEYS[k + 1], kept)
end
effects(15, ttl, ARGV[7], ARGV[8], tonumber(ARGV[11]), ARGV[9], ARGV[10])
return 'ok'
"""


# KEYS: state, events. ARGV: 1 the length of the events list as read, 2 its archive.
# Replaces the list with the archive only if it is still what was read (a rematch notice may
# have been appended meanwhile) and the game still exists (HSET would make a key that never
# expires). The events it held are then counted as trimmed from the list ('o').
ARCHIVE_LUA = """#!lua
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HEXISTS', KEYS[1], 'a') == 1 then return 0 end
if redis.call('LLEN', KEYS[2]) ~= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'a', ARGV[2])
redis.call('HINCRBY', KEYS[1], 'o', ARGV[1])
redis.call('DEL', KEYS[2])
return 1
"""


# KEYS: state. ARGV: 1 the field, 2 the text. Kept in the game's state hash, so it expires and
# goes with the game; only if the game still exists (HSET would make a key that never expires).
KEEP_LUA = """#!lua
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
"""

# KEYS: state. ARGV: 1 the claim's field, 2 now (epoch seconds), 3 how long a claim holds.
# A claim is the time it was made, in the game's state hash (it goes with the game); a claim
# older than ARGV[3] has lapsed and may be taken again. 1: claimed; 0: someone holds it, or
# the game is gone.
CLAIM_LUA = """#!lua
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local held = tonumber(redis.call('HGET', KEYS[1], ARGV[1]))
local now = tonumber(ARGV[2])
if held and now - held < tonumber(ARGV[3]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
"""


# KEYS: state, events. ARGV: 1 the number of the last event the reader has.
# The events after it, in one round trip: the list holds the events after the first 'o' ones
# (trimmed past max_events, or archived), and the archive 'a' holds the ones just before the
# list; it is read only when the events asked for start in it (a reader keeping up with a
# finished match, waiting for a rematch notice, never needs it). Nil for a missing game.
EVENTS_LUA = """#!lua flags=no-writes
local state = redis.call('HMGET', KEYS[1], 'v', 'o')
if not state[1] then return false end
local offset = tonumber(state[2]) or 0
local after = tonumber(ARGV[1])
local found = redis.call('LRANGE', KEYS[2], math.max(after - offset, 0), -1)
local archived = false
if after < offset then archived = redis.call('HGET', KEYS[1], 'a') end
return {offset, found, archived}
"""


# KEYS: state, feed. ARGV: 1 the changes, 2 the count of feed entries, then their fields (7
# pairs each).
# The changes are kept once (HSETNX) and announced only by the call that kept them.
NOTE_RATINGS_LUA = "#!lua\n" + _EFFECTS_LUA + """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if redis.call('HSETNX', KEYS[1], 'r', ARGV[1]) == 0 then return 0 end
announce(2, KEYS[2])
return 1
"""


# KEYS: presence hash. ARGV: 1 the mark (<process>:<seat>), 2 '1' present / '0' not, 3 ttl,
# 4 the game's channel. A mark's hash lives PRESENCE_TTL_SECONDS past its last write.
PRESENCE_LUA = """#!lua
if ARGV[2] == '1' then
  redis.call('HSET', KEYS[1], ARGV[1], 1)
  redis.call('EXPIRE', KEYS[1], ARGV[3])
else
  redis.call('HDEL', KEYS[1], ARGV[1])
end
redis.call('SPUBLISH', ARGV[4], '%s')
""" % notify.PRESENCE_MESSAGE
