"""Load: complete matches played by concurrent simulated players against gunicorn + Redis,
and in the same run the ceiling of the stack (bench/baseline_app.py under the same settings).

    python bench/load.py [--clients 16] [--workers 2] [--seconds 20] [--scaling] [--floor] [--paced-share 0.7]
                         [--idempotency-keys] [--max-requests N] [--redis-url URL]
    python bench/load.py --profile [--moves 3000]
    python bench/load.py --split [--moves 3000]
    python bench/load.py --callbacks [--matches 1000] [--rounds 2] [--verify-every 1] [--clients 16] [--workers 2]

Prints, for the service and for the baseline: moves/s and p50/p99 latency per endpoint; the
ratio of the two, in moves/s and in the server's CPU per request (the CPU of the gunicorn
processes); the latency of a move with the players paced to --paced-share of the service's
saturated moves/s (a fresh server, after the saturated run; 0 skips it), then the baseline
paced to the requests/s that paced run made, and the ratio of the two runs' CPU per request at
that same rate (context; the saturated ratio is the one judged, CPU_RATIO_TARGET); Redis
calls and round trips per move (INFO commandstats); Redis memory per active match (MEMORY
USAGE, for state / events / idempotency responses); with --scaling the service's moves/s with
1 and with 2 workers; with --floor, saturated too, the service with its game logic taken out
(bench/floor_app.py: the same requests through the same layers and Redis round trips, no rules)
and its CPU per request against the baseline's. --profile plays moves in-process (Flask test
client on Redis) under pyinstrument and prints where the time goes; --split plays them
in-process without a profiler and prints a move's time, the game service's ``act`` in it,
and a bare Flask JSON route's. --callbacks plays
--matches matches without webhooks and as many with every match's callback to a receiver
on loopback and one ``ginrummy worker`` delivering, in --rounds runs of each kind in ABBA
order (without, with, with, without, ...), and prints both moves/s and their ratio,
the CPU per move of every process, the delivery latency and the loss check (bench/README.md).

Each simulated player plays one match at a time, acting for every seat with one request per
move, like a client that keeps the view each answer returns: the seat to move next either is
the one that just acted (its view is at hand) or has a move that needs no cards (pass or draw
in the upcard offer, draw from the stock, the engine's lay-off). One move in ten is preceded
by a read of the mover's view, so reads are measured too. A private redis-server is started
unless --redis-url names one, so that other traffic never mixes into the Redis figures.
"""
from __future__ import annotations

import argparse
import datetime
import http.client
import json
import math
import os
import platform
import random
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

import redis  # noqa: E402

from bench import callbacks  # noqa: E402
from tests.e2e.players import next_move  # noqa: E402
from tests.e2e.webhook_stack import WorkerProcess  # noqa: E402
from tests.gunicorn_server import GunicornServer  # noqa: E402
from tests.redis_servers import RedisServer  # noqa: E402
from tests.webhooks.support import new_secret  # noqa: E402

WARMUP_SECONDS = 2.0
READ_EVERY = 10  # one move in this many is preceded by a read of the mover's view
BASELINE_APP = "bench.baseline_app:app"
FLOOR_APP = "bench.floor_app:app"
PLAYERS = [{"name": "Ann"}, {"name": "Bob"}]
# Commands that each start a round trip of the app to Redis: every load is a pipeline that
# starts with HMGET (an Idempotency-Key adds a GET to the same pipeline), every save or create
# one EVALSHA; the other commands in commandstats run inside the scripts.
ROUND_TRIP_COMMANDS = ("hmget", "evalsha", "eval", "lrange", "ping", "script|load")
# The players create their matches without an API key, as many as they finish.
SERVICE_SETTINGS = {"ALLOW_ANONYMOUS_CREATE": "true", "CREATE_QUOTA_PER_MINUTE": "0"}
# The one figure judged: the service's CPU per request against the baseline's, same run, each
# saturated. A request's CPU depends on the rate as well as on the code: the fewer requests a
# second, the more often a worker sleeps, and a request that wakes it runs slower (the
# baseline's: 0.96-1.11 ms saturated at 1,303-1,483 requests/s, 1.32-1.80 ms paced to 415-554;
# four runs, 2026-12-06). Saturated, the baseline runs at about twice the service's rate, so
# the judged ratio also carries the service's lower throughput; the ratio at the same rate (the
# baseline paced to the service's paced run) is printed beside it, for context. Throughput on
# two shared cores follows the neighbours: every moves/s ratio (service against baseline, two
# workers against one, with callbacks against without) is printed for context.
CPU_RATIO_TARGET = 1.6

Transport = Callable[[str, str, object, dict], tuple[int, dict | None]]


class HttpTransport:
    """One keep-alive HTTP/1.1 connection (http.client: the lightest client at hand)."""

    def __init__(self, port: int):
        self.port = port
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def __call__(self, method: str, path: str, body: object = None, headers: dict | None = None):
        payload = None if body is None else json.dumps(body)
        sent = dict(headers or {})
        if payload is not None:
            sent["Content-Type"] = "application/json"
        try:
            self.connection.request(method, path, payload, sent)
            response = self.connection.getresponse()
            data = response.read()
        except (http.client.HTTPException, ConnectionError):
            # A worker recycled (max_requests) closes its idle connections: reconnect and tell
            # the caller nothing is known about this request.
            self.connection.close()
            self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            return 0, None
        return response.status, json.loads(data) if data else None

    def close(self) -> None:
        self.connection.close()


class FlaskTransport:
    """The app in this process, through Flask's test client (for profiling)."""

    def __init__(self, app):
        self.client = app.test_client()

    def __call__(self, method: str, path: str, body: object = None, headers: dict | None = None):
        response = self.client.open(path, method=method, json=body, headers=headers or {})
        return response.status_code, response.get_json(silent=True)

    def close(self) -> None:
        pass


