"""Many clients from one process: a raw asyncio HTTP/1.1 client, long-poll waiters, paced
movers and a /healthz probe. Used by tests/e2e/test_waiting.py and bench/longpoll.py.

Thousands of open connections cost a socket each and no thread here, like on the server.
Every time is ``time.monotonic()`` of this process, so a waiter's answer can be set against
the response of the move that caused it.
"""
from __future__ import annotations

import asyncio
import json
import random
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import requests
from redis import Redis

from tests.e2e.players import ACTION_EVENTS, next_move

PLAYERS = [{"name": "Ann"}, {"name": "Bob"}]


class HttpError(Exception):
    """The connection failed or the answer was not HTTP."""


@dataclass
class Answer:
    status: int
    body: bytes
    sent_at: float
    received_at: float
    headers: dict[str, str] = field(default_factory=dict)  # names in lower case

    def json(self):
        return json.loads(self.body)

    @property
    def seconds(self) -> float:
        return self.received_at - self.sent_at


class Connection:
    """One keep-alive HTTP/1.1 connection to 127.0.0.1:``port``."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def open(self) -> Connection:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        return self

    async def send(self, method: str, path: str, body: object = None, headers: dict | None = None) -> float:
        """Write one request; returns when it was sent. A kept-alive connection that the server
        closed meanwhile (its keep-alive time ran out) is replaced first."""
        if self.writer is not None and self.reader.at_eof():
            self.close()
        if self.writer is None:
            await self.open()
        payload = b"" if body is None else json.dumps(body).encode()
        lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1"]
        lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
        if body is not None:
            lines += ["Content-Type: application/json", f"Content-Length: {len(payload)}"]
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + payload)
        sent_at = time.monotonic()
        await self.writer.drain()
        return sent_at

    async def receive(self, sent_at: float) -> Answer:
        """Read one response (Content-Length framed, as the service answers)."""
        try:
            head = await self.reader.readuntil(b"\r\n\r\n")
            status_line, *header_lines = head.decode("latin-1").split("\r\n")
            headers = {}
            for line in header_lines:
                name, _, value = line.partition(":")
                if name:
                    headers[name.strip().lower()] = value.strip()
            length = int(headers.get("content-length", 0))
            body = await self.reader.readexactly(length) if length else b""
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, ValueError) as error:
            self.close()
            raise HttpError(str(error) or type(error).__name__) from error
        if headers.get("connection", "").lower() == "close":
            self.close()  # the server ends the connection after this answer: the next one opens anew
        return Answer(int(status_line.split()[1]), body, sent_at, time.monotonic(), headers)

    async def request(self, method: str, path: str, body: object = None, headers: dict | None = None) -> Answer:
        try:
            sent_at = await self.send(method, path, body, headers)
        except (ConnectionError, OSError) as error:
            self.close()
            raise HttpError(str(error)) from error
        return await self.receive(sent_at)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


def percentile(values: Iterable[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


async def create_games(port: int, count: int, headers: dict | None = None, concurrency: int = 16) -> list[dict]:
    """``count`` classic matches (the creation answers), over ``concurrency`` connections."""
    created: list[dict] = []

    async def creator(share: int) -> None:
        connection = Connection(port)
        try:
            for _ in range(share):
                answer = await connection.request("POST", "/v1/games", {"variant": "classic", "players": PLAYERS},
                                                  headers)
                assert answer.status == 201, (answer.status, answer.body[:300])
                created.append(answer.json())
        finally:
            connection.close()

    shares = [count // concurrency + (1 if n < count % concurrency else 0) for n in range(concurrency)]
    await asyncio.gather(*(creator(share) for share in shares if share))
    return created


async def create_quiet_games(port: int, count: int, concurrency: int = 16) -> list[tuple[str, int]]:
    """``count`` new matches, each as (game id, seq of its last event): where a long-poll that
    is to wait for the next event starts."""
    created = await create_games(port, count, concurrency=concurrency)
    connection = Connection(port)
    try:
        games = []
        for game in created:
            answer = await connection.request("GET", f"/v1/games/{game['game']['id']}/events?after=0")
            games.append((game["game"]["id"], answer.json()["last_seq"]))
        return games
    finally:
        connection.close()


def hung_up_requests(port: int) -> int:
    """The long-polls the server counted as ended by their clients hanging up (status 499 in
    /metrics, all workers'). Blocking: call it in a thread from the event loop."""
    metrics = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    prefix = 'http_requests_total{endpoint="/v1/games/<game_id>/events",method="GET",status="499"} '
    return sum(int(float(line[len(prefix):])) for line in metrics.splitlines() if line.startswith(prefix))


def command_calls(client: Redis) -> dict[str, int]:
    """Calls per Redis command so far (INFO commandstats), leaving out the INFO that reads them."""
    return {name.removeprefix("cmdstat_"): stats["calls"]
            for name, stats in client.info("commandstats").items() if name != "cmdstat_info"}


def changed(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """The commands whose calls differ between two ``command_calls`` readings, with the difference."""
    return {name: calls - before.get(name, 0) for name, calls in after.items() if calls != before.get(name, 0)}


@dataclass
class MoveRecord:
    game_id: str
    version: int  # the game's version after the move: 1 + the actions played so far
    sent_at: float
    done_at: float
    last_seq: int = 0  # the game's last event after the move (the view's last_seq)

    @property
    def seconds(self) -> float:
        return self.done_at - self.sent_at


@dataclass
class Mover:
    """Plays classic matches one after another, one request per move (like bench/load.py's
    players), at most one move every ``interval`` seconds; a finished match is followed by a
    new one. Records every move answered 200."""

    port: int
    seed: int
    interval: float
    create_headers: dict = field(default_factory=dict)
    moves: list[MoveRecord] = field(default_factory=list)
    refused: int = 0
    game_id: str = ""
    tokens: list[str] = field(default_factory=list)
    view: dict | None = None

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.connection = Connection(self.port)

    async def start(self, created: dict | None = None) -> None:
        if created is None:
            answer = await self.connection.request("POST", "/v1/games", {"variant": "classic", "players": PLAYERS},
                                                   self.create_headers)
            assert answer.status == 201, (answer.status, answer.body[:300])
            created = answer.json()
        self.game_id = created["game"]["id"]
        self.tokens = [player["token"] for player in created["players"]]
        self.view = created["game"]

    async def play(self, until: float) -> None:
        """Play until ``until`` (time.monotonic()). The first move comes at a random moment of
        the first interval, so that the movers do not all send at once."""
        next_at = time.monotonic() + self.rng.uniform(0, self.interval)
        while True:
            now = time.monotonic()
            if now >= until:
                return
            if next_at > now:
                await asyncio.sleep(next_at - now)
            next_at += self.interval
            await self.step()

    async def step(self) -> None:
        if self.view is None:
            await self.resync()
            return
        if self.view["status"] == "finished":
            await self.start()
            return
        seat, move = next_move(self.view, self.rng)
        answer = await self.connection.request(
            "POST", f"/v1/games/{self.game_id}/{move.action}", move.body,
            {"Authorization": f"Bearer {self.tokens[seat]}"},
        )
        if answer.status == 200:
            self.view = answer.json()
            self.moves.append(MoveRecord(self.game_id, self.view["version"], answer.sent_at, answer.received_at,
                                         self.view["last_seq"]))
        else:
            self.refused += 1
            self.view = None

    async def resync(self) -> None:
        answer = await self.connection.request("GET", f"/v1/games/{self.game_id}")
        public = answer.json() if answer.status == 200 else None
        if public is None or public["status"] == "finished":
            await self.start()
            return
        seat = public["hand"]["turn"]
        answer = await self.connection.request("GET", f"/v1/games/{self.game_id}",
                                               headers={"Authorization": f"Bearer {self.tokens[seat]}"})
        self.view = answer.json() if answer.status == 200 else None

    def close(self) -> None:
        self.connection.close()


@dataclass
class FollowerAnswer:
    game_id: str
    version: int  # the game's version after the last event of the answer
    answer: Answer


@dataclass
class Follower:
    """A spectator of a mover's match: long-polls its events again and again (``wait`` s),
    following the mover to its next match (from its first event), until cancelled. Records
    every answer with the game's version it reached: one action event raises it by one."""

    port: int
    mover: Mover
    wait: int = 30
    answers: list[FollowerAnswer] = field(default_factory=list)
    waiting: bool = False

    async def follow(self) -> None:
        connection = Connection(self.port)
        game_id, after, actions = "", 0, 0
        try:
            while True:
                if game_id != self.mover.game_id:
                    game_id, after, actions = self.mover.game_id, 0, 0
                sent_at = await connection.send("GET", f"/v1/games/{game_id}/events?after={after}&wait={self.wait}")
                self.waiting = True
                answer = await connection.receive(sent_at)
                self.waiting = False
                if answer.status == 200:
                    page = answer.json()
                    after = page["last_seq"]
                    actions += sum(event["type"] in ACTION_EVENTS for event in page["events"])
                    if page["events"]:
                        self.answers.append(FollowerAnswer(game_id, 1 + actions, answer))
                else:
                    await asyncio.sleep(0.1)
        finally:
            connection.close()


def wake_latencies(followers: Iterable[Follower], movers: Iterable[Mover]) -> list[float]:
    """For every long-poll that was waiting when a move was made: seconds from that move's
    response to the answer carrying its event (0 when the answer came first).

    An answer's move is the one that took the game to the version the answer reaches. An
    answer to a request sent after that move's response (the spectator came back late, the
    event was there already) is not a wake-up and is left out."""
    moves = {(record.game_id, record.version): record for mover in movers for record in mover.moves}
    latencies = []
    for follower in followers:
        for seen in follower.answers:
            move = moves.get((seen.game_id, seen.version))
            if move is not None and seen.answer.sent_at <= move.done_at:
                latencies.append(max(0.0, seen.answer.received_at - move.done_at))
    return latencies


@dataclass
class HealthProbe:
    """GET /healthz every ``every`` seconds on a fresh connection, like a kubelet probe, from
    a process of its own (tests/e2e/health_probe.py)."""

    port: int
    every: float = 0.05
    samples: list[tuple[float, float]] = field(default_factory=list)  # (sent at, seconds; inf: failed)

    async def run(self, until: float) -> None:
        """Probe until ``until`` (time.monotonic()); cancelling stops the probe process.
        Raises RuntimeError when the probe process fails (no samples must not pass for a
        quiet server)."""
        process = await asyncio.create_subprocess_exec(
            sys.executable, str(Path(__file__).with_name("health_probe.py")), str(self.port), repr(until),
            repr(self.every), stdout=asyncio.subprocess.PIPE)
        try:
            async for line in process.stdout:
                sent_at, seconds = line.split()
                self.samples.append((float(sent_at), float(seconds)))
        except BaseException:
            # Only a process still writing is killed: kill() on one that has closed its output
            # can reap it before asyncio's watcher thread does (Popen.send_signal polls first),
            # and the watcher then reports exit code 255 (CPython gh-127049).
            process.kill()
            await process.wait()
            raise
        await process.wait()
        if process.returncode != 0:
            raise RuntimeError(f"the /healthz probe process ended with exit code {process.returncode}")

    def between(self, start: float, end: float) -> list[float]:
        return [seconds for sent_at, seconds in self.samples if start <= sent_at < end]


class Sampled:
    """``read()``, called again at most every ``every`` seconds, else its last value.

    Dozens of coroutines poll how far the server has got every 10 ms; each reading is a
    blocking Redis round trip (INFO) that stalls this loop and takes CPU from the server
    under test, so they share one reading."""

    def __init__(self, read: Callable[[], int], every: float = 0.02) -> None:
        self.read = read
        self.every = every
        self.value = 0
        self.read_at = float("-inf")

    def __call__(self) -> int:
        now = time.monotonic()
        if now - self.read_at >= self.every:
            self.value, self.read_at = self.read(), now
        return self.value


class IdleWaiters:
    """``count`` long-polls spread over ``games`` ((game id, last seq) pairs), each on its own
    connection. ``early`` collects any that were answered before their wait was over, with
    ``repoll`` each answered one asks again at once instead (a client's steady state)."""

    def __init__(self, port: int, games: list[tuple[str, int]], count: int, wait: int = 30,
                 concurrency: int = 64, repoll: bool = False) -> None:
        self.port = port
        self.games = games
        self.count = count
        self.wait = wait
        self.concurrency = concurrency
        self.repoll = repoll
        self.connections: list[Connection] = []
        self.early: list[Answer | str] = []
        self.answered = 0
        self.outstanding = 0  # requests sent and not answered yet: the long-polls held now
        self.opened_at = 0.0
        self._watchers: list[asyncio.Task] = []

    async def open(self, taken_up: Callable[[], int] | None = None, window: int = 50) -> None:
        """Open every long-poll. With ``taken_up`` (how many the server has started to serve),
        at most ``window`` are sent and not yet taken up: the ramp goes at the server's pace
        instead of queueing thousands of requests at once (which is a test of overload)."""
        slots = asyncio.Semaphore(self.concurrency)
        served = Sampled(taken_up) if taken_up is not None else None

        async def one(number: int) -> None:
            game_id, last_seq = self.games[number % len(self.games)]
            async with slots:
                if served is not None:
                    while number - served() >= window:
                        await asyncio.sleep(0.01)
                connection = Connection(self.port)
                path = f"/v1/games/{game_id}/events?after={last_seq}&wait={self.wait}"
                sent_at = await connection.send("GET", path)
                self.outstanding += 1
                self.connections.append(connection)
                self._watchers.append(asyncio.ensure_future(self._watch(connection, path, sent_at)))

        self.opened_at = time.monotonic()
        await asyncio.gather(*(one(number) for number in range(self.count)))

    async def _watch(self, connection: Connection, path: str, sent_at: float) -> None:
        try:
            while True:
                answer = await connection.receive(sent_at)
                self.answered += 1
                self.outstanding -= 1
                if not self.repoll:
                    self.early.append(answer)
                    return
                if answer.status == 200:
                    path = path.split("?")[0] + f"?after={answer.json()['last_seq']}&wait={self.wait}"
                else:
                    await asyncio.sleep(1)  # 503: the service asks for Retry-After
                sent_at = await connection.send("GET", path)
                self.outstanding += 1
        except HttpError as error:
            self.outstanding -= 1
            self.early.append(f"connection lost: {error}")
        except asyncio.CancelledError:
            pass

    @property
    def held(self) -> int:
        return self.outstanding

    def close(self) -> None:
        for watcher in self._watchers:
            watcher.cancel()
        for connection in self.connections:
            connection.close()
