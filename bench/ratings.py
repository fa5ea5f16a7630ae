"""Ratings: leaderboard reads over a million rated players, their memory, and how soon a finished
rated match's rating update is applied under load.

    python bench/ratings.py [--players 1000000] [--history 12] [--marks 100000] [--reads 2000]
                            [--clients 16] [--workers 2] [--rate 10] [--seconds 60] [--redis-url URL]

Starts a private redis-server (unless --redis-url; then everything is written under a prefix of
its own and deleted at the end), then:

1. **Load**: ``--players`` ranked players of one API key's classic leaderboard, piped (``redis-cli
   --pipe``) into the keys the ratings store uses (service/store/ratings_redis.py): each
   player's standing (a hash), their place on the board (a sorted set), ``--history`` entries
   of rating history (12: about the fewest rated matches after which a new player is ranked),
   and ``--marks`` "applied" marks of rated matches (kept 30 days). The store's own reads
   check the load (board size, the top rows, a standing, a history). Redis memory
   (``INFO memory``, used_memory) before and after each part, divided by what it added.
2. **Reads**: ``--reads`` of each kind, one after another, in this process through the use
   case (RatingService on the service's Redis client: every round trip to Redis) and through
   HTTP on gunicorn (the service's settings, service/gunicorn_conf.py, one keep-alive
   connection): the top page ``GET /v1/leaderboards/classic?limit=50``, a deep page (a cursor
   at a random place), ``?around=<a random player>`` (50 rows), and ``GET
   /v1/players/{id}/ratings``. p50/p99 each (target p99 <= 5 ms per read), and the CPU each
   read cost the serving process and Redis: unlike latency, hardly changed by other load on a
   shared machine (Redis' figure counts everything that Redis did meanwhile: use the private
   one).
3. **Lag**: one ``ginrummy worker`` (a fresh WEBHOOK_SECRET, its deployed pacing) applies the
   ratings. ``--clients`` players play rated classic matches through and through as in
   bench/load.py (one request per move, the pool of players ``load-<n>``), while four more
   connections finish ``--rate`` rated matches a second between them, each created and at once
   resigned (players of the pool ``lag-<n>``). From
   the answer of each resignation, Redis is polled every 2 ms for the match's applied mark
   (the ratings store's once-only mark) and for its changes kept with the match (what makes
   ``result.rating_changes`` readable): p50/p99/max of both; target p99 <= 1 s. Also the
   worker's CPU, idle and per rated match applied, and checks that every match was applied
   exactly once (each player's count of rated games is the number of matches they finished)
   and shows its changes in the view.

Prints the figures. The load generator shares the machine's CPUs with the server.
"""
from __future__ import annotations

import argparse
import base64
import datetime
import json
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

import redis  # noqa: E402

from bench.callbacks import load_average, redis_cpu_seconds  # noqa: E402
from bench.load import (  # noqa: E402
    WARMUP_SECONDS,
    HttpTransport,
    ServicePlayer,
    Window,
    cpu_seconds,
    machine,
    percentile,
    redis_for_bench,
)
from service import ids, tokens  # noqa: E402
from service.ratings.applier import GROUP as RATINGS_GROUP  # noqa: E402
from service.ratings.service import RatingService  # noqa: E402
from service.store import store_from_url  # noqa: E402
from service.store.areas import areas_of  # noqa: E402
from service.store.feed_redis import feed_key  # noqa: E402
from service.store.keys import game_keys  # noqa: E402
from service.store.ratings_redis import player_key_id  # noqa: E402
from tests.e2e.webhook_stack import WorkerProcess  # noqa: E402
from tests.gunicorn_server import TEST_API_KEY, GunicornServer  # noqa: E402
from tests.webhooks.support import new_secret  # noqa: E402

VARIANT = "classic"
SCOPE = tokens.key_id(TEST_API_KEY)  # whose players: the API key the bench's gunicorn accepts
PAGE = 50
LOAD_BATCH = 5000  # commands written to redis-cli at a time
POLL_SECONDS = 0.002
QUIET_SECONDS = 5.0
DRAIN_SECONDS = 10.0
LAG_PLAYERS = 100  # the pool the finishing client draws its two players from
FINISHER_THREADS = 4
APPLIED_WAIT_SECONDS = 5.0  # how long the exactly-once check waits for the last applications
LOAD_PLAYERS = 1000  # the pool of the clients playing whole matches
SERVICE_SETTINGS = {"CREATE_QUOTA_PER_MINUTE": "0", "LOG_LEVEL": "WARNING"}
TARGETS = {"read_p99_ms": 5.0, "lag_p99_ms": 1000.0}


