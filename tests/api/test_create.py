"""POST /v1/games: the answer, the tokens, and what is (not) stored."""
from __future__ import annotations

import hashlib
import json
import re

import redis

from service.api.context import EXTENSION
from tests.api.support import Table, create, holding, store_of


def stored_values(app, game_id: str) -> list[str]:
    """Every value stored in Redis for ``game_id`` (state, events, idempotent answers)."""
    config = app.extensions[EXTENSION].config
    values = []
    with redis.Redis.from_url(config.redis_url, decode_responses=True) as raw:
        for key in raw.scan_iter(match=f"{config.key_prefix}*{game_id}*"):
            kind = raw.type(key)
            if kind == "hash":
                values += raw.hgetall(key).values()
            elif kind == "list":
                values += raw.lrange(key, 0, -1)
            else:
                values.append(raw.get(key))
    return values


def test_creation_answers_the_public_view_and_one_token_per_seat(client):
    response = create(client, "box", names=["Ann", "Zoë 🂡", "Cy"], rules={"gin_bonus": 30})
    assert response.status_code == 201
    body = response.get_json()
    game = body["game"]
    assert re.fullmatch(r"g_[A-Za-z0-9_-]{22}", game["id"])
    assert response.headers["Location"] == f"/v1/games/{game['id']}"
    assert "you" not in game and game["status"] == "active" and game["version"] >= 1
    assert game["rules"]["gin_bonus"] == 30 and game["rules"]["game_bonus"] == 0
    assert [(p["seat"], p["name"]) for p in body["players"]] == [(0, "Ann"), (1, "Zoë 🂡"), (2, "Cy")]
    tokens = [p["token"] for p in body["players"]]
    assert len(set(tokens)) == 3 and all(len(t) >= 43 for t in tokens)
    assert client.get(response.headers["Location"]).get_json() == game


def test_tokens_are_stored_only_as_hashes(redis_app, client):
    body = create(client).get_json()
    game_id, tokens = body["game"]["id"], [p["token"] for p in body["players"]]
    values = stored_values(redis_app, game_id)
    assert values, "the game should be in Redis"
    assert not any(token in value for token in tokens for value in values)
    record = json.loads(store_of(redis_app).load(game_id).state)
    assert record["t"] == [hashlib.sha256(t.encode()).hexdigest() for t in tokens]


def test_a_seed_makes_the_deal_reproducible(redis_app, client):
    first = Table.open(redis_app, client, "classic", seed=99)
    second = Table.open(redis_app, client, "classic", seed=99)
    for seat in (0, 1):
        assert holding(first.match(), seat) == holding(second.match(), seat)
    assert first.view()["hand"] == second.view()["hand"]
    unseeded = [Table.open(redis_app, client, "classic").match() for _ in range(2)]
    assert holding(unseeded[0], 0) != holding(unseeded[1], 0)


def test_each_seat_reads_its_own_view(redis_app, client):
    table = Table.open(redis_app, client, "classic", seed=4)
    for seat in (0, 1):
        you = table.view(seat)["you"]
        assert you["seat"] == seat and len(you["hand"]) == 10
