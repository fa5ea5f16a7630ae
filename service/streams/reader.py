"""Following an API key's stream: what it announced after a point, then each new entry as it
comes, with a pause marker whenever a heartbeat's interval passed without one."""
from __future__ import annotations

from collections.abc import Callable, Iterator

from service.store.streams import KeyStreams, StreamEntry, is_stream_id

# Entries read at a time.
BATCH = 100
# Where a stream with nothing in it yet starts: before any id Redis can give.
EMPTY = "0-0"


def stream_id(text: str) -> str:
    """An id of a key's stream (``<ms>-<n>``) as a resume point. Raises ValueError."""
    if not is_stream_id(text):
        raise ValueError("an id of the form <milliseconds>-<number>, as this stream sends them")
    return text


class KeyStreamReader:
    def __init__(self, streams: Callable[[], KeyStreams]) -> None:
        self._streams = streams

    def start(self, scope: str, after: str | None) -> str:
        """Where a follower of ``scope`` starts: after ``after``, or after the newest entry kept
        (from now on). Raises StoreError."""
        if after is not None:
            return after
        return self._streams().last_id(scope) or EMPTY

    def follow(self, scope: str, after: str, heartbeat: float,
               stopping: Callable[[], bool]) -> Iterator[StreamEntry | None]:
        """Every entry after ``after``, oldest first, then each new one; None after every
        ``heartbeat`` seconds without one. Ends when ``stopping()`` says so. Raises StoreError,
        LongPollCapacity, requester.ClientGone."""
        while not stopping():
            found = self._streams().wait(scope, after, BATCH, heartbeat)
            if not found:
                yield None
            for entry in found:
                after = entry.id
                yield entry
