"""The API keys' streams on Redis: ``P{k:<scope>}:stream`` (a Redis stream: fields ``type`` and
``body``), ``P{k:<scope>}:seen:<feed entry id>`` (appended already), ``P{k:<scope>}:count``
(appends so far, published on ``P{k:<scope>}:n`` to wake the readers). One slot per key."""
from __future__ import annotations

import time

from redis import Redis
from redis.cluster import RedisCluster

from service.store.keys import scope_key
from service.store.redis_errors import store_errors
from service.store.streams import KeyStreams, StreamEntry

# KEYS: stream, seen mark, count. ARGV: 1 type, 2 body, 3 retention (s), 4 now (ms), 5 channel.
APPEND_LUA = """#!lua
if not redis.call('SET', KEYS[2], '1', 'NX', 'EX', ARGV[3]) then return 0 end
local oldest = tonumber(ARGV[4]) - tonumber(ARGV[3]) * 1000
redis.call('XADD', KEYS[1], 'MINID', '~', oldest, '*', 'type', ARGV[1], 'body', ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
local appended = redis.call('INCR', KEYS[3])
redis.call('SPUBLISH', ARGV[5], appended)
return 1
"""


class RedisKeyStreams(KeyStreams):
    def __init__(self, client: Redis | RedisCluster, prefix: str, notifier, retention_seconds: int) -> None:
        self._client = client
        self._prefix = prefix
        self._notifier = notifier
        self._retention = retention_seconds
        self._append = client.register_script(APPEND_LUA)

    def append_once(self, scope: str, source_id: str, type: str, body: str) -> bool:
        keys = [scope_key(self._prefix, scope, "stream"), scope_key(self._prefix, scope, f"seen:{source_id}"),
                scope_key(self._prefix, scope, "count")]
        with store_errors():
            return bool(self._append(keys=keys, args=[type, body, self._retention, int(time.time() * 1000),
                                                      scope_key(self._prefix, scope, "n")]))

    def after(self, scope: str, after: str | None, count: int) -> list[StreamEntry]:
        with store_errors():
            found = self._client.xrange(scope_key(self._prefix, scope, "stream"),
                                        "-" if after is None else f"({after}", "+", count=count)
        return [StreamEntry(entry_id, fields["type"], fields["body"]) for entry_id, fields in found]

    def last_id(self, scope: str) -> str | None:
        with store_errors():
            found = self._client.xrevrange(scope_key(self._prefix, scope, "stream"), count=1)
        return found[0][0] if found else None

    def wait(self, scope: str, after: str | None, count: int, timeout: float) -> list[StreamEntry]:
        deadline = time.monotonic() + timeout
        with store_errors():
            seen = int(self._client.get(scope_key(self._prefix, scope, "count")) or 0)
        with self._notifier.waiting_on(scope_key(self._prefix, scope, "n"), seen) as waiter:
            while True:
                found = self.after(scope, after, count)
                if found or waiter.waited_out(deadline):
                    return found
