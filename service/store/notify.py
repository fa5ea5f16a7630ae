"""Long-poll and stream wake-ups: one sharded pub/sub subscription per process, fanned out to
its waiters.

Every successful create and save script ends with ``SPUBLISH <prefix>{<game id>}:n <count>``,
the game's new event count; the channel carries the game's hash tag, so on Redis Cluster it
lives on the game's shard. A process keeps, per game with long-polls waiting in it, the set
of its waiters: it sends SSUBSCRIBE when the first one arrives and SUNSUBSCRIBE once the last
one has left and none came back for LINGER_SECONDS (a client answered asks again at once:
its next long-poll then finds the subscription in place), and it wakes the waiters whose
``after`` the published count passes. An idle waiter costs Redis nothing: no command, no
connection of its own. A stream is a waiter that stays for many wake-ups, moving its
``after`` on as it reads; it also follows presence: a presence mark written for the game
(service/store/presence.py) publishes PRESENCE_MESSAGE on the same channel, which wakes the
waiters that follow presence and leaves the long-polls alone.

Order for a waiter: subscribed (confirmed by Redis), then read the events, then wait; an event
saved between the read and the wait is published after the subscription and still wakes it.

A subscription connection that breaks (Redis restarted, a network cut) is made again with
backoff; once Redis confirms the subscriptions again, every waiter on it is woken to read
again, so what was saved meanwhile is found in the events list, not lost.

One connection per Redis node, each read by its own thread (a greenlet under gevent): one for
a single server, one per master on a cluster, where each channel goes to its slot's master.
redis-py's ``PubSub`` is not used: it reconnects and resubscribes inside a read on its own, so
a break would go unnoticed and the waiters would not read again; its ``ClusterPubSub`` polls
the nodes one after the other with a timeout, which delays messages.
"""
from __future__ import annotations

import logging
import random
import socket
import threading
import time
import weakref
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from redis import Redis
from redis.backoff import NoBackoff
from redis.cluster import RedisCluster
from redis.connection import AbstractConnection
from redis.exceptions import RedisClusterException, RedisError
from redis.retry import Retry

from service.requester import REQUESTER, ClientGone
from service.rules.errors import GameError
from service.store.base import Follow, Wake
from service.store.errors import StoreError

log = logging.getLogger(__name__)

# A waiter waits this long for Redis to confirm its subscription, like any store call on a
# Redis that does not answer; then the long-poll fails with StoreError (503).
CONFIRM_TIMEOUT_SECONDS = 1.0
# Reconnecting a broken subscription: exponential backoff between these, with jitter.
RECONNECT_FIRST_DELAY = 0.05
RECONNECT_MAX_DELAY = 2.0
# How long a game's subscription outlives its last waiter, for the same client's next long-poll.
LINGER_SECONDS = 5.0

# A client turned away because the process holds its maximum of waiters retries after this.
CAPACITY_RETRY_AFTER_SECONDS = 2

# The subscription connection sends nothing while nobody subscribes or leaves, so a dead
# peer (a Redis host gone without closing the connection) is noticed by TCP keep-alive
# probes instead of commands: after about 10 + 3 x 5 = 25 s of silence.
KEEPALIVE_OPTIONS = {
    option: value
    for option, value in (("TCP_KEEPIDLE", 10), ("TCP_KEEPINTVL", 5), ("TCP_KEEPCNT", 3))
    if hasattr(socket, option)
}


class Pacer:
    """Spaces out work that arrives in bursts: ``wait()`` is how long to wait so that the items
    start at least ``gap`` seconds apart, but never more than ``most`` seconds (what an item
    holds while it waits stays bounded, however long the burst). A lone item waits nothing.
    For one thread (a gevent worker's, where the items are greenlets)."""

    def __init__(self, gap: float, most: float) -> None:
        self.gap = gap
        self.most = most
        self._next = 0.0

    def wait(self) -> float:
        now = time.monotonic()
        start = min(max(now, self._next), now + self.most)
        self._next = start + self.gap
        return start - now


