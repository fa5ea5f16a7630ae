"""Running the service as its users do: ``ginrummy serve`` on a free loopback port (the quick
start: embedded store, anyone may create games), stopped by its pid."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import requests

from tests.redis_servers import free_port

REPO = Path(__file__).resolve().parents[2]
STARTUP_SECONDS = 30.0


@dataclass(frozen=True)
class Served:
    url: str
    log: Path


def serve(directory: Path, **settings: str) -> tuple[subprocess.Popen, Served]:
    """Start ``ginrummy serve`` with only ``settings`` (and PATH) in its environment; returns
    once /healthz answers. Raises RuntimeError with the log when it does not."""
    port = free_port()
    log = directory / "serve.log"
    environment = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "LOG_LEVEL": "WARNING", **settings}
    with log.open("wb") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "service.cli", "serve", "--host", "127.0.0.1", "--port", str(port)],
            cwd=REPO, env=environment, stdout=output, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + STARTUP_SECONDS
    while True:
        try:
            if requests.get(f"{url}/healthz", timeout=1).status_code == 200:
                return process, Served(url, log)
        except requests.ConnectionError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            stop(process)
            raise RuntimeError(f"ginrummy serve did not start:\n{log.read_text()[-3000:]}")
        time.sleep(0.05)


@contextmanager
def running(directory: Path, **settings: str) -> Iterator[Served]:
    """``serve`` for the length of a ``with`` block."""
    process, served = serve(directory, **settings)
    try:
        yield served
    finally:
        stop(process)


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"
