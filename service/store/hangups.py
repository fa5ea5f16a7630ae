"""Hang-ups of waiting clients: a long-poll or stream learns that its client closed the
connection while it waited (``hangup_watch``), and the hang-ups that come in a burst are
noticed and ended at a pace the event loop can bear (``NOTICES``, ``ENDINGS``).

The socket of the request comes from service/requester.py, set by the WSGI layer
(service/middleware/request_deadlines.py); only the gevent worker watches it."""
from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from service.requester import REQUESTER


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
# second. A worker learns of the hang-ups one per NOTICES.gap (hangup_watch), which frees each
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


@contextmanager
def hangup_watch(hang_up: Callable[[], None]) -> Iterator[None]:
    """While inside, call ``hang_up`` (from the event loop) as soon as the client of the
    current request closes its connection. Only under gevent (the gevent worker): elsewhere
    nothing is watched.

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
        hang_up()
        yield
        return

    notice = None  # the timer that calls hang_up, once the client has hung up

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
            notice.start(hang_up)

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
