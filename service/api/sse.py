"""Server-Sent Events on this service: frames, resume points, heartbeats, slow readers, bounds.

What any stream of the API shares, whatever it follows:

- ``frame`` / ``comment`` / ``retry_hint`` write the wire format (the WHATWG HTML standard,
  "Server-sent events"): ``id:`` for what a client may resume after, ``event:`` its type,
  ``data:`` one JSON text; a comment line (``:``) is a heartbeat.
- ``resume_point`` reads where a client resumes: ``Last-Event-ID`` (what a browser's
  EventSource sends when it reconnects) before the query's ``after``.
- ``OpenStreams`` bounds the streams one process holds per API key and per client address,
  refusing before the stream starts (a problem answer, not a broken stream).
- ``Backlog`` cuts off a client that has taken nothing of what waited for it for a whole
  heartbeat interval (looked at before each message, the heartbeats included), so a reader
  that stopped reading holds at most what the kernel buffers for it (~128 KiB,
  service/gunicorn_worker.py), and not for long; a write that waits longer than
  RESPONSE_SEND_TIMEOUT_SECONDS for room fails and drops the connection too.
- ``event_stream`` is the answer: ``text/event-stream``, never cached or buffered by a proxy,
  with the client's connection known to the waiting machinery while the body is made
  (``requester.mark_streamed``), and what the stream holds let go when the answer ends.
"""
from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import orjson
from flask import Request, Response

from service.games.errors import TooMany, Unprocessable
from service.requester import REQUESTER, ClientGone, mark_streamed, unsent_bytes
from service.rules.errors import declare

Resume = TypeVar("Resume")
MEDIA_TYPE = "text/event-stream"
LAST_EVENT_ID = "Last-Event-ID"
# The largest resume point taken (the events query's ``after`` has the same bound).
MAX_EVENT_ID = 1_000_000_000
# A client that reconnects waits this long first (``retry:``), drawn per stream, so that the
# clients of a worker that stopped do not all come back in the same instant.
RECONNECT_MS = (1000, 5000)
# What a client must take of what waits for it within a heartbeat interval not to be cut off.
PROGRESS_BYTES = 1024
# A client refused for its number of streams may try again after this.
STREAMS_RETRY_AFTER_SECONDS = 5
declare(TooMany.status, "too_many_streams", "Too many open streams")


def frame(data: object, event: str | None = None, event_id: int | str | None = None) -> bytes:
    """One event: ``data`` as compact JSON (one line), with its type and id when given."""
    head = ""
    if event_id is not None:
        head += f"id: {event_id}\n"
    if event is not None:
        head += f"event: {event}\n"
    return head.encode() + b"data: " + orjson.dumps(data) + b"\n\n"


def comment(text: str = "") -> bytes:
    """A comment line: ignored by clients, it keeps proxies from closing a quiet stream."""
    return f": {text}\n\n".encode()


def retry_hint() -> bytes:
    """How long a client waits before it reconnects (``retry:``), in milliseconds."""
    return f"retry: {random.randint(*RECONNECT_MS)}\n\n".encode()


def event_seq(text: str) -> int:
    """A match's event number as an SSE id. Raises ValueError for anything else."""
    if not (text.isascii() and text.isdigit() and int(text) <= MAX_EVENT_ID):
        raise ValueError(f"an event number (0 to {MAX_EVENT_ID})")
    return int(text)


def resume_point(request: Request, after: Resume | None, parse: Callable[[str], Resume] = event_seq) -> Resume | None:
    """Where the client resumes: its ``Last-Event-ID`` read by ``parse`` when it sent one, else
    ``after`` (None: from now on). Raises Unprocessable for a Last-Event-ID that ``parse``
    refuses (ValueError: its message says what an id of this stream looks like)."""
    header = request.headers.get(LAST_EVENT_ID)
    if header is None or not header.strip():
        return after
    try:
        return parse(header.strip())
    except ValueError as error:
        raise Unprocessable(f"{LAST_EVENT_ID} must be an id this stream sent: {error}", field=LAST_EVENT_ID) from None


class OpenStreams:
    """The streams this process holds, per API key and per client address (an address is
    counted only for streams opened without a key). The counts are per process: an instance
    with N workers holds up to N times each bound."""

    def __init__(self, per_key: int, per_address: int) -> None:
        self.per_key = per_key
        self.per_address = per_address
        self._lock = threading.Lock()
        self._open: Counter[str] = Counter()

    @contextmanager
    def taken(self, owner: str | None, address: str) -> Iterator[None]:
        """Count one stream of ``owner`` (an API key's id) or, without one, of ``address``
        while inside. Raises TooMany (429 ``too_many_streams``) when that one is at its bound."""
        who, bound = (f"key:{owner}", self.per_key) if owner is not None else (f"address:{address}", self.per_address)
        with self._lock:
            if self._open[who] >= bound:
                scope = "api_key" if owner is not None else "address"
                raise TooMany(f"at most {bound} streams may be open at once per {scope.replace('_', ' ')} "
                              "on this server", STREAMS_RETRY_AFTER_SECONDS, code="too_many_streams",
                              params={"limit": bound, "scope": scope})
            self._open[who] += 1
        try:
            yield
        finally:
            with self._lock:
                self._open[who] -= 1
                if self._open[who] <= 0:
                    del self._open[who]


class Backlog:
    """Whether the client takes what the stream sends. ``check(sent)`` before each message,
    with the bytes sent so far: raises ClientGone once bytes have waited for the client for
    ``every`` seconds while it took less than PROGRESS_BYTES of them (Linux's count of
    unacknowledged bytes on its connection, one ioctl). A client's kernel takes in a little
    now and then even when the client reads nothing (it packs what it holds); a client that
    reads, however slowly, takes far more."""

    def __init__(self, every: float) -> None:
        self._every = every
        self._since: float | None = None  # since when bytes wait without the client taking them
        self._sent = 0
        self._waiting = 0

    def check(self, sent: int) -> None:
        sock = REQUESTER.get()
        if sock is None:
            return
        now = time.monotonic()
        waiting = unsent_bytes(sock)
        taken = (sent - self._sent) - (waiting - self._waiting)
        if self._since is None or waiting == 0 or taken >= PROGRESS_BYTES:
            self._since, self._sent, self._waiting = now, sent, waiting
        elif now - self._since >= self._every:
            raise ClientGone()


def event_stream(environ: dict, frames: Iterable[bytes], close: Callable[[], None]) -> Response:
    """The answer streaming ``frames``; ``close`` lets go of what the stream holds, once the
    answer ends (sent, or the client gone)."""
    mark_streamed(environ)
    response = Response(frames, mimetype=MEDIA_TYPE)
    response.call_on_close(close)
    # Every client has its own stream: nothing may be stored, or held back to be sent in bulk.
    response.headers["Cache-Control"] = "private, no-store"
    response.headers["X-Accel-Buffering"] = "no"
    return response
