"""The service's gunicorn worker: gunicorn's gevent worker, patched early, with quick shutdowns.

A request runs in a greenlet, so a waiting long-poll holds a few kilobytes of memory and no
thread. Gunicorn itself bounds the wait for a request's headers (its keep-alive loop reads
each request under ``gevent.Timeout(keepalive)``); service/middleware/request_deadlines.py
bounds the body, and the time a client may take to read each part of its answer.

Named in service/gunicorn_conf.py as ``service.gunicorn_worker.Worker``.
"""
from __future__ import annotations

import select
import struct
import time

import gevent
import gunicorn.util
from gevent import monkey, socket
from gunicorn.workers.ggevent import GeventWorker

from service.requester import unsent_bytes

# A kept-alive connection stays with the worker that accepted it, and a few busy clients (or a
# proxy's pool of upstream connections) could all sit on one worker while the other idles:
# after this many requests a connection is closed (``Connection: close``) and its client
# connects again, to whichever worker accepts first, which is the least busy one.
MAX_REQUESTS_PER_CONNECTION = 100
# After an answer given before the request's body was read in full (413, 408), what the client
# still sends is read and dropped for at most this long and this much, so that it can read the
# answer (see _linger); then the connection closes anyway.
LINGER_SECONDS = 2.0
LINGER_BYTES = 1 << 20
# What the kernel may hold for a client that does not read its answers. Left to itself, Linux
# grows a connection's send buffer up to 4 MiB (net.ipv4.tcp_wmem), so answers fit there, no
# write waits for the client and RESPONSE_SEND_TIMEOUT_SECONDS never applies; and a connection
# closed with answers still unsent stays in the kernel, holding them, as long as the client
# keeps its end open (500 such clients held 1.1 GB of kernel memory). So each connection's
# send buffer is capped at SEND_BUFFER_BYTES (the kernel doubles the figure for its own
# bookkeeping: a connection holds at most ~128 KiB of answers; a 1 MiB file still goes out at
# 2.5 MB/s over a 50 ms round trip), and a connection is closed only once the client has taken
# what was sent, or with a reset after CLOSE_DRAIN_SECONDS, which frees what the kernel holds.
SEND_BUFFER_BYTES = 64 * 1024
CLOSE_DRAIN_SECONDS = 10.0
DRAIN_POLL_SECONDS = 0.05


def patch() -> None:
    """Make the standard library cooperative (idempotent), except ``os``, ``signal`` and
    ``subprocess``: with those patched, gevent takes over SIGCHLD and ``os.waitpid``, and the
    master no longer reaps a worker that died (it stays a zombie and is never replaced)."""
    monkey.patch_all(os=False, signal=False, subprocess=False)


