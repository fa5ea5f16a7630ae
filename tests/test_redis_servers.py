"""The tests' private Redis servers (tests/redis_servers.py): ports outside the kernel's
ephemeral range, and a first start that moves on when its port was taken meanwhile."""
from __future__ import annotations

import socket

import pytest

from tests.redis_servers import PortTaken, RedisServer, _ephemeral_floor, free_port, redis_server_binary


def test_free_ports_lie_below_the_ephemeral_range() -> None:
    floor = _ephemeral_floor()
    assert all(port < floor for port in (free_port() for _ in range(50)))


@pytest.fixture
def taken_port():
    with socket.socket() as holder:
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        holder.bind(("127.0.0.1", free_port()))
        holder.listen()
        yield holder.getsockname()[1]


def test_a_first_start_on_a_taken_port_moves_to_a_free_one(tmp_path, taken_port: int) -> None:
    redis_server_binary()
    server = RedisServer(tmp_path / "redis", port=taken_port).start()
    try:
        assert server.port != taken_port
        with server.client() as client:
            assert client.ping()
    finally:
        server.stop()


def test_a_restart_keeps_its_port_and_says_when_it_is_taken(tmp_path) -> None:
    redis_server_binary()
    server = RedisServer(tmp_path / "redis").start()
    port = server.port
    server.stop()
    with socket.socket() as squatter:
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        with pytest.raises(PortTaken):
            server.start()
    assert server.port == port
