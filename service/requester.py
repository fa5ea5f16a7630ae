"""The client connection of the request being served, and the signal that its client left.

The WSGI layer (service/middleware/request_deadlines.py) sets ``REQUESTER`` for every request; a waiting
long-poll (service/store/notify.py) watches that socket and raises ``ClientGone`` as soon as
the client closes it; the WSGI layer then ends the request without an answer.
"""
from __future__ import annotations

import contextvars
import socket

REQUESTER: contextvars.ContextVar[socket.socket | None] = contextvars.ContextVar(
    "ginrummy_requester", default=None
)


class ClientGone(BaseException):
    """The client of the current request closed its connection: nobody will read an answer.

    A BaseException, so that Flask (which turns every Exception into an error response) lets
    it through once its teardown has run: building, sending and logging answers that nobody
    reads is what made thousands of clients hanging up at once stall a worker for half a
    second."""
