"""Hang-ups of waiting clients: a long-poll or stream learns that its client closed the
connection while it waited (``hangup_watch``), and the hang-ups that come in a burst are
noticed and ended at a pace the event loop can bear (``Watch.BATCH``, ``ENDINGS``).

The socket of the request comes from service/requester.py, set by the WSGI layer
(service/middleware/request_deadlines.py); only the gevent worker watches it."""
from __future__ import annotations

import select
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from service.requester import REQUESTER

# Thousands of long-polls can hang up at once (a proxy or a network dropping its connections).
# Each waiting socket is in an epoll set of the worker's own, which the event loop watches as
# one descriptor (``Watch``): each turn of the loop takes at most Watch.BATCH hang-ups from it,
# so the loop polls its other sockets between batches however many clients left together.
# Watched one by one by the event loop itself, every socket that became readable had its call
# in the same turn: 2,500 of them on one worker, then the timers that spaced the notices out,
# and the turns of the loop took 10-22 ms each for a tenth of a second (/healthz: 8-80 ms on a
# quiet machine, 110-310 ms on a slow one). Ending a request takes ~0.3 ms of CPU: those end
# one at a time (ENDINGS), and after every ENDINGS.work_seconds of them the event loop polls
# its sockets, so other requests go in between however slow the machine.
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


class Watch:
    """The sockets of one event loop's waiting requests, in an epoll set of their own that the
    loop watches as one descriptor. A socket is reported once (EPOLLONESHOT), when its client
    hung up or sent the next request; a turn of the loop takes at most BATCH reports."""

    # Noticing a hang-up and running the greenlet it wakes took 22-35 us each in
    # tests/store/test_hangup_watch.py (4,000 in 90-140 ms): about half a millisecond a turn.
    # 8 and 32 measured alike (/healthz at most 10-16 ms while 5,000 clients hung up).
    BATCH = 16

    def __init__(self, loop: Any, epoll: Any) -> None:
        """``epoll``: the operating system's (``select.epoll`` as gevent found it), whose calls here
        never block the loop."""
        self._epoll = epoll
        self._watched: dict[int, tuple[socket.socket, Callable[[], None]]] = {}
        self._reports = loop.io(self._epoll.fileno(), 1)
        self._reports.start(self._notice)

    def add(self, sock: socket.socket, hang_up: Callable[[], None]) -> int:
        """Call ``hang_up`` once the client of ``sock`` closes it; the socket's descriptor,
        for ``remove``. Raises OSError (or ValueError) when the socket is closed already."""
        fd = sock.fileno()
        self._epoll.register(fd, select.EPOLLIN | select.EPOLLRDHUP | select.EPOLLONESHOT)
        self._watched[fd] = (getattr(sock, "_sock", sock), hang_up)  # gevent's socket wraps the real one
        return fd

    def remove(self, fd: int) -> None:
        del self._watched[fd]
        try:
            self._epoll.unregister(fd)
        except OSError:  # closed already, which took it out of the set
            pass

    def _notice(self) -> None:
        """Take at most BATCH reports. Each reported socket has one byte peeked, not taken: no
        byte means the client hung up; a byte is the start of a pipelined request, which the
        server reads once this one is answered, so the watch of that socket ends there."""
        for fd, _ in self._epoll.poll(0, self.BATCH):
            raw, hang_up = self._watched[fd]
            # The peek finds a byte or the end: epoll checks a socket is readable as it reports
            # it, and nothing else reads a waiting request's socket. A reset is a hang-up too.
            try:
                peeked = raw.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
            except OSError:
                peeked = b""
            if not peeked:
                hang_up()


# The attribute of a gevent hub that holds the watch of its event loop.
HUB_ATTRIBUTE = "ginrummy_hangups"


@contextmanager
def hangup_watch(hang_up: Callable[[], None]) -> Iterator[None]:
    """While inside, call ``hang_up`` (from the event loop) as soon as the client of the
    current request closes its connection. Only under gevent (the gevent worker) on Linux:
    elsewhere nothing is watched."""
    sock = REQUESTER.get()
    watch = _watch() if sock is not None else None
    if watch is None:
        yield
        return
    try:
        fd = watch.add(sock, hang_up)
    except (OSError, ValueError):  # already closed
        hang_up()
        yield
        return
    try:
        yield
    finally:
        watch.remove(fd)


def _watch() -> Watch | None:
    """The watch of this thread's gevent event loop, kept on the thread's hub, when gevent
    patched the standard library (which hides select.epoll: its calls here never block, so the
    original serves)."""
    try:
        from gevent import get_hub
        from gevent.monkey import get_original, is_module_patched
    except ImportError:
        return None
    if not is_module_patched("socket") or not hasattr(select, "EPOLLRDHUP"):
        return None
    hub = get_hub()
    watch = getattr(hub, HUB_ATTRIBUTE, None)
    if watch is None:
        watch = Watch(hub.loop, get_original("select", "epoll")())
        setattr(hub, HUB_ATTRIBUTE, watch)
    return watch