# Thousands of long-polls can hang up at once (a proxy or a network dropping its connections),
# and ending them takes a worker ~0.3 ms of CPU each: all at once, they would stall it for a
# second. A worker learns of the hang-ups one per NOTICES.gap (_hangup_watch), which frees each
# one's place, then ends their requests one at a time (ENDINGS), and after every
# ENDINGS.work_seconds of them the event loop polls its sockets, so other requests go in
# between however slow the machine. Paced by a timer per request instead, the timers that a
# busy worker let fall due together ran back to back: on a slow machine, /healthz waited a
# quarter of a second.
NOTICES = Pacer(0.00008, most=0.5)
PAUSE_SECONDS = 0.0001  # libev rounds a timer up to its poll's resolution, 1 ms


class Turns:
    """One at a time, with a pause for the event loop after every ``work_seconds`` of work."""

    def __init__(self, work_seconds: float) -> None:
        self.work_seconds = work_seconds
        self._lock = threading.Lock()  # a gevent lock in the gevent worker
        self._paused_at = 0.0

    def wait(self) -> None:
        """Return when it is the caller's turn; its work follows, before the next turn.

        The turn passes on once this returns, but gevent runs the caller's work before the
        next greenlet can take it; what the turns do in between is measured from the pause."""
        with self._lock:
            if time.monotonic() - self._paused_at >= self.work_seconds:
                # A timer, not sleep(0): the event loop polls its sockets before it fires.
                time.sleep(PAUSE_SECONDS)
                self._paused_at = time.monotonic()


ENDINGS = Turns(work_seconds=0.002)


class LongPollCapacity(GameError):
    """This process already holds its maximum of waiting long-polls (503, Retry-After)."""

    status = 503
    code = "long_poll_capacity"

    def __init__(self, max_waiters: int) -> None:
        super().__init__(
            f"this server already holds {max_waiters} waiting requests; retry shortly",
            params={"max_waiters": max_waiters, "retry_after": CAPACITY_RETRY_AFTER_SECONDS},
        )

    @property
    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(CAPACITY_RETRY_AFTER_SECONDS)}


# What stop_waiting wakes: the notifiers of this process (one per Redis store) and anything
# else that holds waiters (the embedded store), each with a ``wake_all(Wake)``.
_notifiers: weakref.WeakSet = weakref.WeakSet()
_stopping = False

# Published on a game's channel when a seat's presence mark changes (service/store/presence.py):
# it wakes the waiters that follow presence (streams), not the long-polls.
PRESENCE_MESSAGE = "p"


def wake_on_stop(holder: Any) -> None:
    """Have ``stop_waiting`` call ``holder.wake_all(Wake.SHUTDOWN)`` (kept weakly)."""
    _notifiers.add(holder)


def stopping() -> bool:
    """Whether the process has begun to shut down (``stop_waiting`` was called)."""
    return _stopping


def stop_waiting() -> None:
    """The process is shutting down: wake every waiter (its long-poll answers with what it
    has, usually nothing) and let later ones answer at once."""
    global _stopping
    _stopping = True
    for notifier in list(_notifiers):
        notifier.wake_all(Wake.SHUTDOWN)


