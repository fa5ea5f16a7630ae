"""The client connection of the request being served, and the signal that its client left.

The WSGI layer (service/middleware/request_deadlines.py) sets ``REQUESTER`` for every request, and for a
streamed answer (one whose view called ``mark_streamed``) while each part of its body is made
too; a waiting long-poll or stream watches that socket (service/store/hangups.py) and raises
``ClientGone`` as soon as the client closes it; the WSGI layer then ends the request without an
answer, or the stream where it is.
"""
from __future__ import annotations

import contextvars
import fcntl
import socket
import struct
import termios

REQUESTER: contextvars.ContextVar[socket.socket | None] = contextvars.ContextVar(
    "ginrummy_requester", default=None
)


class ClientGone(BaseException):
    """The client of the current request closed its connection: nobody will read an answer.

    A BaseException, so that Flask (which turns every Exception into an error response) lets
    it through once its teardown has run: building, sending and logging answers that nobody
    reads is what made thousands of clients hanging up at once stall a worker for half a
    second."""


# The WSGI environ key a view sets when its answer is a stream made while it is sent.
STREAMED = "ginrummy.streamed"


def mark_streamed(environ: dict) -> None:
    """Keep the client's connection known (``REQUESTER``) while the answer's body is made."""
    environ[STREAMED] = True


def unsent_bytes(sock) -> int:
    """Bytes written to ``sock`` that its client has not acknowledged yet (Linux's SIOCOUTQ);
    0 when the socket is closed or the platform cannot tell."""
    try:
        return struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0"))[0]
    except (OSError, ValueError, AttributeError):
        return 0
