"""What the service answers the same way whichever server runs it, gunicorn (production) or
``ginrummy serve`` (the quick start): a body shorter than its Content-Length gets 408 once its
deadline passes, and that 408 is logged and counted like any answer; what the server refuses
before the app (headers over its limit, a length that is no length) is problem+json; OPTIONS
answers 204 with Allow, never a page."""
from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from tests.client.served import running
from tests.gunicorn_server import GunicornServer

PROBLEM = "application/problem+json"
BODY_SECONDS = 1  # REQUEST_BODY_TIMEOUT_SECONDS of both servers here
SLACK = 5.0  # the deadline's own timer and a busy machine


@dataclass(frozen=True)
class Server:
    name: str
    url: str
    log: Path

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.url.removeprefix("http://").split(":")
        return host, int(port)


@pytest.fixture(scope="module", params=["gunicorn", "serve"])
def server(request, tmp_path_factory, redis_url: str, key_prefix: str) -> Iterator[Server]:
    directory = tmp_path_factory.mktemp(request.param)
    settings = {"REQUEST_BODY_TIMEOUT_SECONDS": str(BODY_SECONDS), "LOG_LEVEL": "INFO"}
    if request.param == "serve":
        with running(directory, **settings) as served:
            yield Server("serve", served.url, served.log)
        return
    gunicorn = GunicornServer(directory, {"REDIS_URL": redis_url, "KEY_PREFIX": f"{key_prefix}both:", **settings})
    try:
        gunicorn.start()
        yield Server("gunicorn", gunicorn.url, gunicorn.log)
    finally:
        gunicorn.stop()


def exchange(server: Server, request: bytes, timeout: float = BODY_SECONDS + SLACK) -> tuple[str, dict, bytes]:
    """Send ``request`` as raw bytes, read until the server closes: (status line, headers in
    lowercase, body). Raises socket.timeout when the server neither answers nor closes."""
    with socket.create_connection(server.address, timeout=timeout) as connection:
        connection.sendall(request)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value for name, value in (line.split(": ", 1) for line in lines)}
    return status, headers, body


def assert_problem(status: str, headers: dict, body: bytes, code: int, name: str) -> dict:
    assert status.startswith(f"HTTP/1.1 {code} "), (status, body[:300])
    assert headers["content-type"] == PROBLEM
    assert headers["x-content-type-options"] == "nosniff" and "frame-ancestors 'none'" in headers["content-security-policy"]
    assert re.fullmatch(r"[A-Za-z0-9._-]{1,128}", headers["x-request-id"])
    problem = json.loads(body)
    assert (problem["status"], problem["code"]) == (code, name)
    return problem


def requests_counted(server: Server, endpoint: str, method: str, status: str) -> float:
    exposition = requests.get(f"{server.url}/metrics", timeout=10).text
    return sum(sample.value for family in text_string_to_metric_families(exposition) for sample in family.samples
               if sample.name == "http_requests_total"
               and (sample.labels["endpoint"], sample.labels["method"], sample.labels["status"]) == (endpoint, method, status))


def access_lines(server: Server) -> list[dict]:
    lines = []
    for line in server.log.read_text(errors="replace").splitlines():
        if line.startswith("{"):
            entry = json.loads(line)
            if entry.get("logger") == "ginrummy.access":
                lines.append(entry)
    return lines


@pytest.mark.timeout(60)
def test_a_body_shorter_than_its_length_gets_408_logged_and_counted(server: Server) -> None:
    counted = requests_counted(server, "/v1/games", "POST", "408")
    request_id = f"late-body-{server.name}-{time.monotonic_ns()}"
    started = time.monotonic()
    status, headers, body = exchange(server, (
        "POST /v1/games HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n"
        f"X-Request-ID: {request_id}\r\n\r\n" + '{"variant": "cla').encode())
    waited = time.monotonic() - started
    problem = assert_problem(status, headers, body, 408, "request_timeout")
    assert headers["x-request-id"] == request_id and problem["params"] == {"seconds": BODY_SECONDS}
    assert BODY_SECONDS * 0.8 - 0.1 <= waited < BODY_SECONDS + SLACK
    assert requests_counted(server, "/v1/games", "POST", "408") == counted + 1
    deadline = time.monotonic() + 5
    while not (logged := [line for line in access_lines(server) if line.get("request_id") == request_id]):
        assert time.monotonic() < deadline, "no access log line for the 408"
        time.sleep(0.05)
    assert [(line["status"], line["code"], line["route"]) for line in logged] == [(408, "request_timeout", "/v1/games")]


@pytest.mark.timeout(30)
def test_a_70_kb_header_is_a_problem_431(server: Server) -> None:
    status, headers, body = exchange(server, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"p" * 70_000 + b"\r\n\r\n")
    assert_problem(status, headers, body, 431, "headers_too_large")


@pytest.mark.timeout(30)
@pytest.mark.parametrize("length", ["-1", "abc"])
def test_a_content_length_that_is_no_length_is_a_problem_400(server: Server, length: str) -> None:
    status, headers, body = exchange(server, (
        f"POST /v1/games HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
        '{"variant": "classic", "players": [{"name": "Ann"}, {"name": "Bob"}]}').encode())
    problem = assert_problem(status, headers, body, 400, "invalid_request")
    # Whichever part refused it (gunicorn's parser or the app), one code has one title.
    assert problem["title"] == app_title_of_invalid_request(server)


def app_title_of_invalid_request(server: Server) -> str:
    """The title of the app's own invalid_request, for a body that breaks the schema."""
    answer = requests.post(f"{server.url}/v1/games", json={"variant": "classic", "players": []}, timeout=10)
    assert (answer.status_code, answer.json()["code"]) == (422, "invalid_request"), answer.text
    return answer.json()["title"]


@pytest.mark.timeout(30)
@pytest.mark.parametrize(("path", "methods"), [("/v1/games", {"POST", "OPTIONS"}),
                                               ("/healthz", {"GET", "HEAD", "OPTIONS"})])
def test_options_answers_204_with_allow(server: Server, path: str, methods: set[str]) -> None:
    answer = requests.options(server.url + path, timeout=10)
    assert answer.status_code == 204 and answer.content == b""
    assert "content-type" not in {name.lower() for name in answer.headers}
    assert {method.strip() for method in answer.headers["Allow"].split(",")} == methods
    assert answer.headers["X-Content-Type-Options"] == "nosniff"
