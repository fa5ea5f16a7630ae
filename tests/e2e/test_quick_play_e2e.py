"""Quick play end to end on loopback: the service under gunicorn with several workers, ``ginrummy
worker`` processes, the real Redis (a private key prefix) and a receiver that verifies every
webhook with the standardwebhooks library.

- 1,000 tickets from many threads, over two API keys, both variants, rated and not: every ticket
  is matched exactly once, each match's seats are exactly its tickets (every match read), every
  token works, no match exists that no ticket names, and each key's stream announces each of its
  tickets once.
- ``ticket_matched`` is delivered to each ticket's callback, signed, once per ticket.
- A worker killed (SIGKILL) while bot fallbacks are due loses nothing: another worker matches
  every ticket, once.
"""
from __future__ import annotations

import random
import signal
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import redis

from service import tokens
from tests.e2e.quick_play import TicketsApi, announced, check_match, matches_of, stored_games
from tests.e2e.webhook_stack import WORKER_TIMINGS, WorkerProcess
from tests.gunicorn_server import TEST_API_KEY, TEST_SERVER_SECRET, GunicornServer
from tests.webhooks.receiver import Receiver
from tests.webhooks.support import new_secret

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

OTHER_KEY = "e2e-other-api-key"
THREADS = 32
# The worker's runner takes over what a dead one claimed after this lease.
LEASE_SECONDS = 2.0


@dataclass
class QuickPlayStack:
    """gunicorn (several workers) + ``ginrummy worker`` processes + a webhook receiver."""

    directory: Path
    redis_url: str
    prefix: str
    secret: str = field(default_factory=new_secret)
    receiver: Receiver | None = None
    service: GunicornServer | None = None
    workers: list[WorkerProcess] = field(default_factory=list)

    @property
    def common(self) -> dict[str, str]:
        return {"REDIS_URL": self.redis_url, "KEY_PREFIX": self.prefix, "WEBHOOK_SECRET": self.secret,
                "WEBHOOK_ALLOWED_HOSTS": f"http://127.0.0.1:{self.receiver.port}", "LOG_LEVEL": "WARNING",
                "API_KEYS": f"{TEST_API_KEY},{OTHER_KEY}", "SERVER_SECRET": TEST_SERVER_SECRET}

    def start(self, gunicorn_workers: int = 3) -> QuickPlayStack:
        self.receiver = Receiver(self.secret).start()
        self.service = GunicornServer(self.directory / "gunicorn", self.common, workers=gunicorn_workers).start()
        self.start_worker()
        return self

    def start_worker(self) -> WorkerProcess:
        worker = WorkerProcess({**self.common, "WEBHOOK_ALLOW_PRIVATE": "true"},
                               self.directory / f"worker{len(self.workers)}.log",
                               arguments=(*WORKER_TIMINGS, "--lease-seconds", str(LEASE_SECONDS)))
        self.workers.append(worker)
        return worker.start()

    def stop(self) -> None:
        for worker in self.workers:
            worker.stop()
        if self.service is not None:
            self.service.stop()
        if self.receiver is not None:
            self.receiver.close()


@pytest.fixture
def stack(tmp_path: Path, redis_url: str, test_prefix: str) -> Iterator[QuickPlayStack]:
    running = QuickPlayStack(tmp_path, redis_url, test_prefix)
    try:
        yield running.start()
    finally:
        running.stop()


@pytest.fixture
def api(stack: QuickPlayStack) -> Iterator[TicketsApi]:
    client = TicketsApi(stack.service.url)
    yield client
    client.close()


