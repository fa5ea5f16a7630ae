"""The worker's probe and metrics server (service/webhooks/health.py): its answers, the metrics
token, and the bounds on what a client can make it hold."""
from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import pytest
import requests

from service.webhooks.health import HealthServer

TOKEN = "metrics-token-for-tests"
METRICS_TEXT = b"# HELP webhook_deliveries_total test\n"


@pytest.fixture
def serve() -> Iterator:
    servers: list[HealthServer] = []

    def start(**options) -> str:
        server = HealthServer("127.0.0.1", 0, is_ready=options.pop("is_ready", lambda: True),
                              metrics=lambda: METRICS_TEXT, **options).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.port}"

    yield start
    for server in servers:
        server.close()


def test_probes_answer_and_readyz_follows_redis(serve) -> None:
    ready = serve(is_ready=lambda: False)
    assert requests.get(ready + "/healthz", timeout=5).json() == {"status": "ok"}
    assert requests.get(ready + "/readyz", timeout=5).status_code == 503
    assert requests.get(serve() + "/readyz", timeout=5).json() == {"status": "ok", "redis": "ok"}
    assert requests.get(ready + "/nothing", timeout=5).status_code == 404


def test_metrics_are_open_without_a_token(serve) -> None:
    answer = requests.get(serve() + "/metrics", timeout=5)
    assert answer.status_code == 200 and answer.content == METRICS_TEXT


@pytest.mark.parametrize("authorization", [None, "Bearer wrong-token", f"Basic {TOKEN}", TOKEN])
def test_with_a_token_metrics_refuse_any_other_credential(serve, authorization: str | None) -> None:
    headers = {} if authorization is None else {"Authorization": authorization}
    answer = requests.get(serve(metrics_token=TOKEN) + "/metrics", headers=headers, timeout=5)
    assert answer.status_code == 401
    assert answer.headers["Content-Type"] == "application/problem+json"
    assert answer.headers["WWW-Authenticate"] == 'Bearer realm="metrics"'
    body = json.loads(answer.content)
    assert body["code"] == "unauthorized" and body["status"] == 401
    assert METRICS_TEXT not in answer.content


def test_with_a_token_metrics_answer_the_bearer(serve) -> None:
    answer = requests.get(serve(metrics_token=TOKEN) + "/metrics", headers={"Authorization": f"Bearer {TOKEN}"},
                          timeout=5)
    assert answer.status_code == 200 and answer.content == METRICS_TEXT


def closed_within(sock: socket.socket, seconds: float) -> float | None:
    """Seconds until the server closed ``sock`` (None: still open after ``seconds``)."""
    start = time.monotonic()
    sock.settimeout(seconds)
    try:
        data = sock.recv(1024)
    except TimeoutError:
        return None
    assert data == b""
    return time.monotonic() - start


def test_a_silent_connection_is_closed_after_the_idle_time(serve) -> None:
    url = serve(idle_seconds=0.3)
    with socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1]))) as silent:
        silent.sendall(b"GET /healthz HTTP/1.1\r\n")  # and never the rest
        waited = closed_within(silent, 5)
    assert waited is not None and waited < 3


def test_connections_over_the_bound_are_closed_at_once_and_the_slots_come_back(serve) -> None:
    url = serve(max_connections=2, idle_seconds=30)
    port = int(url.rsplit(":", 1)[1])
    held = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]
    time.sleep(0.2)  # both taken up by the server's threads
    with socket.create_connection(("127.0.0.1", port)) as third:
        assert closed_within(third, 5) is not None
    for sock in held:
        sock.close()
    deadline = time.monotonic() + 5
    while True:
        try:
            if requests.get(url + "/healthz", timeout=2).status_code == 200:
                break
        except requests.ConnectionError:
            pass
        assert time.monotonic() < deadline, "the slots were not given back"
        time.sleep(0.05)