def ratings_key(prefix: str, rest: str) -> str:
    """A key of this scope's classic ratings, as the ratings store names them (``{r:<scope>:<variant>}``;
    ``load`` checks the names through the store's own reads)."""
    return f"{prefix}{{r:{SCOPE}:{VARIANT}}}:{rest}"


def external_id(number: int) -> str:
    return f"player-{number:07d}"


def game_id(rng: random.Random) -> str:
    return "g_" + base64.urlsafe_b64encode(rng.randbytes(16)).decode()[:22]


def used_memory(client: redis.Redis) -> int:
    return int(client.info("memory")["used_memory"])


def command(*args: str | bytes) -> bytes:
    """One command in the Redis protocol (RESP)."""
    encoded = [arg if isinstance(arg, bytes) else arg.encode() for arg in args]
    return b"*%d\r\n" % len(encoded) + b"".join(b"$%d\r\n%s\r\n" % (len(arg), arg) for arg in encoded)


def send(url: str, commands: Iterator[bytes]) -> None:
    """Pipe ``commands`` into Redis with ``redis-cli --pipe``, which reads the replies in C (with the
    commands built here, twice as fast as redis-py's pipelines on the 2-CPU VM). Raises
    RuntimeError when any command failed."""
    piped = subprocess.Popen([shutil.which("redis-cli") or "redis-cli", "-u", url, "--pipe"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    chunk: list[bytes] = []
    for each in commands:
        chunk.append(each)
        if len(chunk) == LOAD_BATCH:
            piped.stdin.write(b"".join(chunk))
            chunk.clear()
    piped.stdin.write(b"".join(chunk))
    output, _ = piped.communicate()
    if piped.returncode != 0 or b"errors: 0," not in output:
        raise RuntimeError(f"redis-cli --pipe: {output.decode(errors='replace')[-500:]}")


@dataclass
class Loaded:
    """What the load wrote: the players' ratings (best first) and Redis memory per part."""

    ratings: list[tuple[float, int]]  # (rating, player number), best first
    bytes_per_player: float
    bytes_per_history_entry: float
    bytes_per_mark: float
    seconds: float


def load(url: str, client: redis.Redis, prefix: str, players: int, history: int, marks: int,
         rng: random.Random) -> Loaded:
    """Write ``players`` ranked standings with their board entries, then their histories, then
    ``marks`` applied marks, as the ratings store writes them, measuring memory after each part."""
    started = time.monotonic()
    ratings = [(rng.gauss(1500, 250), number) for number in range(players)]
    members = [player_key_id(external_id(number)) for number in range(players)]
    board = ratings_key(prefix, "board")

    def standings() -> Iterator[bytes]:
        for (rating, number), member in zip(ratings, members):
            games = rng.randint(history, 400)
            wins = rng.randint(0, games)
            yield command("HSET", ratings_key(prefix, f"p:{member}"), "ext", external_id(number),
                          "name", f"Player {number}", "r", repr(rating), "rd", repr(rng.uniform(45, 110)),
                          "vol", repr(rng.uniform(0.0599, 0.0601)), "games", str(games), "wins", str(wins),
                          "losses", str(games - wins), "draws", "0")
            yield command("ZADD", board, repr(rating), member)

    # Entries as the applier writes them; drawn from a pool, since only their sizes matter here.
    at = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    pool = [json.dumps({"game_id": game_id(rng), "at": at, "rating": rng.gauss(1500, 250), "rd": rng.uniform(45, 110),
                        "delta": rng.gauss(0, 12)}, separators=(",", ":")) for _ in range(1000)]

    def histories() -> Iterator[bytes]:
        for member in members:
            yield command("RPUSH", ratings_key(prefix, f"h:{member}"), *rng.choices(pool, k=history))

    def applied_marks() -> Iterator[bytes]:
        for _ in range(marks):
            # What the applier keeps: the match's changes as its result shows them.
            shown = [{"seat": seat, "external_id": external_id(rng.randrange(players or 1)),
                      "before": rng.gauss(1500, 250), "after": rng.gauss(1500, 250), "delta": rng.gauss(0, 12),
                      "rd": rng.uniform(45, 110), "volatility": rng.uniform(0.0599, 0.0601)} for seat in (0, 1)]
            yield command("SET", ratings_key(prefix, f"a:{game_id(rng)}"), json.dumps(shown, separators=(",", ":")),
                          "EX", str(30 * 86400))

    memory = [used_memory(client)]
    for part in (standings(), histories() if history else iter(()), applied_marks()):
        send(url, part)
        memory.append(used_memory(client))
    ratings.sort(reverse=True)
    return Loaded(ratings, (memory[1] - memory[0]) / max(players, 1),
                  (memory[2] - memory[1]) / max(players * history, 1), (memory[3] - memory[2]) / max(marks, 1),
                  time.monotonic() - started)


def print_loaded(options, loaded: Loaded) -> None:
    print(f"\nloaded {options.players:,} ranked players with {options.history} history entries each, and "
          f"{options.marks:,} applied marks, in {loaded.seconds:.0f} s")
    player = loaded.bytes_per_player + options.history * loaded.bytes_per_history_entry
    print(f"  Redis memory (used_memory): {loaded.bytes_per_player:,.0f} bytes per player (standing and board "
          f"entry), {loaded.bytes_per_history_entry:,.0f} per history entry, {loaded.bytes_per_mark:,.0f} per applied "
          f"mark (one per rated match, kept 30 days); a player with {options.history} entries: {player:,.0f} bytes")


def check_load(service: RatingService, loaded: Loaded, history: int) -> None:
    """The store's own reads find what was written: the key names are the store's."""
    top = service.leaderboard(SCOPE, VARIANT, None, 3, None)
    expected = [external_id(number) for _, number in loaded.ratings[:3]]
    if top["size"] != len(loaded.ratings) or [row["external_id"] for row in top["players"]] != expected:
        raise RuntimeError(f"the store does not read the loaded board: {top}")
    rating, number = loaded.ratings[len(loaded.ratings) // 2]
    mine = service.player(SCOPE, external_id(number))["ratings"][0]
    if mine["rating"] != rating or mine["rank"] != len(loaded.ratings) // 2 + 1:
        raise RuntimeError(f"the store does not read a loaded standing: {mine}")
    if history and len(service.history(SCOPE, external_id(number), VARIANT, None, 100)["history"]) != history:
        raise RuntimeError("the store does not read a loaded history")


def cursor_at(position: int) -> str:
    """A leaderboard cursor at ``position``, in the form service/ratings/service.py gives
    (``reads`` checks it against the one the service answers)."""
    return base64.urlsafe_b64encode(f"at:{position}".encode()).decode().rstrip("=")


def read_kinds(players: int, rng: random.Random) -> dict[str, Callable[[], tuple[str, dict]]]:
    """Per kind of read: a function giving the next read's path, and its arguments for the use case."""

    def deep() -> tuple[str, dict]:
        position = rng.randrange(max(players - PAGE, 1))
        return (f"/v1/leaderboards/{VARIANT}?limit={PAGE}&cursor={cursor_at(position)}",
                {"cursor": cursor_at(position)})

    def around() -> tuple[str, dict]:
        someone = external_id(rng.randrange(players))
        return f"/v1/leaderboards/{VARIANT}?around={someone}&limit={PAGE}", {"around": someone}

    def player() -> tuple[str, dict]:
        someone = external_id(rng.randrange(players))
        return f"/v1/players/{someone}/ratings", {"player": someone}

    return {"top 50": lambda: (f"/v1/leaderboards/{VARIANT}?limit={PAGE}", {}), "deep page": deep,
            "around": around, "player": player}


def in_process(service: RatingService, arguments: dict) -> None:
    if "player" in arguments:
        service.player(SCOPE, arguments["player"])
    else:
        service.leaderboard(SCOPE, VARIANT, arguments.get("cursor"), PAGE, arguments.get("around"))


@dataclass
class Reads:
    """One kind's measured reads: milliseconds each, and the CPU they cost the serving process
    (this one in-process, gunicorn over HTTP) and Redis."""

    samples: list[float]
    serving_cpu: float
    redis_cpu: float


Cpu = Callable[[], float]


def timed_reads(count: int, kinds: dict, read: Callable[[str, dict], None], serving_cpu: Cpu,
                redis_cpu: Cpu) -> dict[str, Reads]:
    """``count`` reads of each kind after a tenth as many unmeasured."""
    measured = {}
    for kind, next_read in kinds.items():
        for _ in range(count // 10):
            read(*next_read())
        samples = []
        serving_before, redis_before = serving_cpu(), redis_cpu()
        for _ in range(count):
            path, arguments = next_read()
            started = time.perf_counter()
            read(path, arguments)
            samples.append((time.perf_counter() - started) * 1000)
        measured[kind] = Reads(samples, serving_cpu() - serving_before, redis_cpu() - redis_before)
    return measured


def print_reads(label: str, measured: dict[str, Reads]) -> None:
    print(f"  {label}:")
    for kind, reads in measured.items():
        samples = reads.samples
        p99 = percentile(samples, 0.99)
        print(f"    {kind:<10} {len(samples):>6} reads  p50 {percentile(samples, 0.5):6.2f} ms  p99 {p99:6.2f} ms  "
              f"max {max(samples):7.2f} ms  (target p99 <= {TARGETS['read_p99_ms']:.0f} ms: "
              f"{'met' if p99 <= TARGETS['read_p99_ms'] else 'NOT met'}); CPU per read: serving "
              f"{reads.serving_cpu * 1000 / len(samples):.2f} ms, Redis {reads.redis_cpu * 1000 / len(samples):.3f} ms")


def http_reads(port: int, count: int, kinds: dict, serving_cpu: Cpu, redis_cpu: Cpu) -> dict[str, Reads]:
    send = HttpTransport(port)
    headers = {"X-API-Key": TEST_API_KEY}
    status, first = send("GET", f"/v1/leaderboards/{VARIANT}?limit={PAGE}", None, headers)
    if status != 200 or first["next_cursor"] != cursor_at(PAGE):
        raise RuntimeError(f"the top page answered {status}, next_cursor {first and first.get('next_cursor')!r}")

    def read(path: str, arguments: dict) -> None:
        status, body = send("GET", path, None, headers)
        if status != 200:
            raise RuntimeError(f"{path} answered {status}: {body}")

    try:
        return timed_reads(count, kinds, read, serving_cpu, redis_cpu)
    finally:
        send.close()


class RatedTransport:
    """Creates every match rated, under the bench's API key, between two players of a pool;
    the rest goes through as it is (bench/load.py's players create plain matches)."""

    def __init__(self, send, pool: str, size: int, rng: random.Random) -> None:
        self.send = send
        self.pool, self.size, self.rng = pool, size, rng

    def __call__(self, method: str, path: str, body=None, headers: dict | None = None):
        if method == "POST" and path == "/v1/games":
            people = self.rng.sample(range(self.size), len(body["players"]))
            body = {**body, "rated": True, "players": [{**seat, "external_id": f"{self.pool}-{number}"}
                                                       for seat, number in zip(body["players"], people)]}
            headers = {**(headers or {}), "X-API-Key": TEST_API_KEY}
        return self.send(method, path, body, headers)

    def close(self) -> None:
        self.send.close()


@dataclass
class Pending:
    answered: float
    mark: str
    state: str
    applied: float | None = None


@dataclass
class LagWatch:
    """Polls Redis for the applied mark and the kept changes of every resigned match."""

    client: redis.Redis
    prefix: str
    pending: dict[str, Pending] = field(default_factory=dict)
    applied_ms: dict[str, float] = field(default_factory=dict)
    shown_ms: dict[str, float] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopping: threading.Event = field(default_factory=threading.Event)

    def add(self, game: str, answered: float) -> None:
        with self.lock:
            self.pending[game] = Pending(answered, ratings_key(self.prefix, f"a:{game}"),
                                         game_keys(self.prefix, game).state)

    def run(self) -> None:
        while not self.stopping.wait(POLL_SECONDS):
            with self.lock:
                watched = list(self.pending.items())
            if not watched:
                continue
            pipe = self.client.pipeline(transaction=False)
            for _, pending in watched:
                pipe.exists(pending.mark)
                pipe.hexists(pending.state, "r")
            found = pipe.execute()
            now = time.monotonic()
            for (game, pending), marked, kept in zip(watched, found[::2], found[1::2]):
                if marked and pending.applied is None:
                    pending.applied = now
                    self.applied_ms[game] = (now - pending.answered) * 1000
                if kept:
                    self.shown_ms[game] = (now - pending.answered) * 1000
                    with self.lock:
                        del self.pending[game]


@dataclass
class Finisher:
    """Creates a rated match and resigns it at once, ``rate`` times a second, on as many threads
    (each on its own connection) as it takes to keep the pace while the server is slow."""

    port: int
    rate: float
    watch: LagWatch
    rng: random.Random
    games: list[tuple[str, float, tuple[str, ...]]] = field(default_factory=list)  # game, answered, players
    failures: int = 0
    _next_at: float = field(default_factory=time.monotonic)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def run(self, window: Window, stop: threading.Event) -> None:
        send = HttpTransport(self.port)
        try:
            while not stop.is_set():
                with self._lock:
                    slot, self._next_at = self._next_at, self._next_at + 1 / self.rate
                    people = tuple(f"lag-{number}" for number in self.rng.sample(range(LAG_PLAYERS), 2))
                stop.wait(max(slot - time.monotonic(), 0))
                if not stop.is_set():
                    self._finish(send, people, window)
        finally:
            send.close()

    def _finish(self, send: HttpTransport, people: tuple[str, ...], window: Window) -> None:
        status, created = send("POST", "/v1/games", {
            "variant": VARIANT, "rated": True, "players": [{"name": name, "external_id": name} for name in people]},
            {"X-API-Key": TEST_API_KEY})
        if status == 201:
            game, token = created["game"]["id"], created["players"][0]["token"]
            started = time.perf_counter()
            status, _ = send("POST", f"/v1/games/{game}/resign", None, {"Authorization": f"Bearer {token}"})
            answered = time.monotonic()
            if status == 200:
                if window.contains(started):
                    self.watch.add(game, answered)
                with self._lock:
                    self.games.append((game, answered, people))
                return
        with self._lock:
            self.failures += 1


@dataclass
class LagRun:
    """What the lag's window measured."""

    seconds: float
    watch: LagWatch
    finisher: Finisher
    players: list[ServicePlayer]
    cpu: dict[str, float]  # process -> CPU seconds over the window
    idle: float  # the worker's cores busy before the load
    read: int  # feed entries the ratings' group read over the window

    @property
    def rated(self) -> int:
        """Rated matches finished in the window: played through, and resigned."""
        return sum(player.tally.finished for player in self.players) + len(self.watch.applied_ms) + len(
            self.watch.pending)

    @property
    def worker_busy(self) -> float:
        """The worker's CPU seconds over the window above what it spends idle."""
        return self.cpu["worker"] - self.idle * self.seconds


def lag(options, url: str, prefix: str, server: GunicornServer, directory: Path) -> None:
    print(f"\nrating update lag: {options.clients} clients playing rated matches through (as bench/load.py), "
          f"{options.rate:g} rated matches a second created and resigned by {FINISHER_THREADS} more connections, "
          f"{options.seconds:.0f} s measured after {WARMUP_SECONDS:.0f} s of warm-up; one ginrummy worker (deployed "
          f"pacing)")
    worker = WorkerProcess({"REDIS_URL": url, "KEY_PREFIX": prefix, "LOG_LEVEL": "WARNING",
                            "WEBHOOK_SECRET": new_secret()}, directory / "worker.log", arguments=()).start()
    client = redis.Redis.from_url(url, decode_responses=True)
    try:
        run = measure_lag(options, prefix, server, worker, client)
        print_lag(run)
        check_applied_once(url, prefix, server.port, run.finisher.games)
    finally:
        worker.stop()
        client.close()


def measure_lag(options, prefix: str, server: GunicornServer, worker: WorkerProcess, client: redis.Redis) -> LagRun:
    def cpu() -> dict[str, float]:
        return {"worker": cpu_seconds(worker.process.pid), "redis": redis_cpu_seconds(client),
                "gunicorn": server_cpu(server)}

    idle_before = cpu_seconds(worker.process.pid)
    time.sleep(QUIET_SECONDS)
    idle = (cpu_seconds(worker.process.pid) - idle_before) / QUIET_SECONDS
    rng = random.Random(options.seed)
    players = [ServicePlayer(RatedTransport(HttpTransport(server.port), "load", LOAD_PLAYERS,
                                            random.Random(rng.random())), seed, False)
               for seed in range(options.clients)]
    for player in players:
        player.new_match(None)
    watch = LagWatch(client, prefix)
    finisher = Finisher(server.port, options.rate, watch, random.Random(rng.random()))
    now = time.perf_counter()
    window = Window(now + WARMUP_SECONDS, now + WARMUP_SECONDS + options.seconds)
    stop, errors = threading.Event(), []

    def play(player: ServicePlayer) -> None:
        try:
            while time.perf_counter() < window.end:
                player.step(window)
        except BaseException as error:  # reported after the run
            errors.append(error)

    threads = [threading.Thread(target=play, args=(player,)) for player in players]
    threads += [threading.Thread(target=finisher.run, args=(window, stop)) for _ in range(FINISHER_THREADS)]
    polling = threading.Thread(target=watch.run)
    for thread in [*threads, polling]:
        thread.start()
    time.sleep(max(0.0, window.start - time.perf_counter()))
    cpu_before, read_before = cpu(), feed_entries_read(client, prefix)
    time.sleep(max(0.0, window.end - time.perf_counter()))
    cpu_after, read = cpu(), feed_entries_read(client, prefix) - read_before
    stop.set()
    for thread in threads:
        thread.join()
    drained_by = time.monotonic() + DRAIN_SECONDS
    while watch.pending and time.monotonic() < drained_by:
        time.sleep(0.05)
    watch.stopping.set()
    polling.join()
    for player in players:
        player.send.close()
    if errors:
        raise errors[0]
    return LagRun(options.seconds, watch, finisher, players,
                  {name: used - cpu_before[name] for name, used in cpu_after.items()}, idle, read)


def print_lag(run: LagRun) -> None:
    moves = [value for player in run.players for name, values in player.tally.latencies.items()
             if name not in ("create", "view") for value in values]
    finished = sum(player.tally.finished for player in run.players)
    print(f"  load: {len(moves):,} moves ({len(moves) / run.seconds:,.0f}/s), p50 {percentile(moves, 0.5):.1f} ms, "
          f"p99 {percentile(moves, 0.99):.1f} ms; {finished} matches played through; "
          f"{run.rated - finished} matches resigned ({(run.rated - finished) / run.seconds:.1f}/s; "
          f"{run.finisher.failures} creations or resignations refused); load average {load_average()}")
    for label, values in (("applied mark", list(run.watch.applied_ms.values())),
                          ("changes kept with the match (result.rating_changes)", list(run.watch.shown_ms.values()))):
        p99 = percentile(values, 0.99)
        print(f"  resignation answered -> {label}: {len(values)} matches, p50 {percentile(values, 0.5):.1f} ms, "
              f"p99 {p99:.1f} ms, max {max(values, default=float('nan')):.1f} ms (target p99 <= "
              f"{TARGETS['lag_p99_ms']:.0f} ms: {'met' if p99 <= TARGETS['lag_p99_ms'] else 'NOT met'})")
    if run.watch.pending:
        print(f"  NOT APPLIED within {DRAIN_SECONDS:.0f} s of the end: {len(run.watch.pending)}")
    busy = {name: used / run.seconds for name, used in run.cpu.items()}
    per_match = run.cpu["worker"] * 1000 / max(run.rated, 1)
    print(f"  CPU over the window, cores busy: worker {busy['worker']:.3f} (idle before the load: {run.idle:.3f}), "
          f"gunicorn {busy['gunicorn']:.2f}, Redis {busy['redis']:.2f}; worker {per_match:.2f} ms per rated match "
          f"finished ({run.rated}), {run.worker_busy * 1000 / max(run.rated, 1):.2f} ms above its idle cost")
    print(f"  the feed: {run.read:,} entries read by the ratings' group over the window "
          f"({run.read / max(run.rated, 1):.0f} per rated match: each turn and hand's end of a match created with an "
          f"API key is one); worker {run.worker_busy * 1e6 / max(run.read, 1):.0f} us per entry above its idle cost")


def feed_entries_read(client: redis.Redis, prefix: str) -> int:
    """Entries of every shard's feed that the ratings' consumer group has read so far (Redis 7)."""
    read = 0
    for shard in range(ids.SHARDS):
        try:
            groups = client.xinfo_groups(feed_key(prefix, shard))
        except redis.ResponseError:  # no entry in this shard yet
            continue
        read += sum(group.get("entries-read") or 0 for group in groups if group["name"] == RATINGS_GROUP)
    return read


def server_cpu(server: GunicornServer) -> float:
    """CPU seconds of gunicorn's master, its reaped workers and its live ones."""
    used = cpu_seconds(server.process.pid, children=True)
    for pid in server.worker_pids():
        try:
            used += cpu_seconds(pid)
        except OSError:  # exited meanwhile: counted with the master's children from now on
            pass
    return used


def check_applied_once(url: str, prefix: str, port: int, games: list[tuple[str, float, tuple[str, ...]]]) -> None:
    """Every resigned match counted once in each of its players' standings, and a sample of them
    showing their changes in the view."""
    played: dict[str, int] = {}
    for _, _, people in games:
        for person in people:
            played[person] = played.get(person, 0) + 1
    store = store_from_url(url, prefix)
    names = sorted(played)
    # The matches resigned in the load's last moments may still be on their way (the lag above):
    # they are given a few seconds, and a player counted twice stays wrong however long one waits.
    until = time.monotonic() + APPLIED_WAIT_SECONDS
    try:
        while True:
            standings = areas_of(store, prefix).ratings.standings(SCOPE, VARIANT, names)
            wrong = [name for name, standing in zip(names, standings)
                     if standing is None or standing.games != played[name]]
            if not wrong or time.monotonic() > until:
                break
            time.sleep(0.1)
    finally:
        store.close()
    send = HttpTransport(port)
    try:
        sample = random.Random(0).sample(games, min(20, len(games)))
        unseen = [game for game, _, _ in sample
                  if send("GET", f"/v1/games/{game}", None, {})[1]["result"]["rating_changes"] is None]
    finally:
        send.close()
    print(f"  exactly once: {len(games)} resigned matches (warm-up included) over {len(names)} players; players "
          f"whose rated games differ from their matches: {len(wrong)}{' ' + str(wrong[:5]) if wrong else ''}; "
          f"views without rating_changes among {len(sample)} read: {len(unseen)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--players", type=int, default=1_000_000, help="ranked players loaded")
    parser.add_argument("--history", type=int, default=12, help="history entries per loaded player")
    parser.add_argument("--marks", type=int, default=100_000, help="applied marks loaded (their memory is per match)")
    parser.add_argument("--reads", type=int, default=2000, help="reads measured per kind and path")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--clients", type=int, default=16, help="clients playing rated matches through")
    parser.add_argument("--rate", type=float, default=10, help="rated matches resigned per second for the lag")
    parser.add_argument("--seconds", type=float, default=60, help="of the lag's measured window (0: no lag run)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--redis-url", help="use this Redis instead of a private redis-server")
    options = parser.parse_args()
    print(f"{datetime.datetime.now().isoformat(timespec='seconds')}  {machine()}; load average {load_average()}")
    rng = random.Random(options.seed)
    with tempfile.TemporaryDirectory() as directory, redis_for_bench(options.redis_url, Path(directory)) as url:
        prefix = f"bench:{uuid.uuid4().hex}:"
        store = store_from_url(url, prefix)
        client = redis.Redis.from_url(url)
        try:
            loaded = load(url, client, prefix, options.players, options.history, options.marks, rng)
            print_loaded(options, loaded)
            areas = areas_of(store, prefix)
            service = RatingService(lambda: areas.ratings, lambda owner: owner)
            check_load(service, loaded, options.history)
            print(f"\nleaderboard reads over {options.players:,} ranked players, one after another (pages of {PAGE}; "
                  f"load average {load_average()}):")
            print_reads("in-process (RatingService on the service's Redis client)",
                        timed_reads(options.reads, read_kinds(options.players, rng),
                                    lambda path, arguments: in_process(service, arguments), time.process_time,
                                    lambda: redis_cpu_seconds(client)))
            server = GunicornServer(Path(directory) / "service", {"REDIS_URL": url, "KEY_PREFIX": prefix,
                                                                  **SERVICE_SETTINGS},
                                    workers=options.workers, ready_path="/readyz").start()
            try:
                print_reads(f"HTTP on gunicorn ({options.workers} gevent workers, one keep-alive connection)",
                            http_reads(server.port, options.reads, read_kinds(options.players, rng),
                                       lambda: server_cpu(server), lambda: redis_cpu_seconds(client)))
                if options.seconds > 0:
                    lag(options, url, prefix, server, Path(directory))
            finally:
                server.stop()
        finally:
            store.close()
            if options.redis_url:
                keys = list(client.scan_iter(match=f"{prefix}*", count=10_000))
                for first in range(0, len(keys), 1000):
                    client.unlink(*keys[first:first + 1000])
            client.close()
    print(f"\nload average {load_average()} at the end")


if __name__ == "__main__":
    main()
