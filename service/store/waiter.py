"""A waiter: one long-poll or stream of this process waiting on a channel, woken by the
fan-out (service/store/notify.py) and, under gevent, by its client hanging up
(service/store/hangups.py)."""
from __future__ import annotations

import threading
import time

from service.requester import ClientGone
from service.store.base import Follow, Wake
from service.store.hangups import hangup_watch


class Waiter(Follow):
    """One long-poll or stream on one channel, waiting for a count above ``after`` (and, when
    it follows ``presence``, for presence changes)."""

    __slots__ = ("__weakref__", "_event", "_hung_up", "_lock", "_wake", "after", "channel", "presence", "woken_at")

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
            with hangup_watch(self.hang_up):
                self._event.wait(remaining)
        with self._lock:
            wake = self._wake
            if wake is not Wake.SHUTDOWN:  # a stop stays: every later wait returns at once
                self._wake = None
                self._event.clear()
        if self._hung_up:
            raise ClientGone()
        return wake

    def wake_up(self, wake: Wake, at: float | None = None) -> None:
        """Wake it for ``wake`` (called with the notifier's lock held). A reason to read events
        outranks a presence change (a reader of events reads presence too). ``at``: when the
        news came (one time for every waiter a message wakes, so that one read begun after it
        serves them all)."""
        self.woken_at = time.monotonic() if at is None else at
        if self._wake is not Wake.SHUTDOWN and (wake is not Wake.PRESENCE or self._wake is None):
            self._wake = wake
        self._event.set()

    def hang_up(self) -> None:
        """The client closed its connection (called from the event loop, no lock taken)."""
        self._hung_up = True
        self._event.set()

    @property
    def hung_up(self) -> bool:
        """Whether the client closed its connection."""
        return self._hung_up