@pytest.fixture
def shared_redis(redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    yield client
    client.close()


def in_threads(function, items: list) -> list:
    with ThreadPoolExecutor(THREADS) as pool:
        return list(pool.map(function, items))


@pytest.mark.exclusive
def test_a_thousand_tickets_from_many_threads_are_each_matched_once(stack, api, shared_redis):
    # (key, variant, rated, how many): every queue holds a whole number of matches.
    queues = [(TEST_API_KEY, "classic", False, 400), (TEST_API_KEY, "box", False, 300),
              (TEST_API_KEY, "classic", True, 200), (OTHER_KEY, "classic", True, 100)]
    wanted = [(key, variant, rated) for key, variant, rated, count in queues for _ in range(count)]
    random.Random(30).shuffle(wanted)
    players = [(f"player-{n}", *queue) for n, queue in enumerate(wanted)]
    started = time.monotonic()
    tickets = in_threads(lambda p: {**api.queue(p[0], p[2], key=p[1], rated=p[3]), "key": p[1]}, players)
    queued = time.monotonic()
    settled = in_threads(lambda t: {**api.until_settled(t["id"], t["key"]), "key": t["key"]}, tickets)
    matches = matches_of(settled, queue_of=lambda t: (t["key"], t["variant"], t["rated"]))
    assert len(matches) == 200 + 100 + 100 + 50

    views = dict(zip(matches, in_threads(lambda game_id: api.game(game_id).json(), list(matches))))
    for game_id, seated in matches.items():
        check_match(views[game_id], seated)

    def token_works(ticket: dict) -> bool:
        seen = api.game(ticket["game_id"], ticket["token"])
        return seen.status_code == 200 and seen.json()["you"]["seat"] == ticket["seat"]

    assert all(in_threads(token_works, settled))
    # No match that no ticket names: a ticket matched twice would have made one.
    assert stored_games(shared_redis, stack.prefix) == set(matches)
    # Each key's stream announces each of its tickets once (the worker's feed consumer).
    for key in (TEST_API_KEY, OTHER_KEY):
        mine = {t["id"] for t in settled if t["key"] == key}
        deadline = time.monotonic() + 20
        while set(counted := announced(shared_redis, stack.prefix, tokens.key_id(key))) != mine:
            assert time.monotonic() < deadline, f"{len(mine - set(counted))} tickets not announced"
            time.sleep(0.2)
        assert set(counted.values()) == {1}
    print(f"\n1,000 tickets queued in {queued - started:.1f} s, all matched and checked in "
          f"{time.monotonic() - started:.1f} s")


def test_ticket_matched_is_delivered_signed_once_per_ticket(stack, api):
    callback = stack.receiver.url("/hooks/tickets")
    people = [("ann", "classic"), ("bob", "classic"), ("cy", "box"), ("dee", "box"), ("eve", "box")]
    tickets = [api.queue(name, variant, callback_url=callback) for name, variant in people]
    solo = api.queue("fay", bot_after_seconds=0, rated=False, callback_url=callback)
    settled = [api.until_settled(t["id"]) for t in [*tickets, solo]]
    wanted = {f"tm_{t['id']}": t for t in settled}
    received = stack.receiver.wait_for(lambda got: wanted.keys() <= {r.webhook_id for r in got}, timeout=20)
    time.sleep(1.0)  # a second delivery of any of them would have come by now
    mine = [r for r in stack.receiver.received if r.webhook_id.startswith("tm_")]
    assert Counter(r.webhook_id for r in mine) == Counter(wanted.keys())
    for delivery in received:
        if delivery.webhook_id not in wanted:
            continue
        ticket = wanted[delivery.webhook_id]
        assert delivery.verified and delivery.path == "/hooks/tickets"
        assert delivery.payload["type"] == "ticket_matched"
        data = delivery.payload["data"]
        assert data == {"ticket_id": ticket["id"], "game_id": ticket["game_id"], "seat": ticket["seat"],
                        "variant": ticket["variant"], "rated": ticket["rated"],
                        "player": {"external_id": ticket["player"]["external_id"], "name": ticket["player"]["name"],
                                   "metadata": None}}
        assert ticket["token"] and ticket["token"] not in delivery.body and "token" not in delivery.body, ticket


@pytest.mark.exclusive
def test_a_killed_worker_loses_no_bot_fallback(stack, api, shared_redis):
    # Forty tickets, each alone in its queue (variant, rated, knock limit), all due for bots at once.
    wanted = [(variant, rated, limit) for variant in ("classic", "box") for rated in (True, False)
              for limit in range(1, 11)]
    tickets = in_threads(lambda q: api.queue(f"p-{q[0]}-{q[1]}-{q[2]}", q[0], rated=q[1], bot_after_seconds=2,
                                             rules={"knock_limit": q[2]}), wanted)
    assert all(ticket["status"] == "waiting" for ticket in tickets)
    # Kill the worker as soon as it has matched the first of them: it holds the rest claimed.
    first = api.until_settled(tickets[0]["id"], timeout=15)
    stack.workers[0].process.send_signal(signal.SIGKILL)
    stack.workers[0].process.wait(10)
    left = sum(api.ticket(t["id"])["status"] == "waiting" for t in tickets)
    killed_at = time.monotonic()
    stack.start_worker()
    settled = in_threads(lambda t: api.until_settled(t["id"], timeout=30), tickets)
    recovered = time.monotonic() - killed_at
    assert first["status"] == "matched"
    # What the dead worker held claimed came due again when its lease ended (the new worker's start
    # takes a few seconds of its own).
    assert recovered < LEASE_SECONDS + 10, recovered
    games = Counter(ticket["game_id"] for ticket in settled)
    assert all(ticket["status"] == "matched" and ticket["seat"] == 0 for ticket in settled)
    assert len(games) == len(tickets) and set(games.values()) == {1}
    assert stored_games(shared_redis, stack.prefix) == set(games)
    for ticket in settled:
        view = api.game(ticket["game_id"], ticket["token"]).json()
        assert view["you"]["seat"] == 0 and view["players"][0]["external_id"] == ticket["player"]["external_id"]
        assert all(p["bot"] and p["level"] == "standard" for p in view["players"][1:])
        assert view["rules"]["knock_limit"] == ticket["rules"]["knock_limit"]
    print(f"\n{left} of {len(tickets)} tickets were waiting when the worker was killed; "
          f"all matched {recovered:.1f} s after")