@dataclass
class Tally:
    """What one player measured: latencies (ms) per endpoint, moves and creations."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    moves: int = 0
    creates: int = 0
    failures: int = 0
    finished: int = 0  # matches played to their end

    def merge(self, other: Tally) -> None:
        for endpoint, values in other.latencies.items():
            self.latencies[endpoint].extend(values)
        self.moves += other.moves
        self.creates += other.creates
        self.failures += other.failures
        self.finished += other.finished


@dataclass
class Window:
    """The measured interval: samples that start inside it count (``end`` may be set while
    the players run)."""

    start: float
    end: float

    def contains(self, moment: float) -> bool:
        return self.start <= moment < self.end


class ServicePlayer:
    """Plays classic matches one after another through ``send``, one request per move.

    Every match is created with ``callback_url`` when one is given. With ``record_answers``,
    ``answered`` maps (game id, version) to the moment (``time.monotonic()``) the answer of
    the creation or move that brought the game to that version arrived, and ``games``
    lists the games created."""

    def __init__(self, send: Transport, seed: int, idempotency_keys: bool, callback_url: str | None = None,
                 record_answers: bool = False):
        self.send = send
        self.rng = random.Random(seed)
        self.idempotency_keys = idempotency_keys
        self.callback_url = callback_url
        self.record_answers = record_answers
        self.answered: dict[tuple[str, int], float] = {}
        self.games: list[str] = []
        self.tally = Tally()
        self.game_id = ""
        self.tokens: list[str] = []
        self.view: dict | None = None
        self.answered_at = 0.0

    def timed(self, window: Window | None, endpoint: str, method: str, path: str, body=None, headers=None):
        started = time.perf_counter()
        status, answer = self.send(method, path, body, headers or {})
        self.answered_at = time.monotonic()
        if window is None or window.contains(started):
            self.tally.latencies[endpoint].append((time.perf_counter() - started) * 1000)
        return status, answer, window is None or window.contains(started)

    def auth(self, seat: int) -> dict:
        return {"Authorization": f"Bearer {self.tokens[seat]}"}

    def new_match(self, window: Window | None) -> None:
        body = {"variant": "classic", "players": PLAYERS}
        if self.callback_url is not None:
            body["callback_url"] = self.callback_url
        status, answer, counted = self.timed(window, "create", "POST", "/v1/games", body)
        if status == 0:  # the connection closed under it (a retiring worker's): ask again
            status, answer, counted = self.timed(window, "create", "POST", "/v1/games", body)
        if status != 201:
            raise RuntimeError(f"create answered {status}: {answer}")
        self.tally.creates += counted
        self.game_id, self.tokens = answer["game"]["id"], [p["token"] for p in answer["players"]]
        self.view = answer["game"]
        if self.record_answers:
            self.games.append(self.game_id)
            self.answered[(self.game_id, self.view["version"])] = self.answered_at

    def resync(self, window: Window | None) -> None:
        """After an unexpected answer: read the game again (or start another)."""
        status, public, _ = self.timed(window, "view", "GET", f"/v1/games/{self.game_id}")
        if status != 200 or public["status"] == "finished":
            self.new_match(window)
            return
        self.read_view(window, public["hand"]["turn"])

    def read_view(self, window: Window | None, seat: int) -> None:
        status, view, _ = self.timed(window, "view", "GET", f"/v1/games/{self.game_id}", headers=self.auth(seat))
        self.view = view if status == 200 else None

    def step(self, window: Window | None) -> None:
        if self.view is None:
            self.resync(window)
            return
        if self.view["status"] == "finished":
            self.new_match(window)
            return
        if self.rng.randrange(READ_EVERY) == 0:
            self.read_view(window, self.view["hand"]["turn"])
            if self.view is None:
                return
        seat, move = next_move(self.view, self.rng)
        headers = self.auth(seat)
        if self.idempotency_keys:
            headers["Idempotency-Key"] = uuid.uuid4().hex
        status, view, counted = self.timed(window, move.action, "POST", f"/v1/games/{self.game_id}/{move.action}",
                                           move.body, headers)
        if status == 200:
            self.tally.moves += counted
            self.view = view
            if self.record_answers:
                self.answered[(self.game_id, view["version"])] = self.answered_at
            if view["status"] == "finished":
                self.tally.finished += counted
        else:
            self.tally.failures += counted
            self.view = None


class BaselinePlayer:
    """Moves one baseline game as fast as it answers."""

    def __init__(self, send: Transport):
        self.send = send
        self.tally = Tally()
        status, answer = send("POST", "/games", None, {})
        if status != 201:
            raise RuntimeError(f"baseline create answered {status}")
        self.path = f"/games/{answer['id']}/move"

    def step(self, window: Window | None) -> None:
        started = time.perf_counter()
        status, _ = self.send("POST", self.path, None, {})
        counted = window is None or window.contains(started)
        if counted:
            self.tally.latencies["move"].append((time.perf_counter() - started) * 1000)
            self.tally.moves += status == 200
            self.tally.failures += status != 200


@dataclass(frozen=True)
class Sample:
    """Counters read at one moment: Redis commands, and CPU seconds of the server's processes
    (workers alive, workers already reaped by the master, the master) and of this process."""

    calls: dict[str, int]
    server_cpu: float
    worker_cpu: dict[int, float]
    generator_cpu: float


def cpu_seconds(pid: int, children: bool = False) -> float:
    """utime + stime of ``pid`` (with ``children``: plus those of its reaped children)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12]) + (int(fields[13]) + int(fields[14]) if children else 0)
    return ticks / os.sysconf("SC_CLK_TCK")


