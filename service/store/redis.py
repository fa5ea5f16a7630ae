"""The Redis adapter of the store port: hash-tagged keys, Lua compare-and-set, TTLs.

Keys of one game share the hash tag ``{<game id>}``, so each script touches a single slot
and the same code runs on a single server and on Redis Cluster:

- ``<prefix>{<id>}:s`` hash with ``v`` (version) and ``s`` (state text)
- ``<prefix>{<id>}:e`` list of events; event ``n`` is at index ``n - 1``
- ``<prefix>{<id>}:i:<sha256 of the idempotency key>`` a stored response

``load`` and every write are one round trip each. A down or hung Redis makes a call fail
with StoreError within about two seconds instead of blocking a worker.
"""
from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from redis import Redis
from redis.backoff import ExponentialWithJitterBackoff
from redis.cluster import RedisCluster
from redis.commands.core import Script
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisClusterException, RedisError
from redis.retry import Retry

from service.store.base import (
    GameMissing,
    GameStore,
    IdempotentResponse,
    Loaded,
    StoreError,
    VersionConflict,
)

SCHEMES = ("redis", "rediss", "unix", "redis+cluster", "rediss+cluster")
CLUSTER_SUFFIX = "+cluster"

# One second per socket operation bounds a call against a hung server; `options` of the
# constructor override any of these.
DEFAULT_OPTIONS: dict[str, Any] = {
    "socket_timeout": 1.0,
    "socket_connect_timeout": 1.0,
    # Ping a pooled connection idle this long before reusing it, so one that died
    # (server restart, idle cut by a proxy) is replaced instead of failing a request.
    "health_check_interval": 15,
}

# How often wait_for_events asks again; each poll borrows a pooled connection only for
# one short round trip, so long polls never pin connections.
POLL_INTERVAL = 0.2

# KEYS: state, events. ARGV: version, state, ttl, events...
CREATE_LUA = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
-- a list left over from an expired game with this id must not leak into the new one
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[1], 'v', ARGV[1], 's', ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
if #ARGV > 3 then
  redis.call('RPUSH', KEYS[2], unpack(ARGV, 4))
  redis.call('EXPIRE', KEYS[2], ARGV[3])
