"""Schema fuzzing: schemathesis (CLI, v4) against the real service under gunicorn, with the
checked-in openapi/openapi.json: every phase (examples, coverage, fuzzing, stateful over the
document's OpenAPI links) and the checks not_a_server_error, response_schema_conformance,
status_code_conformance and content_type_conformance; zero failures allowed.

Before the run, matches are played through HTTP into every interesting state (each phase of
a hand, a hand already scored, a finished match, in both variants); the hooks
(tests/e2e/schemathesis_hooks.py) aim half of the generated game ids at them and give the
requests real tokens. Afterwards every game in Redis, the fuzzer's own included, still keeps
the rules' invariants.
"""
from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import tomllib
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from tests.e2e.players import ApiClient, Game
from tests.e2e.schemathesis_hooks import SEEDED_GAMES_ENV
from tests.e2e.stored_games import invariant_violations, load_game
from tests.gunicorn_server import REPO

pytestmark = pytest.mark.slow

CONFIG = Path(__file__).with_name("schemathesis.toml")
OPENAPI = REPO / "openapi" / "openapi.json"
MIN_REQUESTS = 1000
RUN_TIMEOUT_SECONDS = 240
# Long polls are capped at 1 s so that generated `wait` values cannot stall the run.
SERVICE_SETTINGS = {"LONG_POLL_MAX_SECONDS": "1"}
SHORT_MATCH = {"target_score": 10}
# Operations schemathesis.toml turns off (the live streams: open until the client leaves).
NOT_FUZZED = {operation_id
              for operations in tomllib.loads(CONFIG.read_text()).get("operations", [])
              if operations.get("enabled") is False
              for operation_id in operations["include-operation-id"]}
COPIES = 2  # of each state: the fuzzer moves some games on
SEEDS_TO_TRY = 20

Until = Callable[[dict], bool]


def phase_is(phase: str) -> Until:
    return lambda view: view["hand"] is not None and view["hand"]["phase"] == phase


# name: (variant, rules, the public view to reach)
STATES: dict[str, tuple[str, dict | None, Until]] = {
    "upcard-offer": ("classic", None, phase_is("upcard_offer")),
    "draw": ("classic", None, phase_is("draw")),
    "discard": ("classic", None, phase_is("discard")),
    "layoff": ("classic", None, phase_is("layoff")),
    "second-hand": ("classic", None, lambda view: view["hand"] is not None and view["last_hand"] is not None),
    "finished": ("classic", SHORT_MATCH, lambda view: view["status"] == "finished"),
    "box-discard": ("box", None, phase_is("discard")),
    "box-layoff": ("box", None, phase_is("layoff")),
    "box-finished": ("box", SHORT_MATCH, lambda view: view["status"] == "finished"),
}


def played_until(client: ApiClient, variant: str, rules: dict | None, until: Until, seed: int) -> Game:
    """A seeded match played with legal moves until its public view satisfies ``until``."""
    rng = random.Random(seed)
    extra = {"rules": rules} if rules else {}
    # A seed whose match never shows the state (say, its hands all end dead) is replaced.
    for attempt in range(SEEDS_TO_TRY):
        game = client.create(variant, seed=seed + 1000 * attempt, **extra)
        public = client.view(game.game_id).json()
        while public["status"] != "finished" and not until(public):
            client.play_turn(game, rng)
            public = client.view(game.game_id).json()
        if until(public):
            return game
    raise AssertionError(f"no {variant} match reached the state in {SEEDS_TO_TRY} seeds")


def stored_game_ids(redis_url: str, prefix: str) -> list[str]:
    """Every game under ``prefix``, from the store's key layout (service/store/redis.py:
    ``<prefix>{<game id>}:s`` holds a game's state)."""
    pattern = re.compile(re.escape(prefix) + r"\{(g_[A-Za-z0-9_-]{22})\}:s")
    with redis.Redis.from_url(redis_url) as client:
        keys = client.scan_iter(match=f"{prefix}{{g_*}}:s", count=1000)
        return sorted({match[1] for key in keys if (match := pattern.fullmatch(key.decode()))})


