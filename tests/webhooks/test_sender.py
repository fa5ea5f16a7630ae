"""One delivery attempt against real sockets on loopback."""
from __future__ import annotations

import ipaddress
import shutil
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from service.webhooks.addresses import Resolved
from service.webhooks.connections import IdleConnections
from service.webhooks.sender import (
    CONNECT_TIMEOUT_SECONDS,
    TOTAL_TIMEOUT_SECONDS,
    USER_AGENT,
    Outcome,
    Sender,
)
from service.webhook_signing import WebhookSecret
from tests.redis_servers import free_port
from tests.webhooks.receiver import HANG, Receiver, always
from tests.webhooks.support import body_for

pytestmark = pytest.mark.timeout(60)

BODY = body_for("g_example", "turn", seat=0)


def resolver_to(*ips: str) -> Callable[[str, int, float], list[Resolved]]:
    """A resolver that answers ``ips`` for any name."""
    def resolve(host: str, port: int, timeout: float) -> list[Resolved]:
        found = []
        for ip in ips:
            address = ipaddress.ip_address(ip)
            family = socket.AF_INET if address.version == 4 else socket.AF_INET6
            found.append(Resolved(family, (ip, port) if address.version == 4 else (ip, port, 0, 0), address))
        return found
    return resolve


def sender(secret: str, **options) -> Sender:
    return Sender(WebhookSecret.parse(secret), **{"allow_private": True, **options})


def test_the_production_timeouts_are_3_s_to_connect_and_10_s_in_all() -> None:
    assert (CONNECT_TIMEOUT_SECONDS, TOTAL_TIMEOUT_SECONDS) == (3.0, 10.0)


def test_delivers_a_signed_json_post_to_the_name_at_the_vetted_address(secret: str, receiver: Receiver) -> None:
    url = f"http://hooks.test:{receiver.port}/gin/hook?tenant=7"
    result = sender(secret, resolver=resolver_to("127.0.0.1")).deliver(url, "wh_g_example_1", BODY)
    assert (result.outcome, result.status, result.reason) == (Outcome.DELIVERED, 200, "")
    [request] = receiver.received
    assert request.verified and request.body == BODY
    assert request.path == "/gin/hook?tenant=7"
    assert request.headers["host"] == f"hooks.test:{receiver.port}"  # the name, not the address
    assert request.headers["content-type"] == "application/json"
    assert request.headers["user-agent"] == USER_AGENT and USER_AGENT.startswith("ginrummy-webhooks/")
    assert request.webhook_id == "wh_g_example_1"
    assert abs(request.timestamp - time.time()) < 5


def test_the_timestamp_is_the_attempts_time_on_the_given_clock(secret: str, receiver: Receiver) -> None:
    moment = int(time.time()) - 100
    sender(secret, clock=lambda: moment + 0.7).deliver(receiver.url(), "wh_1", BODY)
    assert receiver.received[0].timestamp == moment and receiver.received[0].verified


def test_loopback_is_refused_unless_private_addresses_are_allowed(secret: str, receiver: Receiver) -> None:
    for host in ("localhost", "127.0.0.1"):
        result = sender(secret, allow_private=False).deliver(receiver.url(host=host), "wh_1", BODY)
        assert result.outcome is Outcome.REFUSED
        assert result.reason.startswith("forbidden address ")
    assert receiver.received == []
    assert sender(secret, allow_private=True).deliver(receiver.url(host="localhost"), "wh_1", BODY).outcome \
        is Outcome.DELIVERED


@pytest.mark.parametrize("ips", [("93.184.216.34", "10.0.0.7"), ("::ffff:127.0.0.1",), ("169.254.169.254",)])
def test_any_forbidden_address_among_the_answers_refuses_the_attempt(secret: str, ips) -> None:
    result = sender(secret, allow_private=False, resolver=resolver_to(*ips)).deliver(
        "https://hooks.test/x", "wh_1", BODY
    )
    assert result.outcome is Outcome.REFUSED
    assert result.reason == f"forbidden address {ipaddress.ip_address(ips[-1])}"


