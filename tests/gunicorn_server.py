"""A real gunicorn for tests and benchmarks: the service's own command on a loopback port.

``GunicornServer`` runs ``gunicorn -c python:service.gunicorn_conf service.wsgi:app`` (or
another WSGI app under the same settings) from a clean environment holding only what it is
given, sends its output to a log file, and is stopped by the pids it started: the master
first (graceful), then any worker that outlived it.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import requests

from tests.redis_servers import free_port

REPO = Path(__file__).resolve().parents[1]
SERVICE_APP = "service.wsgi:app"
SERVICE_CONFIG = "python:service.gunicorn_conf"
STARTUP_TIMEOUT = 30.0
# The API key a test server accepts unless its environment names others (creating games needs one).
TEST_API_KEY = "e2e-test-api-key"
# Fixed, so that a seed deals the same cards in every run.
TEST_SERVER_SECRET = "e2e-test-server-secret-0123456789abcdef"
# Short, so that stopping a test server never waits long for a request still in flight.
GRACEFUL_TIMEOUT_SECONDS = 5


def gunicorn_executable() -> str:
    """The gunicorn installed beside this Python (the venv), else the one on PATH."""
    beside = Path(sys.executable).parent / "gunicorn"
    return str(beside) if beside.is_file() else "gunicorn"


@dataclass
class GunicornServer:
    """One gunicorn master and its workers on 127.0.0.1:``port``.

    ``environment`` holds the service's settings (REDIS_URL, KEY_PREFIX, LOG_LEVEL...);
    nothing else of the calling process leaks in. ``directory`` receives ``gunicorn.log``
    (gunicorn's and the app's stderr, the app's JSON lines included) and the metrics files.
    """

    directory: Path
    environment: dict[str, str] = field(default_factory=dict)
    workers: int = 2
    app: str = SERVICE_APP
    ready_path: str = "/healthz"
    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None
    _workers_seen: set[int] = field(default_factory=set)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        return self.directory / "gunicorn.log"

    def start(self) -> GunicornServer:
        """Start and wait until ``ready_path`` answers 200. Raises RuntimeError (with the log
        tail) when it exits or does not answer within STARTUP_TIMEOUT."""
        self.directory.mkdir(parents=True, exist_ok=True)
        environment = {
            "PATH": f"{Path(gunicorn_executable()).parent}:/usr/bin:/bin",
            "HOST": "127.0.0.1",
            "PORT": str(self.port),
            "WEB_CONCURRENCY": str(self.workers),
            "GUNICORN_GRACEFUL_TIMEOUT": str(GRACEFUL_TIMEOUT_SECONDS),
            "PROMETHEUS_MULTIPROC_DIR": str(self.directory / "metrics"),
            "API_KEYS": TEST_API_KEY,
            "SERVER_SECRET": TEST_SERVER_SECRET,
            **self.environment,
        }
        with self.log.open("ab") as output:
            self.process = subprocess.Popen(
                [gunicorn_executable(), "-c", SERVICE_CONFIG, self.app],
                cwd=REPO, env=environment, stdout=output, stderr=subprocess.STDOUT,
            )
        try:
            self._wait_until_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> int | None:
        """SIGTERM the master and wait for its graceful shutdown; SIGKILL it if it lingers,
        then SIGKILL any worker still alive. Returns the master's exit code (None if never
        started). Harmless when already stopped."""
        if self.process is None:
            return None
        self._workers_seen |= self.worker_pids()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=GRACEFUL_TIMEOUT_SECONDS + 10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for pid in self._workers_seen:
            self._kill_if_still_ours(pid)
        return self.process.returncode

    def worker_pids(self) -> set[int]:
        """The master's current children (its workers)."""
        if self.process is None or self.process.poll() is not None:
            return set()
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        try:
            return {int(pid) for pid in children.read_text().split()}
        except OSError:
            return set()

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"gunicorn exited with {self.process.returncode}:\n{self.log_text()[-5000:]}")
            try:
                if requests.get(self.url + self.ready_path, timeout=2).status_code == 200:
                    self._workers_seen |= self.worker_pids()
                    return
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"{self.ready_path} did not answer 200 within {STARTUP_TIMEOUT} s:\n{self.log_text()[-5000:]}"
                )
            time.sleep(0.1)

    def _kill_if_still_ours(self, pid: int) -> None:
        """SIGKILL a worker that outlived its master, unless the pid now names another
        program (a worker that exited may have had its pid reused)."""
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if self.app.encode() in command and SERVICE_CONFIG.encode() in command:
                os.kill(pid, signal.SIGKILL)
        except OSError:  # ProcessLookupError included: already gone
            pass
