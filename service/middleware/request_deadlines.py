"""Deadlines on what a client sends and takes, as WSGI middleware around the app.

Under gunicorn's gevent worker a connection costs a greenlet, so a client that sends slowly
costs little, but it must not be able to hold its connection for ever: gunicorn bounds the
wait for each request's headers (its keep-alive timeout), and ``RequestDeadlines`` bounds the
body: the whole body (at most MAX_CONTENT_LENGTH + 1 bytes) is read before the app runs, and
a body that has not arrived within ``body_seconds`` is answered by the app with 408
``request_timeout`` (so that the answer is logged, counted and carries the headers of every
other answer) and the connection is closed, as it is after the app's 413 for a body over the
cap, which is left (partly) unread (the worker lingers first, reading and dropping what the
client still sends, so that it reads its answer: service/gunicorn_worker.py).

Nor may a client hold a connection by not reading: once the app has answered, the connection
gets a socket timeout of ``send_seconds``, so every write of the answer that waits longer for
the client to take it fails, and the worker drops the connection
(service/gunicorn_worker.py). Such a client would otherwise keep its answers in the kernel's
send buffers (megabytes each) and, when the worker retires, hold the whole worker in its
graceful shutdown.

It also tells the long-poll waiters (service/store/hangups.py) which connection the request
came on, so that a waiter whose client hangs up stops at once; that request then ends without
an answer, handed to the server as a connection reset. For a streamed answer (a live stream,
``requester.mark_streamed``) it does so while each part of the body is made too, since the
stream waits then, after the app has returned.

Under Werkzeug's threaded server (``ginrummy serve``) the body is read before the app runs
too, each wait on the socket bounded by what is left of ``body_seconds`` (a chunked body's
waits only by ``body_seconds`` each), and the answer gets ``send_seconds`` per write. Without
a socket (Flask's test client) the body is left to the app.
"""
from __future__ import annotations

import errno
import io
import random
import socket
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import flask

from service.problems import problem
from service.requester import REQUESTER, STREAMED, ClientGone
from service.store import shutdown

DEFAULT_BODY_SECONDS = 10.0
DEFAULT_SEND_SECONDS = 10.0
READ_SIZE = 65536
# A body's deadline is drawn between this share of body_seconds and the whole of it. Slow
# clients that connected together (an attack's opening burst) would otherwise all be answered
# 408, and reconnect, in the same instant, and every other request of the worker would wait
# behind that wave (3,000 slow bodies on 2 workers: /healthz 230 ms, 2026-12-04).
BODY_DEADLINE_SPREAD = 0.8

# Where the middleware leaves, for the app, the deadline a body missed (in seconds).
LATE_BODY = "ginrummy.late_body_seconds"

WsgiApp = Callable[[dict, Callable], Iterable[bytes]]


def init_request_deadlines(app: flask.Flask, body_seconds: float = DEFAULT_BODY_SECONDS,
                           send_seconds: float = DEFAULT_SEND_SECONDS) -> None:
    """Read every body of ``app`` before it runs, within ``body_seconds``, and answer a late
    one with 408; give each answer ``send_seconds`` per write. Wraps ``app.wsgi_app``: nothing
    may wrap it after this call, the deadlines must see the request first."""
    app.before_request(_answer_late_body)
    app.wsgi_app = RequestDeadlines(app.wsgi_app, body_seconds, app.config.get("MAX_CONTENT_LENGTH"), send_seconds)


def _answer_late_body() -> flask.Response | None:
    """Before-request hook: the 408 of a request whose body missed its deadline."""
    seconds = flask.request.environ.get(LATE_BODY)
    if seconds is None:
        return None
    return problem(408, "request_timeout", "Request body too slow",
                   f"the request body did not arrive within {seconds:g} s", {"seconds": seconds})


