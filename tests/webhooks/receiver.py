"""A webhook receiver on loopback that verifies every delivery with the standardwebhooks library.

Each request is recorded (verified or not) before it is answered; ``answer`` decides the
answer per request: an HTTP status, or ``HANG`` to hold the request until ``release()``.
"""
from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

HANG = "hang"


class _Server(ThreadingHTTPServer):
    """Takes as many waiting connections as a real receiver would: with the standard
    library's listen backlog of 5, two workers' 64 simultaneous deliveries saw connections
    dropped and attempts time out on a busy machine."""

    request_queue_size = 128
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        # A sender that gave up on an attempt (a timeout, a test's hung answer) closes or
        # resets its connection: expected here, not worth a traceback in the test output.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@dataclass(frozen=True)
class Received:
    """One request as the receiver saw it."""

    path: str
    headers: dict[str, str]
    body: str
    verified: bool
    payload: object | None
    peer: tuple = ()  # the sender's address and port: which connection carried it
    arrived: float = field(default_factory=time.monotonic)

    @property
    def webhook_id(self) -> str:
        return self.headers.get("webhook-id", "")

    @property
    def timestamp(self) -> int:
        return int(self.headers.get("webhook-timestamp", "0"))


Answer = Callable[[Received, int], "int | str"]


def always(status: int) -> Answer:
    return lambda request, count: status


class Receiver:
    """An HTTP server on 127.0.0.1 recording webhook deliveries.

    ``answer(request, count)`` gets the request and how many requests with its webhook-id
    arrived so far (this one included)."""

    def __init__(self, secret: str, answer: Answer = always(200)) -> None:
        self.answer = answer
        self.received: list[Received] = []
        self._verifier = Webhook(secret)
        self._changed = threading.Condition()
        self._released = threading.Event()
        handler = type("Handler", (_Handler,), {"receiver": self})
        self._server = _Server(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def url(self, path: str = "/hooks/gin?tenant=7", host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def start(self) -> Receiver:
        self._thread.start()
        return self

    def close(self) -> None:
        self.release()
        self._server.shutdown()
        self._server.server_close()

    def release(self) -> None:
        """Let every held (HANG) request answer 200, now and from now on."""
        self._released.set()

    def ids(self) -> list[str]:
        with self._changed:
            return [request.webhook_id for request in self.received]

    def wait_for(self, predicate: Callable[[list[Received]], bool], timeout: float = 10.0) -> list[Received]:
        """The requests so far once ``predicate(requests)`` holds; AssertionError on timeout."""
        with self._changed:
            if not self._changed.wait_for(lambda: predicate(self.received), timeout):
                raise AssertionError(f"receiver: condition not met within {timeout} s; got {len(self.received)} requests")
            return list(self.received)

    def wait_for_count(self, count: int, timeout: float = 10.0) -> list[Received]:
        return self.wait_for(lambda received: len(received) >= count, timeout)

    def _record(self, request: Received) -> int:
        with self._changed:
            self.received.append(request)
            self._changed.notify_all()
            return sum(1 for other in self.received if other.webhook_id == request.webhook_id)

    def _verify(self, body: str, headers: dict[str, str]) -> tuple[bool, object | None]:
        try:
            return True, self._verifier.verify(body, headers)
        except (WebhookVerificationError, ValueError):
            return False, None


class _Handler(BaseHTTPRequestHandler):
    receiver: Receiver
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length).decode()
        headers = {name.lower(): value for name, value in self.headers.items()}
        verified, payload = self.receiver._verify(body, headers)
        request = Received(self.path, headers, body, verified, payload, self.client_address)
        count = self.receiver._record(request)
        answer = self.receiver.answer(request, count)
        if answer == HANG:
            self.receiver._released.wait(60)
            answer = 200
        try:
            reply = json.dumps({"ok": answer < 300}).encode()
            self.send_response(int(answer))
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)
        except OSError:
            pass  # the sender gave up on this request already

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass
