"""Private Redis servers for tests: one redis-server, or a 3-master Redis Cluster.

Each server listens on a free loopback port, keeps its files in a directory the caller
gives (a pytest tmp_path), and is stopped by its pid. The shared Redis is never touched.
"""
from __future__ import annotations

import os
import random
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
PORT_TRIES = 5


class PortTaken(RuntimeError):
    """redis-server could not listen: its port was taken after it was chosen."""


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


# Ports are drawn below the kernel's ephemeral range (the ports it gives outgoing
# connections): a port from that range can be taken, between the moment it is chosen and the
# moment the server given it binds it, by any of the thousands of loopback connections the
# tests open side by side ("Address already in use"); a port below it only by another bind.
PORT_FLOOR = 10000
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_draw = random.SystemRandom()  # not the seeded random module: every process draws its own


def _ephemeral_floor() -> int:
    try:
        return int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def free_port() -> int:
    """A loopback TCP port nobody listens on right now, below the ephemeral range."""
    ceiling = max(_ephemeral_floor(), PORT_FLOOR + 1000)
    for _ in range(200):
        port = _draw.randrange(PORT_FLOOR, ceiling)
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free loopback port in {PORT_FLOOR}-{ceiling}")


@dataclass
class RedisServer:
    """A redis-server process on 127.0.0.1:``port`` with its files in ``directory``; with
    ``cluster_node``, a Redis Cluster node whose bus listens on a free port of its own.

    The first start moves to other free ports when the chosen ones were taken meanwhile (by
    another test's server); a restart keeps its port."""

    directory: Path
    port: int = field(default_factory=free_port)
    extra_args: tuple[str, ...] = ()
    cluster_node: bool = False
    process: subprocess.Popen | None = None
    bus_port: int | None = None
    started: bool = False

    def __post_init__(self) -> None:
        if self.cluster_node and self.bus_port is None:
            # An explicit bus port: the default (port + 10000) may be taken or out of range.
            self.bus_port = free_port()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        """Start (or restart, on the same port and files) and wait until it answers PING."""
        self.directory.mkdir(parents=True, exist_ok=True)
        for _ in range(PORT_TRIES):
            self._launch()
            try:
                self._wait_until_answering()
            except PortTaken:
                if self.started:
                    raise
                self.port = free_port()
                self.bus_port = free_port() if self.cluster_node else None
                continue
            self.started = True
            return self
        raise RuntimeError(f"redis-server found its ports taken {PORT_TRIES} times")

    def _launch(self) -> None:
        cluster = ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                   "--cluster-port", str(self.bus_port)] if self.cluster_node else []
        self.log.unlink(missing_ok=True)
        self.process = subprocess.Popen(
            [
                redis_server_binary(),
                "--port", str(self.port),
                "--bind", "127.0.0.1",
                "--dir", str(self.directory),
                "--save", "",
                "--daemonize", "no",
                "--logfile", str(self.log),
                *cluster,
                *self.extra_args,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    @property
    def log(self) -> Path:
        return self.directory / "redis.log"

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
        """Wait for this process to say it listens (a PING alone could reach whatever else
        took the port), then for its PING."""
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while not self._logged("Ready to accept connections"):
            if self.process.poll() is not None:
                if self._logged("Address already in use"):
                    raise PortTaken(self.port)
                raise RuntimeError(f"redis-server exited; see {self.log}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"redis-server did not start within {STARTUP_TIMEOUT} s; see {self.log}")
            time.sleep(0.02)
        with self.client() as client:
            client.ping()

    def _logged(self, text: str) -> bool:
        return self.log.exists() and text in self.log.read_text(errors="replace")


@dataclass
class RedisClusterServers:
    """A Redis Cluster of ``masters`` masters without replicas, on loopback ports.

    ``url`` is known once started (a node may move to other ports when its own were taken)."""

    directory: Path
    masters: int = 3
    servers: list[RedisServer] = field(init=False)

    def __post_init__(self) -> None:
        self.servers = [
            RedisServer(self.directory / f"node{number}", extra_args=("--cluster-node-timeout", "5000"),
                        cluster_node=True)
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
