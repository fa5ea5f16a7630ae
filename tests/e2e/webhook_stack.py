"""The whole asynchronous stack on loopback: the service under gunicorn, a ``ginrummy worker``
process, the real Redis (a private key prefix) and a receiver that verifies every delivery
with the standardwebhooks library. Every process is stopped by the pid it was started with.

``expected_webhooks`` derives, from a game's own event log, the deliveries its saves must
have produced: a save starts at each move a person made (and at a timeout, an abort, a
rematch), the creation being the first; each scored hand is a ``hand_over``, the match's end a
``match_over``, each timeout a ``timeout``, and a ``turn`` goes out when a save leaves a person
to act at another (hand, seat) than before.
"""
from __future__ import annotations

import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import requests

from service import rules
from tests.api.checks import cards_in
from tests.gunicorn_server import REPO, GunicornServer
from tests.redis_servers import free_port
from tests.webhooks.receiver import Received, Receiver
from tests.webhooks.support import new_secret

STARTUP_TIMEOUT = 20.0
# Short pauses, so a delivery follows its save within a fraction of a second.
WORKER_TIMINGS = ["--poll-seconds", "0.1", "--block-seconds", "0.2", "--backoff-base-seconds", "0.1",
                  "--backoff-cap-seconds", "0.5"]
PEOPLE_MOVES = {"draw", "pass", "discard", "knock", "layoff", "advice", "resign"}
# Events that start a save of their own even though no person made them.
OWN_SAVES = {"timeout", "abort", "rematch"}
# Events that raise the game's version by one (a hand's score and the next deal come with a move).
VERSIONED = PEOPLE_MOVES | OWN_SAVES
NOTICE_OF = {"timeout": "timeout", "hand_scored": "hand_over", "match_finished": "match_over"}


def ginrummy() -> str:
    beside = Path(sys.executable).parent / "ginrummy"
    assert beside.is_file(), "the ginrummy command is not installed in this venv (pip install -c requirements-test.lock -e '.[test]')"
    return str(beside)