def sample(client: redis.Redis, server: GunicornServer) -> Sample:
    workers = {}
    for pid in server.worker_pids():
        try:
            workers[pid] = cpu_seconds(pid)
        except OSError:  # exited meanwhile: counted with the master's children from now on
            pass
    master = cpu_seconds(server.process.pid, children=True)
    generator = sum(os.times()[:2])
    calls = {name.removeprefix("cmdstat_"): stats["calls"] for name, stats in client.info("commandstats").items()}
    return Sample(calls, master + sum(workers.values()), workers, generator)


@dataclass
class Result:
    name: str
    seconds: float
    tally: Tally
    before: Sample
    after: Sample

    @property
    def calls(self) -> dict[str, int]:
        return {name: count - self.before.calls.get(name, 0) for name, count in self.after.calls.items()}

    @property
    def moves_per_second(self) -> float:
        return self.tally.moves / self.seconds

    @property
    def requests(self) -> int:
        return sum(len(values) for values in self.tally.latencies.values())

    def calls_per_move(self) -> float:
        return sum(self.calls.values()) / max(self.tally.moves, 1)

    def round_trips_per_move(self) -> float:
        """Round trips of the app to Redis per move, those of creations and of reads of views
        left out (each is one)."""
        sent = sum(self.calls.get(name, 0) for name in ROUND_TRIP_COMMANDS)
        reads = len(self.tally.latencies.get("view", []))
        return (sent - self.tally.creates - reads) / max(self.tally.moves, 1)

    def server_ms_per_request(self) -> float:
        """Server CPU per request: less changed by other load on the machine than throughput,
        but higher the fewer requests a second the server gets (its workers sleep and wake more)."""
        return (self.after.server_cpu - self.before.server_cpu) * 1000 / max(self.requests, 1)

    def worker_shares(self) -> list[float]:
        """Each worker's share of the server's CPU over the window (workers alive throughout)."""
        used = {pid: self.after.worker_cpu[pid] - cpu for pid, cpu in self.before.worker_cpu.items()
                if pid in self.after.worker_cpu}
        total = sum(used.values()) or 1.0
        return sorted((value / total for value in used.values()), reverse=True)


def joined(threads: list[threading.Thread], errors: list[BaseException], players: list) -> "Tally":
    """The players' threads ended: their first error raised, else their figures summed."""
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    tally = Tally()
    for player in players:
        tally.merge(player.tally)
    return tally


def drive(players: list, seconds: float, redis_client: redis.Redis, server: GunicornServer,
          steps_per_second: float | None = None) -> tuple[Tally, Sample, Sample]:
    """Run every player in its own thread: warm-up, then ``seconds`` measured. With
    ``steps_per_second``, the players together take that many steps a second, each on a
    schedule of its own (a step that starts late is not made up for by a burst)."""
    now = time.perf_counter()
    window = Window(now + WARMUP_SECONDS, now + WARMUP_SECONDS + seconds)
    errors: list[BaseException] = []
    interval = len(players) / steps_per_second if steps_per_second else 0.0

    def loop(player) -> None:
        due = time.perf_counter() + random.uniform(0, interval)  # spread the players' schedules
        try:
            while time.perf_counter() < window.end:
                if interval:
                    time.sleep(max(0.0, due - time.perf_counter()))
                    due = max(due + interval, time.perf_counter())
                player.step(window)
        except BaseException as error:  # reported after the run
            errors.append(error)

    threads = [threading.Thread(target=loop, args=(player,)) for player in players]
    for thread in threads:
        thread.start()
    time.sleep(max(0.0, window.start - time.perf_counter()))
    before = sample(redis_client, server)
    time.sleep(max(0.0, window.end - time.perf_counter()))
    after = sample(redis_client, server)
    tally = joined(threads, errors, players)
    return tally, before, after


@contextmanager
def redis_for_bench(url: str | None, directory: Path) -> Iterator[str]:
    if url:
        yield url
        return
    server = RedisServer(directory / "redis").start()
    try:
        yield server.url
    finally:
        server.stop()


@contextmanager
def gunicorn(directory: Path, environment: dict, workers: int, app: str, ready_path: str):
    server = GunicornServer(directory, environment, workers=workers, app=app, ready_path=ready_path)
    try:
        yield server.start()
    finally:
        server.stop()


def gunicorn_overrides(options) -> dict[str, str]:
    """Settings changed from the command line, for the service and the baseline alike."""
    overrides = {}
    if options.max_requests is not None:
        overrides["GUNICORN_MAX_REQUESTS"] = str(options.max_requests)
    if options.gunicorn_args:
        overrides["GUNICORN_CMD_ARGS"] = options.gunicorn_args
    return overrides


def run_service(options, redis_url: str, prefix: str, workers: int, directory: Path,
                moves_per_second: float | None = None, app: str = "service.wsgi:app", name: str = "service") -> Result:
    """The service saturated by the players, or with ``moves_per_second`` the players paced to
    that many steps a second (a step is one move, now and then with a read or a creation);
    ``app`` names the WSGI app (FLOOR_APP: the service without its game logic)."""
    environment = {"REDIS_URL": redis_url, "KEY_PREFIX": prefix, "LOG_LEVEL": "WARNING", **SERVICE_SETTINGS,
                   **gunicorn_overrides(options)}
    with gunicorn(directory, environment, workers, app, "/readyz") as server, \
            redis.Redis.from_url(redis_url) as client:
        players = [ServicePlayer(HttpTransport(server.port), seed, options.idempotency_keys)
                   for seed in range(options.clients)]
        for player in players:
            player.new_match(None)
        tally, before, after = drive(players, options.seconds, client, server, moves_per_second)
        for player in players:
            player.send.close()
    paced = "" if moves_per_second is None else f", paced to {moves_per_second:,.0f} steps/s"
    return Result(f"{name}, {workers} worker(s){paced}", options.seconds, tally, before, after)


