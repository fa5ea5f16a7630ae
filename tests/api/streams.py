"""Reading live streams in tests: the app's answer parsed by a real SSE client (sseclient-py),
in a thread of its own, as a client would read it while others play."""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator

from flask.testing import FlaskClient
from sseclient import Event, SSEClient

WAIT_SECONDS = 15.0


def bearer(token: str | None) -> dict:
    return {} if token is None else {"Authorization": f"Bearer {token}"}


class Reader:
    """``GET path`` (a stream) read by sseclient-py in a thread: ``events`` as they arrive,
    ``chunks`` as the server wrote them. ``stop()`` ends the reading at the next chunk (a
    heartbeat at the latest) and closes the answer: the client's side of a dropped connection."""

    def __init__(self, client: FlaskClient, path: str, headers: dict | None = None) -> None:
        self.response = client.get(path, headers=headers or {}, buffered=False)
        self.events: list[Event] = []
        self.chunks: list[bytes] = []
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self.ended = threading.Event()
        if self.response.status_code != 200:
            self.ended.set()
            return
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _source(self) -> Iterator[bytes]:
        for chunk in self.response.response:
            self.chunks.append(chunk)
            yield chunk
            if self._stop.is_set():
                return

    def _read(self) -> None:
        try:
            for event in SSEClient(self._source()).events():
                self.events.append(event)
                if self._stop.is_set():
                    break
        except BaseException as error:  # reported by the test that waits
            self.error = error
        finally:
            self.response.close()
            self.ended.set()

    def until(self, condition: Callable[[list[Event]], bool], timeout: float = WAIT_SECONDS) -> list[Event]:
        """Wait until ``condition(events)`` holds; returns the events."""
        deadline = time.monotonic() + timeout
        while not condition(self.events):
            assert self.error is None, self.error
            assert time.monotonic() < deadline, f"not reached in {timeout} s: {[e.event for e in self.events]}"
            time.sleep(0.01)
        return self.events

    def until_seq(self, seq: int, timeout: float = WAIT_SECONDS) -> list[Event]:
        return self.until(lambda events: any(e.id == str(seq) and e.event != "view" for e in events), timeout)

    def stop(self, timeout: float = WAIT_SECONDS) -> None:
        self._stop.set()
        assert self.ended.wait(timeout), "the reader did not stop"

    def wait_end(self, timeout: float = WAIT_SECONDS) -> None:
        assert self.ended.wait(timeout), f"the stream did not end: {[e.event for e in self.events]}"
        assert self.error is None, self.error

    @property
    def view(self) -> dict:
        return json.loads(self.until(lambda events: bool(events))[0].data)

    def shown(self) -> list[dict]:
        """The match's events received (not the view, not presence)."""
        return [json.loads(e.data) for e in self.events if e.id is not None and e.event != "view"]

    def presence(self) -> list[dict]:
        return [json.loads(e.data) for e in self.events if e.event == "presence"]
