"""``ginrummy worker`` as a real process: SIGKILL and restart, SIGTERM, probes, metrics, logs."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from service.webhooks.entries import GROUP, ShardKeys
from tests.redis_servers import free_port
from tests.webhooks.receiver import HANG, Receiver
from tests.webhooks.support import add_entry, wait_until

pytestmark = pytest.mark.timeout(90)

REPO = Path(__file__).resolve().parents[2]
STARTUP_TIMEOUT = 20.0
# Short timings; the lease (2 s) is shorter than a delivery's 10 s timeout here, which a
# deployment must not do, so that a take-over is seen quickly.
TIMINGS = ["--lease-seconds", "2", "--poll-seconds", "0.1", "--block-seconds", "0.2",
           "--backoff-base-seconds", "0.1", "--backoff-cap-seconds", "0.5"]


def ginrummy() -> str:
    beside = Path(sys.executable).parent / "ginrummy"
    if not beside.is_file():
        pytest.fail("the ginrummy command is not installed in this venv (pip install -c requirements-test.lock -e '.[test]')")
    return str(beside)


@dataclass
class WorkerProcess:
    """One ``ginrummy worker`` process; its JSON log lines go to ``log``."""

    process: subprocess.Popen
    port: int
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_until_answering(self, path: str = "/readyz") -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while True:
            if self.process.poll() is not None:
                pytest.fail(f"the worker exited with {self.process.returncode}:\n{self.log_text()[-3000:]}")
            try:
                if requests.get(self.url + path, timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"{path} did not answer 200 within {STARTUP_TIMEOUT} s:\n{self.log_text()[-3000:]}")
            time.sleep(0.05)


@pytest.fixture
def run_worker(tmp_path: Path, redis_url: str, prefix: str, secret: str) -> Iterator[Callable[..., WorkerProcess]]:
    """Start ``ginrummy worker`` with the environment a pod would give it (plus overrides)."""
    started: list[WorkerProcess] = []

    def run(wait: bool = True, **overrides: str) -> WorkerProcess:
        port = free_port()
        environment = {
            "PATH": f"{Path(ginrummy()).parent}:/usr/bin:/bin",
            "REDIS_URL": redis_url,
            "KEY_PREFIX": prefix,
            "WEBHOOK_SECRET": secret,
            "WEBHOOK_ALLOW_PRIVATE": "true",  # the receiver is on loopback
            "WORKER_PORT": str(port),
            "WORKER_GRACEFUL_SECONDS": "10",
            **overrides,
        }
        environment = {name: value for name, value in environment.items() if value is not None}
        log = tmp_path / f"worker-{len(started)}.log"
        with log.open("wb") as output:
            process = subprocess.Popen(
                [ginrummy(), "worker", "--host", "127.0.0.1", *TIMINGS],
                cwd=REPO, env=environment, stdout=output, stderr=subprocess.STDOUT,
            )
        worker = WorkerProcess(process, port, log)
        started.append(worker)
        if wait:
            worker.wait_until_answering()
        return worker

    yield run
    for worker in started:
        if worker.process.poll() is None:
            worker.process.kill()
            worker.process.wait(10)


def pending(redis_client, keys: ShardKeys) -> list[dict]:
    return redis_client.xpending_range(keys.feed, GROUP, min="-", max="+", count=10)


def test_a_worker_killed_mid_delivery_is_taken_over_by_the_next_one(
    run_worker, secret: str, redis_client, prefix: str
) -> None:
    receiver = Receiver(secret, lambda request, count: HANG if count == 1 else 200).start()
    try:
        first = run_worker()
        entry = add_entry(redis_client, prefix, receiver.url())
        keys = ShardKeys.for_game(prefix, entry["game"])
        receiver.wait_for_count(1)  # the delivery is in flight
        first.process.send_signal(signal.SIGKILL)
        assert first.process.wait(10) == -signal.SIGKILL
        [held] = pending(redis_client, keys)
        assert held["consumer"] == f"{os.uname().nodename}:{first.process.pid}"

        run_worker()
        received = receiver.wait_for_count(2, timeout=20)
        assert [request.webhook_id for request in received] == [entry["id"]] * 2
        assert all(request.verified for request in received)
        wait_until(lambda: not pending(redis_client, keys), what="pending entry finished")
    finally:
        receiver.close()


def test_sigterm_lets_the_delivery_in_flight_finish_then_exits_0(
    run_worker, secret: str, redis_client, prefix: str
) -> None:
    receiver = Receiver(secret, lambda request, count: HANG).start()
    try:
        worker = run_worker()
        entry = add_entry(redis_client, prefix, receiver.url())
        receiver.wait_for_count(1)
        worker.process.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        assert worker.process.poll() is None  # still finishing the delivery
        receiver.release()
        assert worker.process.wait(10) == 0, worker.log_text()
        keys = ShardKeys.for_game(prefix, entry["game"])
        assert not pending(redis_client, keys)
        assert len(receiver.received) == 1
    finally:
        receiver.close()


def test_sigterm_exits_0_after_the_grace_period_and_leaves_the_cut_off_entry_pending(
    run_worker, secret: str, redis_client, prefix: str
) -> None:
    receiver = Receiver(secret, lambda request, count: HANG).start()
    try:
        worker = run_worker(WORKER_GRACEFUL_SECONDS="1")
        entry = add_entry(redis_client, prefix, receiver.url())
        receiver.wait_for_count(1)
        signalled = time.monotonic()
        worker.process.send_signal(signal.SIGTERM)
        assert worker.process.wait(10) == 0, worker.log_text()
        assert time.monotonic() - signalled < 4
        assert len(pending(redis_client, ShardKeys.for_game(prefix, entry["game"]))) == 1  # for another worker
    finally:
        receiver.close()


def sample(metrics_text: str, name: str, **labels: str) -> float:
    return sum(
        item.value
        for family in text_string_to_metric_families(metrics_text)
        for item in family.samples
        if item.name == name and labels.items() <= item.labels.items()
    )


def test_probes_metrics_and_json_logs_without_bodies_or_secrets(
    run_worker, secret: str, receiver: Receiver, redis_client, prefix: str
) -> None:
    worker = run_worker()
    assert requests.get(worker.url + "/healthz", timeout=5).json() == {"status": "ok"}
    assert requests.get(worker.url + "/readyz", timeout=5).status_code == 200
    entry = add_entry(redis_client, prefix, receiver.url())
    receiver.wait_for_count(1)

    def counted(text: str) -> bool:
        # The latency is observed once the delivery is finished in Redis, after the attempt
        # itself is counted.
        return (sample(text, "webhook_deliveries_total", outcome="delivered") == 1
                and sample(text, "webhook_delivery_latency_seconds_count") == 1)

    wait_until(lambda: counted(requests.get(worker.url + "/metrics", timeout=5).text), what="delivery counted")
    text = requests.get(worker.url + "/metrics", timeout=5).text
    assert sample(text, "webhook_deliveries_total", outcome="delivered") == 1
    assert sample(text, "webhook_delivery_latency_seconds_count") == 1
    assert sample(text, "webhook_attempts_total", type="turn") == 1
    for name in ("webhook_retries_scheduled_total", "webhook_dead_letters_total", "timers_fired_total"):
        assert name in text

    worker.process.send_signal(signal.SIGTERM)
    assert worker.process.wait(10) == 0
    lines = [json.loads(line) for line in worker.log_text().splitlines() if line.strip()]
    delivered = [line for line in lines if line["msg"] == "webhook delivered"]
    assert len(delivered) == 1 and delivered[0]["webhook_id"] == entry["id"]
    assert delivered[0]["host"] == "127.0.0.1" and delivered[0]["status"] == 200
    log = worker.log_text()
    assert entry["body"] not in log and secret.removeprefix("whsec_") not in log
    assert "/hooks/gin" not in log  # the URL's path and query may carry the receiver's secrets


def test_metrics_token_guards_the_workers_metrics(run_worker) -> None:
    worker = run_worker(METRICS_TOKEN="worker-metrics-token")
    refused = requests.get(worker.url + "/metrics", timeout=5)
    assert refused.status_code == 401 and refused.json()["code"] == "unauthorized"
    allowed = requests.get(worker.url + "/metrics", headers={"Authorization": "Bearer worker-metrics-token"}, timeout=5)
    assert allowed.status_code == 200 and "webhook_deliveries_total" in allowed.text


def test_readyz_says_503_while_redis_is_unreachable_and_healthz_stays_200(run_worker) -> None:
    worker = run_worker(wait=False, REDIS_URL=f"redis://127.0.0.1:{free_port()}/0")
    worker.wait_until_answering("/healthz")
    assert requests.get(worker.url + "/readyz", timeout=10).status_code == 503


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"WEBHOOK_SECRET": None}, "WEBHOOK_SECRET must be set"),
        ({"WEBHOOK_SECRET": "whsec_c2hvcnQ="}, "WEBHOOK_SECRET: the webhook secret's key must be 24 to 64 bytes, not 5"),
        ({"REDIS_URL": "memory://"}, "REDIS_URL must name a Redis"),
        ({"WORKER_PORT": "70000"}, "WORKER_PORT must be a port number"),
    ],
)
def test_an_unusable_setting_stops_the_worker_with_status_2(run_worker, overrides, message: str) -> None:
    worker = run_worker(wait=False, **overrides)
    assert worker.process.wait(20) == 2
    assert message in worker.log_text()
