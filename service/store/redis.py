"""The Redis adapter of the store port: hash-tagged keys, Lua compare-and-set, TTLs.

Keys are named in ``keys.py``: a game's keys share the hash tag ``{<game id>}``, and game ids
are drawn so that the slot of that tag is the slot of the game's shard (``{s<k>}``, the
feed, timers and player index). Each script (game_scripts_redis.py) therefore
touches a single slot, and the same code runs on a single server and on Redis Cluster.

``load``, ``events`` and every write are one round trip each; a finished game's events are then
archived (two more: one compressed text in its state hash instead of a list, ``archive.py``).
A Redis over its ``maxmemory`` refuses the writing scripts before they run (StoreFull: nothing
half written) and still runs the reading one. A down or hung Redis makes a call fail with
StoreError within about two seconds instead of blocking a worker.

Long-polls and streams wait on the game's shard channel, which both scripts publish to
(service/store/notify.py): a waiter sends no command while it waits. Presence marks
(service/store/presence.py) live in a small hash per game, each naming the process that holds
it; a process that marks, or follows presence, beats in a shared sorted set
(service/store/liveness.py) so that the marks of a process that died are ignored. Each process uses at
most ``max_connections`` pooled connections per Redis node (service/store/redis_client.py),
however many requests it serves at once (greenlets under gevent), plus one subscription
connection per node. The reading of the player index, the quotas' counters and the server
secret are in modules of their own (player_index_redis.py, quotas_redis.py,
server_secret_redis.py), on the store's client.
"""
from __future__ import annotations

import json
import logging
import random
import threading
import time
from contextlib import AbstractContextManager, suppress
from dataclasses import dataclass
from typing import Any

from redis import Redis
from redis.cluster import RedisCluster
from redis.commands.core import Script
from redis.exceptions import NoScriptError, RedisClusterException, RedisError

from service import ids
from service.rules.match import iso_time
from service.store import archive, notify, player_index_redis, quotas_redis, server_secret_redis
from service.store.feed import DELIVERY_GROUP, FeedEntry
from service.store.feed_redis import create_group
from service.store.base import (
    Claim,
    ClaimLost,
    Effects,
    Follow,
    GameExpired,
    GameMissing,
    GameStore,
    IndexList,
    Loaded,
    VersionConflict,
)
from service.store.game_scripts_redis import (ARCHIVE_LUA, CLAIM_LUA, CREATE_LUA, EVENTS_LUA, KEEP_LUA,
                                              NOTE_RATINGS_LUA, PRESENCE_LUA, SAVE_LUA)
from service.store.keys import GameKeys, claim_keys, game_keys, index_key
from service.store.timers import DEADLINE_TIMER, Timer
from service.store.redis_errors import store_errors
from service.store.liveness import Liveness
from service.store.redis_client import client_from_url, store_options

logger = logging.getLogger(__name__)


# Waiting long-polls one store (one process) holds at most, unless told otherwise.
DEFAULT_MAX_WAITERS = 1000
# Long-polls that began together (clients reconnecting after a deploy) would all end together
# every LONG_POLL_MAX_SECONDS, and their clients' next ones would arrive as one burst again
# and again: a wait of SPREAD_FROM_SECONDS or more ends at a random moment of its last
# SPREAD_SHARE, so such bursts spread out within a few rounds.
SPREAD_FROM_SECONDS = 10.0
SPREAD_SHARE = 0.2

# What is kept with a game (``keep``) is a field of its state hash named this plus the name.
KEPT_FIELD = "k:"
CLAIM_FIELD = "c:"

# A presence hash lives this long past its last write.
PRESENCE_TTL_SECONDS = 86400
PROCESSES_KEY = "processes"


@dataclass(frozen=True)
class _Connection:
    """A client with its pool, and the scripts registered on it."""

    client: Redis | RedisCluster
    create: Script
    save: Script
    archive: Script
    events: Script
    note_ratings: Script
    presence: Script
    keep: Script
    claim: Script
    notifier: notify.Notifier


