"""service/store/quick_check.py: the check for unread data that redis-py makes before every
command sees what redis-py's own sees, and under gevent costs no turn of the event loop."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest
import redis
from redis import Connection, SSLConnection, UnixDomainSocketConnection

from service.store.quick_check import QuickCheckConnection, with_quick_check
from service.store.redis import RedisStore


@pytest.fixture
def connection(redis_url: str):
    options = redis.ConnectionPool.from_url(redis_url).connection_kwargs
    connection = QuickCheckConnection(**options)
    connection.connect()
    yield connection
    connection.disconnect()


def test_a_clean_connection_has_nothing_to_read(connection) -> None:
    connection.send_command("PING")
    assert connection.read_response() in (b"PONG", "PONG")
    assert connection.can_read() is False


def test_an_unread_reply_is_seen(connection) -> None:
    connection.send_command("PING")
    assert _eventually(connection.can_read)  # once Redis has answered


def test_a_reply_buffered_by_the_parser_is_seen(connection) -> None:
    """Two replies that arrive in one read: the parser holds the second, the socket is empty."""
    connection.send_packed_command(connection.pack_commands([("PING",), ("ECHO", "second")]))
    assert connection.read_response() in (b"PONG", "PONG")
    assert connection.can_read() is True
    assert connection.read_response() in (b"second", "second")
    assert connection.can_read() is False


def test_a_connection_closed_by_the_server_is_not_reused(connection, redis_url: str) -> None:
    connection.send_command("CLIENT", "ID")
    client_id = connection.read_response()
    with redis.Redis.from_url(redis_url) as admin:
        admin.client_kill_filter(_id=client_id)
    with pytest.raises(redis.ConnectionError):
        _eventually(connection.can_read)


def test_only_plain_tcp_connections_are_replaced() -> None:
    assert with_quick_check(Connection) is QuickCheckConnection
    assert with_quick_check(SSLConnection) is SSLConnection
    assert with_quick_check(UnixDomainSocketConnection) is UnixDomainSocketConnection


def test_the_store_uses_it(redis_url: str, key_prefix: str) -> None:
    store = RedisStore(redis_url, prefix=key_prefix)
    try:
        assert store._connection().client.connection_pool.connection_class is QuickCheckConnection
    finally:
        store.close()


def test_the_store_uses_it_on_a_cluster(redis_cluster_url: str, key_prefix: str) -> None:
    store = RedisStore(redis_cluster_url, prefix=key_prefix)
    try:
        client = store._connection().client
        client.ping()
        assert {node.redis_connection.connection_pool.connection_class
                for node in client.get_nodes()} == {QuickCheckConnection}
    finally:
        store.close()


PROGRAM = """
from gevent import monkey; monkey.patch_all()
import sys, gevent, redis
from service.store.quick_check import QuickCheckConnection
turns = 0
def count():
    global turns
    while True:
        turns += 1
        gevent.sleep(0)
gevent.spawn(count)
gevent.sleep(0)
pool = redis.ConnectionPool.from_url(sys.argv[1])
if sys.argv[2] == "quick":
    pool.connection_class = QuickCheckConnection
connection = pool.get_connection()
before = turns
for _ in range(100):
    assert connection.can_read() is False
print((turns - before) / 100)
"""


def turns_per_check(redis_url: str, kind: str) -> float:
    """How often other greenlets ran during one check of an idle connection, under gevent."""
    answer = subprocess.run([sys.executable, "-c", textwrap.dedent(PROGRAM), redis_url, kind],
                            capture_output=True, text=True, timeout=60, check=True)
    return float(answer.stdout)


def test_under_gevent_the_check_gives_the_event_loop_no_turn(redis_url: str) -> None:
    """redis-py's own check switches to the hub (other greenlets run, here one that only
    counts its turns); this one does not switch at all. Should redis-py's stop switching,
    the second half fails and this module can go."""
    assert turns_per_check(redis_url, "quick") == 0 < turns_per_check(redis_url, "redis-py")


def _eventually(check, tries: int = 200) -> bool:
    for _ in range(tries):
        if check():
            return True
        time.sleep(0.005)
    return False
