"""Rematch through HTTP on the real Redis: one next match for all the players of a finished
one, each with their own token, with everything that made the match carried over."""
from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.api.checks import LogReplay, stored_events
from tests.api.conftest import build_app
from tests.api.support import API_KEY, store_of
from tests.api.test_errors import assert_problem

CALLBACK = "http://127.0.0.1:9/hooks/gin"
RULES = {"knock_limit": 7, "target_score": 60, "gin_bonus": 30, "turn_seconds": 600}


@pytest.fixture
def app(redis_url, key_prefix):
    app = build_app(REDIS_URL=redis_url, KEY_PREFIX=key_prefix, WEBHOOK_ALLOWED_HOSTS="http://127.0.0.1:9")
    yield app
    store_of(app).close()


def bearer(token: str | None) -> dict:
    return {} if token is None else {"Authorization": f"Bearer {token}"}


def create(client, variant="classic", players=None, **extra) -> dict:
    players = players or [{"name": "Ann", "external_id": "u-ann", "metadata": {"avatar": "fox"}},
                          {"name": "Bob", "external_id": "u-bob"}]
    response = client.post("/v1/games", json={"variant": variant, "players": players, **extra})
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def finished(client, created: dict, seat: int = 0) -> tuple[str, list[str | None]]:
    """The match of ``created``, ended at once by ``seat`` resigning."""
    game_id = created["game"]["id"]
    tokens = [p["token"] for p in created["players"]]
    assert client.post(f"/v1/games/{game_id}/resign", headers=bearer(tokens[seat])).status_code == 200
    return game_id, tokens


def rematch(client, game_id: str, token: str | None):
    return client.post(f"/v1/games/{game_id}/rematch", headers=bearer(token))


def test_every_player_gets_the_same_next_match_with_their_own_token(app):
    client = app.test_client()
    old_id, old_tokens = finished(client, create(client, metadata={"table": 4}))
    first = rematch(client, old_id, old_tokens[1])
    assert first.status_code == 201 and first.headers["Location"].endswith(first.get_json()["game"]["id"])
    new = first.get_json()
    new_id = new["game"]["id"]
    assert new_id != old_id and new["game"]["status"] == "active" and new["game"]["version"] >= 1
    assert [p["token"] is not None for p in new["players"]] == [False, True]
    second = rematch(client, old_id, old_tokens[0])
    assert second.status_code == 200
    assert second.get_json()["game"]["id"] == new_id
    assert [p["token"] is not None for p in second.get_json()["players"]] == [True, False]
    new_tokens = [second.get_json()["players"][0]["token"], new["players"][1]["token"]]
    assert set(new_tokens).isdisjoint(old_tokens)
    # Asking again answers the same, with the same token.
    again = rematch(client, old_id, old_tokens[1])
    assert again.status_code == 200 and again.get_json()["players"] == new["players"]
    for seat, token in enumerate(new_tokens):
        shown = client.get(f"/v1/games/{new_id}", headers=bearer(token))
        assert shown.status_code == 200 and shown.get_json()["you"]["seat"] == seat
    for token in old_tokens:
        assert_problem(client.get(f"/v1/games/{new_id}", headers=bearer(token)), 401, "unauthorized")
        assert_problem(client.post(f"/v1/games/{new_id}/resign", headers=bearer(token)), 401, "unauthorized")
    for token in new_tokens:
        assert_problem(client.get(f"/v1/games/{old_id}", headers=bearer(token)), 401, "unauthorized")
    # The finished match points to its rematch, for everyone, and records it once.
    assert client.get(f"/v1/games/{old_id}").get_json()["rematch_id"] == new_id
    assert client.get(f"/v1/games/{old_id}", headers=bearer(old_tokens[0])).get_json()["rematch_id"] == new_id
    marks = [e for e in stored_events(store_of(app), old_id) if e.type.value == "rematch"]
    assert [e.public["game_id"] for e in marks] == [new_id]
    assert client.get(f"/v1/games/{new_id}").get_json()["rematch_id"] is None


def test_the_next_match_keeps_seats_rules_bots_ids_metadata_and_callback(app, redis_url, key_prefix):
    client = app.test_client()
    players = [{"name": "Bo", "bot": True, "level": "strong", "metadata": {"skin": "chrome"}},
               {"name": "Ann", "external_id": "u-ann", "metadata": {"avatar": "fox"}},
               {"name": "Cy", "external_id": "u-cy"}]
    created = create(client, "box", players, rules=RULES, metadata={"league": "spring"}, callback_url=CALLBACK)
    old_id, tokens = finished(client, created, seat=2)
    new = rematch(client, old_id, tokens[1]).get_json()
    old_view, new_view = client.get(f"/v1/games/{old_id}").get_json(), new["game"]
    assert new_view["variant"] == "box" and new_view["rules"] == old_view["rules"]
    assert new_view["rules"]["turn_seconds"] == 600 and new_view["hand"]["deadline"] is not None
    assert new_view["metadata"] == {"league": "spring"}
    carried = ("seat", "name", "bot", "level", "external_id", "metadata")
    assert [{k: p[k] for k in carried} for p in new_view["players"]] == \
           [{k: p[k] for k in carried} for p in old_view["players"]]
    assert all(p["score"] == 0 and p["timeouts"] == 0 for p in new_view["players"])
    assert new["players"][0]["token"] is None  # the bot
    # The callback comes along: the new match's deliveries go to the same URL.
    record = json.loads(store_of(app).load(new_view["id"]).state)
    assert record["cb"] == CALLBACK
    # The new match is listed for its players under the same API key.
    listed = client.get("/v1/players/u-cy/games", headers={"X-API-Key": API_KEY}).get_json()["games"]
    assert new_view["id"] in [g["id"] for g in listed]
    LogReplay([p["level"] for p in new_view["players"]], 7).check(stored_events(store_of(app), new_view["id"]))