class Waiter(Follow):
    """One long-poll or stream on one channel, waiting for a count above ``after`` (and, when
    it follows ``presence``, for presence changes)."""

    __slots__ = ("channel", "after", "presence", "woken_at", "_lock", "_event", "_wake", "_hung_up", "__weakref__")

    def __init__(self, channel: str, after: int, lock: threading.Lock, wake: Wake | None = None,
                 presence: bool = False) -> None:
        self.channel = channel
        self.after = after
        self.presence = presence
        self.woken_at = 0.0
        self._lock = lock
        self._event = threading.Event()
        self._wake = wake
        self._hung_up = False
        if wake is not None:
            self._event.set()

    def waited_out(self, deadline: float) -> bool:
        """``wait``, telling only whether to stop waiting: the time is up or the process is
        stopping (True), or something may have changed (False: read again)."""
        return self.wait(deadline) in (None, Wake.SHUTDOWN)

    def wait(self, deadline: float) -> Wake | None:
        """Wait until woken or until ``deadline`` (time.monotonic()).

        Returns why it woke (EVENTS or RESYNC: read the events again; PRESENCE; SHUTDOWN: the
        process is stopping, answer with what there is), or None when the time is up. Raises
        ClientGone when the client of the request hung up."""
        remaining = deadline - time.monotonic()
        if remaining > 0 and not self._event.is_set():
            with _hangup_watch(self):
                self._event.wait(remaining)
        with self._lock:
            wake = self._wake
            if wake is not Wake.SHUTDOWN:  # a stop stays: every later wait returns at once
                self._wake = None
                self._event.clear()
        if self._hung_up:
            raise ClientGone()
        return wake

    def _set(self, wake: Wake, at: float | None = None) -> None:
        """Called with the notifier's lock held. A reason to read events outranks a presence
        change (a reader of events reads presence too). ``at``: when the news came (one time
        for every waiter a message wakes, so that one read begun after it serves them all)."""
        self.woken_at = time.monotonic() if at is None else at
        if self._wake is Wake.SHUTDOWN or (wake is Wake.PRESENCE and self._wake is not None):
            self._event.set()
            return
        self._wake = wake
        self._event.set()

    def _hang_up(self) -> None:
        """The client closed its connection (called from the event loop, no lock taken)."""
        self._hung_up = True
        self._event.set()


class _Channel:
    """A game's channel with waiters in this process, and its subscription's state."""

    __slots__ = ("name", "waiters", "link", "pending", "confirmed", "stale")

    def __init__(self, name: str) -> None:
        self.name = name
        self.waiters: set[Waiter] = set()
        self.link: _Link | None = None
        self.pending = 0  # SSUBSCRIBEs sent and not yet confirmed
        self.confirmed = threading.Event()
        self.stale = False  # a break happened: wake the waiters once confirmed again