@pytest.mark.parametrize("status", [301, 302, 307, 404, 500, 503])
def test_a_non_2xx_answer_is_a_failure_and_redirects_are_not_followed(secret: str, status: int) -> None:
    receiver = Receiver(secret, always(status)).start()
    try:
        result = sender(secret).deliver(receiver.url(), "wh_1", BODY)
        assert (result.outcome, result.status, result.reason) == (Outcome.FAILED, status, f"http {status}")
        assert len(receiver.received) == 1
    finally:
        receiver.close()


def test_nobody_listening_is_a_failure(secret: str) -> None:
    result = sender(secret).deliver(f"http://127.0.0.1:{free_port()}/x", "wh_1", BODY)
    assert result.outcome is Outcome.FAILED and result.reason.startswith("connect: ")


def test_an_unresolvable_name_is_a_failure_to_retry(secret: str) -> None:
    result = sender(secret).deliver("https://no-such-host.invalid/x", "wh_1", BODY)
    assert result.outcome is Outcome.FAILED and result.reason.startswith("dns: ")


@pytest.mark.parametrize("url", ["ftp://hooks.test/x", "https:///x", "https://u:p@hooks.test/x", "https://h:99999/"])
def test_an_unusable_url_is_refused(secret: str, url: str) -> None:
    assert sender(secret).deliver(url, "wh_1", BODY).outcome is Outcome.REFUSED


@pytest.mark.parametrize(("path", "webhook_id", "reason"), [
    ("/x\r\nX-Injected: 1", "wh_1", "unusable callback URL"),
    ("/x y", "wh_1", "unusable callback URL"),
    ("/caf\u00e9", "wh_1", "unusable callback URL"),
    ("/x", "wh_1\r\nX-Injected: 1", "unusable webhook id"),
    ("/x", "", "unusable webhook id"),
])
def test_nothing_that_could_break_out_of_the_request_line_or_a_header_is_sent(
    secret: str, receiver: Receiver, path: str, webhook_id: str, reason: str
) -> None:
    result = sender(secret).deliver(f"http://127.0.0.1:{receiver.port}{path}", webhook_id, BODY)
    assert (result.outcome, result.reason) == (Outcome.REFUSED, reason)
    assert receiver.received == []


class RawServer:
    """A TCP server on loopback that reads a request, then runs ``respond(connection)``."""

    def __init__(self, respond: Callable[[socket.socket], None]) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._respond = respond
        self.port = self._listener.getsockname()[1]
        self.connections = 0
        self.closed_by_client = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._handle, args=(connection,), daemon=True).start()

    def _handle(self, connection: socket.socket) -> None:
        with connection:
            data = b""
            while b"\r\n\r\n" not in data:
                data += connection.recv(65536)
            try:
                self._respond(connection)
            except OSError:
                self.closed_by_client.set()

    def close(self) -> None:
        self._listener.close()


def trickle(connection: socket.socket) -> None:
    for byte in b"HTTP/1.1 200 OK\r\n" + b"X-Slow: " + b"a" * 10_000:
        connection.sendall(bytes([byte]))
        time.sleep(0.05)


def hang(connection: socket.socket) -> None:
    while connection.recv(65536):  # the rest of the request, then nothing until the client gives up
        pass
    raise ConnectionResetError


def endless_body(connection: socket.socket) -> None:
    connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000\r\n\r\n")
    chunk = b"x" * 65536
    while True:
        connection.sendall(chunk)


@pytest.fixture
def raw_server(request) -> Iterator[RawServer]:
    server = RawServer(request.param)
    yield server
    server.close()


@pytest.mark.parametrize("raw_server", [trickle, hang], indirect=True, ids=["trickling", "hanging"])
def test_the_whole_attempt_ends_at_the_total_timeout(secret: str, raw_server: RawServer) -> None:
    started = time.monotonic()
    result = sender(secret, total_timeout=1.0).deliver(f"http://127.0.0.1:{raw_server.port}/x", "wh_1", BODY)
    elapsed = time.monotonic() - started
    assert (result.outcome, result.reason) == (Outcome.FAILED, "timeout")
    assert 0.9 < elapsed < 2.0
    assert raw_server.closed_by_client.wait(5)