class RequestDeadlines:
    """WSGI middleware: read the body within ``body_seconds``; give the answer ``send_seconds``
    per write; expose the client socket.

    ``max_body_bytes`` is the app's body cap: a declared length above it is not read (the
    app answers 413 without reading); a chunked body is read up to one byte past it, so the
    app can still tell it is too large."""

    def __init__(self, app: WsgiApp, body_seconds: float = DEFAULT_BODY_SECONDS,
                 max_body_bytes: int | None = None, send_seconds: float = DEFAULT_SEND_SECONDS) -> None:
        self.app = app
        self.body_seconds = body_seconds
        self.max_body_bytes = max_body_bytes
        self.send_seconds = send_seconds

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        client = environ.get("gunicorn.socket")
        if client is not None and _gevent_active():
            return self._under_gevent(environ, start_response, client)
        connection = environ.get("werkzeug.socket")
        if connection is not None:
            return self._under_threads(environ, start_response, connection)
        return self._answer(environ, start_response, None)

    def _under_gevent(self, environ: dict, start_response: Callable, client: Any) -> Iterable[bytes]:
        try:
            whole = _read_body_before_deadline(environ, self.body_seconds, self.max_body_bytes)
        except _BodyTooSlow:
            _left_for_the_app(environ, self.body_seconds)
            whole = False
        # Over the cap, the app answers 413; late, 408; with a transfer coding it does not take,
        # 501; and the rest of the connection cannot be read as requests either.
        if not whole or unsupported_codings(environ.get("HTTP_TRANSFER_ENCODING", "")):
            _close_after_answer(start_response)
        answer = self._answer(environ, start_response, client)
        if shutdown.stopping():
            # The worker closes every connection after its answer from now on (it is retiring
            # or stopping): say so in the answer, or a client could send its next request on
            # a connection about to close and get a reset instead of an answer.
            _close_after_answer(start_response)
        # Set only now: the app's own wait (a long-poll) is not the client's to hurry. The
        # worker clears it once the answer is written.
        client.settimeout(self.send_seconds)
        return answer

    def _under_threads(self, environ: dict, start_response: Callable, connection: socket.socket) -> Iterable[bytes]:
        # Werkzeug's server closes every connection after its answer: nothing to force here.
        try:
            _read_body_by_socket_timeouts(environ, connection, self.body_seconds, self.max_body_bytes)
        except _BodyTooSlow:
            _left_for_the_app(environ, self.body_seconds)
        connection.settimeout(self.send_seconds)
        return self._answer(environ, start_response, None)

    def _answer(self, environ: dict, start_response: Callable, client: Any) -> Iterable[bytes]:
        with _client_of(client):
            answer = self.app(environ, start_response)
        if client is not None and environ.get(STREAMED):
            return _Streamed(answer, client)
        return answer


@contextmanager
def _client_of(client: Any) -> Iterator[None]:
    """``client`` as the request's connection (REQUESTER) while inside; a ClientGone raised
    inside ends the request as a connection reset."""
    token = REQUESTER.set(client)
    try:
        yield
    except ClientGone as gone:
        # Its traceback holds Flask's frames, one of which holds it: a cycle that only the
        # garbage collector frees (after thousands of hang-ups, a 0.1-0.2 s pass).
        gone.__traceback__ = None
        # A server closes a connection that reset without writing or logging an answer
        # (gunicorn logs it at debug level).
        raise ConnectionResetError(errno.ECONNRESET, "the client closed its connection") from None
    finally:
        REQUESTER.reset(token)


class _Streamed:
    """A streamed body, each part made with the client's connection known (``_client_of``)."""

    def __init__(self, body: Iterable[bytes], client: Any) -> None:
        self._body = body
        self._parts = iter(body)
        self._client = client

    def __iter__(self) -> _Streamed:
        return self

    def __next__(self) -> bytes:
        with _client_of(self._client):
            return next(self._parts)

    def close(self) -> None:
        close = getattr(self._body, "close", None)
        if close is not None:
            close()


class _BodyTooSlow(Exception):
    pass


def transfer_codings(header: str) -> list[str]:
    """The codings named by a Transfer-Encoding header, lowercase."""
    return [coding.strip().lower() for coding in header.split(",") if coding.strip()]


