"""The /healthz probe of the load tests (tests/e2e/health_probe.py, run by HealthProbe): a
server that does not answer counts as failed probes, and a probe process that fails is an
error, never a quiet run without samples."""
from __future__ import annotations

import asyncio
import math
import socket
import time

import pytest

from tests.e2e.waiters import HealthProbe


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# The probe is a fresh Python process: on a loaded machine (the rest of the suite running
# beside this test) it took over 0.3 s to start, and a probe that starts after UNTIL sends none.
PROBE_WINDOW_SECONDS = 3.0


def test_a_server_that_does_not_answer_is_a_failed_probe() -> None:
    probe = HealthProbe(closed_port())
    asyncio.run(probe.run(until=time.monotonic() + PROBE_WINDOW_SECONDS))
    assert probe.samples and all(math.isinf(seconds) for _, seconds in probe.samples)


def test_a_probe_process_that_fails_is_an_error() -> None:
    probe = HealthProbe(port="no-port")  # type: ignore[arg-type]  # the probe process stops with a traceback
    with pytest.raises(RuntimeError, match="exit code"):
        asyncio.run(probe.run(until=time.monotonic() + 0.3))
