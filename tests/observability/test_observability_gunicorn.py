"""Under real multi-worker gunicorn: metrics summed over workers (prometheus_client's
multiprocess mode), and the limits and request ids over real HTTP."""
from __future__ import annotations

import http.client
import json
import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from prometheus_client.parser import text_string_to_metric_families

from service import ids
from tests.gunicorn_server import GunicornServer

pytestmark = pytest.mark.slow

PROBE_APP = "tests.observability.observability_probe_app:create_app()"


def request(port, method, path, body=None, headers=None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request(method, path, body=body, headers=headers or {},
                           encode_chunked=body is not None and not isinstance(body, bytes))
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def requests_counted(server: GunicornServer, path: str) -> float:
    status, headers, body = request(server.port, "GET", "/metrics")
    assert status == 200
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            if (sample.name == "http_requests_total" and sample.labels["endpoint"] == path
                    and sample.labels["status"] == "200"):
                return sample.value
    return 0.0


@pytest.fixture(scope="module")
def gunicorn(tmp_path_factory):
    """The probe app under the service's own gunicorn settings (multiprocess metrics hooks included)."""
    # Two connections each: a worker holding two requests leaves the next ones to the other
    # worker, so that concurrent requests are served by both.
    server = GunicornServer(tmp_path_factory.mktemp("gunicorn"), app=PROBE_APP, workers=2,
                            environment={"GUNICORN_WORKER_CONNECTIONS": "2"}).start()
    try:
        wait_until(lambda: len(server.worker_pids()) == 2 and healthy(server.port), "gunicorn start")
        yield server
    finally:
        server.stop()


def healthy(port) -> bool:
    try:
        return request(port, "GET", "/healthz")[0] == 200
    except OSError:
        return False


def wait_until(condition, what, timeout=20.0):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.1)


def test_metrics_are_summed_over_workers_and_survive_a_worker_restart(gunicorn):
    with ThreadPoolExecutor(max_workers=4) as pool:
        answers = list(pool.map(lambda _: request(gunicorn.port, "GET", "/slow"), range(4)))
    assert [status for status, _, _ in answers] == [200] * 4
    serving_pids = {json.loads(body)["pid"] for _, _, body in answers}
    assert len(serving_pids) == 2  # both workers answered some

    # Whichever worker answers the scrape reports all four requests.
    assert [requests_counted(gunicorn, "/slow") for _ in range(6)] == [4.0] * 6

    # A worker that exits (max_requests, a crash) leaves its counts behind.
    gone = serving_pids.pop()
    os.kill(gone, signal.SIGTERM)
    wait_until(lambda: gone not in gunicorn.worker_pids() and len(gunicorn.worker_pids()) == 2,
               "the worker to be replaced")
    wait_until(lambda: healthy(gunicorn.port), "the new worker")
    assert [requests_counted(gunicorn, "/slow") for _ in range(6)] == [4.0] * 6
    assert b"Traceback" not in gunicorn.log.read_bytes()


def test_request_id_and_access_log_over_http(gunicorn):
    game_id = ids.new_game_id()
    status, headers, _ = request(gunicorn.port, "GET", f"/v1/games/{game_id}",
                                 headers={"X-Request-ID": "http-req-1"})
    assert (status, headers["X-Request-ID"]) == (200, "http-req-1")
    wait_until(lambda: b'"request_id": "http-req-1"' in gunicorn.log.read_bytes(),
               "the access line")
    [line] = [json.loads(line) for line in gunicorn.log.read_bytes().splitlines()
              if b'"request_id": "http-req-1"' in line]
    assert (line["route"], line["game_id"], line["status"]) == ("/v1/games/<game_id>", game_id, 200)


@pytest.mark.parametrize("chunked", [False, True])
def test_an_oversize_body_gets_413_over_http(gunicorn, chunked):
    payload = json.dumps({"pad": "x" * 100_000}).encode()
    body = iter([payload[i:i + 8192] for i in range(0, len(payload), 8192)]) if chunked else payload
    status, headers, raw = request(gunicorn.port, "POST", "/v1/games/g_1/draw", body=body,
                                   headers={"Content-Type": "application/json",
                                            "X-Request-ID": "big-1"})
    assert status == 413
    assert headers["Content-Type"] == "application/problem+json"
    assert headers["X-Request-ID"] == "big-1"
    assert json.loads(raw)["code"] == "payload_too_large"
