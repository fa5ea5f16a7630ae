"""Live streams: how many one instance holds, what they cost, how fast a move reaches them.

    python bench/streams.py [--streams 10000] [--games 2000] [--movers 16] [--per-match 8]
                            [--interval 0.1] [--workers 2] [--seconds 12] [--redis-url URL]

Starts a private redis-server (unless --redis-url) and the service under its own gunicorn
settings (the shipped ones), then, from this process on asyncio (a socket per stream, no
thread):

1. without streams: ``--movers`` clients each move every ``--interval`` s for ``--seconds``;
   the moves' latency (p50/p99) and /healthz every 50 ms (p99, max);
2. opens ``--streams`` game streams (``GET /v1/games/{id}/stream``, with the API key, so the
   per-key bound applies: 10,000 per worker as shipped), ``--per-match`` on each mover's
   match (two of them the players' own) and the rest spread over ``--games`` idle matches, at
   the pace the server takes them up; the workers' memory (RSS) before and after, per stream;
3. quiet (20 s, longer than a heartbeat): nobody moves. Redis commands per second
   (INFO commandstats) while every stream waits, heartbeats included;
4. with the streams open, the movers play as in 1: the moves' latency and /healthz again, and
   for every move, the time from its response to its event on each stream of its match
   (p50/p99; the response itself leaves after the commit, so the time from the commit is at
   most this plus the response's own trip);
5. the streams still open at the end, and what was refused or lost on the way.

Run it on a quiet machine: the load generator shares the CPUs with the server.
"""
from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

import redis  # noqa: E402
import uvloop  # noqa: E402

from bench.bench_redis import bench_redis  # noqa: E402
from bench.callbacks import redis_cpu_seconds  # noqa: E402
from bench.load import cpu_seconds  # noqa: E402

from tests.e2e.waiters import HealthProbe, Mover, changed, command_calls, create_games, percentile  # noqa: E402
from tests.gunicorn_server import TEST_API_KEY, GunicornServer  # noqa: E402

QUIET_SECONDS = 20.0
OPEN_WINDOW = 50  # streams asked for and not yet answered, while opening
SERVICE_SETTINGS = {"ALLOW_ANONYMOUS_CREATE": "true", "CREATE_QUOTA_PER_MINUTE": "0", "LOG_LEVEL": "WARNING"}
KEY = {"X-API-Key": TEST_API_KEY}


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


class Stream:
    """One game stream on its own connection: records when each event (by seq) arrived."""

    def __init__(self, port: int, game_id: str, token: str | None = None) -> None:
        self.port = port
        self.game_id = game_id
        self.token = token
        self.arrived: dict[int, float] = {}
        self.status = 0
        self.ended = False
        self.heartbeats = 0
        self.writer: asyncio.StreamWriter | None = None

    async def open(self) -> int:
        """Connect and read the answer's head; returns its status."""
        reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        headers = [f"GET /v1/games/{self.game_id}/stream HTTP/1.1", "Host: 127.0.0.1",
                   f"X-API-Key: {TEST_API_KEY}"]
        if self.token:
            headers.append(f"Authorization: Bearer {self.token}")
        self.writer.write(("\r\n".join(headers) + "\r\n\r\n").encode())
        await self.writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        self.status = int(head.split(b" ", 2)[1])
        self.reader = reader
        return self.status

    async def read(self) -> None:
        """Read the chunked body until it ends, noting each event's arrival."""
        buffer = b""
        try:
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).strip(), 16)
                if size == 0:
                    break
                buffer += (await self.reader.readexactly(size + 2))[:-2]  # the chunk, without its CRLF
                *frames, buffer = buffer.split(b"\n\n")
                now = time.monotonic()
                for frame in frames:
                    if frame.startswith(b":"):
                        self.heartbeats += 1
                    elif frame.startswith(b"id: ") and b"event: view" not in frame:
                        self.arrived[int(frame[4:frame.index(b"\n")])] = now
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        self.ended = True

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


