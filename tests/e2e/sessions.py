"""A ``requests.Session`` for tests that talk to gunicorn over keep-alive connections."""
from __future__ import annotations

import time

import requests

# A server closes a keep-alive connection left idle for its keep-alive time (5 s shipped); a
# request sent as it closes is reset and, not being safe to repeat, fails. Well below that
# time the session opens a new connection instead of reusing an idle one.
IDLE_REUSE_SECONDS = 2.0


class FreshSession(requests.Session):
    """A session that never sends on a connection idle for over IDLE_REUSE_SECONDS. Like any
    session, for one thread at a time."""

    def __init__(self) -> None:
        super().__init__()
        self._last_request = time.monotonic()

    def request(self, *args, **kwargs) -> requests.Response:
        if time.monotonic() - self._last_request > IDLE_REUSE_SECONDS:
            self.close()  # drops the idle connections; the session opens new ones
        try:
            return super().request(*args, **kwargs)
        finally:
            self._last_request = time.monotonic()  # a long poll's connection was busy, not idle
