"""Ratings applied by the real ``ginrummy worker`` process: killed (SIGKILL) while rated
matches end, with entries it had read and never acknowledged, another worker applies every
match exactly once; and the ``rating_changed`` webhook of the whole stack (gunicorn, worker,
receiver), signed, delivered once."""
from __future__ import annotations

import os
import signal
import socket
import threading
import time
import uuid
from pathlib import Path

import pytest
import redis as redis_py
import requests

from service import ids
from service.ratings.applier import GROUP
from service.store.areas import areas_of
from service.store.feed_redis import feed_key
from service.store.feed import Read
from tests.api.conftest import build_app
from tests.api.rated import KEY_A, Reads, create_rated, new_ledger, person, public_view, resign
from tests.api.support import store_of
from tests.e2e.webhook_stack import WORKER_TIMINGS, Stack, WorkerProcess
from tests.webhooks.support import new_secret

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

LEASE = 2.0
# What a killed worker held must be applied within this many seconds of another worker's start:
# the lease its command line gives, the take-over loop's pause, and a margin for a busy machine.
TAKE_OVER_SECONDS = LEASE + 8.0


def players(*names: str) -> list[str]:
    run = uuid.uuid4().hex[:6]
    return [f"{name}-{run}" for name in names]


def wait_until(probe, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        found = probe()
        if found:
            return found
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        time.sleep(0.05)


class Rated:
    """The service in this process (the Flask app on the test's Redis prefix) and the feed as a
    group of the test's own reads it (made first: nothing is trimmed before it has read it)."""

    def __init__(self, redis_url: str, prefix: str) -> None:
        self.app = build_app(REDIS_URL=redis_url, KEY_PREFIX=prefix)
        self.client = self.app.test_client()
        self.feed = areas_of(store_of(self.app), prefix).feed
        self.feed_reads: list[Read] = []
        self.read_feed()
        self.ended: list[str] = []

    def read_feed(self) -> list[Read]:
        for shards in self.feed.reader_shards():
            self.feed_reads += self.feed.read("audit", "auditor", 1000, 0, shards)
        return self.feed_reads

    def start(self, hub: str, opponent: str):
        return create_rated(self.client, KEY_A, "classic", [person(hub), person(opponent)])

    def end(self, match, resigning: int) -> str:
        resign(self.client, match, resigning)
        self.ended.append(match.game_id)
        return match.game_id

    def finish(self, hub: str, opponent: str, resigning: int) -> str:
        return self.end(self.start(hub, opponent), resigning)

    def unrated(self) -> list[str]:
        return [game_id for game_id in self.ended
                if public_view(self.client, game_id)["result"]["rating_changes"] is None]


def worker(environment: dict[str, str], log: Path) -> WorkerProcess:
    return WorkerProcess(environment, log, arguments=(*WORKER_TIMINGS, "--lease-seconds", str(LEASE))).start()


def held_by(redis_client, prefix: str, consumer: str) -> set[tuple[str, str]]:
    """(type, subject) of the entries of the ratings group pending with ``consumer``."""
    held = set()
    for shard in range(ids.SHARDS):
        key = feed_key(prefix, shard)
        for pending in redis_client.xpending_range(key, GROUP, "-", "+", 100, consumername=consumer):
            [(_, fields)] = redis_client.xrange(key, pending["message_id"], pending["message_id"])
            held.add((fields["type"], fields["subject"]))
    return held


def test_a_killed_worker_leaves_every_rated_match_applied_exactly_once(tmp_path, redis_url, test_prefix):
    rated = Rated(redis_url, test_prefix)
    environment = {"REDIS_URL": redis_url, "KEY_PREFIX": test_prefix, "WEBHOOK_SECRET": new_secret(),
                   "LOG_LEVEL": "WARNING"}
    hub, *opponents = players("hub", *(f"o{n}" for n in range(12)))
    raw = redis_py.Redis.from_url(redis_url, decode_responses=True)
    workers: list[WorkerProcess] = []
    try:
        workers.append(worker(environment, tmp_path / "first.log"))
        for opponent in opponents[:2]:
            rated.finish(hub, opponent, resigning=len(rated.ended) % 2)
        wait_until(lambda: not rated.unrated(), 10, "the first worker applies")

        # Frozen while it waits on the feed: the end that comes first is read by it (Redis
        # answers its waiting read) and never applied nor acknowledged, as it is killed; the
        # next one nobody reads.
        held, unread = (rated.start(hub, opponent) for opponent in opponents[2:4])
        time.sleep(0.5)  # their creations are read and acknowledged
        first = workers[0].process
        os.kill(first.pid, signal.SIGSTOP)
        rated.end(held, 0)
        rated.end(unread, 1)
        time.sleep(0.5)
        consumer = f"{socket.gethostname()}:{first.pid}"
        assert held_by(raw, test_prefix, consumer) == {("match_over", held.game_id)}
        first.send_signal(signal.SIGKILL)
        assert first.wait(10) == -signal.SIGKILL
        for opponent in opponents[4:6]:  # nobody reads these until the next worker starts
            rated.finish(hub, opponent, resigning=len(rated.ended) % 2)
        assert set(rated.unrated()) == set(rated.ended[2:])

        started = time.monotonic()
        workers.append(worker(environment, tmp_path / "second.log"))
        wait_until(lambda: not rated.unrated(), TAKE_OVER_SECONDS, "the second worker applies them all")
        assert not held_by(raw, test_prefix, consumer)
        assert time.monotonic() - started <= TAKE_OVER_SECONDS

        # Killed at any moment of a burst of ends, and replaced.
        burst = threading.Thread(target=lambda: [rated.finish(hub, opponent, resigning=n % 2)
                                                 for n, opponent in enumerate(opponents[6:])])
        burst.start()
        time.sleep(0.4)
        workers[1].process.send_signal(signal.SIGKILL)
        workers[1].process.wait(10)
        burst.join(60)
        workers.append(worker(environment, tmp_path / "third.log"))
        wait_until(lambda: not rated.unrated(), TAKE_OVER_SECONDS, "the third worker applies them all")
        time.sleep(LEASE + 1)  # anything applied twice would be by now

        check_exactly_once(rated, hub, opponents)
    finally:
        for started_worker in workers:
            if started_worker.process.poll() is None:
                started_worker.process.kill()
                started_worker.process.wait(10)
        raw.close()
        store_of(rated.app).close()


def check_exactly_once(rated: Rated, hub: str, opponents: list[str]) -> None:
    """The hub's history holds every match once; replayed in its order with the tests' own
    Glicko-2, every read agrees; the feed holds one ``rating_changed`` per match."""
    reads = Reads(rated.client, new_ledger(), KEY_A, "A")
    history = reads.ok(f"/v1/players/{hub}/ratings/classic/history", limit=100)["history"]
    order = [row["game_id"] for row in reversed(history)]
    assert sorted(order) == sorted(rated.ended)
    for game_id in order:
        reads.ledger.rate("A", public_view(rated.client, game_id))
    reads.check_everything()
    assert reads.ok(f"/v1/players/{hub}/ratings")["ratings"][0]["games"] == len(opponents)
    for opponent in opponents:
        assert reads.ok(f"/v1/players/{opponent}/ratings")["ratings"][0]["games"] == 1
    announced = [read.entry.subject for read in rated.read_feed() if read.entry.type == "rating_changed"]
    assert sorted(announced) == sorted(rated.ended)


def test_a_rating_changed_webhook_is_signed_and_delivered_once(tmp_path, redis_url, test_prefix):
    stack = Stack(tmp_path, redis_url, test_prefix).start(API_KEYS=KEY_A)
    try:
        ann, bob = players("ann", "bob")
        api = stack.service.url
        created = requests.post(f"{api}/v1/games", headers={"X-API-Key": KEY_A}, timeout=10, json={
            "variant": "classic", "players": [person(ann), person(bob)], "rated": True,
            "callback_url": stack.callback_url})
        assert created.status_code == 201, created.text
        game_id = created.json()["game"]["id"]
        token = created.json()["players"][1]["token"]
        resigned = requests.post(f"{api}/v1/games/{game_id}/resign", headers={"Authorization": f"Bearer {token}"},
                                 timeout=10)
        assert resigned.status_code == 200

        def rating_changed(received):
            return [r for r in received if r.webhook_id.startswith(f"wh_{game_id}_")
                    and r.webhook_id.endswith("_rating_changed")]

        stack.receiver.wait_for(lambda got: rating_changed(got), 15)
        time.sleep(2.0)  # a second delivery would come by now
        [delivery] = rating_changed(stack.receiver.received)
        assert delivery.verified, "the signature did not verify"
        view = requests.get(f"{api}/v1/games/{game_id}", timeout=10).json()
        changes = view["result"]["rating_changes"]
        assert [change["external_id"] for change in changes] == [ann, bob]
        payload = delivery.payload
        assert payload["type"] == "rating_changed"
        assert payload["data"]["game_id"] == game_id and payload["data"]["rated"] is True
        assert payload["data"]["rating_changes"] == changes
        assert "token" not in delivery.body and token not in delivery.body
        assert {r.payload["type"] for r in stack.deliveries(game_id)} >= {"match_over", "rating_changed"}
    finally:
        stack.stop()
