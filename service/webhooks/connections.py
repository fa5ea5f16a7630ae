"""Connections to receivers: bounded by a per-attempt deadline, kept alive between attempts.

A receiver is called many times a second under load; opening a connection per delivery
costs more CPU than the delivery itself. So a connection that ended its exchange cleanly
goes back to a small pool, keyed by the origin (scheme, host, port) and the vetted address
it is connected to: it is only ever reused for a delivery whose own resolution vetted that
same address, so the address checked is always the one the request goes to.

Every wait on the socket lasts at most the time left until the attempt's deadline, so a
receiver trickling bytes cannot stretch an attempt past it, without a timer thread per
attempt. The socket is non-blocking and waits with poll(2) of its own: with a socket
timeout, Python set the timeout with an ioctl before every send and receive and polled
before every send although it would not block, three of the ten or so system calls the
worker made per delivery (perf, worker alone).
"""
from __future__ import annotations

import io
import select
import socket
import ssl
import threading
import time
from collections import OrderedDict
from contextlib import suppress
from dataclasses import dataclass, field

Origin = tuple[str, str, int]  # scheme, host as written in the URL, port
Key = tuple[Origin, tuple]  # origin, vetted socket address

MAX_IDLE_CONNECTIONS = 32
MAX_IDLE_PER_KEY = 8
# Below the keep-alive timeout of common servers (Node 5 s, gunicorn 2 s is the exception
# the retry on a fresh connection covers), so a kept connection is seldom found closed.
IDLE_SECONDS = 4.0


class DeadlineSocket:
    """A connected socket (TLS set up, if any) whose every send and receive waits at most
    until ``deadline`` (a ``time.monotonic()`` value, set before each attempt); ``reader``
    reads from it with a buffer that lasts as long as the connection."""

    def __init__(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        self.sock = sock
        self.deadline = 0.0
        self.reader = io.BufferedReader(_Reader(self))
        self._readable = select.poll()
        self._readable.register(sock, select.POLLIN)

    def sendall(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[self.sock.send(view):]
            except (BlockingIOError, ssl.SSLWantWriteError):
                self._wait(select.POLLOUT)
            except ssl.SSLWantReadError:  # TLS may need to read before it can write
                self._wait(select.POLLIN)

    def recv_into(self, buffer) -> int:
        # Plain TCP: the answer is seldom there yet, so wait first rather than try in vain.
        # TLS may already hold decrypted bytes that poll cannot see: try first.
        if not isinstance(self.sock, ssl.SSLSocket):
            self._wait(select.POLLIN)
        while True:
            try:
                return self.sock.recv_into(buffer)
            except (BlockingIOError, ssl.SSLWantReadError):
                self._wait(select.POLLIN)
            except ssl.SSLWantWriteError:
                self._wait(select.POLLOUT)

    def has_input(self) -> bool:
        """Whether anything (bytes, or the end of the connection) is waiting to be read."""
        return bool(self._readable.poll(0))

    def _wait(self, event: int) -> None:
        left = self.deadline - time.monotonic()
        if event == select.POLLIN:
            poller = self._readable
        else:
            poller = select.poll()
            poller.register(self.sock, event)
        if left <= 0 or not poller.poll(left * 1000):
            raise TimeoutError("the attempt's deadline passed")


class _Reader(io.RawIOBase):
    def __init__(self, sock: DeadlineSocket) -> None:
        self._sock = sock

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        return self._sock.recv_into(buffer)


@dataclass(eq=False)
class Connection:
    """An open connection to ``key``'s address."""

    key: Key
    socket: DeadlineSocket
    idle_since: float = field(default_factory=time.monotonic)
    reused: bool = False

    def close(self) -> None:
        with suppress(OSError):
            self.socket.sock.close()

    def is_usable(self) -> bool:
        """Whether a kept connection can carry another request: still open, and nothing
        came in while it was idle (an early close, or bytes nobody asked for)."""
        return self.socket.sock.fileno() >= 0 and not self.socket.has_input()


class IdleConnections:
    """Connections that finished an exchange cleanly, waiting for the next request to the
    same key: at most ``per_key`` per key and ``limit`` in all (the longest idle closed
    first), none kept longer than ``idle_seconds``. Safe to share between threads."""

    def __init__(self, limit: int = MAX_IDLE_CONNECTIONS, per_key: int = MAX_IDLE_PER_KEY,
                 idle_seconds: float = IDLE_SECONDS) -> None:
        self._limit = limit
        self._per_key = per_key
        self._idle_seconds = idle_seconds
        self._lock = threading.Lock()
        # Oldest first, so the ones to expire or to evict are at the front.
        self._idle: OrderedDict[Connection, None] = OrderedDict()

    def take(self, keys: list[Key]) -> Connection | None:
        """A usable idle connection to one of ``keys`` (tried in order), now the caller's."""
        with self._lock:
            expired = self._expire()
            found = None
            for key in keys:
                found = next((kept for kept in reversed(self._idle) if kept.key == key), None)
                if found is not None:
                    del self._idle[found]
                    break
        for connection in expired:
            connection.close()
        if found is None:
            return None
        if not found.is_usable():
            found.close()
            return self.take(keys)
        found.reused = True
        return found

    def give_back(self, connection: Connection) -> None:
        """Keep ``connection`` for a later request, or close it when the pool is full."""
        connection.idle_since = time.monotonic()
        closing = []
        with self._lock:
            closing += self._expire()
            if sum(1 for kept in self._idle if kept.key == connection.key) >= self._per_key:
                closing.append(connection)
            else:
                self._idle[connection] = None
                while len(self._idle) > self._limit:
                    closing.append(self._idle.popitem(last=False)[0])
        for closed in closing:
            closed.close()

    def count(self) -> int:
        with self._lock:
            return len(self._idle)

    def close(self) -> None:
        """Close every idle connection."""
        with self._lock:
            closing = list(self._idle)
            self._idle.clear()
        for connection in closing:
            connection.close()

    def _expire(self) -> list[Connection]:
        oldest_kept = time.monotonic() - self._idle_seconds
        expired = []
        while self._idle:
            oldest = next(iter(self._idle))
            if oldest.idle_since > oldest_kept:
                break
            del self._idle[oldest]
            expired.append(oldest)
        return expired