class CpuShare:
    """The CPU the workers, Redis and this load generator use from now until ``share()``, each
    as a share of one core: on two cores, a generator that takes much leaves the server less."""

    def __init__(self, server: GunicornServer, client: redis.Redis) -> None:
        self.server = server
        self.client = client
        self.started = time.monotonic()
        self.before = self._used()

    def _used(self) -> tuple[float, float, float]:
        workers = 0.0
        for pid in self.server.worker_pids():
            try:
                workers += cpu_seconds(pid)
            except OSError:
                pass
        return workers, redis_cpu_seconds(self.client), time.process_time()

    def share(self) -> str:
        elapsed = time.monotonic() - self.started
        workers, store, generator = (after - before for after, before in zip(self._used(), self.before))
        return (f"CPU, share of a core: workers {workers / elapsed:.0%}, Redis {store / elapsed:.0%}, "
                f"this generator {generator / elapsed:.0%}")


def worker_rss(pids: set[int]) -> int:
    """The resident memory of these processes, in bytes."""
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


async def play(movers: list[Mover], seconds: float, port: int) -> tuple[list[float], list[float]]:
    """Every mover plays for ``seconds``; returns the moves' latencies and the /healthz samples."""
    probe = HealthProbe(port)
    until = time.monotonic() + seconds
    done_before = {id(mover): len(mover.moves) for mover in movers}
    probing = asyncio.ensure_future(probe.run(until))
    await asyncio.gather(*(mover.play(until) for mover in movers))
    await probing
    moves = [record.seconds for mover in movers for record in mover.moves[done_before[id(mover)]:]]
    return moves, [seconds for _, seconds in probe.samples]


