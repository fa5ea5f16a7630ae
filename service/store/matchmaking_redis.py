"""Tickets and invites on Redis (keys in service/store/keys.py).

- ``P{<ticket id>}:t`` hash (``s`` status, ``v`` version, ``d`` the ticket's JSON) and its
  channel ``P{<ticket id>}:n``: the id is placed in its queue's shard, so the ticket, its queue
  ``P{s<k>}:q:<queue>``, the shard's timers and the games the queue makes share one slot;
- ``P{s<k>}:inv:<code>`` hash (the same fields) and channel ``...:n``, in the shard its code names;
- ``P{k:<scope>}:open`` hash: a player's (hashed external id) open ticket, per API key, with
  when it was set (``<ticket id> <epoch seconds>``); its length bounds the key's open tickets.
  ``P{k:<scope>}:retry:<name>``: the first ticket queued under an Idempotency-Key and its
  request's fingerprint, set with the pointer. ``P{k:<scope>}:invites`` sorted set: the key's open
  invites scored by expiry, which bounds them.

A ticket or invite is kept ``keep_seconds`` past its expiry, so a matched one stays readable.
Its long-poll waits on its channel, as a game's does (service/store/notify.py): no command while
nothing changes.
"""
from __future__ import annotations

import hashlib
import time
from dataclasses import replace

from redis import Redis
from redis.cluster import RedisCluster

from service.store.keys import ClaimKeys, invite_keys, queue_key, scope_key, ticket_keys, timers_key
from service.store.matchmaking import (AlreadyOpen, Invite, InviteStatus, InviteStore, KeyReused, RetryKey, Ticket,
                                       TicketStatus, TicketStore, TooManyOpen, closed_as, queue_shard)
from service.store.redis_errors import store_errors
from service.store.timers import Timer, shard_of_subject

# KEYS: hash, queue (the hash again: none), timers. ARGV: 1 data, 2 ttl, 3 queue score, 4 member,
# 5 timer member, 6 timer score, 7 status.
# A new ticket or invite, unless its id is taken: then the one kept is returned.
OPEN_LUA = """#!lua
local kept = redis.call('HGET', KEYS[1], 'd')
if kept then return kept end
redis.call('HSET', KEYS[1], 's', ARGV[7], 'v', 1, 'd', ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[2])
if KEYS[2] ~= KEYS[1] then redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4]) end
redis.call('ZADD', KEYS[3], ARGV[6], ARGV[5])
return false
"""

# KEYS: hash, queue, timers (either the hash again: none to leave). ARGV: 1 expected status,
# 2 expected version, 3 new status, 4 new data, 5 member, 6 timer member, 7 channel.
# Moves a ticket or invite on one version: closed (it leaves its queue and its timer goes), or
# still open with new data (an invite's guest seated).
CHANGE_LUA = """#!lua
local held = redis.call('HMGET', KEYS[1], 's', 'v')
if held[1] ~= ARGV[1] or tonumber(held[2]) ~= tonumber(ARGV[2]) then return 0 end
local version = tonumber(ARGV[2]) + 1
redis.call('HSET', KEYS[1], 's', ARGV[3], 'v', version, 'd', ARGV[4])
if KEYS[2] ~= KEYS[1] then redis.call('ZREM', KEYS[2], ARGV[5]) end
if KEYS[3] ~= KEYS[1] then redis.call('ZREM', KEYS[3], ARGV[6]) end
redis.call('SPUBLISH', ARGV[7], version)
return 1
"""

# A pointer is "<ticket id> <epoch seconds it was set>". Its ticket is stored right after it is
# set, by the same request: a pointer to a ticket that does not exist is believed this long (that
# request is under way), and replaced after (it failed before storing its ticket).
POINTER_GRACE_SECONDS = 10.0
_TICKET_OF_POINTER = """
local function ticket_of(pointer) return string.match(pointer, '^[^ ]+') end
"""

# KEYS: the key's pointers, the Idempotency-Key's record (the pointers again: none). ARGV: 1 player,
# 2 ticket id, 3 most open, 4 the pointer to replace (''), 5 now, 6 the record ('<ticket id>
# <fingerprint>'), 7 its life in seconds. Returns {'ok'}, {'held', <pointer>} (another ticket is
# the player's), {'full'} or {'reused'} (the record names another request).
POINT_LUA = "#!lua" + _TICKET_OF_POINTER + """
local keyed = KEYS[2] ~= KEYS[1]
if keyed then
  local first = redis.call('GET', KEYS[2])
  if first and first ~= ARGV[6] then return {'reused', ''} end
end
local held = redis.call('HGET', KEYS[1], ARGV[1])
if held and ticket_of(held) ~= ARGV[2] and held ~= ARGV[4] then return {'held', held} end
if not held and redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then return {'full', ''} end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ' ' .. ARGV[5])
if keyed then redis.call('SET', KEYS[2], ARGV[6], 'EX', ARGV[7]) end
return {'ok', ''}
"""

