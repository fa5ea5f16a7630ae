"""service/gunicorn_conf.py: the settings gunicorn really ends up with, from the environment,
and the gevent worker they name (service/gunicorn_worker.py) run for real."""
from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import requests

from service import gunicorn_conf
from tests.deploy.support import INERT_APP, REPO, gunicorn_settings, image_command, tool
from tests.gunicorn_server import SERVICE_CONFIG, GunicornServer, gunicorn_executable


def test_defaults_in_an_empty_environment() -> None:
    settings = gunicorn_settings({})
    assert settings["bind"] == "['0.0.0.0:8000']"
    assert settings["worker_class"] == "service.gunicorn_worker.Worker"
    connections = int(settings["worker_connections"])
    assert connections == min(gunicorn_conf.DEFAULT_WORKER_CONNECTIONS,
                              gunicorn_conf.open_files_limit() - gunicorn_conf.RESERVED_FILES)
    assert settings["raw_env"] == f"['LONG_POLL_MAX_WAITERS={int(connections * gunicorn_conf.WAITERS_SHARE)}']"
    assert settings["timeout"] == "60"
    assert settings["graceful_timeout"] == "30"
    assert settings["keepalive"] == "5"
    assert settings["accesslog"] == "None"
    assert settings["preload_app"] == "False"
    assert int(settings["workers"]) == gunicorn_conf.default_workers()
    assert int(settings["max_requests"]) > 0
    assert 0 < int(settings["max_requests_jitter"]) < int(settings["max_requests"])


def test_every_setting_follows_its_environment_variable() -> None:
    settings = gunicorn_settings({
        "HOST": "127.0.0.1", "PORT": "9123", "WEB_CONCURRENCY": "3", "GUNICORN_WORKER_CONNECTIONS": "500",
        "LONG_POLL_MAX_WAITERS": "200",
        "GUNICORN_TIMEOUT": "90", "GUNICORN_GRACEFUL_TIMEOUT": "40", "GUNICORN_KEEPALIVE": "75",
        "GUNICORN_MAX_REQUESTS": "0", "GUNICORN_MAX_REQUESTS_JITTER": "0",
        "FORWARDED_ALLOW_IPS": "10.0.0.1", "LOG_LEVEL": "WARNING",
    })
    assert settings["bind"] == "['127.0.0.1:9123']"
    assert (settings["workers"], settings["worker_connections"]) == ("3", "500")
    assert settings["raw_env"] == "['LONG_POLL_MAX_WAITERS=200']"
    assert (settings["timeout"], settings["graceful_timeout"], settings["keepalive"]) == ("90", "40", "75")
    assert (settings["max_requests"], settings["max_requests_jitter"]) == ("0", "0")
    assert settings["forwarded_allow_ips"] == "['10.0.0.1']"
    assert settings["loglevel"] == "warning"