def run_baseline(options, redis_url: str, prefix: str, directory: Path,
                 requests_per_second: float | None = None) -> Result:
    """The baseline saturated by the players, or with ``requests_per_second`` paced to that
    many moves a second (its only request)."""
    environment = {"REDIS_URL": redis_url, "KEY_PREFIX": prefix, **gunicorn_overrides(options)}
    with gunicorn(directory, environment, options.workers, BASELINE_APP, "/healthz") as server, \
            redis.Redis.from_url(redis_url) as client:
        players = [BaselinePlayer(HttpTransport(server.port)) for _ in range(options.clients)]
        tally, before, after = drive(players, options.seconds, client, server, requests_per_second)
        for player in players:
            player.send.close()
    paced = "" if requests_per_second is None else f", paced to {requests_per_second:,.0f} requests/s"
    return Result(f"baseline, {options.workers} worker(s){paced}", options.seconds, tally, before, after)


@dataclass
class MatchRun:
    """A run played until a number of matches were finished, with the CPU of every process
    involved (gunicorn, Redis, the load generator, and with callbacks the worker and the
    receiver) over the measured window."""

    result: Result
    cpu: dict[str, float]  # process -> CPU seconds over the window
    load: tuple[str, str]  # load average at the start and at the end of the window
    answered: dict[tuple[str, int], float] = field(default_factory=dict)
    games: list[str] = field(default_factory=list)
    worker: WorkerProcess | None = None


def drive_matches(players: list[ServicePlayer], matches: int, redis_client: redis.Redis, server: GunicornServer,
                  cpu: Callable[[], dict[str, float]]) -> tuple[Tally, Sample, Sample, Window, dict[str, float]]:
    """Run every player in its own thread: warm-up, then until ``matches`` matches started
    or continued after the warm-up have been finished. Returns the tally, the samples and
    the window, and the CPU seconds of ``cpu()`` over the window."""
    window = Window(time.perf_counter() + WARMUP_SECONDS, math.inf)
    finished, lock, done = [0], threading.Lock(), threading.Event()
    errors: list[BaseException] = []

    def loop(player: ServicePlayer) -> None:
        try:
            while not done.is_set():
                before = player.tally.finished
                player.step(window)
                if player.tally.finished > before:
                    with lock:
                        finished[0] += 1
                        if finished[0] == matches:
                            window.end = time.perf_counter()
                            done.set()
        except BaseException as error:  # reported after the run
            errors.append(error)
            done.set()

    threads = [threading.Thread(target=loop, args=(player,)) for player in players]
    for thread in threads:
        thread.start()
    done.wait(max(0.0, window.start - time.perf_counter()))
    before, cpu_before = sample(redis_client, server), cpu()
    done.wait()
    after, cpu_after = sample(redis_client, server), cpu()
    tally = joined(threads, errors, players)
    return tally, before, after, window, {name: cpu_after[name] - cpu_before[name] for name in cpu_before}


def play_matches(options, matches: int, redis_url: str, prefix: str, directory: Path, settings: dict[str, str],
                 receiver: callbacks.ReceiverProcess | None) -> tuple[MatchRun, GunicornServer]:
    """One run of ``matches`` matches; with ``receiver``, every match has a callback to it
    and a ``ginrummy worker`` delivers. Returns with the service still running (the caller
    stops it) so that the webhook queues can be drained first."""
    environment = {"REDIS_URL": redis_url, "KEY_PREFIX": prefix, "LOG_LEVEL": "WARNING", **SERVICE_SETTINGS,
                   **settings, **gunicorn_overrides(options)}
    server = GunicornServer(directory, environment, workers=options.workers, ready_path="/readyz").start()
    client = redis.Redis.from_url(redis_url)
    processes: dict[str, Callable[[], float]] = {"redis": lambda: callbacks.redis_cpu_seconds(client)}
    worker = None
    try:
        if receiver is not None:
            worker = WorkerProcess({"REDIS_URL": redis_url, "KEY_PREFIX": prefix, "LOG_LEVEL": "WARNING",
                                    "WEBHOOK_SECRET": settings["WEBHOOK_SECRET"], "WEBHOOK_ALLOW_PRIVATE": "true"},
                                   directory / "worker.log", arguments=()).start()
            processes["worker"] = lambda: cpu_seconds(worker.process.pid)
            processes["receiver"] = receiver.cpu_seconds
        callback_url = None if receiver is None else receiver.url()
        players = [ServicePlayer(HttpTransport(server.port), seed, options.idempotency_keys, callback_url, True)
                   for seed in range(options.clients)]
        for player in players:
            player.new_match(None)
        load_before = callbacks.load_average()
        tally, before, after, window, cpu = drive_matches(
            players, matches, client, server, lambda: {name: read() for name, read in processes.items()})
        load_after = callbacks.load_average()
        for player in players:
            player.send.close()
    except BaseException:
        if worker is not None:
            worker.stop()
        server.stop()
        raise
    finally:
        client.close()
    name = "with callbacks" if receiver is not None else "without callbacks"
    run = MatchRun(Result(f"service {name}, {options.workers} worker(s)", window.end - window.start, tally, before,
                          after), cpu, (load_before, load_after), worker=worker)
    for player in players:
        run.answered.update(player.answered)
        run.games += player.games
    return run, server