end
return 1
"""

# KEYS: state, events[, reply]. ARGV: expected, version, state, ttl, reply ttl, reply, events...
SAVE_LUA = """
local current = redis.call('HGET', KEYS[1], 'v')
if not current then return 'missing' end
if current ~= ARGV[1] then return 'conflict' end
redis.call('HSET', KEYS[1], 'v', ARGV[2], 's', ARGV[3])
redis.call('EXPIRE', KEYS[1], ARGV[4])
if #ARGV > 6 then redis.call('RPUSH', KEYS[2], unpack(ARGV, 7)) end
redis.call('EXPIRE', KEYS[2], ARGV[4])
if KEYS[3] then redis.call('SET', KEYS[3], ARGV[6], 'EX', ARGV[5]) end
return 'ok'
"""


@dataclass(frozen=True)
class _Connection:
    """A client with its pool, and the scripts registered on it."""

    client: Redis | RedisCluster
    create: Script
    save: Script


class RedisStore(GameStore):
    """A ``GameStore`` on Redis or Redis Cluster, chosen by URL.

    ``redis://``, ``rediss://`` and ``unix://`` URLs name one server;
    ``redis+cluster://host:port`` (or ``?cluster=true``) names any node of a cluster.
    ``options`` go to the redis-py client and override ``DEFAULT_OPTIONS``.
    The client and its pool are built here without connecting, except that a cluster
    client asks the cluster for its layout; if that fails the store is built anyway and
    tries again on its next call, so a service starts (not ready) while Redis is away.
    Raises ValueError for a URL it cannot serve or a prefix containing a hash tag.
    """

    def __init__(self, url: str, prefix: str = "ginrummy:", **options: Any) -> None:
        if "{" in prefix or "}" in prefix:
            raise ValueError("the key prefix must not contain '{' or '}' (hash tag)")
        self._url, self._is_cluster = _split_cluster_flag(url)
        self._options = {
            "retry": _retry_policy(),
            **DEFAULT_OPTIONS,
            **options,
            "decode_responses": True,
        }
        self._prefix = prefix
        self._lock = threading.Lock()
        self._built: _Connection | None = None
        with suppress(RedisError, RedisClusterException):
            self._connection()

    def create(self, game_id: str, state: str, version: int, events: list[str], ttl: int) -> None:
        """Store a new game. Raises ValueError if the id is taken, StoreError."""
        with _store_errors():
            script = self._connection().create
            created = script(keys=self._game_keys(game_id), args=[version, state, ttl, *events])
        if not created:
            raise ValueError(f"game id already exists: {game_id}")

    def load(self, game_id: str, idempotency_key: str | None = None) -> Loaded:
        """Read a game and the response under ``idempotency_key`` in one round trip.

        Raises GameMissing, StoreError."""
        state_key, _ = self._game_keys(game_id)
        with _store_errors():
            pipe = self._connection().client.pipeline(transaction=False)
            pipe.hmget(state_key, "v", "s")
            if idempotency_key is not None:
                pipe.get(self._reply_key(game_id, idempotency_key))
            (version, state), *replay = pipe.execute()
        if version is None:
            raise GameMissing(game_id)
        return Loaded(state, int(version), replay[0] if replay else None)

    def save(
        self,
        game_id: str,
        expected_version: int,
        state: str,
        version: int,
        events: list[str],
        ttl: int,
        idempotent: IdempotentResponse | None = None,
    ) -> None:
        """Replace the game iff at ``expected_version``, in one round trip.

        Raises VersionConflict, GameMissing, StoreError."""
        keys = self._game_keys(game_id)
        reply: list[Any] = [0, ""]
        if idempotent is not None:
            keys.append(self._reply_key(game_id, idempotent.key))
            reply = [idempotent.ttl, idempotent.response]
        with _store_errors():
            script = self._connection().save
            outcome = script(
                keys=keys, args=[expected_version, version, state, ttl, *reply, *events]
            )
        if outcome == "missing":
            raise GameMissing(game_id)
        if outcome == "conflict":
            raise VersionConflict(f"game {game_id} is no longer at version {expected_version}")

    def events(self, game_id: str, after: int) -> list[str]:
        """Events numbered above ``after`` (negative reads from the start), one round trip.

        Raises GameMissing, StoreError."""
        state_key, events_key = self._game_keys(game_id)
        with _store_errors():
            pipe = self._connection().client.pipeline(transaction=False)
            pipe.exists(state_key)
            pipe.lrange(events_key, max(after, 0), -1)
            exists, found = pipe.execute()
        if not exists:
            raise GameMissing(game_id)
        return found

    def wait_for_events(self, game_id: str, after: int, timeout: float) -> list[str]:
        """Events numbered above ``after``, polling up to ``timeout`` s while there are none.

        Raises GameMissing, StoreError."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.events(game_id, after)
            remaining = deadline - time.monotonic()
            if found or remaining <= 0:
                return found
            time.sleep(min(POLL_INTERVAL, remaining))

    def check(self) -> None:
        """PING. Raises StoreError unless Redis answers now."""
        with _store_errors():
            self._connection().client.ping()

    def close(self) -> None:
        """Close the pool's connections."""
        if self._built is not None:
            self._built.client.close()

    def _connection(self) -> _Connection:
        if self._built is None:
            with self._lock:
                if self._built is None:
                    client = (RedisCluster if self._is_cluster else Redis).from_url(
                        self._url, **self._options
                    )
                    self._built = _Connection(
                        client, client.register_script(CREATE_LUA), client.register_script(SAVE_LUA)
                    )
        return self._built

    def _game_keys(self, game_id: str) -> list[str]:
        tag = f"{self._prefix}{{{game_id}}}"
        return [f"{tag}:s", f"{tag}:e"]

    def _reply_key(self, game_id: str, idempotency_key: str) -> str:
        # Hashed: client keys are arbitrary text and may be long.
        digest = hashlib.sha256(idempotency_key.encode()).hexdigest()
        return f"{self._prefix}{{{game_id}}}:i:{digest}"


def _retry_policy() -> Retry:
    """Retry only connection errors, twice and quickly: they are usually a pooled
    connection that died. A write that did reach Redis before its connection broke is
    never applied twice: the repeat is refused (VersionConflict, or "id taken" for
    create). Timeouts are not retried, so a hung server costs one socket timeout."""
    return Retry(
        ExponentialWithJitterBackoff(base=0.05, cap=0.25), retries=2,
        supported_errors=(RedisConnectionError,),
    )


def _split_cluster_flag(url: str) -> tuple[str, bool]:
    """The URL as redis-py reads it, and whether it names a cluster.

    Raises ValueError for a scheme this adapter does not serve."""
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES:
        raise ValueError(f"not a Redis URL scheme: {parts.scheme!r}")
    query = parse_qsl(parts.query, keep_blank_values=True)
    is_cluster = parts.scheme.endswith(CLUSTER_SUFFIX) or any(
        name == "cluster" and value.lower() in ("true", "yes", "1") for name, value in query
    )
    scheme = parts.scheme.removesuffix(CLUSTER_SUFFIX)
    kept = urlencode([(name, value) for name, value in query if name != "cluster"])
    # Built by hand: urlunsplit drops the "//" of "unix:///path", whose netloc is empty.
    return f"{scheme}://{parts.netloc}{parts.path}{'?' if kept else ''}{kept}", is_cluster


@contextmanager
def _store_errors() -> Iterator[None]:
    """Turn every redis-py failure into StoreError (HTTP 503)."""
    try:
        yield
    except (RedisError, RedisClusterException) as error:
        raise StoreError(f"redis: {type(error).__name__}: {error}") from error
