"""POST /v1/games with ``rated: true``: who may create one, the external ids every person's seat
needs, and what the view says (on Redis and in memory)."""
from __future__ import annotations

import time
import uuid

import pytest

from service.ratings.bots import BOT_RATINGS
from tests.api.conftest import build_app
from tests.api.rated import KEY_A, bot, person
from tests.api.support import store_of
from tests.api.test_errors import assert_problem


def ids(*names: str) -> list[str]:
    run = uuid.uuid4().hex[:6]
    return [f"{name}-{run}" for name in names]


def create(client, players: list[dict], variant: str = "classic", **extra):
    return client.post("/v1/games", json={"variant": variant, "players": players, **extra})


def games_of(client, external_id: str) -> list:
    response = client.get(f"/v1/players/{external_id}/games", headers={"X-API-Key": KEY_A})
    assert response.status_code == 200
    return response.get_json()["games"]


@pytest.mark.parametrize(("shape", "seat"), [("-p", 0), ("p-", 1), ("pb-", 2)])
def test_every_person_of_a_rated_match_needs_an_external_id(any_app, shape, seat):
    """``shape``: per seat, a person with an external id (p), a bot (b), a person without one (-)."""
    client = any_app.test_client()
    given = ids(*(f"p{n}" for n in range(len(shape))))
    players = [person(given[n]) if kind == "p" else bot("easy") if kind == "b" else {"name": f"P{n}", "metadata": {}}
               for n, kind in enumerate(shape)]
    variant = "classic" if len(players) == 2 else "box"
    body = assert_problem(create(client, players, variant, rated=True), 422, "external_id_required")
    assert body["params"] == {"seat": seat}
    for player in players:
        if "external_id" in player:
            assert games_of(client, player["external_id"]) == []  # nothing was created


def test_the_people_of_a_rated_match_are_different_players(any_app):
    client = any_app.test_client()
    ann, bob = ids("ann", "bob")
    for players in ([person(ann), person(ann)], [person(ann), person(bob), person(ann)]):
        variant = "classic" if len(players) == 2 else "box"
        assert_problem(create(client, players, variant, rated=True), 422, "duplicate_external_id")
    assert games_of(client, ann) == []
    # Unrated, the same id on two seats is the integrator's business.
    assert create(client, [person(ann), person(ann)]).status_code == 201


def test_rated_must_be_a_boolean(any_app):
    ann, bob = ids("ann", "bob")
    response = create(any_app.test_client(), [person(ann), person(bob)], rated="yes")
    assert_problem(response, 422, "invalid_request")


def test_a_rated_match_says_so_and_shows_its_bots_ratings(any_app):
    client = any_app.test_client()
    (ann,) = ids("ann")
    response = create(client, [person(ann), bot("strong"), bot("easy")], "box", rated=True)
    assert response.status_code == 201, response.get_json()
    game = response.get_json()["game"]
    assert game["rated"] is True and game["result"] is None
    assert [player["rating"] for player in game["players"]] == \
        [None, BOT_RATINGS["strong"].rating, BOT_RATINGS["easy"].rating]
    assert create(client, [person(ann), {"name": "Bob"}]).get_json()["game"]["rated"] is False


@pytest.fixture
def open_redis_app(redis_url, key_prefix):
    """On Redis, creation open to anyone: API keys configured or not."""
    apps = [build_app(REDIS_URL=redis_url, KEY_PREFIX=key_prefix, API_KEYS=keys, ALLOW_ANONYMOUS_CREATE="true")
            for keys in ("", KEY_A)]
    yield apps
    for app in apps:
        store_of(app).close()


def test_on_redis_a_rated_match_needs_an_api_key(open_redis_app):
    ann, bob = ids("ann", "bob")
    for app in open_redis_app:
        client = app.test_client()
        players = [person(ann), person(bob)]
        response = client.post("/v1/games", json={"variant": "classic", "players": players, "rated": True},
                               headers={"X-API-Key": None})
        assert_problem(response, 401, "unauthorized")
        assert response.headers["WWW-Authenticate"].startswith("ApiKey")
        unrated = client.post("/v1/games", json={"variant": "classic", "players": players},
                              headers={"X-API-Key": None})
        assert unrated.status_code == 201
    keyed = open_redis_app[1].test_client()
    assert [game["rated"] for game in games_of(keyed, ann)] == []  # made without a key: no key's player
    assert create(keyed, [person(ann), person(bob)], rated=True).status_code == 201
    assert [game["id"] for game in games_of(keyed, ann)]


def test_the_rating_changes_change_the_views_etag_so_a_conditional_read_gets_them():
    app = build_app(REDIS_URL="memory://")
    client = app.test_client()
    created = client.post("/v1/games", json={"variant": "classic", "rated": True, "players": [
        {"name": "Ann", "external_id": f"ann-{uuid.uuid4().hex[:6]}"}, {"name": "Robo", "bot": True}]})
    body = created.get_json()
    game_id, token = body["game"]["id"], body["players"][0]["token"]
    ended = client.post(f"/v1/games/{game_id}/resign", headers={"Authorization": f"Bearer {token}"})
    before = ended.headers["ETag"]
    deadline = time.monotonic() + 5
    while True:
        read = client.get(f"/v1/games/{game_id}", headers={"If-None-Match": before})
        if read.status_code == 200:
            break
        assert read.status_code == 304 and time.monotonic() < deadline
        time.sleep(0.02)
    assert read.get_json()["result"]["rating_changes"] is not None
    assert read.headers["ETag"] == before[:-1] + '.r"'
    assert client.get(f"/v1/games/{game_id}", headers={"If-None-Match": read.headers["ETag"]}).status_code == 304
