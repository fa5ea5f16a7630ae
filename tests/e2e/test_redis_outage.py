"""Redis goes away in the middle of play, under real gunicorn: every request that needs the
store answers 503 store_unavailable with Retry-After within 2 s, liveness stays up and
readiness goes down; when Redis is back, play goes on without restarting anything and no
acknowledged move is lost.

The test runs its own redis-server (append-only file on) on another loopback port, so the
shared Redis is never touched.
"""
from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from service.store import RedisStore
from tests.e2e.players import Acknowledged, ApiClient, Game, legal_move
from tests.e2e.stored_games import acknowledgement_violations, invariant_violations, load_game
from tests.redis_servers import RedisServer

pytestmark = pytest.mark.slow

ANSWER_WITHIN_SECONDS = 2.0
TURNS_BEFORE = 30
TURNS_AFTER = 30
# Requests sent at once during the outage. When Redis refuses connections each answer is
# immediate, so twice the 2 workers x 8 threads. When it hangs each one holds its thread
# for the store's 1 s socket timeout, and gunicorn's gthread worker may accept more
# connections than it has threads (they wait for a free one), so one worker's threads' worth.
CONCURRENT_PROBES = {"stopped": 32, "hung": 8}


@pytest.fixture
def own_redis(tmp_path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path / "redis", extra_args=("--appendonly", "yes")).start()
    yield server
    server.stop()


def outage_probes(client: ApiClient, game: Game, view: dict) -> list[tuple[str, Callable[[], requests.Response]]]:
    """One request of each kind that needs the store, made by ``view``'s player."""
    seat = view["you"]["seat"]
    token = game.tokens[seat]
    move = legal_move(view, random.Random(0))
    return [
        ("move", lambda: client.act(game.game_id, token, move)),
        ("view", lambda: client.view(game.game_id, token)),
        ("public view", lambda: client.view(game.game_id)),
        ("events", lambda: client.events(game.game_id, token)),
        ("hint", lambda: client.hint(game.game_id, token)),
        ("create", lambda: client.create_response("classic", ["Ann", "Bob"])),
        ("readiness", lambda: client.request("GET", "/readyz")),
    ]


def timed(probe: tuple[str, Callable[[], requests.Response]]) -> tuple[str, float, requests.Response]:
    name, send = probe
    started = time.monotonic()
    response = send()
    return name, time.monotonic() - started, response


@pytest.mark.parametrize("outage", ["stopped", "hung"])
@pytest.mark.timeout(180)
def test_play_survives_a_redis_outage(outage, own_redis, start_gunicorn, test_prefix) -> None:
    server = start_gunicorn({"REDIS_URL": own_redis.url, "KEY_PREFIX": test_prefix}, workers=2)
    client = ApiClient(server.url)
    rng = random.Random(7)
    games = [client.create(seed=seed) for seed in (11, 12)]
    acknowledged: list[Acknowledged] = [client.play_turn(rng.choice(games), rng) for _ in range(TURNS_BEFORE)]
    workers = server.worker_pids()
    probes = outage_probes(client, games[0], client.mover_view(games[0]))

    if outage == "stopped":
        own_redis.stop()
    else:
        own_redis.pause()
    try:
        wave = [probes[i % len(probes)] for i in range(CONCURRENT_PROBES[outage])]
        with ThreadPoolExecutor(len(wave)) as pool:
            answers = list(pool.map(timed, wave))
        assert client.request("GET", "/healthz").status_code == 200
    finally:
        if outage == "stopped":
            own_redis.start()
        else:
            own_redis.resume()

    for name, seconds, response in answers:
        assert response.status_code == 503, (name, response.status_code, response.text)
        assert response.headers["Content-Type"].startswith("application/problem+json"), name
        assert response.json()["code"] == "store_unavailable", (name, response.text)
        assert response.headers["Retry-After"].isdigit(), name
        assert seconds < ANSWER_WITHIN_SECONDS, (name, seconds)

    # Redis answers again (start/resume waited for it): so does the service, at once, in
    # every worker, over pooled connections that the outage broke.
    assert [client.request("GET", "/readyz").status_code for _ in range(8)] == [200] * 8
    # The same processes serve on: no worker hung, timed out or was replaced.
    assert server.worker_pids() == workers
    acknowledged += [client.play_turn(rng.choice(games), rng) for _ in range(TURNS_AFTER)]
    client.close()

    truth = RedisStore(own_redis.url, test_prefix)
    try:
        for game in games:
            stored = load_game(truth, game.game_id)
            assert invariant_violations(stored) == [], game.game_id
            assert acknowledgement_violations(stored, acknowledged) == [], game.game_id
    finally:
        truth.close()
