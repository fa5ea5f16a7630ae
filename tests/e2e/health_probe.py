"""GET /healthz on a fresh connection every EVERY seconds until UNTIL, like a kubelet's probe.

    python tests/e2e/health_probe.py PORT UNTIL EVERY

Runs in a process of its own (started by tests/e2e/waiters.HealthProbe), so what it measures
is the server's answer and not the load generator's event loop, which thousands of clients
keep busy. Prints a line "<sent at> <seconds>" per probe ("inf": no 200 within 5 s); UNTIL
and the sent-at times are ``time.monotonic()``, which on Linux is the same clock in every
process. Standard library only: it is run by path.
"""
from __future__ import annotations

import socket
import sys
import time

TIMEOUT_SECONDS = 5.0
REQUEST = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"


def probe(port: int) -> float:
    """Seconds until a whole 200 answer, or inf."""
    started = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_SECONDS) as connection:
            connection.sendall(REQUEST)
            answer = b""
            while chunk := connection.recv(65536):
                answer += chunk
                if time.monotonic() - started > TIMEOUT_SECONDS:
                    return float("inf")
    except OSError:
        return float("inf")
    return time.monotonic() - started if answer.startswith(b"HTTP/1.1 200 ") else float("inf")


def main(port: int, until: float, every: float) -> None:
    while (sent_at := time.monotonic()) < until:
        print(sent_at, probe(port), flush=True)
        time.sleep(max(0.0, sent_at + every - time.monotonic()))


if __name__ == "__main__":
    main(int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]))