@dataclass
class WorkerProcess:
    """One ``ginrummy worker`` with its log file; ``arguments`` are its command-line options
    (by default the short pauses of the tests; the benchmark passes none, so the worker
    paces itself as deployed)."""

    environment: dict[str, str]
    log: Path
    port: int = field(default_factory=free_port)
    arguments: tuple[str, ...] = tuple(WORKER_TIMINGS)
    process: subprocess.Popen | None = None

    def start(self) -> WorkerProcess:
        environment = {"PATH": f"{Path(ginrummy()).parent}:/usr/bin:/bin", "WORKER_PORT": str(self.port),
                       "WORKER_GRACEFUL_SECONDS": "5", **self.environment}
        with self.log.open("ab") as output:
            self.process = subprocess.Popen([ginrummy(), "worker", "--host", "127.0.0.1", *self.arguments],
                                            cwd=REPO, env=environment, stdout=output, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while True:
            assert self.process.poll() is None, f"the worker exited:\n{self.log_text()[-3000:]}"
            try:
                if requests.get(f"http://127.0.0.1:{self.port}/readyz", timeout=2).status_code == 200:
                    return self
            except requests.RequestException:
                pass
            assert time.monotonic() < deadline, f"the worker is not ready:\n{self.log_text()[-3000:]}"
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


@dataclass
class Stack:
    """gunicorn + worker + receiver sharing one Redis prefix and one webhook secret."""

    directory: Path
    redis_url: str
    prefix: str
    secret: str = field(default_factory=new_secret)
    receiver: Receiver | None = None
    service: GunicornServer | None = None
    worker: WorkerProcess | None = None

    def start(self, **service_settings: str) -> Stack:
        self.receiver = Receiver(self.secret).start()
        common = {"REDIS_URL": self.redis_url, "KEY_PREFIX": self.prefix, "WEBHOOK_SECRET": self.secret,
                  "WEBHOOK_ALLOWED_HOSTS": f"http://127.0.0.1:{self.receiver.port}", "LOG_LEVEL": "WARNING"}
        try:
            self.service = GunicornServer(self.directory / "gunicorn", {**common, **service_settings}).start()
            self.worker = WorkerProcess({**common, "WEBHOOK_ALLOW_PRIVATE": "true"},
                                        self.directory / "worker.log").start()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self.worker is not None:
            self.worker.stop()
        if self.service is not None:
            self.service.stop()
        if self.receiver is not None:
            self.receiver.close()

    @property
    def callback_url(self) -> str:
        return self.receiver.url("/hooks/gin?tenant=7")

    def deliveries(self, game_id: str) -> list[Received]:
        return [r for r in list(self.receiver.received) if r.webhook_id.startswith(f"wh_{game_id}_")]

    def wait_for(self, game_id: str, webhook_ids: set[str], timeout: float = 30.0) -> list[Received]:
        """Every delivery of ``game_id`` once all of ``webhook_ids`` have arrived."""
        prefix = f"wh_{game_id}_"
        self.receiver.wait_for(lambda got: webhook_ids <= {r.webhook_id for r in got if r.webhook_id.startswith(prefix)},
                               timeout)
        return self.deliveries(game_id)


@dataclass(frozen=True)
class Expected:
    webhook_id: str
    type: str
    version: int
    seq: int
    data: dict


def saves(events: list[rules.Event], people: set[int]) -> list[list[rules.Event]]:
    """The event log cut into the saves that wrote it."""
    cut: list[list[rules.Event]] = []
    for event in events:
        starts = (event.type.value in PEOPLE_MOVES and event.seat in people and not event.bot) \
            or event.type.value in OWN_SAVES
        if not cut or starts:
            cut.append([])
        cut[-1].append(event)
    return cut


def expected_webhooks(game_id: str, events: list[rules.Event], people: set[int]) -> list[Expected]:
    expected: list[Expected] = []
    mark = None
    hand_number = None
    passes = 0
    version = 1
    for save in saves(events, people):
        last_move = None
        for event in save:
            kind = event.type.value
            if kind in VERSIONED:
                version += 1
            if kind == "deal":
                hand_number, passes = event.public["number"], 0
            if kind == "pass":
                passes += 1
            if kind in ("deal", "pass", "draw", "discard", "knock"):
                last_move = kind
        for event in save:
            kind = event.type.value
            if kind in NOTICE_OF:
                data = {"seat": event.seat, **event.public} if kind == "timeout" else \
                    {"hand": event.public} if kind == "hand_scored" else {"result": event.public}
                notice = NOTICE_OF[kind]
                expected.append(Expected(f"wh_{game_id}_{event.seq}_{notice}", notice, version, event.seq, data))
        ended = any(e.type.value == "match_finished" for e in save)
        after = None if ended else (hand_number, save[-1].turn)
        handed_back = after is not None and any(event.turn != after[1] for event in save)
        if after is not None and (after != mark or handed_back) and after[1] in people:
            phase = {"deal": "upcard_offer", "pass": "upcard_offer" if passes < 2 else "draw", "draw": "discard",
                     "discard": "draw", "knock": "layoff"}[last_move]
            expected.append(Expected(f"wh_{game_id}_{save[-1].seq}_turn", "turn", version, save[-1].seq,
                                     {"seat": after[1], "hand_number": hand_number, "phase": phase}))
        mark = after
    return expected


def check_deliveries(received: list[Received], expected: list[Expected], game_view: dict,
                     tokens: list[str | None]) -> None:
    """The deliveries of one game are exactly ``expected`` (after de-duplication on webhook-id),
    each verified, each retry the same body, no token and no card a seat may not see."""
    by_id: dict[str, Received] = {}
    for delivery in received:
        assert delivery.verified, f"{delivery.webhook_id}: the signature did not verify"
        first = by_id.setdefault(delivery.webhook_id, delivery)
        assert first.body == delivery.body, f"{delivery.webhook_id}: delivered again with another body"
    assert sorted(by_id) == sorted(e.webhook_id for e in expected)
    people_fields = [{"seat": p["seat"], "name": p["name"], "bot": p["bot"], "level": p["level"],
                      "external_id": p["external_id"], "metadata": p["metadata"]} for p in game_view["players"]]
    for want in expected:
        payload = by_id[want.webhook_id].payload
        assert payload["type"] == want.type
        data = payload["data"]
        assert data["game_id"] == game_view["id"] and data["version"] == want.version, want
        assert data["metadata"] == game_view["metadata"] and data["players"] == people_fields
        assert (data["variant"], data["rated"]) == (game_view["variant"], game_view["rated"])
        for name, value in want.data.items():
            assert data[name] == value, (want.webhook_id, name, data[name], value)
        body = by_id[want.webhook_id].body
        assert "token" not in body and not any(token and token in body for token in tokens)
        outside_the_hand = {k: v for k, v in data.items() if k != "hand"}
        assert not cards_in(outside_the_hand) and not cards_in(payload["type"]), f"{want.webhook_id} shows cards"