class _ReloadingScript(Script):
    """A script that misses the server's cache twice is run once more from the start.

    redis-py loads a script the server does not know and runs it again, once; right after a
    Redis restart that second run has been seen to miss the script too (SCRIPT EXISTS then
    said no: the load had not reached the restarted server). A missing script ran nothing, so
    nothing is applied twice."""

    def __call__(self, keys=None, args=None, client=None):
        try:
            return super().__call__(keys, args, client)
        except NoScriptError:
            return super().__call__(keys, args, client)


def _effects_args(effects: Effects) -> list[Any]:
    return [len(effects.events), *effects.events, *_feed_args(effects.feed)]


def _feed_args(feed: tuple[FeedEntry, ...]) -> list[str | int]:
    return [len(feed), *(value for entry in feed for value in entry.fields())]


def _deadline_arg(effects: Effects) -> str:
    """'' leaves the schedule alone (untimed games), '-' removes the game, a number sets it."""
    if not effects.timed:
        return ""
    return "-" if effects.deadline is None else repr(effects.deadline)


class RedisStore(GameStore):
    """A ``GameStore`` on Redis or Redis Cluster, chosen by URL.

    ``redis://``, ``rediss://`` and ``unix://`` URLs name one server;
    ``redis+cluster://host:port`` (or ``?cluster=true``) names any node of a cluster.
    ``options`` go to ``redis_client.client_from_url`` and override ``store_options``.
    The client and its pool are built here without connecting, except that a cluster
    client asks the cluster for its layout; if that fails the store is built anyway and
    tries again on its next call, so a service starts (not ready) while Redis is away.
    ``max_events``: events kept per game (older ones are dropped first). At most
    ``max_waiters`` long-polls wait at once (beyond, LongPollCapacity).
    Raises ValueError for a URL it cannot serve or a prefix containing a hash tag.
    """

    def __init__(self, url: str, prefix: str = "ginrummy:", max_events: int = 5000, *,
                 max_waiters: int = DEFAULT_MAX_WAITERS, **options: Any) -> None:
        if "{" in prefix or "}" in prefix:
            raise ValueError("the key prefix must not contain '{' or '}' (hash tag)")
        self._url = url
        self._options = store_options(**options)
        self._prefix = prefix
        self._max_events = max_events
        self._max_waiters = max_waiters
        self._lock = threading.Lock()
        self._built: _Connection | None = None
        self._marks: set[tuple[str, int]] = set()  # the presence marks this process holds
        self._delivered_shards: set[int] = set()  # whose feed has the deliveries' group (_ready_to_deliver)
        self._liveness = Liveness(lambda: self._connection().client, prefix + PROCESSES_KEY,
                                  lambda: bool(self._marks), self._follows_presence, self._wake_presence,
                                  lambda older_than: self._seat_holds().renew(older_than))
        with suppress(RedisError, RedisClusterException):
            self._connection()

    def create(self, game_id: str, state: str, version: int, effects: Effects, fingerprint: str = "",
               created_at_ms: int = 0) -> Loaded | None:
        """Store a new game unless the id exists (then return that game), in one round trip.

        Raises StoreFull, StoreError."""
        keys = self._keys(game_id)
        shard = ids.shard_of(game_id)
        index = [index_key(self._prefix, shard, player, IndexList.ACTIVE.value) for player in effects.index_add]
        claim_keys, claims = self._claims(effects.claims)
        self._ready_to_deliver(shard, keys, effects.feed)
        args = [json.dumps(claims) if claims else "[]", len(claims), version, state, effects.ttl,
                effects.tombstone_ttl, _expiry(effects.ttl), fingerprint, game_id, _deadline_arg(effects),
                created_at_ms, keys.channel, _event_count(effects), self._max_events, *_effects_args(effects)]
        with store_errors():
            found = self._connection().create(
                keys=[keys.state, keys.events, keys.tombstone, keys.timers, keys.feed, *claim_keys,
                      *index], args=args)
        if found is None:
            return None
        if found == "lost":
            raise ClaimLost(game_id)
        found_version, found_state, found_fingerprint = found
        return Loaded(found_state, int(found_version), None, found_fingerprint or "")

    def load(self, game_id: str, idempotency_key: str | None = None, present: bool = False) -> Loaded:
        """Read a game, the response under ``idempotency_key`` and with ``present`` the
        presence marks, in one round trip.

        Raises GameExpired, GameMissing, StoreError."""
        keys = self._keys(game_id)
        with store_errors():
            pipe = self._connection().client.pipeline(transaction=False)
            pipe.hmget(keys.state, "v", "s", "f", "r")
            if present:
                pipe.hgetall(keys.presence)
            if idempotency_key is not None:
                pipe.get(keys.reply(idempotency_key))
            (version, state, fingerprint, ratings), *rest = pipe.execute()
            seats = self._live_seats(rest.pop(0)) if present else None
        if version is None:
            self._missing(keys)
        return Loaded(state, int(version), rest[0] if rest else None, fingerprint or "", ratings, seats)

    def note_ratings(self, game_id: str, changes: str, feed: tuple[FeedEntry, ...]) -> bool:
        """HSETNX the changes and append their announcements, in one round trip. Raises StoreFull,
        StoreError."""
        keys = self._keys(game_id)
        self._ready_to_deliver(ids.shard_of(game_id), keys, feed)
        with store_errors():
            return bool(self._connection().note_ratings(keys=[keys.state, keys.feed], args=[changes, *_feed_args(feed)]))

    def save(self, game_id: str, expected_version: int, state: str, version: int, effects: Effects) -> None:
        """Replace the game iff at ``expected_version``, with every effect, in one round trip.

        Raises VersionConflict, GameExpired, GameMissing, StoreFull, StoreError."""
        keys = self._keys(game_id)
        shard = ids.shard_of(game_id)
        self._ready_to_deliver(shard, keys, effects.feed)
        reply_key, reply = keys.prefix + "-", [0, ""]
        if effects.reply is not None:
            reply_key, reply = keys.reply(effects.reply.key), [effects.reply.ttl, effects.reply.response]
        index = [index_key(self._prefix, shard, player, which.value)
                 for player in effects.index_finish or effects.index_keep
                 for which in (IndexList.ACTIVE, IndexList.FINISHED)]
        args = [expected_version, version, state, effects.ttl, effects.tombstone_ttl, _expiry(effects.ttl), game_id,
                _deadline_arg(effects), keys.channel, _event_count(effects), self._max_events,
                *reply, "1" if effects.index_finish else "0", *_effects_args(effects)]
        with store_errors():
            outcome = self._connection().save(
                keys=[keys.state, keys.events, keys.tombstone, keys.timers, keys.feed, reply_key,
                      *index], args=args)
        if outcome == "missing":
            self._missing(keys)
        if outcome == "conflict":
            raise VersionConflict(f"game {game_id} is no longer at version {expected_version}")

    def _ready_to_deliver(self, shard: int, keys: GameKeys, feed: tuple[FeedEntry, ...]) -> None:
        """Before this process first writes a webhook to a shard's feed: the worker's group
        ``delivery`` exists there. A background runner of an earlier version trims what the
        groups that exist are done with, so without it a webhook could be dropped before a
        worker of this version read it, when the API is rolled out before the workers. One
        round trip per shard and process. Raises StoreError."""
        if not any(entry.url for entry in feed) or shard in self._delivered_shards:
            return
        with store_errors():
            create_group(self._connection().client, keys.feed, DELIVERY_GROUP)
        self._delivered_shards.add(shard)

    def events(self, game_id: str, after: int) -> list[str]:
        """Stored events numbered above ``after``, in one round trip (EVENTS_LUA).

        Raises GameExpired, GameMissing, StoreError."""
        keys = self._keys(game_id)
        after = max(after, 0)
        with store_errors():
            reply = self._connection().events(keys=[keys.state, keys.events], args=[after])
        if reply is None:
            self._missing(keys)
        offset, found, archived = reply
        if archived is not None:
            earlier = archive.unpack(archived)
            # The archive holds the events just before the list: the last one is number ``offset``.
            found = earlier[max(after - (offset - len(earlier)), 0):] + found
        return found

    def archive_events(self, game_id: str) -> None:
        """Replace a finished game's list of events by one compressed text in its state hash
        (``events`` answers as before): two round trips. Raises StoreError."""
        keys = self._keys(game_id)
        with store_errors():
            built = self._connection()
            found = built.client.lrange(keys.events, 0, -1)
            if found:
                built.archive(keys=[keys.state, keys.events], args=[len(found), archive.pack(found)])

    def wait_for_events(self, game_id: str, after: int, timeout: float) -> list[str]:
        """Events numbered above ``after``, waiting up to ``timeout`` s while there are none.

        Subscribes to the game's channel first (confirmed), then reads, then waits for a
        count above ``after``, so nothing saved in between is missed; waiting sends Redis
        nothing. Returns early with what there is (usually nothing) when the process is
        stopping.
        Raises GameExpired, GameMissing, StoreError, LongPollCapacity, and
        requester.ClientGone when the client of the request hung up."""
        if timeout >= SPREAD_FROM_SECONDS:
            timeout -= random.uniform(0, timeout * SPREAD_SHARE)
        deadline = time.monotonic() + timeout
        keys = self._keys(game_id)
        with self._connection().notifier.waiting_on(keys.channel, after) as waiter:
            while True:
                found = self.events(game_id, after)
                if found or waiter.waited_out(deadline):
                    return found

    def following(self, game_id: str, after: int) -> AbstractContextManager[Follow]:
        """A waiter on the game's channel that also follows presence (see the port).

        Raises StoreError, LongPollCapacity."""
        keys = self._keys(game_id)
        following = self._connection().notifier.waiting_on(keys.channel, after, presence=True)
        self._liveness.watch()
        return following

    def mark_present(self, game_id: str, seat: int, present: bool) -> None:
        """HSET or HDEL this process's mark of ``seat`` and publish ``p`` (one round trip;
        the first mark of the process beats first). Raises StoreError."""
        keys = self._keys(game_id)
        mark = (game_id, seat)
        with store_errors():
            built = self._connection()
            try:
                if present:
                    self._marks.add(mark)  # first: the beat that registers this process sees a mark
                    self._liveness.register()
                built.presence(keys=[keys.presence],
                               args=[f"{self._liveness.id}:{seat}", "1" if present else "0", PRESENCE_TTL_SECONDS,
                                     keys.channel])
            except BaseException:
                if present:
                    self._marks.discard(mark)
                raise
            if not present:
                self._marks.discard(mark)

    def present_seats(self, game_id: str) -> frozenset[int]:
        """The seats marked by a live process (HGETALL, and a beat when a mark names a
        process not seen yet). Raises StoreError."""
        keys = self._keys(game_id)
        with store_errors():
            return self._live_seats(self._connection().client.hgetall(keys.presence))

    def kept(self, game_id: str, name: str) -> str | None:
        """HGET of the state hash's ``k:<name>``. Raises StoreError."""
        with store_errors():
            return self._connection().client.hget(self._keys(game_id).state, KEPT_FIELD + name)

    def keep(self, game_id: str, name: str, text: str) -> None:
        """HSET of ``k:<name>`` in the state hash, if the game exists (KEEP_LUA). Raises StoreFull, StoreError."""
        with store_errors():
            self._connection().keep(keys=[self._keys(game_id).state], args=[KEPT_FIELD + name, text])

    def claim(self, game_id: str, name: str, seconds: int) -> bool:
        """The claim ``c:<name>`` in the state hash (CLAIM_LUA). Raises StoreFull, StoreError."""
        with store_errors():
            claimed = self._connection().claim(keys=[self._keys(game_id).state],
                                               args=[CLAIM_FIELD + name, repr(time.time()), seconds])
        return claimed == 1

    def index_page(self, player: str, which: IndexList, before: tuple[int, str] | None,
                   limit: int) -> list[tuple[int, str, str]]:
        """A page of the player's list (player_index_redis.py). Raises StoreError."""
        return player_index_redis.index_page(self.client, self._prefix, player, which, before, limit)

    def schedule(self, game_id: str, deadline: float) -> None:
        """ZADD the deadline's timer to the shard's timers. Raises StoreError."""
        with store_errors():
            self._connection().client.zadd(self._keys(game_id).timers,
                                           {Timer(DEADLINE_TIMER, game_id).member: deadline})

    def count(self, key: str, window_seconds: int) -> int:
        """The counter's next value (quotas_redis.py). Raises StoreError."""
        return quotas_redis.count(self.client, self._prefix, key, window_seconds)

    def shared_secret(self, proposed: str) -> str:
        """The secret stored for the prefix (server_secret_redis.py). Raises StoreError."""
        return server_secret_redis.shared_secret(self.client, self._prefix, proposed)

    def check(self) -> None:
        """PING. Raises StoreError unless Redis answers now."""
        with store_errors():
            self._connection().client.ping()

    @property
    def client(self) -> Redis | RedisCluster:
        """The client this store talks through, also for the other stores of the same
        deployment (ratings, the feed, timers): one pool per process. Raises StoreError while
        a cluster's layout cannot be read."""
        with store_errors():
            return self._connection().client

    @property
    def notifier(self) -> notify.Notifier:
        """The waiters of this process (long-polls of games, tickets, invites). Raises StoreError
        while a cluster's layout cannot be read."""
        with store_errors():
            return self._connection().notifier

    def close(self) -> None:
        """Close the subscriptions and the pool's connections; the presence beats and writes end."""
        super().close()
        self._liveness.close()
        if self._built is not None:
            self._built.notifier.close()
            self._built.client.close()

    def _claims(self, claims: tuple[Claim, ...]) -> tuple[list[str], list[dict]]:
        """The keys (hash, queue) and the script's description of each claim."""
        keys, described = [], []
        for claim in claims:
            where = claim_keys(self._prefix, claim.kind, claim.id, claim.queue)
            keys += [where.hash, where.queue or where.hash]
            described.append({"v": claim.version, "e": claim.expect, "s": claim.status, "d": claim.data,
                              "c": where.channel, "m": claim.id, "t": claim.timer or ""})
        return keys, described

    def _missing(self, keys: GameKeys) -> None:
        """Raise GameExpired when the game's tombstone says when it expired, else GameMissing."""
        with store_errors():
            expired_at = self._connection().client.get(keys.tombstone)
        if expired_at:
            raise GameExpired(expired_at)
        raise GameMissing()

    def _live_seats(self, marks: dict[str, str]) -> frozenset[int]:
        """The seats of ``marks`` (just read) whose process is alive: one read of the live
        processes serves every name it did not know. Raises redis-py's errors."""
        seats, read_by = set(), time.monotonic()
        for mark in marks:
            process, _, seat = mark.rpartition(":")
            if seat.isdigit() and int(seat) not in seats and self._liveness.is_live(process, read_by):
                seats.add(int(seat))
        return frozenset(seats)

    def _follows_presence(self) -> bool:
        return self._built is not None and self._built.notifier.follows_presence()

    def _keys(self, game_id: str) -> GameKeys:
        try:
            return game_keys(self._prefix, game_id)
        except ValueError:
            raise GameMissing() from None

    def _connection(self) -> _Connection:
        if self._built is None:
            with self._lock:
                if self._built is None:
                    client = client_from_url(self._url, **self._options)
                    self._built = _Connection(
                        client, *(_ReloadingScript(client, text) for text in (CREATE_LUA, SAVE_LUA, ARCHIVE_LUA,
                                                                               EVENTS_LUA, NOTE_RATINGS_LUA,
                                                                               PRESENCE_LUA, KEEP_LUA, CLAIM_LUA)),
                        notify.Notifier(client, self._max_waiters),
                    )
        return self._built

    def _wake_presence(self) -> None:
        if self._built is not None:
            self._built.notifier.wake_presence()


def _expiry(ttl: int) -> str:
    """When a game written now expires, for its tombstone."""
    return iso_time(time.time() + ttl)


def _event_count(effects: Effects) -> int:
    return effects.event_count