class Worker(GeventWorker):
    """gunicorn's ``gevent`` worker with these changes:

    - ``setup`` (run by gunicorn in the master when it loads the worker class, before the
      ``on_starting`` hook imports the application) patches the standard library there, so
      that every module the workers inherit from the master was imported patched: a lock or
      socket made before patching would block the whole worker instead of one greenlet.
      Each worker patches the same modules again (a no-op by then; patching more would make
      gevent warn that the sets differ).
    - Every waiting long-poll answers at once, instead of holding the worker for up to its
      whole wait, when the worker is told to stop (SIGTERM, SIGINT, SIGQUIT) and when it
      retires after ``max_requests``; so does each one that arrives later on a kept-alive
      connection. A retiring worker accepts no connection until it has exited and the master
      has started its replacement: what it waits for must end soon, or with several workers
      retiring close together nobody accepts.
    - A connection whose client does not take a part of its answer within
      RESPONSE_SEND_TIMEOUT_SECONDS (set by service/middleware/request_deadlines.py) is
      dropped with a reset, which also frees what the kernel holds for it; else the timeout
      is cleared once the answer is written.
    - A connection is closed after MAX_REQUESTS_PER_CONNECTION requests.
    - A connection closed after an answer while the client was still sending (a request's
      body left unread, or further requests sent ahead) lingers first (``_linger``).
    - A connection's send buffer is capped, and it is closed once its client has taken what
      was sent, else reset (``close_when_taken``, which replaces gunicorn's ``util.close`` in
      the worker's process: gunicorn closes every client connection through it).
    """

    @classmethod
    def setup(cls) -> None:
        patch()

    def patch(self) -> None:
        patch()
        # As gunicorn's: the inherited listening sockets become gevent sockets.
        self.sockets = [socket.socket(s.FAMILY, socket.SOCK_STREAM, fileno=s.sock.detach()) for s in self.sockets]
        gunicorn.util.close = close_when_taken

    def handle(self, listener, client, addr):
        try:
            client.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER_BYTES)
        except OSError:  # a transport without send buffers: nothing to cap
            pass
        super().handle(listener, client, addr)

    def handle_request(self, listener_name, req, sock, addr):
        if req.req_number >= MAX_REQUESTS_PER_CONNECTION:
            req.must_close = True
        if self.alive and self.nr + 1 >= self.max_requests:
            # This request makes the worker retire (gunicorn counts it in handle_request);
            # the waiters are woken once this greenlet yields, this request's own included.
            gevent.spawn(_stop_waiting)
        try:
            kept = super().handle_request(listener_name, req, sock, addr)
        except TimeoutError:
            _drop(sock)
            raise StopIteration("the client did not take its answer in time") from None
        except StopIteration:  # gunicorn's way to say the connection closes after the answer
            if _body_left(req) or _input_waiting(sock):
                _linger(sock)
            raise
        if not self.alive:
            # Retiring: the connection would wait up to the keep-alive timeout for another
            # request, holding the exit (the answers say ``Connection: close``, as every
            # answer does once the worker stops: service/middleware/request_deadlines.py).
            raise StopIteration("the worker is retiring")
        sock.settimeout(None)  # back to gunicorn's own deadline for the next request's headers
        return kept

    def handle_exit(self, sig, frame) -> None:
        super().handle_exit(sig, frame)
        # Not from inside the signal handler: waking waiters takes locks.
        gevent.spawn(_stop_waiting)

    def handle_quit(self, sig, frame) -> None:
        super().handle_quit(sig, frame)
        gevent.spawn(_stop_waiting)


def _body_left(req) -> bool:
    """Whether gunicorn's reader of the request's body (by length or by chunks) has not reached
    its end."""
    reader = getattr(getattr(req, "body", None), "reader", None)
    return getattr(reader, "length", 0) > 0 or getattr(reader, "parser", None) is not None


def _input_waiting(sock) -> bool:
    """Whether the client has sent more than the server read (requests sent ahead of their
    answers, on a connection that closes after this one)."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):  # the connection is gone
        return False
    return bool(readable)


def _linger(sock) -> None:
    """Stop sending, then read and drop what the client still sends until it closes, or for
    LINGER_SECONDS or LINGER_BYTES. Closed with unread input, a socket sends a reset, and a
    reset makes the client's kernel drop the answers it has not read yet: a client still
    sending the body of a refused request would get "connection reset" instead of its 413, and
    one that sent requests ahead would lose the answers to those it sent before the last one
    served (RFC 9112, section 9.6). The bounds keep a client from holding the connection this
    way."""
    deadline = time.monotonic() + LINGER_SECONDS
    dropped = 0
    try:
        sock.shutdown(socket.SHUT_WR)
        while dropped < LINGER_BYTES and (left := deadline - time.monotonic()) > 0:
            sock.settimeout(left)
            chunk = sock.recv(65536)
            if not chunk:
                return
            dropped += len(chunk)
    except OSError:  # the time is up, or the client is gone
        pass


def close_when_taken(sock) -> None:
    """Close a client connection once the client has taken everything sent on it; after
    CLOSE_DRAIN_SECONDS, with a reset. Gunicorn's ``util.close`` in the worker: the connection's
    greenlet waits (holding its place among the worker's connections), not the kernel."""
    unsent = 0
    try:
        deadline = time.monotonic() + CLOSE_DRAIN_SECONDS
        while (unsent := unsent_bytes(sock)) and time.monotonic() < deadline:
            gevent.sleep(DRAIN_POLL_SECONDS)
    finally:
        if unsent:
            _drop(sock)
        else:
            try:
                sock.close()
            except OSError:
                pass


def _drop(sock) -> None:
    """Close with a reset (SO_LINGER 0): a plain close would leave the unread answer queued in
    the kernel, retried for minutes."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
    except OSError:
        pass


def _stop_waiting() -> None:
    from service.store import shutdown  # late: the worker class loads before any app module

    shutdown.stop_waiting()
