"""Match streams on a real gunicorn (the shipped settings, 2 workers) and the real Redis, read
with requests and sseclient-py as a client would:

- every stream of a match, on whichever worker, gets every event in order, and a seat's stream
  makes it online in views served by the other worker;
- a client that drops its stream frees its place at once (its hang-up is seen while the
  stream waits, after the app returned), and resumes elsewhere without gap or repeat;
- a reader that never reads is cut off about a heartbeat interval after it last took
  something, and what the kernel holds for it stays bounded;
- a stopping server ends its streams at once, so that clients reconnect to another.
"""
from __future__ import annotations

import json
import random
import signal
import socket
import threading
import time

import pytest
import requests
from sseclient import SSEClient

from service.gunicorn_worker import CLOSE_DRAIN_SECONDS, SEND_BUFFER_BYTES
from tests.e2e.players import next_move
from tests.e2e.test_retiring_and_slow_readers import closed_by_server, server_side_queues
from tests.gunicorn_server import TEST_API_KEY

pytestmark = [pytest.mark.slow]

PLAYERS = [{"name": "Ann"}, {"name": "Bob"}]
HEARTBEAT = 15  # STREAM_HEARTBEAT_SECONDS, shipped
# A reader that takes nothing: cut at the first message (a heartbeat at the latest) a heartbeat
# interval after it last took something, then its connection closes once what waits is taken,
# or resets after CLOSE_DRAIN_SECONDS; plus room for a busy machine.
BOUND = HEARTBEAT + CLOSE_DRAIN_SECONDS + 10
READER_BUFFER = 4096  # the never-reading client's SO_RCVBUF
# More than its kernel can take in: Linux keeps twice what is asked, payload and bookkeeping.
UNTAKEABLE_BYTES = 4 * READER_BUFFER


