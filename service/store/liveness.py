"""Which service processes are alive, so that a crashed one's presence marks are ignored.

A process that marks seats present beats every BEAT_SECONDS: one round trip (two commands)
that sets its own expiry in a sorted set shared by every process (``<prefix>processes``,
score = when it counts as gone) and reads the entries not yet past theirs; once a minute it
also drops the entries past their expiry. A mark names its
process, and is written only after that process's first beat; a reader counts the marks of
processes in the set it read last, and when a mark names one it does not know (a process
that began after its last read) it reads the set again at once: a read begun after the mark
was seen comes after that process's first beat, so a name missing from it is gone, and is
remembered as gone for GONE_SECONDS (then read again, should it have only been slow). A
process that stops beating (crashed, killed) is gone
LIVES_SECONDS after its last beat; the read that sees it go wakes this process's presence
followers (streams), so they read presence again. A process that follows presence without
holding a mark (spectators' streams only) reads the set every FOLLOWER_READ_SECONDS, so
that its followers learn of a crash anyway; one with neither sends Redis nothing. Either way
the cost is per process, never per stream.
"""
from __future__ import annotations

import logging
import os
import secrets
import threading
import time
from collections.abc import Callable

from redis import Redis
from redis.cluster import RedisCluster
from redis.exceptions import RedisClusterException, RedisError

log = logging.getLogger(__name__)

BEAT_SECONDS = 5.0
LIVES_SECONDS = 15.0
GONE_SECONDS = 15.0
# At most this many names remembered as gone (the oldest judged are forgotten first).
GONE_KEPT = 1000
FOLLOWER_READ_SECONDS = 60.0
PRUNE_SECONDS = 60.0
# A presence mark held longer than this is written again (its key expires after a day).
RENEW_MARKS_SECONDS = 3600.0


class Liveness:
    """This process's heartbeat and the live processes as last read.

    ``client()`` gives the redis-py client; ``key`` names the sorted set; ``marked()`` says
    whether this process holds marks (then it beats), ``following()`` whether it follows
    presence (then it reads now and then); ``departed()`` is called when a process is seen to be
    gone; ``renew(older_than)`` writes again the marks held that long (each beat)."""

    def __init__(self, client: Callable[[], Redis | RedisCluster], key: str, marked: Callable[[], bool],
                 following: Callable[[], bool], departed: Callable[[], None],
                 renew: Callable[[float], None]) -> None:
        self._client = client
        self._key = key
        self._marked = marked
        self._following = following
        self._departed = departed
        self._renew = renew
        self._lock = threading.Lock()
        self._pid = 0
        self._id = ""
        self._live: frozenset[str] = frozenset()
        self._gone: dict[str, float] = {}  # name -> when judged gone (time.monotonic())
        self._read_at = float("-inf")
        self._read_began = float("-inf")
        self._pruned_at = float("-inf")
        self._beating: threading.Thread | None = None
        self._closed = False

    def close(self) -> None:
        """Stop beating and reading: the thread ends at its next round."""
        with self._lock:
            self._closed = True

    @property
    def id(self) -> str:
        """This process's name in marks: made anew in a forked child."""
        if self._pid != os.getpid():
            self._pid, self._id = os.getpid(), f"{os.getpid()}.{secrets.token_hex(3)}"
        return self._id

    def register(self) -> None:
        """Beat now (so this process is known before its first mark) and keep beating while
        it has marks. Raises RedisError, RedisClusterException."""
        self._beat()
        self.watch()

    def watch(self) -> None:
        """Make sure the beats (or the followers' reads) go on while needed."""
        with self._lock:
            if self._beating is None:
                self._beating = threading.Thread(target=self._run, name="liveness beat", daemon=True)
                self._beating.start()

    def is_live(self, process: str, marks_read_by: float) -> bool:
        """Whether ``process`` beat recently, for a mark of it read by ``marks_read_by``
        (time.monotonic()): as last read, or for a name not known (nor judged gone within
        GONE_SECONDS) as read again now, unless a read begun after that already answered.
        Raises RedisError, RedisClusterException."""
        if process in self._live:
            return True
        with self._lock:
            judged = self._gone.get(process)
            read_since = self._read_began >= marks_read_by
        if judged is not None and time.monotonic() - judged < GONE_SECONDS:
            return False
        if not read_since:
            self._beat()
        if process in self._live:
            return True
        with self._lock:
            self._gone.pop(process, None)
            if len(self._gone) >= GONE_KEPT:
                del self._gone[next(iter(self._gone))]
            self._gone[process] = time.monotonic()
        return False

    def _beat(self) -> None:
        began, now = time.monotonic(), time.time()
        pipe = self._client().pipeline(transaction=False)
        if self._marked():
            pipe.zadd(self._key, {self.id: now + LIVES_SECONDS})
            if time.monotonic() - self._pruned_at >= PRUNE_SECONDS:
                # Now and then: the entries of processes long gone, and the set once none beats.
                pipe.zremrangebyscore(self._key, "-inf", now)
                pipe.expire(self._key, int(PRUNE_SECONDS + LIVES_SECONDS))
                self._pruned_at = time.monotonic()
        pipe.zrangebyscore(self._key, now, "+inf")
        live = frozenset(pipe.execute()[-1])
        with self._lock:
            before, self._live, self._read_at = self._live, live, time.monotonic()
            self._read_began = max(self._read_began, began)
        if before - live:
            self._departed()

    def _run(self) -> None:
        while True:
            time.sleep(BEAT_SECONDS)
            with self._lock:
                marked = self._marked()
                if self._closed or (not marked and not self._following()):
                    self._beating = None
                    return
            if not marked and time.monotonic() - self._read_at < FOLLOWER_READ_SECONDS:
                continue
            try:
                self._beat()
                if marked:
                    self._renew(RENEW_MARKS_SECONDS)
            except (RedisError, RedisClusterException, OSError) as error:
                log.warning("presence: cannot beat: %s: %s", type(error).__name__, error)
