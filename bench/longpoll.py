"""Long-polls: how many one instance holds, how fast they wake, what they cost Redis.

    python bench/longpoll.py [--waiters 5000] [--games 1000] [--movers 16] [--interval 0.1]
                             [--workers 2] [--seconds 20] [--redis-url URL]

Starts a private redis-server (unless --redis-url) and the service under its own gunicorn
settings, then, from this process on asyncio (a socket per client, no thread):

1. opens ``--waiters`` long-polls (``wait=30``), minus one per mover, spread over ``--games``
   idle matches, at the pace the server takes them up, and one spectator per mover's match;
2. quiet (5 s): nobody moves. Redis commands per second from waiting (INFO commandstats);
3. play (``--seconds``): ``--movers`` clients each move every ``--interval`` s (random phase);
   each spectator is answered after a move and asks again. Wake-up latency: from the move's
   response to the spectator's answer (p50/p99); moves' latency; /healthz every 50 ms;
4. steady state (35 s, longer than a long-poll's wait): every idle waiter times out once and
   asks again, as clients do (the first round comes as a burst: they all began within the
   ramp). Redis commands per second and per re-poll; /healthz meanwhile;
5. hang-up: every waiting client closes its connection at once (as when a proxy drops its
   connections); /healthz over the next 3 s, and the long-polls the server counted as hung up.

Prints the waiters held at each stage, and the figures. Run it on a quiet machine: the load
generator shares the CPUs with the server.
"""
from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

import redis  # noqa: E402

from bench.bench_redis import bench_redis  # noqa: E402

from tests.e2e.waiters import (  # noqa: E402
    Follower,
    HealthProbe,
    IdleWaiters,
    Mover,
    changed,
    command_calls,
    create_quiet_games,
    hung_up_requests,
    percentile,
    wake_latencies,
)
from tests.gunicorn_server import GunicornServer  # noqa: E402

WAIT_SECONDS = 30
QUIET_SECONDS = 5.0
STEADY_SECONDS = 35.0
HANG_UP_SECONDS = 3.0
SERVICE_SETTINGS = {"ALLOW_ANONYMOUS_CREATE": "true", "CREATE_QUOTA_PER_MINUTE": "0", "LOG_LEVEL": "WARNING"}


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