class StreamClient:
    """One stream over HTTP (requests), parsed by sseclient-py in a thread."""

    def __init__(self, url: str, headers: dict | None = None) -> None:
        self.response = requests.get(url, headers=headers or {}, stream=True, timeout=(5, 60))
        self.events: list = []
        self.ended = threading.Event()
        self.thread = threading.Thread(target=self._read, daemon=True)
        if self.response.status_code == 200:
            self.thread.start()
        else:
            self.ended.set()

    def _read(self) -> None:
        try:
            for event in SSEClient(self.response.iter_content(chunk_size=None)).events():
                self.events.append(event)
        except (requests.RequestException, OSError, AttributeError):
            pass  # closed by the test
        finally:
            self.ended.set()

    def seqs(self) -> list[int]:
        return [int(e.id) for e in self.events if e.id is not None and e.event != "view"]

    def until(self, condition, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition(self):
            assert time.monotonic() < deadline, [e.event for e in self.events]
            time.sleep(0.02)

    def close(self) -> None:
        self.response.close()


def create(url: str) -> tuple[str, list[str], dict]:
    answer = requests.post(f"{url}/v1/games", headers={"X-API-Key": TEST_API_KEY}, timeout=5,
                           json={"variant": "classic", "players": PLAYERS})
    assert answer.status_code == 201, answer.text
    body = answer.json()
    return body["game"]["id"], [p["token"] for p in body["players"]], body["game"]


def play(url: str, game_id: str, tokens: list[str], moves: int, seed: int = 1) -> int:
    """Play ``moves`` moves from the views; returns the last event's seq."""
    rng = random.Random(seed)
    for _ in range(moves):
        public = requests.get(f"{url}/v1/games/{game_id}", timeout=5).json()
        if public["status"] != "active":
            break
        seat = public["hand"]["turn"]
        you = requests.get(f"{url}/v1/games/{game_id}", headers=auth(tokens[seat]), timeout=5).json()
        seat, move = next_move(you, rng)
        answer = requests.post(f"{url}/v1/games/{game_id}/{move.action}", json=move.body, headers=auth(tokens[seat]),
                               timeout=5)
        assert answer.status_code == 200, answer.text
    return requests.get(f"{url}/v1/games/{game_id}", timeout=5).json()["last_seq"]


def auth(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


@pytest.mark.timeout(120)
def test_every_stream_on_every_worker_gets_every_event(service) -> None:
    game_id, tokens, game = create(service.url)
    start = game["last_seq"]
    streams = [StreamClient(f"{service.url}/v1/games/{game_id}/stream", auth(tokens[n % 2]) if n % 3 else {})
               for n in range(8)]
    for stream in streams:
        stream.until(lambda s: bool(s.events))
    # A seat's stream on one worker: its seat is online in every view, whichever worker serves it.
    seen_online = {requests.get(f"{service.url}/v1/games/{game_id}", timeout=5).json()["players"][0]["online"]
                   for _ in range(6)}
    last = play(service.url, game_id, tokens, 30)
    for stream in streams:
        stream.until(lambda s: last in s.seqs())
        stream.close()
    assert seen_online == {True}
    assert all(stream.seqs() == list(range(start + 1, last + 1)) for stream in streams)


@pytest.mark.timeout(120)
def test_a_dropped_stream_frees_its_place_at_once_and_resumes_on_another_server(start_gunicorn, redis_url,
                                                                                 test_prefix) -> None:
    environment = {"REDIS_URL": redis_url, "KEY_PREFIX": test_prefix, "STREAMS_PER_ADDRESS": "1"}
    first = start_gunicorn(environment, workers=1)
    second = start_gunicorn(environment, workers=1)
    game_id, tokens, game = create(first.url)
    stream = StreamClient(f"{first.url}/v1/games/{game_id}/stream")
    stream.until(lambda s: bool(s.events))
    refused = requests.get(f"{first.url}/v1/games/{game_id}/stream", timeout=5)
    assert refused.status_code == 429 and refused.json()["code"] == "too_many_streams"
    middle = play(first.url, game_id, tokens, 6)
    stream.until(lambda s: middle in s.seqs())
    stream.close()  # the client hangs up: its place is free before any heartbeat
    started = time.monotonic()
    while (again := requests.get(f"{first.url}/v1/games/{game_id}/stream", stream=True, timeout=5)).status_code != 200:
        again.close()
        assert time.monotonic() - started < 3, again.text
        time.sleep(0.05)
    freed_after = time.monotonic() - started
    again.close()
    last = play(first.url, game_id, tokens, 6, seed=2)
    resumed = StreamClient(f"{second.url}/v1/games/{game_id}/stream", {"Last-Event-ID": str(stream.seqs()[-1])})
    resumed.until(lambda s: last in s.seqs())
    resumed.close()
    print(f"\na dropped stream's place was free after {freed_after:.2f} s (heartbeat {HEARTBEAT} s)")
    assert stream.seqs() + resumed.seqs() == list(range(game["last_seq"] + 1, last + 1))


@pytest.mark.exclusive
@pytest.mark.timeout(180)
def test_a_reader_that_never_reads_is_cut_off(service) -> None:
    game_id, tokens, _ = create(service.url)
    reader = socket.socket()
    reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, READER_BUFFER)
    reader.connect(("127.0.0.1", service.port))
    reader.sendall(f"GET /v1/games/{game_id}/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
    port = reader.getsockname()[1]
    try:
        time.sleep(0.5)
        def waiting() -> int:
            return sum(server_side_queues(service.port, {port}).values())

        # Moves until more waits at the server than the reader's kernel could ever take in. The
        # kernel packs what it holds, now and then taking in over a kilobyte at once: with less
        # waiting it took in all of it, then every heartbeat, and the reader looked like one
        # that reads.
        for moves in range(0, 300, 10):
            play(service.url, game_id, tokens, 10, seed=moves)
            time.sleep(0.5)
            if waiting() >= UNTAKEABLE_BYTES:
                break
        # From the last event, or the last bytes the reader's kernel took in after it (the
        # service counts that as reading), the cut is one heartbeat interval away.
        opened = time.monotonic()
        held = last = waiting()
        assert held >= UNTAKEABLE_BYTES, f"only {held} bytes wait after {moves + 10} moves"
        while not closed_by_server(reader) and time.monotonic() - opened < BOUND + 15:
            now = waiting()
            if now < last:
                opened = time.monotonic()
            held, last = max(held, now), now
            time.sleep(0.25)
        cut_after = time.monotonic() - opened
        cut = closed_by_server(reader)
        health = requests.get(f"{service.url}/healthz", timeout=5)
    finally:
        reader.close()
    print(f"\na stream reader that reads nothing: cut off {cut_after:.1f} s after its kernel last took bytes; "
          f"the server's kernel held at most {held} bytes for it")
    assert held > 0 and cut and cut_after <= BOUND
    assert held <= 2 * SEND_BUFFER_BYTES + 64 * 1024
    assert health.status_code == 200


@pytest.mark.timeout(120)
def test_a_stopping_server_ends_its_streams_at_once(start_gunicorn, redis_url, test_prefix) -> None:
    server = start_gunicorn({"REDIS_URL": redis_url, "KEY_PREFIX": test_prefix, "GUNICORN_GRACEFUL_TIMEOUT": "30"},
                            workers=2)
    game_id, tokens, _ = create(server.url)
    streams = [StreamClient(f"{server.url}/v1/games/{game_id}/stream", auth(tokens[n % 2]) if n % 2 else {})
               for n in range(6)]
    for stream in streams:
        stream.until(lambda s: bool(s.events))
    started = time.monotonic()
    server.process.send_signal(signal.SIGTERM)
    for stream in streams:
        assert stream.ended.wait(10), "a stream outlived the shutdown"
    ended_after = time.monotonic() - started
    server.process.wait(timeout=30)
    stopped_after = time.monotonic() - started
    print(f"\nSIGTERM with {len(streams)} open streams: all ended after {ended_after:.2f} s, the server stopped "
          f"after {stopped_after:.2f} s (graceful timeout 30 s)")
    assert ended_after < 5 and stopped_after < 10
    assert all(json.loads(stream.events[0].data)["id"] == game_id for stream in streams)