def cpu_used(run: MatchRun) -> dict[str, float]:
    """CPU seconds over the window per process: gunicorn, Redis, [worker, receiver,] load generator."""
    return {"gunicorn": run.result.after.server_cpu - run.result.before.server_cpu, **run.cpu,
            "load generator": run.result.after.generator_cpu - run.result.before.generator_cpu}


def print_cpu(run: MatchRun) -> None:
    seconds, moves = run.result.seconds, max(run.result.tally.moves, 1)
    cpu = cpu_used(run)
    print("  CPU over the window, cores busy (ms per move): " + ", ".join(
        f"{name} {used / seconds:.2f} ({used * 1000 / moves:.3f})" for name, used in cpu.items())
        + f"; all {sum(cpu.values()) / seconds:.2f} cores")
    print(f"  load average (1, 5, 15 min) at the window's start: {run.load[0]}; at its end: {run.load[1]}")


@dataclass
class Totals:
    """Runs of one kind added up: moves, seconds measured, CPU seconds per process."""

    moves: int = 0
    seconds: float = 0.0
    cpu: dict[str, float] = field(default_factory=dict)

    def add(self, run: MatchRun) -> None:
        self.moves += run.result.tally.moves
        self.seconds += run.result.seconds
        for name, used in cpu_used(run).items():
            self.cpu[name] = self.cpu.get(name, 0.0) + used

    @property
    def moves_per_second(self) -> float:
        return self.moves / self.seconds

    def ms_per_move(self) -> dict[str, float]:
        return {name: used * 1000 / max(self.moves, 1) for name, used in self.cpu.items()}


def callback_rounds(rounds: int) -> list[bool]:
    """Which runs have callbacks, in order: ABBA blocks (without, with, with, without, ...), so
    that a machine growing slower or faster during the bench weighs on both kinds alike."""
    return [(index % 4) in (1, 2) for index in range(2 * rounds)]


