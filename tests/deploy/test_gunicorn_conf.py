"""service/gunicorn_conf.py: the settings gunicorn really ends up with, from the environment."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from service import gunicorn_conf
from tests.deploy.support import INERT_APP, REPO, gunicorn_settings, image_command, tool


def test_defaults_in_an_empty_environment() -> None:
    settings = gunicorn_settings({})
    assert settings["bind"] == "['0.0.0.0:8000']"
    assert settings["worker_class"] == "gthread"
    assert settings["threads"] == "8"
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
        "HOST": "127.0.0.1", "PORT": "9123", "WEB_CONCURRENCY": "3", "GUNICORN_THREADS": "16",
        "GUNICORN_TIMEOUT": "90", "GUNICORN_GRACEFUL_TIMEOUT": "40", "GUNICORN_KEEPALIVE": "75",
        "GUNICORN_MAX_REQUESTS": "0", "GUNICORN_MAX_REQUESTS_JITTER": "0",
        "FORWARDED_ALLOW_IPS": "10.0.0.1", "LOG_LEVEL": "WARNING",
    })
    assert settings["bind"] == "['127.0.0.1:9123']"
    assert (settings["workers"], settings["threads"]) == ("3", "16")
    assert (settings["timeout"], settings["graceful_timeout"], settings["keepalive"]) == ("90", "40", "75")
    assert (settings["max_requests"], settings["max_requests_jitter"]) == ("0", "0")
    assert settings["forwarded_allow_ips"] == "['10.0.0.1']"
    assert settings["loglevel"] == "warning"


def test_a_malformed_number_stops_the_start_naming_the_variable() -> None:
    command = image_command()
    result = subprocess.run(
        [tool(command[0]), *command[1:3], "--print-config", INERT_APP],
        cwd=REPO, env={"PATH": os.environ["PATH"], "GUNICORN_THREADS": "eight"},
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode != 0
    assert "GUNICORN_THREADS" in result.stderr


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


@pytest.mark.parametrize(
    ("cpus", "workers"), [(1, 3), (2, 5), (3, 7), (16, gunicorn_conf.MAX_DEFAULT_WORKERS)]
)
def test_default_workers_is_two_per_cpu_plus_one_capped(monkeypatch, cpus: int, workers: int) -> None:
    monkeypatch.setattr(gunicorn_conf, "usable_cpus", lambda: cpus)
    assert gunicorn_conf.default_workers() == workers


def test_a_named_metrics_directory_is_created_and_emptied_at_start(tmp_path, monkeypatch) -> None:
    directory = tmp_path / "metrics"
    directory.mkdir()
    (directory / "counter_4242.db").write_bytes(b"left by the previous run")
    monkeypatch.setenv(gunicorn_conf.METRICS_DIR_ENV, str(directory))
    monkeypatch.setattr(gunicorn_conf, "_made_metrics_dir", None)
    gunicorn_conf.on_starting(server=None)
    assert directory.is_dir() and list(directory.iterdir()) == []
    gunicorn_conf.on_exit(server=None)
    assert directory.is_dir()  # not ours to remove


def test_without_a_named_directory_one_is_made_for_the_run_and_removed(monkeypatch) -> None:
    # Empty counts as unset; setenv (unlike delenv of an absent variable) restores afterwards.
    monkeypatch.setenv(gunicorn_conf.METRICS_DIR_ENV, "")
    monkeypatch.setattr(gunicorn_conf, "_made_metrics_dir", None)
    gunicorn_conf.on_starting(server=None)
    made = Path(os.environ[gunicorn_conf.METRICS_DIR_ENV])
    assert made.is_dir() and list(made.iterdir()) == []
    gunicorn_conf.on_exit(server=None)
    assert not made.exists()
