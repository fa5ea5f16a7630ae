"""Deadlines on what a client sends and takes, as WSGI middleware around the app.

Under gunicorn's gevent worker a connection costs a greenlet, so a client that sends slowly
costs little, but it must not be able to hold its connection for ever: gunicorn bounds the
wait for each request's headers (its keep-alive timeout), and ``RequestDeadlines`` bounds the
body: the whole body (at most MAX_CONTENT_LENGTH + 1 bytes) is read before the app runs, and
a body that has not arrived within ``body_seconds`` is answered with 408
``request_timeout`` and the connection is closed, as it is after the app's 413 for a body
over the cap, which is left (partly) unread (the worker lingers first, reading and dropping
what the client still sends, so that it reads its answer: service/gunicorn_worker.py).

Nor may a client hold a connection by not reading: once the app has answered, the connection
gets a socket timeout of ``send_seconds``, so every write of the answer that waits longer for
the client to take it fails, and the worker drops the connection
(service/gunicorn_worker.py). Such a client would otherwise keep its answers in the kernel's
send buffers (megabytes each) and, when the worker retires, hold the whole worker in its
graceful shutdown.

It also tells the long-poll waiters (service/store/notify.py) which connection the request
came on, so that a waiter whose client hangs up stops at once; that request then ends without
an answer, handed to the server as a connection reset. For a streamed answer (a live stream,
``requester.mark_streamed``) it does so while each part of the body is made too, since the
stream waits then, after the app has returned.

Outside gevent (Werkzeug's development server, tests) the body is left to the app as before:
there a blocking read cannot be interrupted, and the development server is not exposed.
"""
from __future__ import annotations

import errno
import io
import logging
import random
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from service.middleware.security_headers import DATA_ANSWER_HEADERS
from service.middleware.request_ids import REQUEST_ID_HEADER, chosen_request_id
from service.problems import PROBLEM_MIMETYPE, problem_body
from service.requester import REQUESTER, STREAMED, ClientGone
from service.store import notify

log = logging.getLogger(__name__)

DEFAULT_BODY_SECONDS = 10.0
DEFAULT_SEND_SECONDS = 10.0
READ_SIZE = 65536
# A body's deadline is drawn between this share of body_seconds and the whole of it. Slow
# clients that connected together (an attack's opening burst) would otherwise all be answered
# 408, and reconnect, in the same instant, and every other request of the worker would wait
# behind that wave (3,000 slow bodies on 2 workers: /healthz 230 ms, 2026-12-04).
BODY_DEADLINE_SPREAD = 0.8

WsgiApp = Callable[[dict, Callable], Iterable[bytes]]


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
        if client is None or not _gevent_active():
            return self._answer(environ, start_response, client)
        try:
            whole = _read_body_before_deadline(environ, self.body_seconds, self.max_body_bytes)
        except _BodyTooSlow:
            _close_after_answer(start_response)
            answer = _timed_out(environ, start_response, self.body_seconds)
        else:
            # Over the cap, the app answers 413; with a transfer coding it does not take, 501,
            # and the rest of the connection cannot be read as requests either.
            if not whole or unsupported_codings(environ.get("HTTP_TRANSFER_ENCODING", "")):
                _close_after_answer(start_response)
            answer = self._answer(environ, start_response, client)
        if notify.stopping():
            # The worker closes every connection after its answer from now on (it is retiring
            # or stopping): say so in the answer, or a client could send its next request on
            # a connection about to close and get a reset instead of an answer.
            _close_after_answer(start_response)
        # Set only now: the app's own wait (a long-poll) is not the client's to hurry. The
        # worker clears it once the answer is written.
        client.settimeout(self.send_seconds)
        return answer

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
    """Replace ``wsgi.input`` by the body read into memory within ``seconds``; False when the
    body is over ``cap`` and so left (partly) unread.

    Raises _BodyTooSlow when the body has not arrived in time."""
    import gevent

    declared = _content_length(environ)
    chunked = "chunked" in transfer_codings(environ.get("HTTP_TRANSFER_ENCODING", ""))
    if declared is None and not chunked:
        return True  # no body
    if declared is not None and cap is not None and declared > cap:
        return False  # refused unread by the app (413)
    limit = declared if declared is not None else (cap + 1 if cap is not None else None)
    stream = environ["wsgi.input"]
    chunks: list[bytes] = []
    with gevent.Timeout(seconds * random.uniform(BODY_DEADLINE_SPREAD, 1.0), _BodyTooSlow):
        remaining = limit
        while remaining is None or remaining > 0:
            chunk = stream.read(READ_SIZE if remaining is None else min(remaining, READ_SIZE))
            if not chunk:
                break
            chunks.append(chunk)
            if remaining is not None:
                remaining -= len(chunk)
    environ["wsgi.input"] = io.BytesIO(b"".join(chunks))
    # A chunked body read to one byte past the cap may go on.
    return declared is not None or remaining != 0


def _content_length(environ: dict) -> int | None:
    raw = environ.get("CONTENT_LENGTH", "")
    try:
        return int(raw) if raw else None
    except ValueError:
        return None  # gunicorn refuses a malformed length before the app runs


def _timed_out(environ: dict, start_response: Callable, seconds: float) -> Iterable[bytes]:
    """408 (the caller closes the connection after it)."""
    request_id = chosen_request_id(environ.get("HTTP_X_REQUEST_ID", ""))
    log.info("request body not received within %.0f s: %s %s (request %s)", seconds,
             environ.get("REQUEST_METHOD"), environ.get("PATH_INFO"), request_id)
    body = problem_body(408, "request_timeout", "Request body too slow",
                        f"the request body did not arrive within {seconds:g} s").encode()
    start_response("408 Request Timeout", [("Content-Type", PROBLEM_MIMETYPE), ("Content-Length", str(len(body))),
                                           (REQUEST_ID_HEADER, request_id), *DATA_ANSWER_HEADERS])
    return [body]


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