def stall(connection: socket.socket) -> None:
    time.sleep(5)  # reads nothing more: the client's send buffer fills and stays full


@pytest.mark.parametrize("raw_server", [stall], indirect=True)
def test_a_receiver_that_stops_reading_the_body_ends_the_attempt_at_the_total_timeout(
    secret: str, raw_server: RawServer
) -> None:
    body = "x" * 64_000_000  # far more than the socket buffers on both sides take
    started = time.monotonic()
    result = sender(secret, total_timeout=1.0).deliver(f"http://127.0.0.1:{raw_server.port}/x", "wh_1", body)
    elapsed = time.monotonic() - started
    assert (result.outcome, result.reason) == (Outcome.FAILED, "timeout")
    assert 0.9 < elapsed < 2.0


@pytest.mark.parametrize("raw_server", [endless_body], indirect=True)
def test_only_a_bounded_part_of_the_answer_is_read(secret: str, raw_server: RawServer) -> None:
    started = time.monotonic()
    result = sender(secret, total_timeout=5.0).deliver(f"http://127.0.0.1:{raw_server.port}/x", "wh_1", BODY)
    assert result.outcome is Outcome.DELIVERED
    assert time.monotonic() - started < 1.0
    assert raw_server.closed_by_client.wait(5)


def test_connecting_gives_up_at_the_connect_timeout_and_tries_the_next_address(secret: str, receiver) -> None:
    # 10.255.255.1 is not routed here: its connect hangs until the connect timeout.
    resolver = resolver_to("10.255.255.1", "127.0.0.1")
    started = time.monotonic()
    result = sender(secret, connect_timeout=0.5, resolver=resolver).deliver(
        f"http://hooks.test:{receiver.port}/x", "wh_1", BODY
    )
    assert result.outcome is Outcome.DELIVERED
    assert time.monotonic() - started < 3.0


# --- TLS: SNI and the certificate check use the name, although the socket goes to the address


def make_certificate(directory: Path, name: str) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("OPENSSL MISSING, TEST NOT RUN: the TLS test makes its certificate with it")
    cert, key = directory / f"{name}.crt", directory / f"{name}.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", f"/CN={name}",
         "-addext", f"subjectAltName=DNS:{name}", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )
    return cert, key


@pytest.fixture
def tls_receiver(secret: str, tmp_path: Path) -> Iterator[tuple[Receiver, Path, list[str]]]:
    cert, key = make_certificate(tmp_path, "hooks.test")
    receiver = Receiver(secret)
    server_names: list[str] = []
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    context.sni_callback = lambda sock, name, ctx: server_names.append(name)
    receiver._server.socket = context.wrap_socket(receiver._server.socket, server_side=True)
    receiver.start()
    yield receiver, cert, server_names
    receiver.close()


def test_https_sends_sni_and_checks_the_certificate_for_the_name(secret: str, tls_receiver, tmp_path) -> None:
    receiver, cert, server_names = tls_receiver
    trusting = ssl.create_default_context(cafile=str(cert))
    url = f"https://hooks.test:{receiver.port}/x"
    result = sender(secret, ssl_context=trusting, resolver=resolver_to("127.0.0.1")).deliver(url, "wh_1", BODY)
    assert result.outcome is Outcome.DELIVERED, result
    assert server_names == ["hooks.test"]
    assert receiver.received[0].verified and receiver.received[0].headers["host"] == f"hooks.test:{receiver.port}"

    other_cert, _ = make_certificate(tmp_path, "other.test")
    trusting_other = ssl.create_default_context(cafile=str(other_cert))
    refused = sender(secret, ssl_context=trusting_other, resolver=resolver_to("127.0.0.1")).deliver(url, "wh_1", BODY)
    assert refused.outcome is Outcome.FAILED and refused.reason.startswith("tls: ")
    assert len(receiver.received) == 1


# --- what an attempt costs: no lookup for an IP literal, no thread, a kept-alive connection