def unsupported_codings(header: str) -> bool:
    """Whether a Transfer-Encoding header names a coding other than chunked (the only one the
    service takes: gunicorn removes the chunking and would hand on gzip'd bytes as the body)."""
    return any(coding != "chunked" for coding in transfer_codings(header))


def _read_body_before_deadline(environ: dict, seconds: float, cap: int | None) -> bool:
    """(gevent) Replace ``wsgi.input`` by the body read into memory within ``seconds``; False
    when the body is over ``cap`` and so left (partly) unread.

    Raises _BodyTooSlow when the body has not arrived in time."""
    import gevent

    if not _has_body(environ):
        return True  # no timer for the many requests without a body
    with gevent.Timeout(seconds * random.uniform(BODY_DEADLINE_SPREAD, 1.0), _BodyTooSlow):
        return _read_body(environ, cap)


def _read_body_by_socket_timeouts(environ: dict, connection: socket.socket, seconds: float, cap: int | None) -> bool:
    """(threads) As ``_read_body_before_deadline``, each read of ``connection`` waiting at most
    what is left of ``seconds``."""
    if not _has_body(environ):
        return True
    deadline = time.monotonic() + seconds

    def before_read() -> None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise _BodyTooSlow()
        connection.settimeout(left)

    try:
        return _read_body(environ, cap, before_read)
    except (TimeoutError, socket.timeout):
        raise _BodyTooSlow() from None


def _read_body(environ: dict, cap: int | None, before_read: Callable[[], None] = lambda: None) -> bool:
    """Replace ``wsgi.input`` by the body (there is one) read into memory; False when the body
    is over ``cap`` and so left (partly) unread. ``before_read`` runs before each read."""
    declared = _content_length(environ)
    if declared is not None and cap is not None and declared > cap:
        return False  # refused unread by the app (413)
    limit = declared if declared is not None else (cap + 1 if cap is not None else None)
    stream = environ["wsgi.input"]
    # One read of the socket at most per call where the stream offers it (a buffered file's
    # read waits until it has all it was asked for).
    read = getattr(stream, "read1", stream.read)
    chunks: list[bytes] = []
    remaining = limit
    while remaining is None or remaining > 0:
        before_read()
        chunk = read(READ_SIZE if remaining is None else min(remaining, READ_SIZE))
        if not chunk:
            break
        chunks.append(chunk)
        if remaining is not None:
            remaining -= len(chunk)
    environ["wsgi.input"] = io.BytesIO(b"".join(chunks))
    # A chunked body read to one byte past the cap may go on.
    return declared is not None or remaining != 0


def _has_body(environ: dict) -> bool:
    return _content_length(environ) is not None or _is_chunked(environ)


def _is_chunked(environ: dict) -> bool:
    return "chunked" in transfer_codings(environ.get("HTTP_TRANSFER_ENCODING", ""))


def _left_for_the_app(environ: dict, seconds: float) -> None:
    """Have the app answer 408 for a body that missed its deadline of ``seconds``; what came
    of it is dropped."""
    environ[LATE_BODY] = seconds
    environ["wsgi.input"] = io.BytesIO()


def _content_length(environ: dict) -> int | None:
    raw = environ.get("CONTENT_LENGTH", "")
    try:
        return int(raw) if raw else None
    except ValueError:
        return None  # malformed: gunicorn refuses it before the app runs, the app's body limit after


def _close_after_answer(start_response: Callable) -> None:
    """Make gunicorn close the connection after this answer (its ``Connection: close``): the
    rest of the body is not read, and on a kept-alive connection gunicorn would read it all
    (up to its keep-alive timeout) before the next request. Gunicorn drops a ``Connection``
    header set by the app; its response object, whose method ``start_response`` is, has
    ``force_close`` instead."""
    force_close = getattr(getattr(start_response, "__self__", None), "force_close", None)
    if force_close is not None:
        force_close()


def _gevent_active() -> bool:
    try:
        from gevent.monkey import is_module_patched
    except ImportError:
        return False
    return is_module_patched("socket")
