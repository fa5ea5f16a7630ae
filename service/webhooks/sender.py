"""One delivery attempt: resolve, vet, connect (or reuse a kept connection), POST the
signed body, read the status.

The request is written in one piece (one write, one packet for a small body: http.client
would write its head and body apart) and only as much of the answer is read as answers.py
needs. The attempt is bounded in every way a
receiver could stretch it: a name is resolved within the deadline, each connect takes at
most ``connect_timeout``, and every later socket call is bounded by the time left until
``total_timeout`` (see connections.py: a receiver trickling bytes cannot renew a timeout).
At most ``MAX_BODY_BYTES`` of a body are read; redirects are not followed (a 3xx is a
failure like any other non-2xx).
"""
from __future__ import annotations

import http.client
import re
import socket
import ssl
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from importlib import metadata
from urllib.parse import urlsplit

from service.webhooks.addresses import ResolutionError, Resolved, is_forbidden, resolve
from service.webhooks.answers import read_answer
from service.webhooks.connections import Connection, DeadlineSocket, IdleConnections, Origin
from service.webhook_signing import WebhookSecret

CONNECT_TIMEOUT_SECONDS = 3.0
TOTAL_TIMEOUT_SECONDS = 10.0
DEFAULT_PORTS = {"http": 80, "https": 443}
# Nothing written into the request's first line or a header may end it early: no control
# characters, spaces or non-ASCII (the service never stores such a URL or id; an entry
# written by anyone else is refused rather than sent).
_UNSAFE = re.compile(r"[^!-~]")


def _user_agent() -> str:
    try:
        version = metadata.version("ginrummy-service")
    except metadata.PackageNotFoundError:
        version = "dev"
    return f"ginrummy-webhooks/{version}"


USER_AGENT = _user_agent()


class Outcome(str, Enum):
    """How an attempt ended."""

    DELIVERED = "delivered"  # a 2xx answer
    FAILED = "failed"  # worth trying again later: no answer, a timeout, a non-2xx answer
    REFUSED = "refused"  # never worth retrying as it is: a forbidden address, an unusable URL


@dataclass(frozen=True)
class Attempt:
    """The result of one attempt. ``reason`` is short, safe to log (no body, no secret,
    no path or query of the URL) and empty on success; ``status`` is the HTTP status if
    one was received."""

    outcome: Outcome
    reason: str = ""
    status: int | None = None


Resolver = Callable[[str, int, float], list[Resolved]]