def run_callbacks(options) -> None:
    """Runs without and with callbacks, interleaved; each kind until ``--matches`` matches are
    finished in all."""
    print(f"{datetime.datetime.now().isoformat(timespec='seconds')}  {machine()}")
    share = max(options.matches // options.rounds, 1)
    print(f"{options.clients} clients, {options.workers} gevent worker(s); {options.rounds} run(s) of each kind, "
          f"without and with callbacks in ABBA order, each measured from {WARMUP_SECONDS:.0f} s of warm-up until "
          f"{share} matches are finished; load generator, receiver and worker on the same machine; load average "
          f"now {callbacks.load_average()}")
    with tempfile.TemporaryDirectory() as directory, redis_for_bench(options.redis_url, Path(directory)) as url:
        prefix = f"bench:{uuid.uuid4().hex}:"
        secret = new_secret()
        receiver = callbacks.ReceiverProcess(secret, options.verify_every)
        settings = {"WEBHOOK_SECRET": secret, "WEBHOOK_ALLOWED_HOSTS": f"http://127.0.0.1:{receiver.port}"}
        # The runs with callbacks share one prefix: each leaves its queues empty for the next.
        hooked_prefix = f"{prefix}hooked:"
        totals = {False: Totals(), True: Totals()}
        hooked_runs: list[MatchRun] = []
        drains: list[tuple[callbacks.Queues, int, callbacks.Queues, float]] = []
        try:
            for number, hooked in enumerate(callback_rounds(options.rounds)):
                run, server = play_matches(options, share, url, hooked_prefix if hooked else f"{prefix}plain:",
                                           Path(directory) / f"run{number}", settings, receiver if hooked else None)
                try:
                    if hooked:
                        with redis.Redis.from_url(url) as client:
                            at_stop, received_at_stop = callbacks.queues(client, hooked_prefix), receiver.count()
                            drained, waited = callbacks.wait_until_drained(client, hooked_prefix)
                        drains.append((at_stop, received_at_stop, drained, waited))
                        hooked_runs.append(run)
                finally:
                    if run.worker is not None:
                        run.worker.stop()
                    server.stop()
                totals[hooked].add(run)
                print_result(run.result)
                if hooked:
                    print("  (the Redis counters of this run include the worker's commands: XREADGROUP, one script "
                          "per delivery, sent in batches)")
                print_cpu(run)
            print_callbacks(options, totals[False], totals[True], hooked_runs, receiver.records(), url, hooked_prefix,
                            drains)
        finally:
            receiver.stop()
            if options.redis_url:
                with redis.Redis.from_url(url) as client:
                    for key in client.scan_iter(match=f"{prefix}*", count=1000):
                        client.delete(key)


def print_callbacks(options, plain: Totals, hooked: Totals, hooked_runs: list[MatchRun], records: list[tuple],
                    url: str, prefix: str, drains: list[tuple[callbacks.Queues, int, callbacks.Queues, float]]) -> None:
    ratio = hooked.moves_per_second / plain.moves_per_second
    print(f"\nmoves/s with / without callbacks, all runs of each kind: {hooked.moves_per_second:,.0f} / "
          f"{plain.moves_per_second:,.0f} = {ratio:.1%} (context, not a target)")
    # Throughput follows the other load on a shared machine; CPU per move hardly does. When
    # the bench is CPU-bound, moves/s goes as the inverse of the CPU a move costs.
    per_move = [plain.ms_per_move(), hooked.ms_per_move()]
    server_side = [sum(v for name, v in costs.items() if name in ("gunicorn", "redis", "worker")) for costs in per_move]
    alone = [costs["gunicorn"] + costs["redis"] for costs in per_move]
    print(f"CPU per move: every process {sum(per_move[0].values()):.3f} -> {sum(per_move[1].values()):.3f} ms "
          f"(equal CPU would give {sum(per_move[0].values()) / sum(per_move[1].values()):.1%}); gunicorn + Redis + "
          f"worker {server_side[0]:.3f} -> {server_side[1]:.3f} ms ({server_side[0] / server_side[1]:.1%}); "
          f"gunicorn + Redis {alone[0]:.3f} -> {alone[1]:.3f} ms ({alone[0] / alone[1]:.1%}); the load generator "
          f"(the same work per move in both: how fast the machine ran) {per_move[0]['load generator']:.3f} -> "
          f"{per_move[1]['load generator']:.3f} ms")
    for at_stop, received_at_stop, drained, waited in drains:
        print(f"when the players stopped: {received_at_stop:,} requests received, {at_stop.backlog:,} deliveries "
              f"still queued (feed {at_stop.unfinished:,}, retry {at_stop.retry:,}); drained in {waited:.1f} s, "
              f"{'nothing left' if drained.backlog == 0 else f'{drained.backlog:,} LEFT (gave up)'}; "
              f"dead letters {drained.dead:,}")
    games = [game for run in hooked_runs for game in run.games]
    answered = {key: moment for run in hooked_runs for key, moment in run.answered.items()}
    accounting = callbacks.account(records, url, prefix, games, {0, 1})
    latency = callbacks.latencies(accounting, answered)
    values = latency.values_ms
    print(f"delivery latency, answer of the move -> receiver (first arrival of each webhook-id, {len(values):,}): "
          f"p50 {percentile(values, 0.50):.1f} ms, p99 {percentile(values, 0.99):.1f} ms, "
          f"max {max(values, default=float('nan')):.1f} ms; {sum(1 for value in values if value < 0):,} arrived "
          f"before the player had read the answer (min {min(values, default=float('nan')):.1f} ms); "
          f"{latency.unmatched} not matched to an answered move")
    checked = "every request" if options.verify_every == 1 else f"one request in {options.verify_every}"
    print(f"loss check over {accounting.games:,} games: expected {accounting.expected:,}, delivered "
          f"{accounting.delivered:,}, missing {len(accounting.missing):,}, unexpected {len(accounting.unexpected):,}; "
          f"{accounting.requests:,} requests, {accounting.duplicates:,} duplicates before de-duplication; signatures "
          f"({checked} checked): {accounting.verified:,} verified, {accounting.failed_verification:,} failed")
    for label, webhook_ids in (("missing", accounting.missing), ("unexpected", accounting.unexpected)):
        if webhook_ids:
            print(f"  {label}, first ones: {', '.join(webhook_ids[:5])}")
    left = sum(drained.backlog for _, _, drained, _ in drains)
    lost = accounting.missing or accounting.unexpected or accounting.failed_verification or left
    print(f"nothing lost: {'yes' if not lost else 'NO'}")


@dataclass
class Memory:
    """MEMORY USAGE per match, by kind of key."""

    active: list[dict[str, int]] = field(default_factory=list)
    finished: list[dict[str, int]] = field(default_factory=list)
    events: list[int] = field(default_factory=list)


def memory_per_match(redis_url: str, prefix: str) -> Memory:
    """Group the service's keys by game (``<prefix>{<id>}:s|e|x|i:<key>``, service/store/keys.py).
    A finished match's events are archived in its state hash (field ``a``): counted as events."""
    memory = Memory()
    with redis.Redis.from_url(redis_url, decode_responses=True) as client:
        games: dict[str, dict[str, int]] = defaultdict(
            lambda: {"state": 0, "events": 0, "tombstone": 0, "idempotency": 0})
        finished: set[str] = set()
        for key in client.scan_iter(match=f"{prefix}{{g_*}}:*", count=1000):
            tagged, _, kind = key[len(prefix):].partition(":")  # "{g_...}", "s" | "e" | "x" | "i:..."
            game_id = tagged.strip("{}")
            usage = client.memory_usage(key, samples=0) or 0
            if kind == "s":
                archived = client.hstrlen(key, "a")
                games[game_id]["state"] += usage - archived
                games[game_id]["events"] += archived
                record = json.loads(client.hget(key, "s"))
                if record["m"]["result"] is not None:
                    finished.add(game_id)
            elif kind == "e":
                games[game_id]["events"] += usage
            elif kind == "x":
                games[game_id]["tombstone"] += usage
            else:
                games[game_id]["idempotency"] += usage
        for game_id, usage in games.items():
            (memory.finished if game_id in finished else memory.active).append(usage)
            if game_id not in finished:
                memory.events.append(client.llen(f"{prefix}{{{game_id}}}:e"))
    return memory


def move_latencies(result: Result) -> list[float]:
    """The latencies (ms) of the moves of a run: every endpoint but the reads and creations."""
    return [value for endpoint, values in result.tally.latencies.items() if endpoint not in ("view", "create")
            for value in values]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


def print_result(result: Result) -> None:
    print(f"\n{result.name}: {result.moves_per_second:,.0f} moves/s, {result.requests / result.seconds:,.0f} requests/s "
          f"over {result.seconds:.0f} s ({result.tally.moves} moves, {result.tally.creates} matches created, "
          f"{result.tally.failures} moves refused or lost)")
    print(f"  {'endpoint':<10} {'requests':>9} {'p50 ms':>8} {'p99 ms':>8}")
    for endpoint, values in sorted(result.tally.latencies.items()):
        print(f"  {endpoint:<10} {len(values):>9} {percentile(values, 0.50):>8.2f} {percentile(values, 0.99):>8.2f}")
    print(f"  Redis: {result.calls_per_move():.2f} commands per move (commandstats, script internals included), "
          f"{result.round_trips_per_move():.2f} round trips per move")
    cores = (result.after.server_cpu - result.before.server_cpu) / result.seconds
    generator = (result.after.generator_cpu - result.before.generator_cpu) / result.seconds
    shares = ", ".join(f"{share:.0%}" for share in result.worker_shares()) or "n/a (every worker was recycled meanwhile)"
    print(f"  CPU: server {cores:.2f} cores busy, {result.server_ms_per_request():.2f} ms per request; "
          f"load generator {generator:.2f} cores; workers' shares of the server CPU: {shares}")


def cpu_ratio_line(service: Result, baseline: Result) -> str:
    """The two runs' CPU per request and their ratio, with the request rate each ran at."""
    return (f"{service.server_ms_per_request():.3f} ms at {service.requests / service.seconds:,.0f} requests/s / "
            f"{baseline.server_ms_per_request():.3f} ms at {baseline.requests / baseline.seconds:,.0f} requests/s = "
            f"{service.server_ms_per_request() / baseline.server_ms_per_request():.2f}x")


def print_memory(memory: Memory) -> None:
    def mean(rows: list[dict[str, int]], kind: str) -> float:
        return statistics.fmean(row[kind] for row in rows) if rows else float("nan")

    for label, rows in (("active", memory.active), ("finished", memory.finished)):
        total = [sum(row.values()) for row in rows]
        print(f"  {label} matches: {len(rows)}; mean bytes state {mean(rows, 'state'):,.0f}, events "
              f"{mean(rows, 'events'):,.0f}, tombstone {mean(rows, 'tombstone'):,.0f}, idempotency "
              f"{mean(rows, 'idempotency'):,.0f}; total mean "
              f"{statistics.fmean(total) if total else float('nan'):,.0f}, max {max(total, default=0):,}")
    if memory.events:
        print(f"  events per active match: mean {statistics.fmean(memory.events):.0f}, max {max(memory.events)}")


def machine() -> str:
    return f"{platform.node()}: {os.cpu_count()} CPUs, {platform.processor() or platform.machine()}, " \
           f"Python {platform.python_version()}, {platform.platform()}"


@contextmanager
def in_process_player(options) -> Iterator[tuple[object, ServicePlayer]]:
    """The app in this process on a private Redis (or --redis-url), and a warmed-up player
    that plays through Flask's test client; its keys are deleted afterwards."""
    from service.app import create_app

    with tempfile.TemporaryDirectory() as directory, redis_for_bench(options.redis_url, Path(directory)) as url:
        prefix = f"bench:{uuid.uuid4().hex}:"
        app = create_app({"REDIS_URL": url, "KEY_PREFIX": prefix, "LOG_LEVEL": "WARNING", **SERVICE_SETTINGS})
        player = ServicePlayer(FlaskTransport(app), 0, options.idempotency_keys)
        player.new_match(None)
        for _ in range(200):  # warm-up
            player.step(None)
        try:
            yield app, player
        finally:
            if options.redis_url:
                with redis.Redis.from_url(url) as client:
                    for key in client.scan_iter(match=f"{prefix}*"):
                        client.delete(key)


def play_moves(player: ServicePlayer, moves: int) -> tuple[int, float, float]:
    """Play ``moves`` more moves: (moves played, seconds, seconds of this process's CPU)."""
    first = player.tally.moves
    started, cpu_started = time.perf_counter(), time.process_time()
    while player.tally.moves - first < moves:
        player.step(None)
    return player.tally.moves - first, time.perf_counter() - started, time.process_time() - cpu_started


def profile(options) -> None:
    """Play moves in this process (Flask test client, real Redis) under pyinstrument."""
    from pyinstrument import Profiler

    with in_process_player(options) as (_, player):
        profiler = Profiler(interval=0.0005)
        with profiler:
            moves, elapsed, _ = play_moves(player, options.moves)
        print(f"{moves} moves in {elapsed:.2f} s in-process: {elapsed / moves * 1000:.2f} ms "
              f"per move (profiler overhead included)")
        print(profiler.output_text(unicode=True, color=False, show_all=False))


def split(options) -> None:
    """Where a move's time goes outside gunicorn, in this process (Flask test client, real
    Redis): the whole request, the game service's ``act`` inside it, and a bare Flask JSON
    route answering a body of a move's size through the same test client. What is left is
    request parsing and validation (webargs, marshmallow), flask-smorest's wrappers, the
    service's hooks and headers, and the simulated player's own code."""
    from flask import Flask, jsonify, request

    from service.api.context import EXTENSION

    with in_process_player(options) as (app, player):
        games = app.extensions[EXTENSION].games
        act, spent = games.act, [0.0, 0.0]

        def timed_act(*args, **kwargs):
            started, cpu_started = time.perf_counter(), time.process_time()
            try:
                return act(*args, **kwargs)
            finally:
                spent[0] += time.perf_counter() - started
                spent[1] += time.process_time() - cpu_started

        games.act = timed_act
        moves, elapsed, cpu = play_moves(player, options.moves)

    bare = Flask("bare")

    @bare.post("/move")
    def move():
        return jsonify(ok=True, echo=request.get_json())

    client, body = bare.test_client(), {"card": "Qh", "melds": [["2c", "3c", "4c"]]}
    for _ in range(200):
        client.post("/move", json=body)
    started, cpu_started = time.perf_counter(), time.process_time()
    for _ in range(moves):
        client.post("/move", json=body)
    bare_ms = (time.perf_counter() - started) / moves * 1000
    bare_cpu_ms = (time.process_time() - cpu_started) / moves * 1000

    def per_move(seconds: float) -> float:
        return seconds / moves * 1000

    print(f"{moves} moves in-process, ms per move (wall / this process's CPU):")
    print(f"  whole request, reads included   {per_move(elapsed):.3f} / {per_move(cpu):.3f}")
    print(f"  GameService.act                 {per_move(spent[0]):.3f} / {per_move(spent[1]):.3f}")
    print(f"  a bare Flask JSON route         {bare_ms:.3f} / {bare_cpu_ms:.3f}")
    print(f"  the rest                        {per_move(elapsed - spent[0]) - bare_ms:.3f} / "
          f"{per_move(cpu - spent[1]) - bare_cpu_ms:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--scaling", action="store_true", help="also run the service with 1 worker")
    parser.add_argument("--floor", action="store_true",
                        help="also run the service with its game logic taken out (bench/floor_app.py), saturated")
    parser.add_argument("--paced-share", type=float, default=0.7,
                        help="also run the service paced to this share of its saturated moves/s, then the baseline at "
                             "the requests/s that made, and compare their CPU per request (0: not)")
    parser.add_argument("--idempotency-keys", action="store_true", help="send an Idempotency-Key with every move")
    parser.add_argument("--max-requests", type=int, help="GUNICORN_MAX_REQUESTS (default: the service's)")
    parser.add_argument("--gunicorn-args", help="more gunicorn options (GUNICORN_CMD_ARGS), e.g. '--worker-connections 8'")
    parser.add_argument("--redis-url", help="use this Redis instead of a private redis-server")
    parser.add_argument("--profile", action="store_true", help="profile the move path in-process instead")
    parser.add_argument("--split", action="store_true",
                        help="split a move's time in-process: the request, act, a bare Flask route")
    parser.add_argument("--moves", type=int, default=3000, help="moves to profile or split")
    parser.add_argument("--callbacks", action="store_true",
                        help="compare the service without and with webhooks to a receiver on loopback")
    parser.add_argument("--matches", type=int, default=1000,
                        help="matches to finish with --callbacks, in all the runs of each kind")
    parser.add_argument("--rounds", type=int, default=2,
                        help="--callbacks: runs of each kind, in ABBA order (1: without, then with)")
    parser.add_argument("--verify-every", type=int, default=1,
                        help="with --callbacks: the receiver verifies one signature in this many (1: all)")
    options = parser.parse_args()
    if options.profile:
        profile(options)
        return
    if options.split:
        split(options)
        return
    if options.callbacks:
        run_callbacks(options)
        return

    print(f"{datetime.datetime.now().isoformat(timespec='seconds')}  {machine()}")
    print(f"{options.clients} clients, {options.workers} gevent worker(s), "
          f"{options.seconds:.0f} s measured after {WARMUP_SECONDS:.0f} s of warm-up, load generator on the same machine")
    with tempfile.TemporaryDirectory() as directory, redis_for_bench(options.redis_url, Path(directory)) as url:
        prefix = f"bench:{uuid.uuid4().hex}:"
        try:
            service = run_service(options, url, prefix, options.workers, Path(directory) / "service")
            print_result(service)
            print("\nRedis memory per match (MEMORY USAGE of its keys):")
            print_memory(memory_per_match(url, prefix))
            baseline = run_baseline(options, url, f"{prefix}baseline:", Path(directory) / "baseline")
            print_result(baseline)
            ratio = service.moves_per_second / baseline.moves_per_second
            print(f"\nservice / baseline moves/s: {ratio:.0%} (context, not a target)")
            print(f"service / baseline CPU per request, each saturated: {cpu_ratio_line(service, baseline)} "
                  f"(target <= {CPU_RATIO_TARGET}x)")
            if options.floor:
                floor = run_service(options, url, f"{prefix}floor:", options.workers, Path(directory) / "floor",
                                    app=FLOOR_APP, name="floor (the service without its game logic)")
                print_result(floor)
                print(f"\nfloor / baseline CPU per request, each saturated: {cpu_ratio_line(floor, baseline)} "
                      f"(context: what the request layers cost)")
                room = CPU_RATIO_TARGET * baseline.server_ms_per_request() - floor.server_ms_per_request()
                print(f"the service above its floor (its game logic): "
                      f"{service.server_ms_per_request() - floor.server_ms_per_request():.3f} ms per request; "
                      f"the target leaves it {room:.3f} ms")
            if options.paced_share > 0:
                paced = run_service(options, url, f"{prefix}paced:", options.workers, Path(directory) / "paced",
                                    options.paced_share * service.moves_per_second)
                print_result(paced)
                moves = move_latencies(paced)
                print(f"\na move at {options.paced_share:.0%} of saturation ({paced.moves_per_second:,.0f} of "
                      f"{service.moves_per_second:,.0f} moves/s): p50 {percentile(moves, 0.50):.2f} ms, "
                      f"p99 {percentile(moves, 0.99):.2f} ms over {len(moves)} moves")
                paced_baseline = run_baseline(options, url, f"{prefix}paced-baseline:", Path(directory) / "paced-baseline",
                                              paced.requests / paced.seconds)
                print_result(paced_baseline)
                print(f"\nservice / baseline CPU per request at the same rate: "
                      f"{cpu_ratio_line(paced, paced_baseline)} (context, not a target)")
            if options.scaling:
                other = 1 if options.workers != 1 else 2
                second = run_service(options, url, f"{prefix}scaling:", other, Path(directory) / "scaling")
                print_result(second)
                one, two = (second, service) if other == 1 else (service, second)
                print(f"\n2 workers / 1 worker moves/s: {two.moves_per_second / one.moves_per_second:.2f}x "
                      f"(context, not a target)")
        finally:
            if options.redis_url:
                with redis.Redis.from_url(url) as client:
                    for key in client.scan_iter(match=f"{prefix}*", count=1000):
                        client.delete(key)


if __name__ == "__main__":
    main()