async def run(options, port: int, client: redis.Redis) -> None:
    games = await create_quiet_games(port, options.games)
    movers = [Mover(port, seed, options.interval) for seed in range(options.movers)]
    for mover in movers:
        await mover.start()

    idle = IdleWaiters(port, games, options.waiters - options.movers, wait=WAIT_SECONDS, repoll=True)
    reads_before = command_calls(client).get("lrange", 0)
    started = time.monotonic()
    await idle.open(taken_up=lambda: command_calls(client).get("lrange", 0) - reads_before)
    while command_calls(client).get("lrange", 0) - reads_before < idle.count:
        await asyncio.sleep(0.05)
    followers = [Follower(port, mover, wait=WAIT_SECONDS) for mover in movers]
    following = [asyncio.ensure_future(follower.follow()) for follower in followers]
    while sum(follower.waiting for follower in followers) < len(followers):
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)
    print(f"\nopened {idle.count + len(followers)} long-polls in {time.monotonic() - started:.1f} s "
          f"(at the pace the server took them up)")

    before = command_calls(client)
    quiet_start = time.monotonic()
    await asyncio.sleep(QUIET_SECONDS)
    quiet = changed(before, command_calls(client))
    held = idle.held + sum(follower.waiting for follower in followers)
    print(f"quiet {QUIET_SECONDS:.0f} s: {held} waiters held; Redis commands from waiting: "
          f"{sum(quiet.values()) / (time.monotonic() - quiet_start):.1f}/s {quiet or ''}")

    probe = HealthProbe(port)
    play_start = time.monotonic()
    probing = asyncio.ensure_future(probe.run(play_start + options.seconds))
    done_before = {id(mover): len(mover.moves) for mover in movers}
    before = command_calls(client)
    await asyncio.gather(*(mover.play(play_start + options.seconds) for mover in movers))
    await probing
    played = changed(before, command_calls(client))
    moves = [record.seconds for mover in movers for record in mover.moves[done_before[id(mover)]:]]
    latencies = wake_latencies(followers, movers)
    health = [seconds for _, seconds in probe.samples]
    held = idle.held + sum(follower.waiting for follower in followers)
    print(f"play {options.seconds:.0f} s: {held} waiters held; {len(moves)} moves ({len(moves) / options.seconds:.0f}/s), "
          f"p50 {ms(percentile(moves, 0.5))}, p99 {ms(percentile(moves, 0.99))}; "
          f"{sum(played.values()) / max(len(moves), 1):.1f} Redis commands per move (wake-ups and re-polls included)")
    print(f"  wake-up after the move's response: {len(latencies)} answers, p50 {ms(percentile(latencies, 0.5))}, "
          f"p99 {ms(percentile(latencies, 0.99))}, max {ms(max(latencies, default=float('nan')))}")
    print(f"  /healthz: {len(health)} probes, p50 {ms(percentile(health, 0.5))}, max {ms(max(health))}")

    answered_before = idle.answered
    before = command_calls(client)
    steady_start = time.monotonic()
    probe = HealthProbe(port)
    await probe.run(steady_start + STEADY_SECONDS)
    steady = changed(before, command_calls(client))
    health = [seconds for _, seconds in probe.samples]
    seconds = time.monotonic() - steady_start
    repolls = idle.answered - answered_before
    held = idle.held + sum(follower.waiting for follower in followers)
    print(f"steady {STEADY_SECONDS:.0f} s (every idle waiter times out once and asks again): {held} waiters held "
          f"at the end; {repolls} re-polls; Redis {sum(steady.values()) / seconds:.0f} commands/s, "
          f"{sum(steady.values()) / max(repolls, 1):.1f} per re-poll {steady}")
    print(f"  /healthz: {len(health)} probes, p50 {ms(percentile(health, 0.5))}, max {ms(max(health))}")
    if idle.early:
        print(f"  lost or refused: {len(idle.early)}, e.g. {idle.early[0]}")

    for mover in movers:
        mover.close()
    held = idle.held + sum(follower.waiting for follower in followers)
    probe = HealthProbe(port)
    hang_up_start = time.monotonic()
    probing = asyncio.ensure_future(probe.run(hang_up_start + HANG_UP_SECONDS))
    for task in following:
        task.cancel()
    await asyncio.gather(*following, return_exceptions=True)
    idle.close()
    await probing
    health = [seconds for _, seconds in probe.samples]
    print(f"hang-up: the {held} waiting clients close their connections at once; /healthz over the next "
          f"{HANG_UP_SECONDS:.0f} s: {len(health)} probes, p50 {ms(percentile(health, 0.5))}, max {ms(max(health))}; "
          f"counted as hung up (status 499): {await asyncio.to_thread(hung_up_requests, port)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--waiters", type=int, default=5000)
    parser.add_argument("--games", type=int, default=1000)
    parser.add_argument("--movers", type=int, default=16)
    parser.add_argument("--interval", type=float, default=0.1, help="seconds between one mover's moves")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=12, help="of play; it must end before the first waits")
    parser.add_argument("--redis-url", help="use this Redis instead of a private redis-server")
    options = parser.parse_args()
    print(f"{datetime.datetime.now().isoformat(timespec='seconds')}  {platform.node()}: {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}; load average {os.getloadavg()[0]:.2f} at start")
    print(f"{options.waiters} long-polls over {options.games} matches, {options.movers} movers every "
          f"{options.interval} s, {options.workers} gevent workers")
    with tempfile.TemporaryDirectory() as directory, bench_redis(Path(directory), options.redis_url) as store:
        server = GunicornServer(Path(directory) / "service",
                                {"REDIS_URL": store.url, "KEY_PREFIX": store.prefix, **SERVICE_SETTINGS},
                                workers=options.workers, ready_path="/readyz")
        try:
            server.start()
            with redis.Redis.from_url(store.url) as client:
                asyncio.run(run(options, server.port, client))
        finally:
            server.stop()
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
