"""Sharded pub/sub connections: one ``Subscriber`` per Redis node, each with the thread that
reads it, holding the ``Subscription`` of every channel that node serves; what they read goes
to a ``Listener`` (the fan-out to the waiters, service/store/notify.py).

One connection per node, each read by its own thread (a greenlet under gevent): one for a
single server, one per master on a cluster, where each channel goes to its slot's master. A connection that breaks (Redis restarted, a network cut)
is made again with backoff, every subscription on it is sent again, and the listener hears
of each once Redis confirms it, since what was published in between was missed.

redis-py's ``PubSub`` is not used: it reconnects and resubscribes inside a read on its own,
so a break would go unnoticed and the waiters would not read again; its ``ClusterPubSub``
polls the nodes one after the other with a timeout, which delays messages.
"""
from __future__ import annotations

import logging
import random
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any, Protocol

from redis.backoff import NoBackoff
from redis.connection import AbstractConnection
from redis.exceptions import RedisClusterException, RedisError
from redis.retry import Retry

log = logging.getLogger(__name__)

# Reconnecting a broken subscription: exponential backoff between these, with jitter.
RECONNECT_FIRST_DELAY = 0.05
RECONNECT_MAX_DELAY = 2.0

# The subscription connection sends nothing while nobody subscribes or leaves, so a dead
# peer (a Redis host gone without closing the connection) is noticed by TCP keep-alive
# probes instead of commands: after about 10 + 3 x 5 = 25 s of silence.
KEEPALIVE_OPTIONS = {
    option: value
    for option, value in (("TCP_KEEPIDLE", 10), ("TCP_KEEPINTVL", 5), ("TCP_KEEPCNT", 3))
    if hasattr(socket, option)
}


class Subscription:
    """One channel of a subscriber, and where its subscription stands."""

    __slots__ = ("confirmed", "name", "pending", "stale", "subscriber")

    def __init__(self, name: str) -> None:
        self.name = name
        self.subscriber: Subscriber | None = None
        self.pending = 0  # SSUBSCRIBEs sent and not yet confirmed
        self.confirmed = threading.Event()
        self.stale = False  # a break happened: tell the listener once confirmed again


class Listener(Protocol):
    """What a subscriber's reader thread tells."""

    def published(self, subscription: Subscription, data: Any) -> None:
        """A message on the subscription's channel (the lock held)."""

    def resubscribed(self, subscription: Subscription) -> None:
        """Redis confirmed the subscription again after a break, so what was published
        meanwhile was missed (the lock held)."""

    def broken(self, subscriber: Subscriber) -> None:
        """The subscriber's connection broke; it connects again once this returns (the lock
        not held)."""


def connection_factory(pool: Any) -> Callable[[], AbstractConnection]:
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


class Subscriber:
    """One subscription connection to one Redis node and the thread that reads it.

    ``add`` and ``remove`` are called with ``lock`` (the listener's) held, and the reader
    thread takes it for what it changes, so commands go out in the order the state changed.
    ``key`` names the node ("" for a single server)."""

    def __init__(self, key: str, connect: Callable[[], AbstractConnection], lock: threading.Lock,
                 listener: Listener) -> None:
        self.key = key
        self.connect = connect
        self.lock = lock
        self.listener = listener
        self.channels: dict[str, Subscription] = {}
        self.unsubscribing: Counter[str] = Counter()
        self.connection: AbstractConnection | None = None
        self.reader: threading.Thread | None = None
        self.closed = False

    def add(self, state: Subscription) -> None:
        self.channels[state.name] = state
        state.subscriber = self
        state.confirmed.clear()
        if self.connection is not None:
            state.pending += 1
            self._send([("SSUBSCRIBE", state.name)])
        if self.reader is None:
            self.reader = threading.Thread(target=self._run, name=f"subscriber {self.key}", daemon=True)
            self.reader.start()

    def remove(self, state: Subscription) -> None:
        if self.channels.get(state.name) is not state:
            return
        del self.channels[state.name]
        state.subscriber = None
        if self.connection is not None:
            self.unsubscribing[state.name] += 1
            self._send([("SUNSUBSCRIBE", state.name)])

    def close(self) -> None:
        with self.lock:
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
            with self.lock:
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
                    self.listener.broken(self)
            if time.monotonic() - started > 1.0:
                delay = RECONNECT_FIRST_DELAY  # it worked for a while: a new break starts over
            time.sleep(delay * random.uniform(0.5, 1.0))
            delay = min(delay * 2, RECONNECT_MAX_DELAY)

    def _listen(self, connection: AbstractConnection) -> None:
        """Subscribe every channel of the subscriber on ``connection`` and dispatch what it reads
        until it breaks; then mark every subscription stale, for the listener to hear of once
        it is confirmed again."""
        with self.lock:
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
            with self.lock:
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
        with self.lock:
            state = self.channels.get(name)
            if kind == "smessage":
                if state is not None:
                    self.listener.published(state, data)
            elif kind == "ssubscribe":
                if state is not None and state.pending > 0:
                    state.pending -= 1
                    if state.pending == 0:
                        state.confirmed.set()
                        if state.stale:
                            state.stale = False
                            self.listener.resubscribed(state)
            elif kind == "sunsubscribe":
                if self.unsubscribing[name] > 0:
                    self.unsubscribing[name] -= 1
                    if not self.unsubscribing[name]:
                        del self.unsubscribing[name]
                elif state is not None and state.pending == 0:
                    # Redis dropped the subscription itself: the slot moved to another node.
                    raise RedisClusterException(f"redis unsubscribed {name}: its slot moved")