async def run(options, server: GunicornServer, client: redis.Redis) -> None:
    port = server.port
    movers = [Mover(port, seed, options.interval, create_headers=KEY) for seed in range(options.movers)]
    for mover in movers:
        await mover.start()
    cpu = CpuShare(server, client)
    moves, health = await play(movers, options.seconds, port)
    print(f"\nwithout streams, {options.seconds:.0f} s: {len(moves)} moves, p50 {ms(percentile(moves, 0.5))}, "
          f"p99 {ms(percentile(moves, 0.99))}; /healthz p99 {ms(percentile(health, 0.99))}, max {ms(max(health))}")
    print(f"  {cpu.share()}")

    idle_games = [game["game"]["id"] for game in await create_games(port, options.games, KEY)]
    for mover in movers:  # a fresh match each, so that its streams see it from its start
        await mover.start()
    streams = []
    for mover in movers:
        for n in range(options.per_match):
            streams.append(Stream(port, mover.game_id, mover.tokens[n] if n < 2 else None))
    idle_count = options.streams - len(streams)
    streams += [Stream(port, idle_games[n % len(idle_games)]) for n in range(max(idle_count, 0))]

    rss_before = worker_rss(server.worker_pids())
    slots = asyncio.Semaphore(OPEN_WINDOW)
    refused: list[int] = []
    readers: list[asyncio.Task] = []

    async def open_one(stream: Stream) -> None:
        async with slots:
            for _ in range(20):
                try:
                    status = await stream.open()
                except (ConnectionError, OSError, asyncio.IncompleteReadError):
                    status = 0
                if status == 200:
                    readers.append(asyncio.ensure_future(stream.read()))
                    return
                stream.close()
                await asyncio.sleep(1)  # 503 (a full worker): as its Retry-After asks
            refused.append(stream.status)

    started = time.monotonic()
    await asyncio.gather(*(open_one(stream) for stream in streams))
    opened = sum(stream.status == 200 for stream in streams)
    await asyncio.sleep(2)
    rss_after = worker_rss(server.worker_pids())
    print(f"opened {opened} streams in {time.monotonic() - started:.1f} s ({len(refused)} refused for good); "
          f"workers' memory {rss_before / 2**20:.0f} -> {rss_after / 2**20:.0f} MiB: "
          f"{(rss_after - rss_before) / max(opened, 1) / 1024:.1f} KiB per open stream")

    before = command_calls(client)
    cpu = CpuShare(server, client)
    quiet_start = time.monotonic()
    beats_before = sum(stream.heartbeats for stream in streams)
    await asyncio.sleep(QUIET_SECONDS)
    quiet = changed(before, command_calls(client))
    beats = sum(stream.heartbeats for stream in streams) - beats_before
    print(f"quiet {QUIET_SECONDS:.0f} s: {sum(not s.ended for s in streams)} streams open, {beats} heartbeats "
          f"received; Redis commands: {sum(quiet.values()) / (time.monotonic() - quiet_start):.2f}/s {quiet or ''}")
    print(f"  {cpu.share()}")

    done_before = {id(mover): len(mover.moves) for mover in movers}
    before = command_calls(client)
    cpu = CpuShare(server, client)
    moves, health = await play(movers, options.seconds, port)
    shares = cpu.share()
    played = changed(before, command_calls(client))
    by_game: dict[str, list[Stream]] = {}
    for stream in streams:
        by_game.setdefault(stream.game_id, []).append(stream)
    delivery = []
    missing = 0
    for mover in movers:
        for record in mover.moves[done_before[id(mover)]:]:
            for stream in by_game.get(record.game_id, []):
                arrived = stream.arrived.get(record.last_seq)
                if arrived is None:
                    missing += 1
                else:
                    delivery.append(max(0.0, arrived - record.done_at))
    print(f"with streams, {options.seconds:.0f} s: {len(moves)} moves, p50 {ms(percentile(moves, 0.5))}, "
          f"p99 {ms(percentile(moves, 0.99))}; /healthz p99 {ms(percentile(health, 0.99))}, max {ms(max(health))}; "
          f"Redis {sum(played.values()) / max(len(moves), 1):.1f} commands per move")
    print(f"  {shares}")
    print(f"  move's response -> its event on each stream of the match: {len(delivery)} deliveries, "
          f"p50 {ms(percentile(delivery, 0.5))}, p99 {ms(percentile(delivery, 0.99))}, "
          f"max {ms(max(delivery, default=float('nan')))}; not received: {missing} (streams of matches "
          f"that ended and were replaced)")
    print(f"at the end: {sum(not s.ended for s in streams)} streams open")
    for mover in movers:
        mover.close()
    for stream in streams:
        stream.close()
    for task in readers:
        task.cancel()
    await asyncio.gather(*readers, return_exceptions=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", type=int, default=10000)
    parser.add_argument("--games", type=int, default=2000)
    parser.add_argument("--movers", type=int, default=16)
    parser.add_argument("--per-match", type=int, default=8, help="streams on each mover's match")
    parser.add_argument("--interval", type=float, default=0.1, help="seconds between one mover's moves")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=12, help="of play, with and without the streams")
    parser.add_argument("--redis-url", help="use this Redis instead of a private redis-server")
    options = parser.parse_args()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    print(f"{datetime.datetime.now().isoformat(timespec='seconds')}  {platform.node()}: {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}; load average {os.getloadavg()[0]:.2f} at start")
    print(f"{options.streams} streams ({options.per_match} on each of {options.movers} movers' matches, the rest over "
          f"{options.games} idle matches), movers every {options.interval} s, {options.workers} gevent workers")
    with tempfile.TemporaryDirectory() as directory, bench_redis(Path(directory), options.redis_url) as store:
        server = GunicornServer(Path(directory) / "service",
                                {"REDIS_URL": store.url, "KEY_PREFIX": store.prefix, **SERVICE_SETTINGS},
                                workers=options.workers, ready_path="/readyz")
        try:
            server.start()
            with redis.Redis.from_url(store.url) as client:
                uvloop.run(run(options, server, client))
        finally:
            server.stop()
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