class Notifier:
    """Fan-out of published event counts to the waiters of this process.

    ``client`` is the store's redis-py client (a ``Redis`` or a ``RedisCluster``); its
    connection settings (address, credentials, TLS, timeouts) are used for the subscription
    connections, which are not taken from its pool. At most ``max_waiters`` wait at once;
    a game's subscription ends ``linger`` seconds after its last waiter left (0: at once).
    """

    def __init__(self, client: Redis | RedisCluster, max_waiters: int, linger: float | None = None) -> None:
        if max_waiters < 1:
            raise ValueError(f"max_waiters must be at least 1, not {max_waiters}")
        self._client = client
        self._max_waiters = max_waiters
        self._lock = threading.Lock()
        self._channels: dict[str, _Channel] = {}
        self._links: dict[str, _Link] = {}
        self._waiting = 0
        self._following_presence = 0
        self._closed = False
        self._linger = LINGER_SECONDS if linger is None else linger
        self._idle: dict[str, float] = {}  # channels without waiters: since when (monotonic)
        self._sweeper: threading.Thread | None = None
        _notifiers.add(self)

    @property
    def waiting(self) -> int:
        """How many waiters there are now."""
        return self._waiting

    @property
    def max_waiters(self) -> int:
        return self._max_waiters

    def subscribed_channels(self) -> set[str]:
        """The channels subscribed now: with waiters, or left by the last one less than
        ``linger`` seconds ago (for tests and metrics)."""
        with self._lock:
            return set(self._channels)

    def follows_presence(self) -> bool:
        """Whether a waiter of this process follows presence changes."""
        return self._following_presence > 0

    def wake_presence(self) -> None:
        """Wake every waiter that follows presence (a process that marked seats is gone)."""
        with self._lock:
            for state in self._channels.values():
                for waiter in state.waiters:
                    if waiter.presence:
                        waiter._set(Wake.PRESENCE)

    @contextmanager
    def waiting_on(self, channel: str, after: int, presence: bool = False) -> Iterator[Waiter]:
        """A waiter for counts above ``after`` on ``channel`` (and presence changes, with
        ``presence``), subscribed and confirmed.

        Raises LongPollCapacity when this process already holds ``max_waiters``, StoreError
        when Redis does not confirm the subscription within CONFIRM_TIMEOUT_SECONDS. While
        the process stops, the waiter is born woken and nothing is subscribed."""
        waiter, state = self._enter(channel, after, presence)
        try:
            if state is not None and not state.confirmed.wait(CONFIRM_TIMEOUT_SECONDS):
                log.error("long-poll subscriptions: redis did not confirm within %s s", CONFIRM_TIMEOUT_SECONDS)
                raise StoreError()
            yield waiter
        finally:
            if state is not None:
                self._leave(waiter, state)
            if waiter._hung_up:
                ENDINGS.wait()

    def wake_all(self, wake: Wake) -> None:
        """Wake every waiter with ``wake``."""
        with self._lock:
            for state in self._channels.values():
                for waiter in state.waiters:
                    waiter._set(wake)

    def close(self) -> None:
        """Wake every waiter (SHUTDOWN) and close the subscription connections."""
        with self._lock:
            self._closed = True
            links = list(self._links.values())
        self.wake_all(Wake.SHUTDOWN)
        for link in links:
            link.close()

    def _enter(self, channel: str, after: int, presence: bool) -> tuple[Waiter, _Channel | None]:
        with self._lock:
            if _stopping or self._closed:
                return Waiter(channel, after, self._lock, Wake.SHUTDOWN, presence), None
            if self._waiting >= self._max_waiters:
                raise LongPollCapacity(self._max_waiters)
            waiter = Waiter(channel, after, self._lock, presence=presence)
            state = self._channels.get(channel)
            if state is None:
                state = self._channels[channel] = _Channel(channel)
            self._idle.pop(channel, None)
            state.waiters.add(waiter)
            self._waiting += 1
            self._following_presence += presence
            if state.link is None:
                try:
                    self._link_for(channel).add(state)
                except (RedisError, RedisClusterException) as error:
                    state.waiters.discard(waiter)
                    self._waiting -= 1
                    self._following_presence -= presence
                    del self._channels[channel]
                    log.error("long-poll subscriptions: %s: %s", type(error).__name__, error)
                    raise StoreError() from error
            return waiter, state

    def _leave(self, waiter: Waiter, state: _Channel) -> None:
        with self._lock:
            state.waiters.discard(waiter)
            self._waiting -= 1
            self._following_presence -= waiter.presence
            if state.waiters:
                return
            if self._linger > 0 and not self._closed and self._channels.get(state.name) is state:
                self._idle[state.name] = time.monotonic()
                if self._sweeper is None:
                    self._sweeper = threading.Thread(target=self._sweep, name="subscriptions sweeper", daemon=True)
                    self._sweeper.start()
                return
            self._unsubscribe(state)

    def _unsubscribe(self, state: _Channel) -> None:
        """Forget a channel without waiters (lock held)."""
        if self._channels.get(state.name) is state:
            del self._channels[state.name]
        if state.link is not None:
            state.link.remove(state)

    def _sweep(self) -> None:
        """Unsubscribe the channels left alone for ``linger`` seconds; ends when none is left."""
        while True:
            time.sleep(self._linger / 2)
            with self._lock:
                now = time.monotonic()
                for name, since in list(self._idle.items()):
                    state = self._channels.get(name)
                    if state is not None and state.waiters:
                        del self._idle[name]
                    elif now - since >= self._linger:
                        del self._idle[name]
                        if state is not None:
                            self._unsubscribe(state)
                if not self._idle or self._closed:
                    self._sweeper = None
                    return

    def _link_for(self, channel: str) -> _Link:
        """The link of the node that serves ``channel`` (lock held)."""
        if isinstance(self._client, RedisCluster):
            node = self._client.get_node_from_key(channel)
            if node is None:
                raise RedisClusterException(f"no cluster node serves the slot of {channel}")
            key = node.name
            pool = self._client.get_redis_connection(node).connection_pool
        else:
            key, pool = "", self._client.connection_pool
        link = self._links.get(key)
        if link is None:
            link = self._links[key] = _Link(self, key, _connection_factory(pool))
        return link

    def _reroute(self, link: _Link) -> None:
        """After a break on a cluster: send the link's channels to their slots' current
        masters (lock held; the topology was refreshed by the caller)."""
        for state in list(link.channels.values()):
            target = self._link_for(state.name)
            if target is not link:
                link.channels.pop(state.name, None)
                target.add(state)

    def _refresh_topology(self) -> None:
        """Ask the cluster for its slots again (outside the lock: network)."""
        if isinstance(self._client, RedisCluster):
            try:
                self._client.nodes_manager.initialize()
            except (RedisError, RedisClusterException, OSError) as error:
                log.warning("long-poll subscriptions: cannot refresh the cluster layout: %s", error)


