"""What a client can make a worker hold by not reading, and what a retiring worker waits for,
on a real gunicorn with the shipped settings.

- A client that requests and never reads its answers is dropped once a write of the answer
  has waited RESPONSE_SEND_TIMEOUT_SECONDS for it (before, such sockets were held for as long
  as the client kept them open, megabytes of answers queued in the kernel for each).
- What the kernel holds for such a client is bounded while its connection is open (the send
  buffer's cap) and freed once the server is done with it: answers that fit in the buffer
  were left queued in the kernel after the server closed, for as long as the client kept its
  end open (~1 MB for each client asking three times for the OpenAPI document).
- A client that sent requests ahead on a connection closed after its 100th answer reads all
  100 answers and then the end of the connection (before, a reset made it lose some).
- A worker that retires after max_requests stops accepting until it has exited; the
  long-polls it holds are answered at once (with ``Connection: close``), so it exits within
  about a second, not after their whole wait (up to 30 s, during which, with one worker,
  nobody accepted).
"""
from __future__ import annotations

import socket
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from service.gunicorn_worker import CLOSE_DRAIN_SECONDS, MAX_REQUESTS_PER_CONNECTION, SEND_BUFFER_BYTES
from tests.gunicorn_server import TEST_API_KEY

pytestmark = [pytest.mark.slow, pytest.mark.exclusive]

SEND_TIMEOUT = 2  # RESPONSE_SEND_TIMEOUT_SECONDS for the test (shipped: 10)
READERS = 20
PIPELINED = 5  # requests for the 1 MB docs asset per reader: more than the kernel buffers hold
ASSET = b"GET /docs/assets/swagger-ui-bundle.js HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
DROP_BOUND = 15.0  # seconds: the send timeout, plus filling the buffers and a busy machine
WAITERS = 20
WAIT = 30  # each long-poll's wait
MAX_REQUESTS = 60
TCP_ESTABLISHED = 1  # tcpi_state of struct tcp_info (linux/tcp_states.h)


OPENAPI = b"GET /openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"  # ~330 KB: three fit in a default buffer
HEALTH = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
KEEPALIVE = 5  # GUNICORN_KEEPALIVE, shipped
SLACK = 3.0


def server_side_queues(port: int, clients: set[int]) -> dict[int, int]:
    """Bytes the server's kernel still holds to send, by client port, for the server's sockets
    of these client connections (closed ones included, while the kernel keeps them)."""
    queued = {}
    with open("/proc/net/tcp") as table:
        for line in table.readlines()[1:]:
            fields = line.split()
            local_port, remote_port = (int(address.rsplit(":", 1)[1], 16) for address in fields[1:3])
            if local_port == port and remote_port in clients:
                queued[remote_port] = queued.get(remote_port, 0) + int(fields[4].split(":")[0], 16)
    return queued


def closed_by_server(connection: socket.socket) -> bool:
    """Whether the server has closed or reset it, without reading (reading is what the client
    must not do): its TCP state is no longer ESTABLISHED."""
    return connection.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1)[0] != TCP_ESTABLISHED


@pytest.mark.timeout(120)
def test_a_client_that_does_not_read_its_answers_is_dropped(start_gunicorn, redis_url, test_prefix) -> None:
    server = start_gunicorn({"REDIS_URL": redis_url, "KEY_PREFIX": test_prefix,
                             "RESPONSE_SEND_TIMEOUT_SECONDS": str(SEND_TIMEOUT)}, workers=2)
    readers = []
    for _ in range(READERS):
        reader = socket.socket()
        reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        reader.connect(("127.0.0.1", server.port))
        reader.sendall(ASSET * PIPELINED)
        readers.append(reader)
    opened = time.monotonic()
    dropped: dict[int, float] = {}
    try:
        while len(dropped) < READERS and time.monotonic() - opened < DROP_BOUND + 30:
            for number, reader in enumerate(readers):
                if number not in dropped and closed_by_server(reader):
                    dropped[number] = time.monotonic() - opened
            time.sleep(0.1)
        health = requests.get(f"{server.url}/healthz", timeout=5)
    finally:
        for reader in readers:
            reader.close()
    print(f"\n{READERS} clients each asking {PIPELINED} x 1 MB and reading nothing: {len(dropped)} dropped, "
          f"after {min(dropped.values(), default=0):.1f}-{max(dropped.values(), default=0):.1f} s "
          f"(send timeout {SEND_TIMEOUT} s)")
    assert len(dropped) == READERS and max(dropped.values()) <= DROP_BOUND
    assert health.status_code == 200


