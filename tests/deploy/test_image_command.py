"""The image's CMD, run for real: gunicorn with the service's config, from a clean environment.

No Docker engine runs here, so the command runs on the host with what the image would set
(PORT) plus HOST=127.0.0.1 to stay on loopback, and the test Redis with a private prefix.
"""
from __future__ import annotations

import http.client
import json
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families

from tests.deploy.support import (
    REPO,
    gunicorn_settings,
    healthcheck,
    image_command,
    tool,
)
from tests.redis_servers import free_port

STARTUP_TIMEOUT = 30.0
LONG_POLL_SECONDS = 20


API_KEY = "image-test-key"


@dataclass
class Service:
    """A running image command on 127.0.0.1:``port``; its output goes to ``log``."""

    process: subprocess.Popen
    port: int
    log: Path
    environment: dict[str, str] = field(default_factory=dict)

    def request(self, method: str, path: str, body: dict | None = None, timeout: float = 10):
        """(status, parsed JSON body or raw text) of one request on a fresh connection."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            payload = None if body is None else json.dumps(body)
            headers = {"X-API-Key": API_KEY} if method == "POST" else {}
            if body is not None:
                headers["Content-Type"] = "application/json"
            connection.request(method, path, body=payload, headers=headers)
            response = connection.getresponse()
            raw = response.read().decode()
            is_json = "json" in (response.getheader("Content-Type") or "")
            return response.status, json.loads(raw) if is_json else raw
        finally:
            connection.close()

    def wait_until_healthy(self) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while True:
            if self.process.poll() is not None:
                pytest.fail(f"the image command exited with {self.process.returncode}:\n{self.output()}")
            try:
                if self.request("GET", "/healthz", timeout=2)[0] == 200:
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"/healthz did not answer 200 within {STARTUP_TIMEOUT} s:\n{self.output()}")
            time.sleep(0.1)

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-5000:]


@pytest.fixture
def service(tmp_path, redis_url: str, key_prefix: str) -> Iterator[Service]:
    """The image's CMD, started with nothing in its environment but what a pod would give."""
    command = image_command()
    executable = tool(command[0])
    port = free_port()
    environment = {
        "PATH": f"{Path(executable).parent}:/usr/bin:/bin",
        "PORT": str(port),
        "HOST": "127.0.0.1",
        "REDIS_URL": redis_url,
        "KEY_PREFIX": key_prefix,
        "API_KEYS": API_KEY,
        "WEB_CONCURRENCY": "2",
        "ALLOW_ANONYMOUS_CREATE": "true",
    }
    log = tmp_path / "gunicorn.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [executable, *command[1:]],
            cwd=REPO, env=environment, stdout=output, stderr=subprocess.STDOUT,
        )
    running = Service(process, port, log, environment)
    try:
        running.wait_until_healthy()
        yield running
    finally:
        if process.poll() is None:
            process.terminate()  # graceful, so that the master removes what it made (its metrics directory)
            try:
                process.wait(timeout=STARTUP_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def test_serves_health_and_readiness_and_passes_the_image_healthcheck(service: Service) -> None:
    assert service.request("GET", "/healthz")[0] == 200
    assert service.request("GET", "/readyz")[0] == 200  # pings the test Redis
    _, check = healthcheck()
    result = subprocess.run(
        [tool(check[0]), *check[1:]], env={"PORT": str(service.port)},
        capture_output=True, text=True, timeout=10,
    )
    assert result.returncode == 0, result.stderr


def test_healthcheck_fails_when_nothing_answers() -> None:
    _, check = healthcheck()
    result = subprocess.run(
        [tool(check[0]), *check[1:]], env={"PORT": str(free_port())}, capture_output=True, timeout=10
    )
    assert result.returncode != 0


def test_sigterm_answers_a_waiting_long_poll_at_once_then_exits_cleanly(service: Service, redis_url: str) -> None:
    status, created = service.request(
        "POST", "/v1/games", {"variant": "classic", "players": [{"name": "Ann"}, {"name": "Bob"}]}
    )
    assert status == 201, created
    game = created["game"]["id"]
    status, events = service.request("GET", f"/v1/games/{game}/events?after=0")
    assert status == 200, events

    answer: dict = {}

    def long_poll() -> None:
        answer["status"], answer["body"] = service.request(
            "GET", f"/v1/games/{game}/events?after={events['last_seq']}&wait={LONG_POLL_SECONDS}",
            timeout=LONG_POLL_SECONDS + 10,
        )
        answer["at"] = time.monotonic()

    poller = threading.Thread(target=long_poll)
    poller.start()
    # The long-poll waits once its worker has subscribed to the game's channel.
    channel = f"{service.environment['KEY_PREFIX']}{{{game}}}:n"
    with redis.Redis.from_url(redis_url) as client:
        deadline = time.monotonic() + 10
        while int(client.execute_command("PUBSUB", "SHARDNUMSUB", channel)[1]) == 0:
            assert time.monotonic() < deadline, service.output()
            time.sleep(0.02)
    signalled = time.monotonic()
    service.process.send_signal(signal.SIGTERM)

    poller.join(timeout=LONG_POLL_SECONDS)
    assert answer.get("status") == 200, (answer, service.output())
    assert answer["body"]["events"] == []
    # Answered at once, not after its wait: a shutdown does not hang on waiting clients.
    assert answer["at"] - signalled < 2.5, answer["at"] - signalled

    graceful_timeout = int(gunicorn_settings(service.environment)["graceful_timeout"])
    assert service.process.wait(timeout=graceful_timeout + 5) == 0, service.output()
    assert time.monotonic() - signalled < 5
    with pytest.raises(ConnectionRefusedError):
        service.request("GET", "/healthz")


def requests_counted(service: Service, endpoint: str) -> float:
    status, body = service.request("GET", "/metrics")
    assert status == 200
    return sum(
        sample.value
        for family in text_string_to_metric_families(body)
        for sample in family.samples
        if sample.name == "http_requests_total" and sample.labels.get("endpoint") == endpoint
    )


def test_metrics_add_up_over_all_workers(service: Service) -> None:
    # Without the config's multiprocess setup each worker would report only its own counts,
    # and scrapes answered by different workers would disagree.
    for _ in range(10):
        assert service.request("GET", "/healthz")[0] == 200
    counts = {requests_counted(service, "/healthz") for _ in range(8)}
    assert len(counts) == 1
    assert counts.pop() >= 10