@pytest.mark.parametrize(
    ("environment", "named"),
    [
        ({"GUNICORN_WORKER_CONNECTIONS": "eight"}, "GUNICORN_WORKER_CONNECTIONS"),
        # Header reading is bounded by the keep-alive timeout; 0 would leave it unbounded.
        ({"GUNICORN_KEEPALIVE": "0"}, "GUNICORN_KEEPALIVE"),
        # Waiters must leave a worker connections for everything else.
        ({"GUNICORN_WORKER_CONNECTIONS": "100", "LONG_POLL_MAX_WAITERS": "100"}, "LONG_POLL_MAX_WAITERS"),
    ],
)
def test_a_setting_it_cannot_use_stops_the_start_naming_the_variable(environment: dict, named: str) -> None:
    command = image_command()
    result = subprocess.run(
        [tool(command[0]), *command[1:3], "--print-config", INERT_APP],
        cwd=REPO, env={"PATH": os.environ["PATH"], **environment},
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode != 0
    assert named in result.stderr


def test_connections_are_lowered_to_fit_the_open_files_limit() -> None:
    assert gunicorn_conf.fitting_connections(4096, 20000) == 4096
    assert gunicorn_conf.fitting_connections(2, 20000) == 2
    assert gunicorn_conf.fitting_connections(4096, 1024) == 1024 - gunicorn_conf.RESERVED_FILES
    with pytest.raises(ValueError, match="ulimit"):
        gunicorn_conf.fitting_connections(4096, gunicorn_conf.RESERVED_FILES + 10)
    with pytest.raises(ValueError, match="GUNICORN_WORKER_CONNECTIONS"):
        gunicorn_conf.fitting_connections(1, 20000)


@pytest.mark.parametrize(
    ("cpu_max", "quota_cpus"),
    [("150000 100000\n", 2), ("50000 100000\n", 1), ("400000 100000\n", 4), ("max 100000\n", None)],
)
def test_usable_cpus_respects_the_cgroup_quota(tmp_path, cpu_max: str, quota_cpus: int | None) -> None:
    limit_file = tmp_path / "cpu.max"
    limit_file.write_text(cpu_max)
    affinity = len(os.sched_getaffinity(0))
    expected = affinity if quota_cpus is None else min(affinity, quota_cpus)
    assert gunicorn_conf.usable_cpus(limit_file) == expected


def test_usable_cpus_without_a_cgroup_file_is_the_affinity(tmp_path) -> None:
    assert gunicorn_conf.usable_cpus(tmp_path / "absent") == len(os.sched_getaffinity(0))


def test_a_fraction_of_a_cpu_still_counts_as_one(tmp_path) -> None:
    limit_file = tmp_path / "cpu.max"
    limit_file.write_text("10000 100000\n")
    assert gunicorn_conf.usable_cpus(limit_file) == 1


@pytest.mark.parametrize("cpus", [1, 2, 3, 16])
def test_default_workers_is_one_gevent_process_per_cpu(monkeypatch, cpus: int) -> None:
    monkeypatch.setattr(gunicorn_conf, "usable_cpus", lambda: cpus)
    assert gunicorn_conf.default_workers() == cpus


def test_a_named_metrics_directory_is_created_and_emptied_at_start(tmp_path, monkeypatch) -> None:
    directory = tmp_path / "metrics"
    directory.mkdir()
    (directory / "counter_4242.db").write_bytes(b"left by the previous run")
    monkeypatch.setenv(gunicorn_conf.METRICS_DIR_ENV, str(directory))
    gunicorn_conf.on_starting(server=None)
    assert directory.is_dir() and list(directory.iterdir()) == []


def probe_app(environ, start_response):
    """What a worker of the service's gunicorn sees: its pid, whether the standard library is
    cooperative, whether a lock made when the master imported the app's modules is gevent's
    (the master must patch before it imports them), and its garbage collector's settings; at
    /young, how many objects made while as many were freed are still young a while later."""
    import gc

    from gevent.monkey import is_module_patched
    from prometheus_client import REGISTRY

    if environ["PATH_INFO"] == "/young":
        return respond_json(young_objects_left(), start_response)
    return respond_json({
        "pid": os.getpid(),
        "patched": [name for name in ("socket", "threading", "time", "select", "ssl") if is_module_patched(name)],
        "lock_made_in_master": type(REGISTRY._lock).__module__,
        "frozen_objects": gc.get_freeze_count(),
        "gc_threshold": gc.get_threshold(),
    }, start_response)


def respond_json(value: object, start_response) -> list[bytes]:
    body = json.dumps(value).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


YOUNG_TRIAL_OBJECTS = 50_000


def young_objects_left() -> dict:
    """Replace YOUNG_TRIAL_OBJECTS old objects one by one with new ones (what the heartbeats
    of thousands of streams do: the collector's count of allocations does not grow), then wait
    a few of the worker's young-collection periods: how many objects were young right after,
    and how many are still young after the wait."""
    import gc

    import gevent

    kept = [[] for _ in range(YOUNG_TRIAL_OBJECTS)]
    gc.collect(1)  # they are old now
    for index in range(YOUNG_TRIAL_OBJECTS):
        kept[index] = []
    made = len(gc.get_objects(0))
    gevent.sleep(gunicorn_conf.YOUNG_COLLECTION_SECONDS * 30)
    return {"young_after_making": made, "young_after_waiting": len(gc.get_objects(0)) + len(gc.get_objects(1))}


@pytest.fixture
def probed(tmp_path):
    server = GunicornServer(tmp_path / "probe", workers=2, app=f"{__name__}:probe_app").start()
    yield server
    server.stop()


def test_the_master_patches_before_importing_the_app_and_workers_run_patched(probed: GunicornServer) -> None:
    seen = requests.get(probed.url + "/", timeout=5).json()
    assert seen["patched"] == ["socket", "threading", "time", "select", "ssl"]
    assert seen["lock_made_in_master"].startswith("gevent"), seen
    assert "MonkeyPatchWarning" not in probed.log_text()
    # Nor any other warning of gunicorn at boot (keep-alive off, worker settings ignored...).
    assert "[WARNING]" not in probed.log_text()


def test_workers_keep_startup_objects_out_of_full_collections(probed: GunicornServer) -> None:
    seen = requests.get(probed.url + "/", timeout=5).json()
    assert seen["frozen_objects"] > 100_000  # the modules the master imported, and the app
    assert seen["gc_threshold"][2] == gunicorn_conf.FULL_COLLECTION_EVERY


def test_workers_collect_young_objects_by_time_when_allocations_balance_deallocations(probed) -> None:
    seen = requests.get(probed.url + "/young", timeout=10).json()
    assert seen["young_after_making"] >= YOUNG_TRIAL_OBJECTS  # the collector's own count did not start one
    assert seen["young_after_waiting"] < YOUNG_TRIAL_OBJECTS / 10, seen


def wait_for_workers(server: GunicornServer, ready: Callable[[set[int]], bool], seconds: float = 10) -> set[int]:
    deadline = time.monotonic() + seconds
    while not ready(pids := server.worker_pids()):
        assert time.monotonic() < deadline, f"workers: {pids}"
        time.sleep(0.1)
    return pids


def test_a_worker_that_dies_is_replaced(probed: GunicornServer) -> None:
    # With os and signal patched by gevent in the master, a dead worker stayed a zombie and
    # was never replaced; the worker class leaves those two alone.
    # Ready means one worker answers; on a loaded machine the second may still be forking.
    before = wait_for_workers(probed, lambda pids: len(pids) == 2)
    victim = min(before)
    os.kill(victim, signal.SIGKILL)
    wait_for_workers(probed, lambda pids: len(pids) == 2 and victim not in pids)
    assert requests.get(probed.url + "/", timeout=5).status_code == 200


def test_a_kept_alive_connection_is_closed_after_its_share_of_requests(probed: GunicornServer) -> None:
    # So that a few busy clients cannot all stay on one worker: they reconnect now and then,
    # to whichever worker accepts first.
    from service.gunicorn_worker import MAX_REQUESTS_PER_CONNECTION

    connection = http.client.HTTPConnection("127.0.0.1", probed.port, timeout=5)
    try:
        for number in range(1, MAX_REQUESTS_PER_CONNECTION + 1):
            connection.request("GET", "/")
            response = connection.getresponse()
            response.read()
            expected = "close" if number == MAX_REQUESTS_PER_CONNECTION else "keep-alive"
            assert response.getheader("Connection", "keep-alive").lower() == expected, number
    finally:
        connection.close()


def made_metrics_dirs(temp: Path) -> list[Path]:
    return list(temp.glob("ginrummy-metrics-*"))


@pytest.fixture
def temp(tmp_path) -> Path:
    """An empty TMPDIR for the gunicorn a test starts, where the metrics directory is made."""
    made = tmp_path / "tmp"
    made.mkdir()
    return made


def test_a_metrics_directory_made_for_the_run_outlives_workers_and_goes_with_the_master(tmp_path, temp) -> None:
    server = GunicornServer(tmp_path / "made", {gunicorn_conf.METRICS_DIR_ENV: "", "TMPDIR": str(temp)},
                            workers=2, app=f"{__name__}:probe_app").start()
    try:
        assert len(made_metrics_dirs(temp)) == 1
        before = wait_for_workers(server, lambda pids: len(pids) == 2)
        os.kill(min(before), signal.SIGTERM)  # a worker ends as a recycled one does
        wait_for_workers(server, lambda pids: len(pids) == 2 and min(before) not in pids)
        assert len(made_metrics_dirs(temp)) == 1
    finally:
        server.stop()
    assert made_metrics_dirs(temp) == []


def test_a_metrics_directory_made_for_the_run_is_removed_when_the_port_is_taken(temp) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        environment = {"PATH": f"{Path(gunicorn_executable()).parent}:/usr/bin:/bin", "HOST": "127.0.0.1",
                       "PORT": str(taken.getsockname()[1]), gunicorn_conf.METRICS_DIR_ENV: "", "TMPDIR": str(temp)}
        ended = subprocess.run([gunicorn_executable(), "-c", SERVICE_CONFIG, f"{__name__}:probe_app"], cwd=REPO,
                               env=environment, capture_output=True, timeout=60)
    assert ended.returncode != 0 and b"in use" in ended.stderr, ended.stderr[-2000:]
    assert made_metrics_dirs(temp) == []