def test_the_next_match_against_a_bot_is_already_at_the_person_s_turn(app):
    """A bot to act first in the new match has played in the answer that created it."""
    client = app.test_client()
    for seed in range(30):
        created = create(client, players=[{"name": "Ann"}, {"name": "Robo", "bot": True}], seed=seed)
        old_id, tokens = finished(client, created)
        new = rematch(client, old_id, tokens[0]).get_json()
        shown = client.get(f"/v1/games/{new['game']['id']}").get_json()
        assert new["game"] == shown and shown["hand"]["turn"] == 0
        if shown["version"] > 1:
            return
    pytest.fail("no rematch had the bot moving first")


def test_a_fresh_cut_for_a_seeded_match(app):
    client = app.test_client()
    old_id, tokens = finished(client, create(client, seed=12345))
    new_id = rematch(client, old_id, tokens[0]).get_json()["game"]["id"]
    old_cut = stored_events(store_of(app), old_id)[0]
    new_cut = stored_events(store_of(app), new_id)[0]
    assert old_cut.type.value == new_cut.type.value == "cut"
    old_deck = next(e for e in stored_events(store_of(app), old_id) if e.type.value == "deal").secret["deck"]
    new_deck = next(e for e in stored_events(store_of(app), new_id) if e.type.value == "deal").secret["deck"]
    assert old_deck != new_deck


def test_two_players_asking_at_once_create_one_match(redis_url, key_prefix):
    apps = [build_app(REDIS_URL=redis_url, KEY_PREFIX=key_prefix) for _ in range(2)]
    try:
        client = apps[0].test_client()
        old_id, tokens = finished(client, create(client, players=[
            {"name": "Ann", "external_id": "race-ann"}, {"name": "Bob", "external_id": "race-bob"}]))
        barrier = threading.Barrier(2)

        def ask(seat: int):
            other = apps[seat].test_client()
            barrier.wait()
            return rematch(other, old_id, tokens[seat])

        with ThreadPoolExecutor(2) as pool:
            answers = list(pool.map(ask, range(2)))
        assert sorted(a.status_code for a in answers) == [200, 201]
        ids = {a.get_json()["game"]["id"] for a in answers}
        assert len(ids) == 1
        new_id = ids.pop()
        for seat, answer in enumerate(answers):
            token = answer.get_json()["players"][seat]["token"]
            assert client.get(f"/v1/games/{new_id}", headers=bearer(token)).get_json()["you"]["seat"] == seat
        deals = [e for e in stored_events(store_of(apps[0]), new_id) if e.type.value == "deal"]
        assert [e.public["number"] for e in deals][:1] == [1] and [e.public["number"] for e in deals].count(1) == 1
        assert [e for e in stored_events(store_of(apps[0]), old_id) if e.type.value == "rematch"][0].public == \
               {"game_id": new_id}
        assert len([e for e in stored_events(store_of(apps[0]), old_id) if e.type.value == "rematch"]) == 1
        listed = client.get("/v1/players/race-ann/games", headers={"X-API-Key": API_KEY}).get_json()["games"]
        assert [g["id"] for g in listed].count(new_id) == 1
    finally:
        for a in apps:
            store_of(a).close()


def test_only_a_finished_match_has_a_rematch(app):
    client = app.test_client()
    created = create(client)
    game_id, tokens = created["game"]["id"], [p["token"] for p in created["players"]]
    version = client.get(f"/v1/games/{game_id}").get_json()["version"]
    assert_problem(rematch(client, game_id, tokens[0]), 409, "game_not_finished")
    assert client.get(f"/v1/games/{game_id}").get_json()["version"] == version


def test_an_aborted_match_has_no_rematch(app):
    client = app.test_client()
    created = create(client)
    game_id, tokens = created["game"]["id"], [p["token"] for p in created["players"]]
    assert client.post(f"/v1/games/{game_id}/abort", headers={"X-API-Key": API_KEY}).status_code == 200
    refused = assert_problem(rematch(client, game_id, tokens[0]), 409, "game_not_finished")
    assert refused["params"] == {"status": "aborted"}
    assert client.get(f"/v1/games/{game_id}").get_json()["rematch_id"] is None


def test_a_token_replaced_in_the_next_match_is_handed_out_no_more(app):
    client = app.test_client()
    old_id, old_tokens = finished(client, create(client))
    new = rematch(client, old_id, old_tokens[0]).get_json()
    new_id, ann = new["game"]["id"], new["players"][0]["token"]
    for seat in (0, 1):
        assert client.post(f"/v1/games/{new_id}/players/{seat}/token", headers={"X-API-Key": API_KEY}).status_code == 200
    assert_problem(client.get(f"/v1/games/{new_id}", headers=bearer(ann)), 401, "unauthorized")
    for seat in (0, 1):
        again = rematch(client, old_id, old_tokens[seat])
        assert again.status_code == 200 and again.get_json()["game"]["id"] == new_id
        assert [p["token"] for p in again.get_json()["players"]] == [None, None]


def test_only_a_player_asks_for_a_rematch(app):
    client = app.test_client()
    old_id, _ = finished(client, create(client))
    other_id, other_tokens = finished(client, create(client))
    assert_problem(rematch(client, old_id, None), 401, "unauthorized")
    assert_problem(rematch(client, old_id, other_tokens[0]), 401, "unauthorized")
    assert client.get(f"/v1/games/{old_id}").get_json()["rematch_id"] is None
    assert_problem(rematch(client, "g_" + "A" * 22, other_tokens[0]), 404, "game_not_found")