def test_an_ip_literal_is_refused_when_private_without_a_lookup(secret: str, receiver: Receiver, monkeypatch) -> None:
    def no_lookup(*args, **kwargs):
        raise AssertionError("an IP literal was looked up")

    monkeypatch.setattr(socket, "getaddrinfo", no_lookup)
    refusing = sender(secret, allow_private=False)
    for url in (receiver.url(), f"http://[::1]:{receiver.port}/x", "https://169.254.169.254/latest/meta-data"):
        result = refusing.deliver(url, "wh_1", BODY)
        assert result.outcome is Outcome.REFUSED and result.reason.startswith("forbidden address ")
    assert receiver.received == []
    assert sender(secret).deliver(receiver.url(), "wh_1", BODY).outcome is Outcome.DELIVERED


def test_an_attempt_to_an_ip_literal_starts_no_thread(secret: str, receiver: Receiver, monkeypatch) -> None:
    caller = threading.current_thread()
    started: list[str] = []
    start = threading.Thread.start

    def counting_start(thread: threading.Thread) -> None:
        if threading.current_thread() is caller:
            started.append(thread.name)
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", counting_start)
    delivering = sender(secret)
    for _ in range(3):
        assert delivering.deliver(receiver.url(), "wh_1", BODY).outcome is Outcome.DELIVERED
    assert started == []


def test_deliveries_to_one_receiver_reuse_one_connection(secret: str, receiver: Receiver) -> None:
    delivering = sender(secret)
    for number in range(5):
        assert delivering.deliver(receiver.url(), f"wh_{number}", BODY).outcome is Outcome.DELIVERED
    assert len({request.peer for request in receiver.received}) == 1
    assert all(request.verified for request in receiver.received)
    delivering.close()


def test_deliveries_together_all_go_out_before_any_answer_is_read(secret: str) -> None:
    receiver = Receiver(secret, lambda request, count: HANG).start()
    idle = IdleConnections()
    delivering = sender(secret, idle=idle)
    try:
        with ThreadPoolExecutor(1) as pool:
            results = pool.submit(delivering.deliver_together,
                                  [(receiver.url(), f"wh_{number}", BODY) for number in range(3)])
            # The receiver holds every answer, yet all three arrive, each on a connection of its own.
            held = receiver.wait_for_count(3)
            assert len({request.peer for request in held}) == 3
            receiver.release()
            assert [result.outcome for result in results.result(10)] == [Outcome.DELIVERED] * 3
        assert all(request.verified for request in receiver.received)
        assert idle.count() == 3  # all kept for the next deliveries
    finally:
        delivering.close()
        receiver.close()


def test_deliveries_together_end_each_on_their_own(secret: str, receiver: Receiver) -> None:
    results = sender(secret).deliver_together([
        (receiver.url(), "wh_1", BODY),
        ("ftp://example.com/x", "wh_2", BODY),
        (receiver.url(), "bad id", BODY),
        (f"http://127.0.0.1:{free_port()}/x", "wh_4", BODY),
        (receiver.url("/other"), "wh_5", BODY),
    ])
    assert [(result.outcome, result.reason.split(":")[0]) for result in results] == [
        (Outcome.DELIVERED, ""), (Outcome.REFUSED, "unusable callback URL"), (Outcome.REFUSED, "unusable webhook id"),
        (Outcome.FAILED, "connect"), (Outcome.DELIVERED, ""),
    ]
    # Sent together on two connections, they may arrive in either order.
    assert sorted((request.path, request.webhook_id) for request in receiver.received) == [
        ("/hooks/gin?tenant=7", "wh_1"), ("/other", "wh_5")]


def test_a_kept_connection_serves_only_the_address_it_was_vetted_for(secret: str, receiver: Receiver) -> None:
    url = f"http://hooks.test:{receiver.port}/x"
    idle = IdleConnections()
    assert sender(secret, resolver=resolver_to("127.0.0.1"), idle=idle).deliver(url, "wh_1", BODY).outcome \
        is Outcome.DELIVERED
    assert idle.count() == 1
    # The name now resolves elsewhere (nobody listens on 127.0.0.2): the connection kept for
    # 127.0.0.1 is not used for it.
    moved = sender(secret, resolver=resolver_to("127.0.0.2"), idle=idle)
    result = moved.deliver(url, "wh_2", BODY)
    assert result.outcome is Outcome.FAILED and result.reason.startswith("connect: ")
    assert len(receiver.received) == 1 and idle.count() == 1


