"""GET /v1/players/{external_id}/games on the real Redis (and on Redis Cluster): a player's
matches under one API key, newest first, a page at a time, active or finished, expired ones
left out."""
from __future__ import annotations

import time
import uuid

import pytest
from redis import Redis

from service import ids
from service.api.context import EXTENSION
from service.games.record import player_index_id
from service.tokens import key_id
from service.store.keys import game_keys, index_key
from service.app import create_app
from tests.api.conftest import build_app
from tests.api.support import store_of
from tests.api.test_errors import assert_problem

KEY_A, KEY_B = "player-games-key-a", "player-games-key-b"
KEYS = f"{KEY_A},{KEY_B}"


class Ticking:
    """A clock one second further at each reading, shared by the apps of a test: every match
    is created at its own millisecond, so "newest first" is the order of creation."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        self.now += 1
        return self.now


def keyed_app(**settings):
    app = build_app(API_KEYS=KEYS, **settings)
    return app


def with_clock(app, clock: Ticking):
    app.extensions[EXTENSION].games.ctx.clock = clock
    return app


@pytest.fixture
def player() -> str:
    """An external id of this test alone (the session's Redis is shared by the tests)."""
    return f"user-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def app(redis_url, key_prefix):
    app = with_clock(keyed_app(REDIS_URL=redis_url, KEY_PREFIX=key_prefix), Ticking())
    yield app
    store_of(app).close()


def create(app, key: str, external_ids: tuple[str | None, str | None], **extra) -> dict:
    players = [{"name": f"P{n}", **({} if ext is None else {"external_id": ext})} for n, ext in enumerate(external_ids)]
    response = app.test_client().post("/v1/games", json={"variant": "classic", "players": players, **extra},
                                      headers={"X-API-Key": key})
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def listing(app, key: str | None, external_id: str, **query):
    headers = {} if key is None else {"X-API-Key": key}
    return app.test_client().get(f"/v1/players/{external_id}/games", headers=headers, query_string=query)


def all_pages(app, key: str, external_id: str, limit: int, **query) -> list[list[dict]]:
    pages, cursor = [], None
    while True:
        response = listing(app, key, external_id, limit=limit, **({"cursor": cursor} if cursor else {}), **query)
        assert response.status_code == 200, response.get_json()
        body = response.get_json()
        pages.append(body["games"])
        cursor = body["next_cursor"]
        if cursor is None:
            return pages
        assert len(pages) < 50


def test_a_player_s_matches_newest_first_a_page_at_a_time(app, player):
    created = [create(app, KEY_A, (player, None) if n % 2 else (None, player), metadata={"n": n}) for n in range(5)]
    create(app, KEY_A, ("someone-else", None))
    pages = all_pages(app, KEY_A, player, limit=2)
    assert [len(page) for page in pages] == [2, 2, 1]
    listed = [game for page in pages for game in page]
    assert [g["id"] for g in listed] == [c["game"]["id"] for c in reversed(created)]
    for game, made in zip(listed, reversed(created)):
        n = made["game"]["metadata"]["n"]
        seat = 1 if n % 2 == 0 else 0
        assert game["seat"] == seat and game["metadata"] == {"n": n} and game["status"] == "active"
        assert game["players"][seat]["external_id"] == player
        assert game["your_turn"] == (game["turn"] == seat) and game["version"] == made["game"]["version"]
    created_at = [g["created_at"] for g in listed]
    assert created_at == sorted(created_at, reverse=True)


def test_each_api_key_sees_only_its_own_matches(app, player):
    mine = create(app, KEY_A, (player, None))["game"]["id"]
    assert listing(app, KEY_B, player).get_json() == {"games": [], "next_cursor": None}
    theirs = create(app, KEY_B, (player, None))["game"]["id"]
    assert [g["id"] for g in listing(app, KEY_A, player).get_json()["games"]] == [mine]
    assert [g["id"] for g in listing(app, KEY_B, player).get_json()["games"]] == [theirs]
    assert_problem(listing(app, None, player), 401, "unauthorized")
    assert_problem(listing(app, "not-a-key", player), 401, "unauthorized")


def test_finished_matches_move_to_the_finished_list(app, player):
    resigned = create(app, KEY_A, (player, None))
    aborted = create(app, KEY_A, (None, player))
    active = create(app, KEY_A, (player, "friend"))
    client = app.test_client()
    token = resigned["players"][0]["token"]
    assert client.post(f"/v1/games/{resigned['game']['id']}/resign",
                       headers={"Authorization": f"Bearer {token}"}).status_code == 200
    assert client.post(f"/v1/games/{aborted['game']['id']}/abort", headers={"X-API-Key": KEY_A}).status_code == 200
    now_active = listing(app, KEY_A, player).get_json()["games"]
    finished = listing(app, KEY_A, player, status="finished").get_json()["games"]
    assert [g["id"] for g in now_active] == [active["game"]["id"]]
    assert [(g["id"], g["status"]) for g in finished] == [(aborted["game"]["id"], "aborted"),
                                                          (resigned["game"]["id"], "finished")]
    assert all(g["turn"] is None and not g["your_turn"] for g in finished)
    assert [g["id"] for g in listing(app, KEY_A, "friend").get_json()["games"]] == [active["game"]["id"]]


def wait_until_expired(redis_url: str, prefix: str, game_ids: list[str], timeout: float = 10) -> None:
    """Until Redis has dropped these games' state (their TTL ran out)."""
    with Redis.from_url(redis_url) as client:
        deadline = time.monotonic() + timeout
        while any(client.exists(game_keys(prefix, g).state) for g in game_ids):
            assert time.monotonic() < deadline, "the games did not expire"
            time.sleep(0.05)


def test_expired_matches_are_left_out_without_ending_the_pages(redis_url, key_prefix, player):
    """A match that expired between live ones: the pages go on past it."""
    clock = Ticking()
    lasting = with_clock(keyed_app(REDIS_URL=redis_url, KEY_PREFIX=key_prefix), clock)
    brief = with_clock(keyed_app(REDIS_URL=redis_url, KEY_PREFIX=key_prefix, UNSTARTED_GAME_TTL_SECONDS="1"), clock)
    try:
        oldest = create(lasting, KEY_A, (player, None))["game"]["id"]
        older = create(lasting, KEY_A, (player, None))["game"]["id"]
        gone = [create(brief, KEY_A, (player, None))["game"]["id"] for _ in range(2)]
        newest = create(lasting, KEY_A, (player, None))["game"]["id"]
        wait_until_expired(redis_url, key_prefix, gone)
        for limit in (1, 2, 3, 20):
            listed = [g["id"] for page in all_pages(lasting, KEY_A, player, limit=limit) for g in page]
            assert listed == [newest, older, oldest], f"limit {limit}"
        # Reading dropped the expired games' entries: the index does not keep growing with them.
        with Redis.from_url(redis_url, decode_responses=True) as client:
            indexed = {game for shard in range(ids.SHARDS)
                       for game in client.zrange(index_key(key_prefix, shard, player_index_id(key_id(KEY_A), player),
                                                           "active"), 0, -1)}
        assert indexed == {newest, older, oldest}
    finally:
        store_of(lasting).close()
        store_of(brief).close()


def test_a_cursor_not_given_by_the_service_is_refused(app, player):
    create(app, KEY_A, (player, None))
    assert_problem(listing(app, KEY_A, player, cursor="bm90LWEtY3Vyc29y"), 422, "invalid_request", "cursor")
    assert_problem(listing(app, KEY_A, player, limit=0), 422, "invalid_request", "limit")
    assert_problem(listing(app, KEY_A, player, limit=101), 422, "invalid_request", "limit")
    assert_problem(listing(app, KEY_A, player, status="paused"), 422, "invalid_request", "status")


def test_an_external_id_longer_than_any_seat_may_carry_is_refused(app):
    longest = "u" * 128
    create(app, KEY_A, (longest, None))
    assert [len(page) for page in all_pages(app, KEY_A, longest, limit=10)] == [1]
    # Not cut to its first 128 characters, which would list another player's matches.
    assert_problem(listing(app, KEY_A, longest + "x"), 422, "invalid_request", "external_id")


def test_the_player_index_on_redis_cluster(redis_cluster_url, player):
    """Matches in every shard (so on every node of a 3-master cluster), paged across them."""
    prefix = f"test:{uuid.uuid4().hex[:8]}:"
    app = with_clock(keyed_app(REDIS_URL=redis_cluster_url, KEY_PREFIX=prefix), Ticking())
    try:
        created = [create(app, KEY_A, (player, None))["game"]["id"] for _ in range(12)]
        created.append(create(app, KEY_B, (player, None))["game"]["id"])
        assert len({ids.shard_of(g) for g in created}) > 3
        listed = [g["id"] for page in all_pages(app, KEY_A, player, limit=5) for g in page]
        assert listed == list(reversed(created[:12]))
        assert [g["id"] for g in listing(app, KEY_B, player).get_json()["games"]] == [created[12]]
        assert app.test_client().post(f"/v1/games/{created[3]}/abort", headers={"X-API-Key": KEY_A}).status_code == 200
        finished = listing(app, KEY_A, player, status="finished").get_json()["games"]
        assert [g["id"] for g in finished] == [created[3]]
        assert created[3] not in [g["id"] for page in all_pages(app, KEY_A, player, limit=5) for g in page]
    finally:
        store_of(app).close()


def test_a_player_s_lists_live_as_long_as_their_games(redis_url, key_prefix, player):
    """A match played on keeps its place in the index: the lists holding it expire no sooner
    than the match's own tombstone, whatever created or moved them since."""
    app = keyed_app(REDIS_URL=redis_url, KEY_PREFIX=key_prefix, UNSTARTED_GAME_TTL_SECONDS="5",
                    GAME_TTL_SECONDS="600", GAME_TOMBSTONE_SECONDS="5")
    try:
        client = app.test_client()
        played = create(app, KEY_A, (player, None))
        game_id, tokens = played["game"]["id"], [p["token"] for p in played["players"]]
        shard = ids.shard_of(game_id)
        active, finished = (index_key(key_prefix, shard, player_index_id(key_id(KEY_A), player), which)
                            for which in ("active", "finished"))
        tombstone = game_keys(key_prefix, game_id).tombstone
        with Redis.from_url(redis_url) as redis_client:
            turn = played["game"]["hand"]["turn"]
            assert client.post(f"/v1/games/{game_id}/pass", headers={"Authorization": f"Bearer {tokens[turn]}"}
                               ).status_code == 200
            assert redis_client.pttl(active) >= redis_client.pttl(tombstone) - 1000
            # A new match of the player in the same shard, not yet moved in, must not shorten it.
            for _ in range(200):
                if ids.shard_of(create(app, KEY_A, (player, None))["game"]["id"]) == shard:
                    break
            assert redis_client.pttl(active) >= redis_client.pttl(tombstone) - 1000
            assert client.post(f"/v1/games/{game_id}/resign", headers={"Authorization": f"Bearer {tokens[0]}"}
                               ).status_code == 200
            assert redis_client.pttl(finished) >= redis_client.pttl(tombstone) - 1000
    finally:
        store_of(app).close()


def test_an_embedded_store_without_api_keys_lists_one_unscoped_set_of_players(player):
    # The quick start has no keys: its players' matches are listed without one, as ratings,
    # tickets and invites are; with a Redis store the same request is refused (test_errors).
    app = create_app({"REDIS_URL": "memory://", "LOG_LEVEL": "WARNING"})
    client = app.test_client()
    body = {"variant": "classic", "players": [{"name": "A", "external_id": player}, {"name": "B"}]}
    game_id = client.post("/v1/games", json=body).get_json()["game"]["id"]
    listed = client.get(f"/v1/players/{player}/games")
    assert listed.status_code == 200
    assert [game["id"] for game in listed.get_json()["games"]] == [game_id]
