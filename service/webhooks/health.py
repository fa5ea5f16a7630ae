"""The worker's small HTTP server: /healthz, /readyz and /metrics for Kubernetes and Prometheus.

- ``GET /healthz``: 200 while the process runs (liveness must not depend on Redis, or a
  Redis outage would restart every worker);
- ``GET /readyz``: 200 when Redis answers a PING, else 503;
- ``GET /metrics``: the worker's metrics in the Prometheus text format; with METRICS_TOKEN set,
  only for ``Authorization: Bearer <token>`` (else 401), as the service's own /metrics.

Probes and scrapes are few and quick, so what a client can make this server hold is small: a
thread per connection, at most ``max_connections`` of them (a further connection is closed
at once), each closed when it sends nothing for ``idle_seconds``.
"""
from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4

from service.observability.bearer import (
    METRICS_CHALLENGE,
    REFUSAL_CODE,
    REFUSAL_DETAIL,
    REFUSAL_TITLE,
    bearer_matches,
)
from service.problems import PROBLEM_MIMETYPE, problem_body

MAX_CONNECTIONS = 16
IDLE_SECONDS = 5.0


class HealthServer:
    """Serves the three endpoints on ``host``:``port`` from a daemon thread.

    ``is_ready`` answers /readyz; ``metrics`` returns the /metrics text, for requests bearing
    ``metrics_token`` when it is set. Raises OSError when the port cannot be bound."""

    def __init__(self, host: str, port: int, is_ready: Callable[[], bool], metrics: Callable[[], bytes], *,
                 metrics_token: str | None = None, max_connections: int = MAX_CONNECTIONS,
                 idle_seconds: float = IDLE_SECONDS) -> None:
        handler = type("Handler", (_Handler,), {
            "is_ready": staticmethod(is_ready), "metrics": staticmethod(metrics),
            "metrics_token": metrics_token, "timeout": idle_seconds,
        })
        self._server = _BoundedServer((host, port), handler, max_connections)
        self._thread = threading.Thread(target=self._server.serve_forever, name="worker-http", daemon=True)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def start(self) -> HealthServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class _BoundedServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], max_connections: int) -> None:
        super().__init__(address, handler)
        self._slots = threading.BoundedSemaphore(max_connections)

    def process_request(self, request: socket.socket, client_address: tuple) -> None:
        if not self._slots.acquire(blocking=False):
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: socket.socket, client_address: tuple) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


class _Handler(BaseHTTPRequestHandler):
    is_ready: Callable[[], bool]
    metrics: Callable[[], bytes]
    metrics_token: str | None
    server_version = "ginrummy-worker"

    def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
        if self.path == "/healthz":
            self._answer(200, "application/json", json.dumps({"status": "ok"}).encode())
        elif self.path == "/readyz":
            ready = self.is_ready()
            body = json.dumps({"status": "ok" if ready else "unavailable", "redis": "ok" if ready else "down"})
            self._answer(200 if ready else 503, "application/json", body.encode())
        elif self.path == "/metrics":
            if self.metrics_token and not bearer_matches(self.headers.get("Authorization", ""), self.metrics_token):
                body = problem_body(401, REFUSAL_CODE, REFUSAL_TITLE, REFUSAL_DETAIL).encode()
                self._answer(401, PROBLEM_MIMETYPE, body, {"WWW-Authenticate": METRICS_CHALLENGE})
            else:
                self._answer(200, CONTENT_TYPE_PLAIN_0_0_4, self.metrics())
        else:
            self._answer(404, "application/json", json.dumps({"status": "not found"}).encode())

    def _answer(self, status: int, content_type: str, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's name
        # Probes and scrapes every few seconds would drown the delivery log.
        pass