def requests_served(log: str) -> Counter:
    """(method, route, status) of every request in the service's access log."""
    served: Counter = Counter()
    for line in log.splitlines():
        if '"logger": "ginrummy.access"' in line:
            entry = json.loads(line)
            served[(entry["method"], entry["route"], entry["status"])] += 1
    return served


TOKEN_ROUTE = "/v1/games/<game_id>/players/<seat>/token"


def token_reissues(log: str) -> Counter:
    """The seat tokens the service replaced, by game id (each moves the version on)."""
    replaced: Counter = Counter()
    for line in log.splitlines():
        if '"logger": "ginrummy.access"' in line:
            entry = json.loads(line)
            if entry["method"] == "POST" and entry["route"] == TOKEN_ROUTE and entry["status"] == 200:
                replaced[entry["game_id"]] += 1
    return replaced


def documented_operations() -> set[tuple[str, str]]:
    """(method, path template) of every operation of the OpenAPI document that the fuzzer is
    pointed at (all but the live streams, schemathesis.toml)."""
    document = json.loads(OPENAPI.read_text())
    return {
        (method.upper(), path)
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
        if method != "parameters" and operation["operationId"] not in NOT_FUZZED
    }


def as_template(route: str) -> str:
    """A route as Flask writes it (``/v1/players/<path:external_id>/games``) as the document
    does (``/v1/players/{external_id}/games``)."""
    return re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route)


@pytest.mark.timeout(RUN_TIMEOUT_SECONDS + 120)
def test_schemathesis_finds_nothing(start_gunicorn, redis_url, test_prefix, truth, tmp_path) -> None:
    server = start_gunicorn({"REDIS_URL": redis_url, "KEY_PREFIX": test_prefix, **SERVICE_SETTINGS}, workers=2)
    client = ApiClient(server.url)
    seeded = {}
    for number, (variant, rules, until) in enumerate(STATES.values()):
        for copy in range(COPIES):
            game = played_until(client, variant, rules, until, seed=100 * number + copy)
            hand = client.view(game.game_id).json()["hand"]
            # Each seat's cards, so that the fuzzer's first discard in a game can be legal.
            hands = [client.view(game.game_id, token).json()["you"]["hand"] for token in game.tokens]
            seeded[game.game_id] = {"tokens": list(game.tokens), "turn": hand["turn"] if hand else 0,
                                    "phase": hand["phase"] if hand else None, "hands": hands}
    client.close()
    games_file = tmp_path / "seeded-games.json"
    games_file.write_text(json.dumps(seeded))
    before = requests_served(server.log_text())

    run = subprocess.run(
        [str(Path(sys.executable).parent / "schemathesis"), "--config-file", str(CONFIG), "--no-color",
         "run", str(OPENAPI), "--url", server.url],
        cwd=tmp_path,  # reports and caches, if any, stay out of the repository
        env={**os.environ, "PYTHONPATH": str(REPO), SEEDED_GAMES_ENV: str(games_file)},
        capture_output=True, text=True, timeout=RUN_TIMEOUT_SECONDS,
    )
    assert run.returncode == 0, run.stdout[-20000:] + run.stderr[-5000:]

    served = requests_served(server.log_text()) - before
    assert sum(served.values()) >= MIN_REQUESTS, served
    reached = {(method, as_template(route)) for method, route, _ in served if route is not None}
    assert documented_operations() <= reached, documented_operations() - reached
    assert [key for key in served if key[2] >= 500] == []
    # The fuzzer played: moves were accepted (beyond the seeded states, which hold every
    # phase, scored hands and finished matches).
    print("\nmoves accepted: " + ", ".join(
        f"{action} {served[('POST', f'/v1/games/<game_id>/{action}', 200)]}"
        for action in ("pass", "draw", "discard", "knock", "layoff")))
    for action in ("draw", "discard"):
        assert served[("POST", f"/v1/games/<game_id>/{action}", 200)] > 0, action
    replaced = token_reissues(server.log_text())
    for game_id in stored_game_ids(redis_url, test_prefix):
        assert invariant_violations(load_game(truth, game_id), replaced[game_id]) == [], game_id