def _connection_factory(pool: Any) -> Callable[[], AbstractConnection]:
    """New connections like the pool's, but for a subscription: no health-check PING (it
    would read a reply the reader thread expects), no retries (a break must be seen),
    TCP keep-alive on."""
    options = {
        **pool.connection_kwargs,
        "health_check_interval": 0,
        # The dispatcher compares channel names as text.
        "decode_responses": True,
        "retry": Retry(NoBackoff(), 0),
        "socket_keepalive": True,
        "socket_keepalive_options": {getattr(socket, name): value for name, value in KEEPALIVE_OPTIONS.items()},
    }
    return lambda: pool.connection_class(**options)


class _Link:
    """One subscription connection to one Redis node and the thread that reads it.

    Every method but ``_run`` and ``close`` is called with the notifier's lock held; commands
    are sent under that lock too, so they go out in the order the state changed."""

    def __init__(self, notifier: Notifier, key: str, connect: Callable[[], AbstractConnection]) -> None:
        self.notifier = notifier
        self.key = key
        self.connect = connect
        self.channels: dict[str, _Channel] = {}
        self.unsubscribing: Counter[str] = Counter()
        self.connection: AbstractConnection | None = None
        self.reader: threading.Thread | None = None
        self.closed = False

    def add(self, state: _Channel) -> None:
        self.channels[state.name] = state
        state.link = self
        state.confirmed.clear()
        if self.connection is not None:
            state.pending += 1
            self._send([("SSUBSCRIBE", state.name)])
        if self.reader is None:
            self.reader = threading.Thread(target=self._run, name=f"subscriber {self.key}", daemon=True)
            self.reader.start()

    def remove(self, state: _Channel) -> None:
        if self.channels.get(state.name) is not state:
            return
        del self.channels[state.name]
        state.link = None
        if self.connection is not None:
            self.unsubscribing[state.name] += 1
            self._send([("SUNSUBSCRIBE", state.name)])

    def close(self) -> None:
        with self.notifier._lock:
            self.closed = True
            connection = self.connection
        if connection is not None:
            connection.disconnect()

    def _send(self, commands: list[tuple[str, ...]]) -> None:
        """Send ``commands``; a failure closes the connection, which the reader then sees."""
        try:
            self.connection.send_packed_command(self.connection.pack_commands(commands), check_health=False)
        except (RedisError, OSError) as error:
            log.warning("long-poll subscriptions: sending to redis %s failed: %s", self.key or "server", error)
            self.connection.disconnect()

    def _run(self) -> None:
        delay = RECONNECT_FIRST_DELAY
        while True:
            with self.notifier._lock:
                if self.closed or not self.channels:
                    self.reader = None
                    return
            started = time.monotonic()
            try:
                connection = self.connect()
                connection.connect()
            except (RedisError, OSError) as error:
                log.warning("long-poll subscriptions: cannot connect to redis %s: %s", self.key or "server", error)
            else:
                self._listen(connection)
                if not self.closed:
                    self.notifier._refresh_topology()
                    with self.notifier._lock:
                        self.notifier._reroute(self)
            if time.monotonic() - started > 1.0:
                delay = RECONNECT_FIRST_DELAY  # it worked for a while: a new break starts over
            time.sleep(delay * random.uniform(0.5, 1.0))
            delay = min(delay * 2, RECONNECT_MAX_DELAY)

    def _listen(self, connection: AbstractConnection) -> None:
        """Subscribe every channel of the link on ``connection`` and dispatch what it reads
        until it breaks; then mark every channel for a re-read."""
        with self.notifier._lock:
            if self.closed:
                connection.disconnect()
                return
            self.connection = connection
            self.unsubscribing.clear()
            for state in self.channels.values():
                state.pending = 1
            if self.channels:
                self._send([("SSUBSCRIBE", name) for name in self.channels])
        try:
            while True:
                # push_request: with RESP3 (redis-py's default), return pub/sub pushes.
                reply = connection.read_response(timeout=None, disconnect_on_error=False, push_request=True)
                self._dispatch(reply)
        except Exception as error:  # noqa: BLE001 - any failure of the reader is a break
            # (a connection closed meanwhile by close() or a failed send shows as ValueError)
            if not self.closed:
                log.warning("long-poll subscriptions: connection to redis %s lost: %s", self.key or "server", error)
        finally:
            with self.notifier._lock:
                self.connection = None
                for state in self.channels.values():
                    state.pending = 0
                    state.confirmed.clear()
                    state.stale = True
            connection.disconnect()

    def _dispatch(self, reply: Any) -> None:
        if not isinstance(reply, list) or len(reply) < 3:
            return
        kind, name, data = reply[0], reply[1], reply[2]
        with self.notifier._lock:
            state = self.channels.get(name)
            if kind == "smessage":
                if state is not None:
                    _wake_passed(state, data)
            elif kind == "ssubscribe":
                if state is not None and state.pending > 0:
                    state.pending -= 1
                    if state.pending == 0:
                        state.confirmed.set()
                        if state.stale:
                            state.stale = False
                            for waiter in state.waiters:
                                waiter._set(Wake.RESYNC)
            elif kind == "sunsubscribe":
                if self.unsubscribing[name] > 0:
                    self.unsubscribing[name] -= 1
                    if not self.unsubscribing[name]:
                        del self.unsubscribing[name]
                elif state is not None and state.pending == 0:
                    # Redis dropped the subscription itself: the slot moved to another node.
                    raise RedisClusterException(f"redis unsubscribed {name}: its slot moved")


