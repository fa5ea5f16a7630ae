"""The worker's small HTTP server: /healthz, /readyz and /metrics for Kubernetes and Prometheus.

- ``GET /healthz``: 200 while the process runs (liveness must not depend on Redis, or a
  Redis outage would restart every worker);
- ``GET /readyz``: 200 when Redis answers a PING, else 503;
- ``GET /metrics``: the worker's metrics in the Prometheus text format.
"""
from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4


class HealthServer:
    """Serves the three endpoints on ``host``:``port`` from a daemon thread.

    ``is_ready`` answers /readyz; ``metrics`` returns the /metrics text. Raises OSError
    when the port cannot be bound."""

    def __init__(self, host: str, port: int, is_ready: Callable[[], bool], metrics: Callable[[], bytes]) -> None:
        handler = type("Handler", (_Handler,), {"is_ready": staticmethod(is_ready), "metrics": staticmethod(metrics)})
        self._server = ThreadingHTTPServer((host, port), handler)
        self._server.daemon_threads = True
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


class _Handler(BaseHTTPRequestHandler):
    is_ready: Callable[[], bool]
    metrics: Callable[[], bytes]
    server_version = "ginrummy-worker"

    def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
        if self.path == "/healthz":
            self._answer(200, "application/json", json.dumps({"status": "ok"}).encode())
        elif self.path == "/readyz":
            ready = self.is_ready()
            body = json.dumps({"status": "ok" if ready else "unavailable", "redis": "ok" if ready else "down"})
            self._answer(200 if ready else 503, "application/json", body.encode())
        elif self.path == "/metrics":
            self._answer(200, CONTENT_TYPE_PLAIN_0_0_4, self.metrics())
        else:
            self._answer(404, "application/json", json.dumps({"status": "not found"}).encode())

    def _answer(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's name
        # Probes and scrapes every few seconds would drown the delivery log.
        pass
