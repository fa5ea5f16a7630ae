"""Slow clients are cut off and cost the others nothing: 200 slowloris sockets for 30 s
against one instance (the shipped gunicorn settings, 2 gevent workers).

Half send a request's headers a few bytes at a time and never finish them; the other half
send complete headers and then the body a byte at a time. Each reconnects as soon as the
server closes it, so the pressure lasts the whole run. Measured, and printed: /healthz (a
probe on a fresh connection every 50 ms) stays under 100 ms throughout, and every slow socket
is closed by the server within its bound: GUNICORN_KEEPALIVE (5 s) for headers,
REQUEST_BODY_TIMEOUT_SECONDS (10 s) for a body, which is answered 408 first. The slow bodies,
which all began together, are not all answered in the same instant: each request's deadline
is drawn from the last fifth of the bound.
"""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

import pytest

from service.middleware.request_deadlines import BODY_DEADLINE_SPREAD
from tests.e2e.waiters import HealthProbe, percentile

pytestmark = [pytest.mark.slow, pytest.mark.exclusive]

SOCKETS = 200
SECONDS = 30.0
TRICKLE_EVERY = 0.5  # seconds between the bytes a slow client sends
HEADER_BOUND = 5.0  # GUNICORN_KEEPALIVE, shipped default
BODY_BOUND = 10.0  # REQUEST_BODY_TIMEOUT_SECONDS, shipped default
SLACK = 1.5  # the server's timer, the trickle's own period, scheduling on a busy machine
HEALTH_LIMIT = 0.100


@dataclass
class Slowloris:
    """One slow client, reconnecting after each close until the run ends."""

    port: int
    kind: str  # "headers" or "body"
    lifetimes: list[float] = field(default_factory=list)  # connect to closed by the server
    statuses: list[str] = field(default_factory=list)  # what the server said before closing, if anything

    async def run(self, until: float) -> None:
        while time.monotonic() < until:
            reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
            opened = time.monotonic()
            try:
                if self.kind == "headers":
                    writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                    trickle = b"X-Slow: " + b"a" * 10_000
                else:
                    writer.write(b"POST /v1/games HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                 b"Content-Type: application/json\r\nContent-Length: 10000\r\n\r\n")
                    trickle = b" " * 10_000
                reading = asyncio.ensure_future(reader.read(1000))
                for byte in trickle:
                    writer.write(bytes([byte]))
                    await writer.drain()
                    done, _ = await asyncio.wait({reading}, timeout=TRICKLE_EVERY)
                    if done or time.monotonic() >= until:
                        break
                if reading.done():
                    answer = reading.result()
                    self.statuses.append(answer.split(b"\r\n", 1)[0].decode("latin-1") if answer else "closed")
                    while answer:  # read until the server closes
                        answer = await reader.read(1000)
                    self.lifetimes.append(time.monotonic() - opened)
                else:
                    reading.cancel()
            except (ConnectionError, OSError):
                self.lifetimes.append(time.monotonic() - opened)
                self.statuses.append("reset")
            finally:
                writer.close()


async def scenario(port: int) -> dict:
    probe = HealthProbe(port)
    until = time.monotonic() + SECONDS
    probing = asyncio.ensure_future(probe.run(until))
    clients = [Slowloris(port, "headers" if number % 2 else "body") for number in range(SOCKETS)]
    await asyncio.gather(*(client.run(until) for client in clients))
    await probing
    figures: dict = {"health": [seconds for _, seconds in probe.samples]}
    for kind in ("headers", "body"):
        mine = [client for client in clients if client.kind == kind]
        figures[kind] = {
            "lifetimes": [seconds for client in mine for seconds in client.lifetimes],
            "statuses": sorted({status for client in mine for status in client.statuses}),
        }
    return figures


@pytest.mark.timeout(180)
def test_200_slowloris_sockets_are_cut_off_and_health_stays_fast(start_gunicorn, redis_url, test_prefix) -> None:
    server = start_gunicorn({"REDIS_URL": redis_url, "KEY_PREFIX": test_prefix, "ALLOW_ANONYMOUS_CREATE": "true"},
                            workers=2)
    figures = asyncio.run(scenario(server.port))
    health = figures["health"]
    headers, body = figures["headers"]["lifetimes"], figures["body"]["lifetimes"]
    print(
        f"\n{SOCKETS} slowloris sockets for {SECONDS:.0f} s: /healthz {len(health)} probes, "
        f"p50 {percentile(health, 0.5) * 1000:.1f} ms, max {max(health) * 1000:.1f} ms\n"
        f"slow headers: {len(headers)} connections closed by the server after "
        f"{min(headers):.1f}-{max(headers):.1f} s (bound {HEADER_BOUND:.0f} s); answers {figures['headers']['statuses']}\n"
        f"slow bodies: {len(body)} connections closed by the server after "
        f"{min(body):.1f}-{max(body):.1f} s (bound {BODY_BOUND:.0f} s); answers {figures['body']['statuses']}"
    )
    assert max(health) < HEALTH_LIMIT
    # Every client was cut off, again and again, each time within its bound.
    assert len(headers) >= (SOCKETS // 2) * int(SECONDS // (HEADER_BOUND + SLACK))
    assert len(body) >= (SOCKETS // 2) * int(SECONDS // (BODY_BOUND + SLACK))
    assert max(headers) <= HEADER_BOUND + SLACK
    assert max(body) <= BODY_BOUND + SLACK
    # A deadline is never shorter than the spread's lower end; and drawn uniformly from the
    # last fifth, three quarters of them fall before 9.5 s (with one fixed deadline, none can).
    assert min(body) >= BODY_BOUND * BODY_DEADLINE_SPREAD
    assert sum(seconds < BODY_BOUND - 0.5 for seconds in body) >= len(body) // 4
    # A slow body is answered 408 (by the app, as every answer, hence Werkzeug's upper-case
    # reason) before the close; the close may come as a reset (the server closes with the
    # client's unread bytes still queued), which can overtake the answer.
    assert "HTTP/1.1 408 REQUEST TIMEOUT" in figures["body"]["statuses"]
    assert set(figures["body"]["statuses"]) <= {"HTTP/1.1 408 REQUEST TIMEOUT", "reset"}
