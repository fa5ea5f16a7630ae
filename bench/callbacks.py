"""What ``bench/load.py --callbacks`` needs beside its players: the receiver's process, the
state of the webhook queues in Redis, and the accounting of what was delivered.

The accounting derives, per game, the deliveries its stored event log calls for
(``expected_webhooks`` of the end-to-end tests) and compares them with the webhook-ids the
receiver got; the delivery latency is measured from the moment a player got the answer of
the save that produced a delivery (matched by game id and the ``version`` in the body) to
the moment the receiver had read that delivery.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import redis

from service import ids, rules
from service.store import RedisStore
from service.webhooks.entries import GROUP, ShardKeys
from tests.e2e.webhook_stack import expected_webhooks

ROOT = Path(__file__).resolve().parent.parent
STARTUP_TIMEOUT = 20.0
# The drain after the run gives up when the backlog has not shrunk for this long.
DRAIN_STALL_SECONDS = 30.0
DRAIN_POLL_SECONDS = 0.2


class ReceiverProcess:
    """``python -m bench.callback_receiver`` started and stopped by its pid, spoken to over
    its stdin and stdout (see bench/callback_receiver.py)."""

    def __init__(self, secret: str, verify_every: int = 1) -> None:
        environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "WEBHOOK_SECRET": secret}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.callback_receiver", "--verify-every", str(verify_every)],
            cwd=ROOT, env=environment, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        self.port = int(self._line())

    def url(self, path: str = "/hooks/gin") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def count(self) -> int:
        return int(self._ask("count"))

    def records(self) -> list[tuple[str, float, str, int, bool | None]]:
        """Every request so far: (webhook-id, arrived, game id, version, verified or None)."""
        with tempfile.TemporaryDirectory() as directory:
            path = Path(directory) / "received.jsonl"
            self._ask(f"dump {path}")
            with path.open() as lines:
                return [tuple(json.loads(line)) for line in lines]

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()  # end of input: it stops
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)

    def _ask(self, command: str) -> str:
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return self._line()

    def _line(self) -> str:
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the receiver exited with {self.process.wait(STARTUP_TIMEOUT)}")
        return line.strip()


@dataclass(frozen=True)
class Queues:
    """The webhook queues of every shard at one moment: feed entries the deliveries' group has
    not finished (unread, or read and not acknowledged), waiting for a retry, and given up
    (dead letters)."""

    unfinished: int
    retry: int
    dead: int

    @property
    def backlog(self) -> int:
        return self.unfinished + self.retry


def queues(client: redis.Redis, prefix: str) -> Queues:
    pipe = client.pipeline(transaction=False)
    for shard in range(ids.SHARDS):
        keys = ShardKeys.of(prefix, shard)
        pipe.zcard(keys.retry)
        pipe.xlen(keys.dead)
    counts = pipe.execute()
    unfinished = sum(_unfinished(client, ShardKeys.of(prefix, shard).feed) for shard in range(ids.SHARDS))
    return Queues(unfinished, sum(counts[0::2]), sum(counts[1::2]))


def _unfinished(client: redis.Redis, feed: str) -> int:
    if not client.exists(feed):
        return 0
    group = next((info for info in client.xinfo_groups(feed) if info["name"] == GROUP), None)
    if group is None:
        return client.xlen(feed)
    # Redis cannot always tell the lag (after a deletion in the middle): count what is left then.
    unread = group.get("lag")
    if unread is None:
        unread = len(client.xrange(feed, f"({group['last-delivered-id']}", "+"))
    return unread + group["pending"]


def wait_until_drained(client: redis.Redis, prefix: str) -> tuple[Queues, float]:
    """Wait until nothing is left to deliver, or until the backlog stopped shrinking for
    DRAIN_STALL_SECONDS; returns the queues then and the seconds waited. The worker
    acknowledges a feed entry only once the receiver has answered it, so once the backlog is
    empty the receiver has recorded every delivery."""
    started = time.monotonic()
    best, best_at = None, started
    while True:
        now = queues(client, prefix)
        if now.backlog == 0:
            return now, time.monotonic() - started
        if best is None or now.backlog < best:
            best, best_at = now.backlog, time.monotonic()
        elif time.monotonic() - best_at > DRAIN_STALL_SECONDS:
            return now, time.monotonic() - started
        time.sleep(DRAIN_POLL_SECONDS)


@dataclass
class Accounting:
    """Expected deliveries against received ones, over every game of the run."""

    games: int = 0
    expected: int = 0
    delivered: int = 0  # distinct webhook-ids received that were expected
    missing: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    requests: int = 0  # every request the receiver got, duplicates included
    duplicates: int = 0  # requests beyond the first of their webhook-id
    verified: int = 0
    failed_verification: int = 0
    # webhook-id -> (game, version, first arrival): what the latency is measured on
    first: dict[str, tuple[str, int, float]] = field(default_factory=dict)


def account(records: list[tuple], redis_url: str, prefix: str, game_ids: list[str], people: set[int]) -> Accounting:
    """Compare what was received with what every game's event log calls for."""
    result = Accounting(games=len(game_ids), requests=len(records))
    seen: Counter[str] = Counter()
    for webhook_id, arrived, game, version, verified in records:
        seen[webhook_id] += 1
        result.first.setdefault(webhook_id, (game, version, arrived))
        result.verified += verified is True
        result.failed_verification += verified is False
    result.duplicates = sum(count - 1 for count in seen.values())
    received_by_game: dict[str, set[str]] = defaultdict(set)
    for webhook_id, (game, _, _) in result.first.items():
        received_by_game[game].add(webhook_id)
    store = RedisStore(redis_url, prefix)
    try:
        for game_id in game_ids:
            events = [rules.decode_event(text) for text in store.events(game_id, 0)]
            expected = {e.webhook_id for e in expected_webhooks(game_id, events, people)}
            received = received_by_game.pop(game_id, set())
            result.expected += len(expected)
            result.delivered += len(expected & received)
            result.missing += sorted(expected - received)
            result.unexpected += sorted(received - expected)
    finally:
        store.close()
    for leftover in received_by_game.values():  # deliveries of games no player created
        result.unexpected += sorted(leftover)
    return result


@dataclass(frozen=True)
class Latency:
    values_ms: list[float]
    unmatched: int  # deliveries whose (game, version) no player saw answered


def latencies(accounting: Accounting, answered: dict[tuple[str, int], float]) -> Latency:
    """First arrival of each delivery minus the moment its save was answered, in ms."""
    values, unmatched = [], 0
    for game, version, arrived in accounting.first.values():
        moment = answered.get((game, version))
        if moment is None:
            unmatched += 1
        else:
            values.append((arrived - moment) * 1000)
    return Latency(sorted(values), unmatched)


def redis_cpu_seconds(client: redis.Redis) -> float:
    """CPU the Redis server used so far (INFO cpu: main thread and children)."""
    info = client.info("cpu")
    return sum(float(info.get(name, 0)) for name in ("used_cpu_sys", "used_cpu_user",
                                                     "used_cpu_sys_children", "used_cpu_user_children"))


def load_average() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())