@pytest.mark.timeout(120)
def test_a_retiring_worker_answers_its_long_polls_and_exits_at_once(start_gunicorn, redis_url, test_prefix) -> None:
    # One worker and the shipped graceful timeout (30 s): while it retires, nobody accepts.
    server = start_gunicorn({"REDIS_URL": redis_url, "KEY_PREFIX": test_prefix,
                             "GUNICORN_MAX_REQUESTS": str(MAX_REQUESTS), "GUNICORN_MAX_REQUESTS_JITTER": "0",
                             "GUNICORN_GRACEFUL_TIMEOUT": "30"}, workers=1)
    created = requests.post(f"{server.url}/v1/games", headers={"X-API-Key": TEST_API_KEY}, timeout=5,
                            json={"variant": "classic", "players": [{"name": "Ann"}, {"name": "Bob"}]})
    game = created.json()["game"]
    last = requests.get(f"{server.url}/v1/games/{game['id']}/events", timeout=5).json()["last_seq"]
    events = f"{server.url}/v1/games/{game['id']}/events?after={last}&wait={WAIT}"

    def long_poll() -> float:
        started = time.monotonic()
        answer = requests.get(events, timeout=WAIT + 10)
        assert answer.status_code == 200
        # The worker closes the connection after it; a client told so does not send its next
        # request there.
        assert answer.headers.get("Connection") == "close"
        return time.monotonic() - started

    first_worker = server.worker_pids()
    with ThreadPoolExecutor(WAITERS) as pool:
        waits = [pool.submit(long_poll) for _ in range(WAITERS)]
        time.sleep(1)  # the long-polls are waiting
        probes = []
        # The worker retires at its MAX_REQUESTS-th request and stops accepting within a
        # second (gunicorn looks once a second); probing goes on until its successor answers.
        while len(probes) < MAX_REQUESTS or server.worker_pids() & first_worker:
            started = time.monotonic()
            assert requests.get(f"{server.url}/healthz", timeout=WAIT + 10).status_code == 200
            probes.append(time.monotonic() - started)
            time.sleep(0.02)
        answered = [wait.result() for wait in waits]
    print(f"\nretiring with {WAITERS} long-polls (wait {WAIT} s): long-polls answered after "
          f"{min(answered):.1f}-{max(answered):.1f} s; /healthz slowest {max(probes):.2f} s "
          f"over {len(probes)} probes")
    assert max(answered) < WAIT / 3
    assert max(probes) < WAIT / 3


@pytest.mark.timeout(120)
def test_what_the_kernel_holds_for_a_client_that_does_not_read_is_bounded_and_freed(
        start_gunicorn, redis_url, test_prefix) -> None:
    server = start_gunicorn({"REDIS_URL": redis_url, "KEY_PREFIX": test_prefix,
                             "RESPONSE_SEND_TIMEOUT_SECONDS": str(SEND_TIMEOUT)}, workers=2)
    # Large answers (three OpenAPI documents: the buffer's cap makes the writes wait, and the
    # send timeout drops the connection) and small ones (fifty /healthz: they fit, and are
    # still unsent when the connection goes idle and closes).
    clients = []
    for request in [OPENAPI * 3] * (READERS // 2) + [HEALTH * 50] * (READERS // 2):
        client = socket.socket()
        client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        client.connect(("127.0.0.1", server.port))
        client.sendall(request)
        clients.append(client)
    ports = {client.getsockname()[1] for client in clients}
    try:
        time.sleep(1.5)
        held = server_side_queues(server.port, ports)
        freed_by = KEEPALIVE + CLOSE_DRAIN_SECONDS + SLACK
        started = time.monotonic()
        while server_side_queues(server.port, ports) and time.monotonic() - started < freed_by:
            time.sleep(0.2)
        left = server_side_queues(server.port, ports)
        freed_after = time.monotonic() - started + 1.5
    finally:
        for client in clients:
            client.close()
    print(f"\n{READERS} clients reading nothing: the server's kernel held at most {max(held.values()) // 1024} KiB "
          f"for one ({sum(held.values()) // 1024} KiB in all) and kept {len(left)} of their sockets after "
          f"{freed_after:.1f} s")
    # The kernel may go past the doubled cap by a few segments it has already taken in.
    assert max(held.values()) <= 2 * SEND_BUFFER_BYTES + 64 * 1024
    assert left == {}


@pytest.mark.timeout(60)
def test_requests_sent_ahead_of_a_closing_connection_lose_no_answer(service) -> None:
    sent = MAX_REQUESTS_PER_CONNECTION + 50
    # Padded so that the requests after the 100th are still in the kernel when the server has
    # answered it (gunicorn reads ahead only so far): a close then sends a reset.
    padded = HEALTH.replace(b"\r\n\r\n", b"\r\nX-Pad: " + b"p" * 2000 + b"\r\n\r\n")
    with socket.create_connection(("127.0.0.1", service.port)) as client:
        client.sendall(padded * sent)
        time.sleep(0.5)  # the server answers its 100 and closes meanwhile
        client.settimeout(10)
        received = b""
        while chunk := client.recv(65536):  # a reset raises ConnectionResetError here
            received += chunk
    answers = received.count(b"HTTP/1.1 200 ")
    print(f"\n{sent} requests sent at once on one connection: {answers} answers, then the end of the connection")
    assert answers == MAX_REQUESTS_PER_CONNECTION