class Sender:
    """Sends signed webhooks, one attempt per call; safe to share between threads.

    ``allow_private`` lets deliveries reach private and loopback addresses (tests, or a
    receiver inside the cluster). ``resolver`` and ``ssl_context`` are replaceable for
    tests; ``clock`` gives the webhook-timestamp (seconds since the epoch); ``idle`` keeps
    connections between deliveries. ``close`` it when done."""

    def __init__(
        self,
        secret: WebhookSecret,
        *,
        allow_private: bool = False,
        connect_timeout: float = CONNECT_TIMEOUT_SECONDS,
        total_timeout: float = TOTAL_TIMEOUT_SECONDS,
        resolver: Resolver = resolve,
        ssl_context: ssl.SSLContext | None = None,
        clock: Callable[[], float] = time.time,
        idle: IdleConnections | None = None,
    ) -> None:
        self._secret = secret
        self._allow_private = allow_private
        self._connect_timeout = connect_timeout
        self._total_timeout = total_timeout
        self._resolver = resolver
        self._ssl_context = ssl_context or ssl.create_default_context()
        self._clock = clock
        self._idle = idle or IdleConnections()

    def deliver(self, url: str, webhook_id: str, body: str) -> Attempt:
        """POST ``body`` to ``url``, signed for ``webhook_id`` at the current time.

        Never raises for anything the network or the receiver does: every ending is an
        Attempt."""
        return self.deliver_together([(url, webhook_id, body)])[0]

    def deliver_together(self, requests: Sequence[tuple[str, str, str]]) -> list[Attempt]:
        """``deliver`` for each (url, webhook id, body), at once: every request goes out, each
        on a connection of its own, before any answer is read, so the receiver handles them
        side by side and the thread sleeps once for all their answers rather than once for
        each (8 at once to a receiver on loopback: a third fewer context switches per
        delivery in the worker, a fifth less CPU per request in the receiver). One deadline,
        from the start of the call, bounds them all. Plain HTTP/1.1: one request at a time
        on a connection, never pipelined.

        Never raises for anything the network or the receivers do: one Attempt per request,
        in order."""
        deadline = time.monotonic() + self._total_timeout
        targets: dict[str, _Target | Attempt] = {}
        sent = []
        for url, webhook_id, body in requests:
            if url not in targets:
                targets[url] = self._target(url, deadline)
            target = targets[url]
            if isinstance(target, Attempt):
                sent.append(target)
            elif not webhook_id or _UNSAFE.search(webhook_id):
                sent.append(Attempt(Outcome.REFUSED, "unusable webhook id"))
            else:
                sent.append(self._send(target, self._request(target.netloc, target.path, webhook_id, body), deadline))
        return [self._receive(step, deadline) if isinstance(step, _InFlight) else step for step in sent]

    def _target(self, url: str, deadline: float) -> _Target | Attempt:
        """Where ``url`` leads: its vetted addresses, or the Attempt that ends there."""
        parts = urlsplit(url)
        try:
            port = parts.port or DEFAULT_PORTS.get(parts.scheme, 0)
        except ValueError:
            port = 0
        if (parts.scheme not in DEFAULT_PORTS or not parts.hostname or not port or "@" in parts.netloc
                or _UNSAFE.search(url)):
            return Attempt(Outcome.REFUSED, "unusable callback URL")
        host = parts.hostname
        try:
            addresses = self._resolver(host, port, _remaining(deadline))
        except ResolutionError as error:
            return Attempt(Outcome.FAILED, f"dns: {error}")
        if not self._allow_private:
            forbidden = [str(item.address) for item in addresses if is_forbidden(item.address)]
            if forbidden:
                return Attempt(Outcome.REFUSED, f"forbidden address {forbidden[0]}")
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return _Target((parts.scheme, host, port), addresses, parts.netloc, path)

    def _send(self, target: _Target, request: bytes, deadline: float) -> _InFlight | Attempt:
        """Send ``request`` on a kept connection to the target, or on a new one."""
        kept = self._idle.take([(target.origin, item.sockaddr) for item in target.addresses])
        if kept is not None:
            try:
                return _send_on(target, kept, request, deadline)
            except OSError as error:
                kept.close()
                if not _closed_while_idle(kept, error, deadline):
                    return _failure(error)
        try:
            connection = self._open(target.origin, target.addresses, deadline)
        except TimeoutError:
            return Attempt(Outcome.FAILED, "timeout: connect")
        except ssl.SSLError as error:
            return Attempt(Outcome.FAILED, f"tls: {_describe(error)}")
        except OSError as error:
            return Attempt(Outcome.FAILED, f"connect: {_describe(error)}")
        try:
            return _send_on(target, connection, request, deadline)
        except OSError as error:
            connection.close()
            return _failure(error)

    def _receive(self, in_flight: _InFlight, deadline: float) -> Attempt:
        """Read the answer to a request sent, then keep its connection for the next request
        or close it."""
        connection = in_flight.connection
        try:
            answer = read_answer(connection.socket.reader)
        except (OSError, http.client.HTTPException, ValueError) as error:
            connection.close()
            if not _closed_while_idle(connection, error, deadline):
                return _failure(error)
            again = self._send(in_flight.target, in_flight.request, deadline)
            return self._receive(again, deadline) if isinstance(again, _InFlight) else again
        delivered = 200 <= answer.status < 300
        # Kept only when the whole answer was read and nothing went wrong: whatever is
        # left unread on a connection would be taken for the next answer.
        if delivered and answer.reusable:
            self._idle.give_back(connection)
        else:
            connection.close()
        if delivered:
            return Attempt(Outcome.DELIVERED, status=answer.status)
        return Attempt(Outcome.FAILED, f"http {answer.status}", answer.status)

    def close(self) -> None:
        """Close the connections kept for later deliveries."""
        self._idle.close()

    def _open(self, origin: Origin, addresses: list[Resolved], deadline: float) -> Connection:
        """A connection to the first vetted address that accepts one (TLS set up for
        https). Raises OSError (TimeoutError when the deadline passed) for the last
        address's failure."""
        scheme, host, port = origin
        failure: OSError = TimeoutError("no time left")
        for item in addresses:
            timeout = min(self._connect_timeout, _remaining(deadline))
            if timeout <= 0:
                raise TimeoutError("no time left")
            sock = socket.socket(item.family, socket.SOCK_STREAM)
            sock.settimeout(timeout)
            try:
                sock.connect(item.sockaddr)
            except OSError as error:
                sock.close()
                failure = error
                continue
            break
        else:
            raise failure
        try:
            # A request longer than a packet would otherwise keep its last part back until
            # the receiver acknowledges the first (a delayed ACK: 40 ms on Linux).
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if scheme == "https":
                # The certificate is checked against the name, and SNI carries it, although
                # the socket was opened to the vetted address.
                sock.settimeout(max(_remaining(deadline), 0.001))
                sock = self._ssl_context.wrap_socket(sock, server_hostname=host)
        except OSError:
            sock.close()
            raise
        return Connection(((scheme, host, port), item.sockaddr), DeadlineSocket(sock))

    def _request(self, netloc: str, path: str, webhook_id: str, body: str) -> bytes:
        payload = body.encode()
        signed = self._secret.headers(webhook_id, int(self._clock()), body)
        head = "".join(f"{name}: {value}\r\n" for name, value in signed.items())
        return (
            f"POST {path} HTTP/1.1\r\nHost: {netloc}\r\nContent-Type: application/json\r\n"
            f"User-Agent: {USER_AGENT}\r\nAccept-Encoding: identity\r\n{head}"
            f"Content-Length: {len(payload)}\r\n\r\n"
        ).encode() + payload

