"""The service's gunicorn worker: gunicorn's gevent worker, patched early, with quick shutdowns.

A request runs in a greenlet, so a waiting long-poll holds a few kilobytes of memory and no
thread. Gunicorn itself bounds the wait for a request's headers (its keep-alive loop reads
each request under ``gevent.Timeout(keepalive)``); service/http_limits.py bounds the body.

Named in service/gunicorn_conf.py as ``service.gunicorn_worker.Worker``.
"""
from __future__ import annotations

import gevent
from gevent import monkey, socket
from gunicorn.workers.ggevent import GeventWorker

# A kept-alive connection stays with the worker that accepted it, and a few busy clients (or a
# proxy's pool of upstream connections) could all sit on one worker while the other idles:
# after this many requests a connection is closed (``Connection: close``) and its client
# connects again, to whichever worker accepts first, which is the least busy one.
MAX_REQUESTS_PER_CONNECTION = 100


def patch() -> None:
    """Make the standard library cooperative (idempotent), except ``os``, ``signal`` and
    ``subprocess``: with those patched, gevent takes over SIGCHLD and ``os.waitpid``, and the
    master no longer reaps a worker that died (it stays a zombie and is never replaced)."""
    monkey.patch_all(os=False, signal=False, subprocess=False)


class Worker(GeventWorker):
    """gunicorn's ``gevent`` worker with three changes:

    - ``setup`` (run by gunicorn in the master when it loads the worker class, before the
      ``on_starting`` hook imports the application) patches the standard library there, so
      that every module the workers inherit from the master was imported patched: a lock or
      socket made before patching would block the whole worker instead of one greenlet.
      Each worker patches the same modules again (a no-op by then; patching more would make
      gevent warn that the sets differ).
    - On SIGTERM (and SIGINT, SIGQUIT) every waiting long-poll answers at once instead of
      holding the shutdown for up to its whole wait; so does each one that arrives later
      on a kept-alive connection. A worker that retires after ``max_requests`` lets its
      long-polls end normally: the master has already started its replacement.
    - A connection is closed after MAX_REQUESTS_PER_CONNECTION requests.
    """

    @classmethod
    def setup(cls) -> None:
        patch()

    def patch(self) -> None:
        patch()
        # As gunicorn's: the inherited listening sockets become gevent sockets.
        self.sockets = [socket.socket(s.FAMILY, socket.SOCK_STREAM, fileno=s.sock.detach()) for s in self.sockets]

    def handle_request(self, listener_name, req, sock, addr):
        if req.req_number >= MAX_REQUESTS_PER_CONNECTION:
            req.must_close = True
        return super().handle_request(listener_name, req, sock, addr)

    def handle_exit(self, sig, frame) -> None:
        super().handle_exit(sig, frame)
        # Not from inside the signal handler: waking waiters takes locks.
        gevent.spawn(_stop_waiting)

    def handle_quit(self, sig, frame) -> None:
        super().handle_quit(sig, frame)
        gevent.spawn(_stop_waiting)


def _stop_waiting() -> None:
    from service.store import notify  # late: the worker class loads before any app module

    notify.stop_waiting()