def test_idle_connections_are_bounded_per_receiver_and_in_time(secret: str) -> None:
    receiver = Receiver(secret, lambda request, count: HANG).start()
    idle = IdleConnections(per_key=2, idle_seconds=0.5)
    delivering = sender(secret, idle=idle)
    try:
        with ThreadPoolExecutor(4) as pool:
            attempts = [pool.submit(delivering.deliver, receiver.url(), f"wh_{n}", BODY) for n in range(4)]
            receiver.wait_for_count(4)
            receiver.release()
            assert all(attempt.result().outcome is Outcome.DELIVERED for attempt in attempts)
        assert len({request.peer for request in receiver.received}) == 4
        assert idle.count() == 2  # the other two were closed
        assert delivering.deliver(receiver.url(), "wh_5", BODY).outcome is Outcome.DELIVERED
        assert receiver.received[-1].peer in {request.peer for request in receiver.received[:4]}
        time.sleep(0.6)
        assert delivering.deliver(receiver.url(), "wh_6", BODY).outcome is Outcome.DELIVERED
        assert receiver.received[-1].peer not in {request.peer for request in receiver.received[:5]}
        assert idle.count() == 1  # the expired ones were closed
    finally:
        delivering.close()
        receiver.close()


class KeepAliveServer(RawServer):
    """An HTTP/1.1 server on loopback answering 200 to each request of a connection until
    ``close_after`` requests on it, then closing it: ``early`` right after the last answer,
    else when the next request arrives, unanswered."""

    def __init__(self, close_after: int, early: bool, headers: bytes = b"") -> None:
        self._close_after = close_after
        self._early = early
        self._headers = headers
        self.answered = 0
        super().__init__(respond=lambda connection: None)

    def _handle(self, connection: socket.socket) -> None:
        with connection:
            data, served = b"", 0
            while True:
                while b"\r\n\r\n" not in data:
                    chunk = connection.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                head, _, rest = data.partition(b"\r\n\r\n")
                length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                                  if line.lower().startswith(b"content-length")))
                while len(rest) < length:
                    rest += connection.recv(65536)
                data = rest[length:]
                if served == self._close_after:
                    return
                served += 1
                self.answered += 1  # before the answer: the client may look as soon as it has it
                connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n" + self._headers + b"\r\nok")
                if served == self._close_after and self._early:
                    return

    def close(self) -> None:
        self._listener.close()


@pytest.mark.parametrize("early", [True, False], ids=["closed-while-idle", "closed-on-the-next-request"])
def test_a_connection_the_receiver_closed_is_replaced_by_a_new_one(secret: str, early: bool) -> None:
    server = KeepAliveServer(close_after=1, early=early)
    delivering = sender(secret)
    try:
        for number in range(3):
            time.sleep(0.05)  # the early close reaches this side first
            result = delivering.deliver(f"http://127.0.0.1:{server.port}/x", f"wh_{number}", BODY)
            assert result.outcome is Outcome.DELIVERED, result
        assert (server.connections, server.answered) == (3, 3)
    finally:
        delivering.close()
        server.close()


def test_a_connection_the_receiver_says_it_closes_is_not_kept(secret: str) -> None:
    server = KeepAliveServer(close_after=5, early=False, headers=b"Connection: close\r\n")
    idle = IdleConnections()
    try:
        assert sender(secret, idle=idle).deliver(f"http://127.0.0.1:{server.port}/x", "wh_1", BODY).outcome \
            is Outcome.DELIVERED
        assert idle.count() == 0
    finally:
        server.close()


def test_a_connection_that_answered_other_than_2xx_is_not_kept(secret: str) -> None:
    receiver = Receiver(secret, always(503)).start()
    idle = IdleConnections()
    try:
        assert sender(secret, idle=idle).deliver(receiver.url(), "wh_1", BODY).outcome is Outcome.FAILED
        assert idle.count() == 0
    finally:
        receiver.close()