# KEYS: the key's pointers. ARGV: player, ticket id. Forget the pointer if it is still this ticket's.
UNPOINT_LUA = "#!lua" + _TICKET_OF_POINTER + """
local held = redis.call('HGET', KEYS[1], ARGV[1])
if held and ticket_of(held) == ARGV[2] then return redis.call('HDEL', KEYS[1], ARGV[1]) end
return 0
"""

def player_pointer(external_id: str) -> str:
    return hashlib.sha256(external_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class _Claimables:
    """What tickets and invites share: reading one, waiting for a change, closing one."""

    def __init__(self, client: Redis | RedisCluster, prefix: str, notifier) -> None:
        self._client = client
        self._prefix = prefix
        self._notifier = notifier
        self._open = client.register_script(OPEN_LUA)
        self._change = client.register_script(CHANGE_LUA)

    def _read(self, keys: ClaimKeys) -> tuple[str, int, str] | None:
        with store_errors():
            status, version, data = self._client.hmget(keys.hash, "s", "v", "d")
        return None if data is None else (status, int(version), data)

    def _wait(self, keys: ClaimKeys, seen_version: int, timeout: float, read):
        deadline = time.monotonic() + timeout
        with self._notifier.waiting_on(keys.channel, seen_version) as waiter:
            while True:
                found = read()
                if found is None or found.version > seen_version or waiter.waited_out(deadline):
                    return found

    def _store(self, keys: ClaimKeys, data: str, ttl: int, member: str, timer: Timer, timer_at: float,
               status: str, queued_ms: int = 0) -> str | None:
        with store_errors():
            return self._open(keys=[keys.hash, keys.queue or keys.hash, self._timers(member)],
                              args=[data, ttl, queued_ms, member, timer.member, repr(timer_at), status])

    def _closed(self, keys: ClaimKeys, member: str, timer: Timer, expect: str, version: int, status: str,
                data: str) -> bool:
        with store_errors():
            return bool(self._change(keys=[keys.hash, keys.queue or keys.hash, self._timers(member)],
                                     args=[expect, version, status, data, member, timer.member, keys.channel]))

    def _timers(self, subject: str) -> str:
        return timers_key(self._prefix, shard_of_subject(subject))


class RedisTickets(_Claimables, TicketStore):
    def __init__(self, client: Redis | RedisCluster, prefix: str, notifier) -> None:
        super().__init__(client, prefix, notifier)
        self._point = client.register_script(POINT_LUA)
        self._unpoint = client.register_script(UNPOINT_LUA)

    def open(self, ticket: Ticket, max_open: int, keep_seconds: int, retry: RetryKey | None = None) -> Ticket:
        self._take_pointer(ticket, max_open, retry)
        keys = ticket_keys(self._prefix, ticket.id, ticket.queue)
        ttl = max(int(ticket.expires_at - time.time()), 1) + keep_seconds
        timer_at = min(at for at in (ticket.expires_at, ticket.bot_at) if at is not None)
        kept = self._store(keys, ticket.dump(), ttl, ticket.id, Timer("ticket", ticket.id), timer_at,
                           TicketStatus.WAITING, int(ticket.created_at * 1000))
        return ticket if kept is None else self.get(ticket.id) or Ticket.parse(kept)

    def _take_pointer(self, ticket: Ticket, max_open: int, retry: RetryKey | None) -> None:
        pointers = scope_key(self._prefix, ticket.scope, "open")
        record = pointers if retry is None else scope_key(self._prefix, ticket.scope, f"retry:{retry.name}")
        player = player_pointer(ticket.player.external_id)
        replace = ""
        for _ in range(3):
            with store_errors():
                outcome, held = self._point(keys=[pointers, record], args=[
                    player, ticket.id, max_open, replace, repr(time.time()), f"{ticket.id} {ticket.fingerprint}",
                    0 if retry is None else retry.seconds])
            if outcome == "ok":
                return
            if outcome == "reused":
                raise KeyReused()
            if outcome == "full":
                if not self._prune(pointers):
                    raise TooManyOpen()
                continue
            if not self._stale(held):
                raise AlreadyOpen(held.partition(" ")[0])
            replace = held  # a pointer left behind: the ticket it names no longer waits
        raise TooManyOpen()

    def _stale(self, pointer: str) -> bool:
        """Whether the player ``pointer`` names no ticket that waits or is being stored."""
        ticket_id, _, set_at = pointer.partition(" ")
        found = self.get(ticket_id)
        if found is None:
            return time.time() - float(set_at or 0) > POINTER_GRACE_SECONDS
        return found.status != TicketStatus.WAITING

    def _prune(self, pointers: str) -> bool:
        """Forget the pointers that no longer hold a ticket; whether any was."""
        with store_errors():
            held = self._client.hgetall(pointers)
        stale = [player for player, pointer in held.items() if self._stale(pointer)]
        if stale:
            with store_errors():
                self._client.hdel(pointers, *stale)
        return bool(stale)

    def get(self, ticket_id: str) -> Ticket | None:
        found = self._read(ticket_keys(self._prefix, ticket_id))
        return None if found is None else _ticket(*found)

    def wait(self, ticket_id: str, seen_version: int, timeout: float) -> Ticket | None:
        return self._wait(ticket_keys(self._prefix, ticket_id), seen_version, timeout, lambda: self.get(ticket_id))

    def waiting(self, queue: str, limit: int) -> list[Ticket]:
        key = queue_key(self._prefix, queue_shard(queue), queue)
        with store_errors():
            members = self._client.zrange(key, 0, limit - 1)
            pipe = self._client.pipeline(transaction=False)
            for member in members:
                pipe.hmget(ticket_keys(self._prefix, member).hash, "s", "v", "d")
            found = pipe.execute() if members else []
        tickets, gone = [], []
        for member, (status, version, data) in zip(members, found):
            if data is None or status != TicketStatus.WAITING:
                gone.append(member)  # expired with no timer fired, or left behind
            else:
                tickets.append(_ticket(status, int(version), data))
        if gone:
            with store_errors():
                self._client.zrem(key, *gone)
        return tickets

    def close(self, ticket_id: str, status: str) -> Ticket | None:
        while True:
            ticket = self.get(ticket_id)
            if ticket is None or ticket.status != TicketStatus.WAITING:
                return ticket
            closed = closed_as(ticket, status)
            keys = ticket_keys(self._prefix, ticket_id, ticket.queue)
            if self._closed(keys, ticket_id, Timer("ticket", ticket_id), TicketStatus.WAITING, ticket.version,
                            status, closed.dump()):
                return closed

    def release_player(self, ticket: Ticket) -> None:
        with store_errors():
            self._unpoint(keys=[scope_key(self._prefix, ticket.scope, "open")],
                          args=[player_pointer(ticket.player.external_id), ticket.id])


class RedisInvites(_Claimables, InviteStore):
    def __init__(self, client: Redis | RedisCluster, prefix: str, notifier) -> None:
        super().__init__(client, prefix, notifier)

    def open(self, invite: Invite, max_open: int, keep_seconds: int) -> Invite:
        counted = scope_key(self._prefix, invite.scope, "invites")
        now = time.time()
        with store_errors():
            pipe = self._client.pipeline(transaction=False)
            pipe.zremrangebyscore(counted, "-inf", repr(now))
            pipe.zcard(counted)
            _, held = pipe.execute()
        existing = self.get(invite.code)
        if existing is not None:
            return existing
        if held >= max_open:
            raise TooManyOpen()
        keys = invite_keys(self._prefix, invite.code)
        ttl = max(int(invite.expires_at - now), 1) + keep_seconds
        kept = self._store(keys, invite.dump(), ttl, invite.code, Timer("invite", invite.code), invite.expires_at,
                           InviteStatus.OPEN)
        if kept is not None:
            return Invite.parse(kept)
        with store_errors():
            self._client.zadd(counted, {invite.code: invite.expires_at})
            self._client.expire(counted, ttl)
        return invite

    def get(self, code: str) -> Invite | None:
        found = self._read(invite_keys(self._prefix, code))
        return None if found is None else _invite(*found)

    def wait(self, code: str, seen_version: int, timeout: float) -> Invite | None:
        return self._wait(invite_keys(self._prefix, code), seen_version, timeout, lambda: self.get(code))

    def close(self, code: str, status: str) -> Invite | None:
        while True:
            invite = self.get(code)
            if invite is None or invite.status != InviteStatus.OPEN:
                return invite
            closed = closed_as(invite, status)
            if self._closed(invite_keys(self._prefix, code), code, Timer("invite", code), InviteStatus.OPEN,
                            invite.version, status, closed.dump()):
                self.release(closed)
                return closed

    def seat(self, invite: Invite, seated: Invite) -> bool:
        keys = invite_keys(self._prefix, invite.code)
        with store_errors():
            return bool(self._change(keys=[keys.hash, keys.hash, keys.hash], args=[
                InviteStatus.OPEN, invite.version, InviteStatus.OPEN, seated.dump(), invite.code, "", keys.channel]))

    def release(self, invite: Invite) -> None:
        with store_errors():
            self._client.zrem(scope_key(self._prefix, invite.scope, "invites"), invite.code)


def _ticket(status: str, version: int, data: str) -> Ticket:
    return replace(Ticket.parse(data), status=status, version=version)


def _invite(status: str, version: int, data: str) -> Invite:
    return replace(Invite.parse(data), status=status, version=version)
