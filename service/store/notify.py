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
again, so what was saved meanwhile is found in the events list, not lost. The connections,
one per Redis node, are service/store/subscriptions.py; the waiters, service/store/waiter.py;
the watch on their clients' sockets, service/store/hangups.py; the process's shutdown, which
wakes them all, service/store/shutdown.py.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from redis import Redis
from redis.cluster import RedisCluster
from redis.exceptions import RedisClusterException, RedisError

from service.store.base import Wake
from service.store.errors import LongPollCapacity, StoreError
from service.store.hangups import ENDINGS
from service.store.shutdown import stopping, wake_on_stop
from service.store.subscriptions import Subscriber, Subscription, connection_factory
from service.store.waiter import Waiter

log = logging.getLogger(__name__)

# A waiter waits this long for Redis to confirm its subscription, like any store call on a
# Redis that does not answer; then the long-poll fails with StoreError (503).
CONFIRM_TIMEOUT_SECONDS = 1.0
# How long a game's subscription outlives its last waiter, for the same client's next long-poll.
LINGER_SECONDS = 5.0

# Published on a game's channel when a seat's presence mark changes (service/store/presence.py):
# it wakes the waiters that follow presence (streams), not the long-polls.
PRESENCE_MESSAGE = "p"


class _Channel(Subscription):
    """A game's channel with waiters in this process, and its subscription."""

    __slots__ = ("waiters",)

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.waiters: set[Waiter] = set()


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
        self._subscribers: dict[str, Subscriber] = {}
        self._waiting = 0
        self._following_presence = 0
        self._closed = False
        self._linger = LINGER_SECONDS if linger is None else linger
        self._idle: dict[str, float] = {}  # channels without waiters: since when (monotonic)
        self._sweeper: threading.Thread | None = None
        wake_on_stop(self)

    @property
    def waiting(self) -> int:
        """How many waiters there are now."""
        return self._waiting

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
        self._wake(Wake.PRESENCE, presence_only=True)

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
            if waiter.hung_up:
                ENDINGS.wait()

    def wake_all(self, wake: Wake) -> None:
        """Wake every waiter with ``wake``."""
        self._wake(wake, presence_only=False)

    def _wake(self, wake: Wake, presence_only: bool) -> None:
        with self._lock:
            for state in self._channels.values():
                for waiter in state.waiters:
                    if waiter.presence or not presence_only:
                        waiter.wake_up(wake)

    def close(self) -> None:
        """Wake every waiter (SHUTDOWN) and close the subscription connections."""
        with self._lock:
            self._closed = True
            subscribers = list(self._subscribers.values())
        self.wake_all(Wake.SHUTDOWN)
        for subscriber in subscribers:
            subscriber.close()

    def _enter(self, channel: str, after: int, presence: bool) -> tuple[Waiter, _Channel | None]:
        with self._lock:
            if stopping() or self._closed:
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
            if state.subscriber is None:
                try:
                    self._subscriber_for(channel).add(state)
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
        if state.subscriber is not None:
            state.subscriber.remove(state)

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

    def _subscriber_for(self, channel: str) -> Subscriber:
        """The subscriber of the node that serves ``channel`` (lock held)."""
        if isinstance(self._client, RedisCluster):
            node = self._client.get_node_from_key(channel)
            if node is None:
                raise RedisClusterException(f"no cluster node serves the slot of {channel}")
            key = node.name
            pool = self._client.get_redis_connection(node).connection_pool
        else:
            key, pool = "", self._client.connection_pool
        subscriber = self._subscribers.get(key)
        if subscriber is None:
            subscriber = self._subscribers[key] = Subscriber(key, connection_factory(pool), self._lock, self)
        return subscriber

    # --- what the subscribers tell (subscriptions.Listener) ---------------------------------
    def published(self, subscription: _Channel, data: Any) -> None:
        """Wake the channel's waiters whose ``after`` the published count passes (or, for a
        presence message, those that follow presence)."""
        at = time.monotonic()
        if data == PRESENCE_MESSAGE:
            for waiter in subscription.waiters:
                if waiter.presence:
                    waiter.wake_up(Wake.PRESENCE, at)
            return
        try:
            count = int(data)
        except (TypeError, ValueError):
            count = None  # not a count: let everyone read
        for waiter in subscription.waiters:
            if count is None or count > waiter.after:
                waiter.wake_up(Wake.EVENTS, at)

    def resubscribed(self, subscription: _Channel) -> None:
        """Wake the channel's waiters to read again: what was saved during the break was
        not published to them."""
        for waiter in subscription.waiters:
            waiter.wake_up(Wake.RESYNC)

    def broken(self, subscriber: Subscriber) -> None:
        """On a cluster a break may mean that the layout changed (a slot moved, a master failed
        over): ask the cluster for its slots again (outside the lock: network), then send the
        subscriber's channels to their slots' current masters."""
        if isinstance(self._client, RedisCluster):
            try:
                self._client.nodes_manager.initialize()
            except (RedisError, RedisClusterException, OSError) as error:
                log.warning("long-poll subscriptions: cannot refresh the cluster layout: %s", error)
        with self._lock:
            for state in list(subscriber.channels.values()):
                target = self._subscriber_for(state.name)
                if target is not subscriber:
                    subscriber.channels.pop(state.name, None)
                    target.add(state)