def _wake_passed(state: _Channel, data: Any) -> None:
    """Wake the waiters of ``state`` whose ``after`` the published count passes (or, for a
    presence message, those that follow presence)."""
    at = time.monotonic()
    if data == PRESENCE_MESSAGE:
        for waiter in state.waiters:
            if waiter.presence:
                waiter._set(Wake.PRESENCE, at)
        return
    try:
        count = int(data)
    except (TypeError, ValueError):
        count = None  # not a count: let everyone read
    for waiter in state.waiters:
        if count is None or count > waiter.after:
            waiter._set(Wake.EVENTS, at)


@contextmanager
def _hangup_watch(waiter: Waiter) -> Iterator[None]:
    """While inside, wake ``waiter`` as soon as the client of the current request closes its
    connection. Only under gevent (the gevent worker): elsewhere nothing is watched.

    The socket is watched for readability; then one byte is peeked without being taken: no
    byte means the client hung up; a byte is the start of a pipelined request, which the
    server reads once this one is answered, so the watch ends there."""
    sock = REQUESTER.get()
    loop = _gevent_loop() if sock is not None else None
    if loop is None:
        yield
        return
    raw = getattr(sock, "_sock", sock)  # gevent's socket wraps the real one
    try:
        watcher = loop.io(sock.fileno(), 1)
    except (OSError, ValueError):  # already closed
        waiter._hang_up()
        yield
        return

    notice = None  # the timer that tells the waiter, once its client has hung up

    def readable() -> None:
        nonlocal notice
        try:
            peeked = raw.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except BlockingIOError:
            return
        except OSError:
            peeked = b""
        watcher.stop()
        if not peeked:
            notice = loop.timer(NOTICES.wait())
            notice.start(waiter._hang_up)

    watcher.start(readable)
    try:
        yield
    finally:
        watcher.stop()
        watcher.close()
        if notice is not None:
            notice.stop()
            notice.close()


def _gevent_loop() -> Any:
    """The gevent event loop of this thread when gevent patched the standard library."""
    try:
        from gevent import get_hub
        from gevent.monkey import is_module_patched
    except ImportError:
        return None
    if not is_module_patched("socket"):
        return None
    return get_hub().loop