# What a receiver closing a kept-alive connection looks like to the next request on it.
_CLOSED_WHEN_IDLE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


@dataclass(frozen=True)
class _Target:
    """A callback URL's origin and request path, with the addresses its host resolved to
    (vetted)."""

    origin: Origin
    addresses: list[Resolved]
    netloc: str
    path: str


@dataclass(frozen=True)
class _InFlight:
    """A request sent on ``connection``, its answer not read yet."""

    target: _Target
    connection: Connection
    request: bytes


def _send_on(target: _Target, connection: Connection, request: bytes, deadline: float) -> _InFlight:
    connection.socket.deadline = deadline
    connection.socket.sendall(request)
    return _InFlight(target, connection, request)


def _closed_while_idle(connection: Connection, error: BaseException, deadline: float) -> bool:
    """Whether ``error`` shows a kept connection that the receiver closed while it was idle
    (it may, at any moment), before any answer, with time left for a new connection."""
    return connection.reused and isinstance(error, _CLOSED_WHEN_IDLE) and _remaining(deadline) > 0


def _failure(error: BaseException) -> Attempt:
    if isinstance(error, TimeoutError):
        return Attempt(Outcome.FAILED, "timeout")
    kind = "tls" if isinstance(error, ssl.SSLError) else "http"
    return Attempt(Outcome.FAILED, f"{kind}: {_describe(error)}")


def _remaining(deadline: float) -> float:
    return deadline - time.monotonic()


def _describe(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    return text[:200]
