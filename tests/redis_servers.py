"""Private Redis servers for tests: one redis-server, or a 3-master Redis Cluster.

Each server listens on a free loopback port, keeps its files in a directory the caller
gives (a pytest tmp_path), and is stopped by its pid. The shared Redis is never touched.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import redis

STARTUP_TIMEOUT = 10.0


def unavailable(reason: str) -> None:
    """Stop the test: in CI (CI=true) a missing Redis is a failure, elsewhere a loud skip."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI needs Redis: {reason}", pytrace=False)
    pytest.skip(f"REDIS UNAVAILABLE, TEST NOT RUN: {reason}")


def redis_server_binary() -> str:
    """The redis-server executable; stops the test (see ``unavailable``) without one."""
    binary = shutil.which("redis-server")
    if binary is None:
        unavailable("redis-server is not installed")
    return binary


def free_port() -> int:
    """A loopback TCP port nobody listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class RedisServer:
    """A redis-server process on 127.0.0.1:``port`` with its files in ``directory``."""

    directory: Path
    port: int = field(default_factory=free_port)
    extra_args: tuple[str, ...] = ()
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        """Start (or restart, on the same port and files) and wait until it answers PING."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            [
                redis_server_binary(),
                "--port", str(self.port),
                "--bind", "127.0.0.1",
                "--dir", str(self.directory),
                "--save", "",
                "--daemonize", "no",
                "--logfile", str(self.directory / "redis.log"),
                *self.extra_args,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self._wait_until_answering()
        return self

    def kill(self) -> None:
        """SIGKILL, like a crash; waits until the process is gone."""
        self._signal_and_wait(signal.SIGKILL)

    def stop(self) -> None:
        """SIGTERM (clean shutdown), SIGKILL if it lingers. Harmless when not running."""
        if self.process is None or self.process.poll() is not None:
            return
        self.resume()  # a paused server would hold a SIGTERM until continued
        try:
            self._signal_and_wait(signal.SIGTERM, timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()

    def pause(self) -> None:
        """SIGSTOP: the port still accepts connections but nothing answers (a hung server)."""
        os.kill(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.process.pid, signal.SIGCONT)

    def client(self) -> redis.Redis:
        """A plain client for test set-up and inspection."""
        return redis.Redis(
            host="127.0.0.1", port=self.port, socket_timeout=5, decode_responses=True
        )

    def _signal_and_wait(self, signum: int, timeout: float = 10) -> None:
        os.kill(self.process.pid, signum)
        self.process.wait(timeout=timeout)

    def _wait_until_answering(self) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        with self.client() as client:
            while True:
                if self.process.poll() is not None:
                    raise RuntimeError(f"redis-server exited; see {self.directory / 'redis.log'}")
                try:
                    client.ping()
                    return
                except redis.ConnectionError:
                    if time.monotonic() > deadline:
                        self.stop()
                        raise
                    time.sleep(0.05)


@dataclass
class RedisClusterServers:
    """A Redis Cluster of ``masters`` masters without replicas, on loopback ports.

    Ports are chosen on construction, so ``url`` is known before ``start``."""

    directory: Path
    masters: int = 3
    servers: list[RedisServer] = field(init=False)

    def __post_init__(self) -> None:
        self.servers = [
            RedisServer(
                self.directory / f"node{number}",
                extra_args=(
                    "--cluster-enabled", "yes",
                    "--cluster-config-file", "nodes.conf",
                    # An explicit bus port: the default (port + 10000) may be taken.
                    "--cluster-port", str(free_port()),
                    "--cluster-node-timeout", "5000",
                ),
            )
            for number in range(self.masters)
        ]

    @property
    def url(self) -> str:
        """A URL for the store: any node is enough to discover the others."""
        return f"redis+cluster://127.0.0.1:{self.servers[0].port}"

    def start(self) -> RedisClusterServers:
        """Start the nodes, assign all slots, wait until every node says cluster_state:ok."""
        try:
            for server in self.servers:
                server.start()
            self._create()
            self._wait_until_ok()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for server in self.servers:
            server.stop()

    def _create(self) -> None:
        subprocess.run(
            [
                shutil.which("redis-cli") or "redis-cli", "--cluster", "create",
                *(f"127.0.0.1:{server.port}" for server in self.servers),
                "--cluster-replicas", "0", "--cluster-yes",
            ],
            check=True, capture_output=True, timeout=STARTUP_TIMEOUT,
        )

    def _wait_until_ok(self) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        for server in self.servers:
            with server.client() as client:
                while client.cluster("INFO").get("cluster_state") != "ok":
                    if time.monotonic() > deadline:
                        raise RuntimeError("the test cluster did not reach cluster_state:ok")
                    time.sleep(0.05)
