"""What a studio's backend needs to run matches over days, through HTTP on the real Redis:
its own ids and metadata, an idempotent creation, replacing a seat's token, expired versus
never-existing matches, codes with parameters on problems and hints, the next turn in every event."""
from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from redis import Redis

from service import ids, rules
from service.store.keys import game_keys
from tests.api.conftest import build_app
from tests.api.sessions import Session
from tests.api.support import API_KEY, store_of
from tests.api.test_errors import assert_problem

OTHER_KEY = "integrators-other-key"
METADATA_MAX = 1024


@pytest.fixture
def app(redis_url, key_prefix):
    app = build_app(REDIS_URL=redis_url, KEY_PREFIX=key_prefix, API_KEYS=f"{API_KEY},{OTHER_KEY}")
    yield app
    store_of(app).close()


@pytest.fixture
def client(app):
    return app.test_client()


def bearer(token: str | None) -> dict:
    return {} if token is None else {"Authorization": f"Bearer {token}"}


def sized(size: int, letter: str = "x") -> dict:
    """A JSON object of exactly ``size`` bytes as compact JSON in UTF-8 (``letter`` one or two bytes)."""
    width = len(letter.encode())
    data = {"k": letter * ((size - len('{"k":""}')) // width) + "x" * ((size - len('{"k":""}')) % width)}
    assert len(json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()) == size
    return data


def classic(players=None, **extra) -> dict:
    return {"variant": "classic", "players": players or [{"name": "Ann"}, {"name": "Bob"}], **extra}


# --- ids and metadata -------------------------------------------------------------------------

def test_metadata_and_external_ids_come_back_in_every_view(client):
    match_meta = {"tournament": "spring", "round": 2, "tags": ["a", "b"], "nested": {"x": None}}
    players = [{"name": "Ann", "external_id": "user-1", "metadata": {"avatar": "fox"}},
               {"name": "Bob", "external_id": "user-2"}]
    created = client.post("/v1/games", json=classic(players, metadata=match_meta)).get_json()
    game_id, tokens = created["game"]["id"], [p["token"] for p in created["players"]]
    turn = created["game"]["hand"]["turn"]
    moved = client.post(f"/v1/games/{game_id}/pass", headers=bearer(tokens[turn])).get_json()
    views = [created["game"], moved, client.get(f"/v1/games/{game_id}").get_json(),
             client.get(f"/v1/games/{game_id}", headers=bearer(tokens[0])).get_json()]
    for view in views:
        assert view["metadata"] == match_meta
        assert [(p["external_id"], p["metadata"]) for p in view["players"]] == [("user-1", {"avatar": "fox"}),
                                                                                 ("user-2", None)]


@pytest.mark.parametrize("letter", ["x", "é"])
@pytest.mark.parametrize("where", ["match", "seat"])
def test_metadata_up_to_one_kilobyte(client, where, letter):
    def body(metadata: dict) -> dict:
        if where == "match":
            return classic(metadata=metadata)
        return classic([{"name": "Ann", "metadata": metadata}, {"name": "Bob"}])

    # Counted in UTF-8: 1 KB of text in another script fits, though its \u escapes would not.
    fits = client.post("/v1/games", json=body(sized(METADATA_MAX, letter)))
    assert fits.status_code == 201
    shown = fits.get_json()["game"]
    assert (shown["metadata"] if where == "match" else shown["players"][0]["metadata"]) == sized(METADATA_MAX, letter)
    field = "metadata" if where == "match" else "players.0.metadata"
    assert_problem(client.post("/v1/games", json=body(sized(METADATA_MAX + 1, letter))), 422, "invalid_request", field)
    assert_problem(client.post("/v1/games", json=body(["not", "an", "object"])), 422, "invalid_request", field)


@pytest.mark.parametrize(("raw", "why"), [('{"k": 1e999}', "range"), ('{"k": "\\udfff"}', "surrogate"),
                                          ('{"\\ud800": 1}', "surrogate")])
def test_metadata_that_cannot_be_returned_as_sent_is_refused(client, raw, why):
    body = '{"variant": "classic", "players": [{"name": "Ann"}, {"name": "Bob"}], "metadata": ' + raw + '}'
    refused = assert_problem(client.post("/v1/games", data=body, content_type="application/json"),
                             422, "invalid_request", "metadata")
    assert why in str(refused["errors"]["metadata"])


def nested(depth: int) -> dict:
    """A metadata object whose objects and arrays reach ``depth`` levels (the object is level 1)."""
    value: object = 0
    for _ in range(depth - 1):
        value = [value]
    return {"k": value}


@pytest.mark.parametrize("where", ["match", "seat"])
@pytest.mark.parametrize(("metadata", "stored"), [
    ({"k": 2**63 - 1}, True), ({"k": -2**63}, True), (nested(32), True),
    ({"k": 2**63}, False), ({"k": 2**64}, False), ({"k": [-2**63 - 1]}, False), ({"k": 10**30}, False),
    (nested(33), False), (nested(253), False),
], ids=["int64-max", "int64-min", "depth-32", "2^63", "2^64", "below-int64", "10^30", "depth-33", "depth-253"])
def test_metadata_the_record_cannot_store_is_refused_not_a_500(client, where, metadata, stored):
    # The stored record is written with 64-bit integers and bounded nesting: beyond them the
    # save failed after every check had passed (500 internal_error).
    if where == "match":
        body, field = classic(metadata=metadata), "metadata"
    else:
        body, field = classic([{"name": "Ann", "metadata": metadata}, {"name": "Bob"}]), "players.0.metadata"
    answer = client.post("/v1/games", data=json.dumps(body), content_type="application/json")
    if stored:
        assert answer.status_code == 201
        game = answer.get_json()["game"]
        assert (game["metadata"] if where == "match" else game["players"][0]["metadata"]) == metadata
    else:
        assert_problem(answer, 422, "invalid_request", field)


def test_an_external_id_is_at_most_128_characters(client):
    ok = client.post("/v1/games", json=classic([{"name": "Ann", "external_id": "u" * 128}, {"name": "Bob"}]))
    assert ok.status_code == 201
    too_long = client.post("/v1/games", json=classic([{"name": "Ann", "external_id": "u" * 129}, {"name": "Bob"}]))
    assert_problem(too_long, 422, "invalid_request", "players.0.external_id")


# --- an idempotent creation -------------------------------------------------------------------

def test_a_retried_creation_returns_the_same_match_and_tokens(client):
    body = classic([{"name": "Ann", "external_id": "idem-1"}, {"name": "Bob"}], metadata={"order": 7})
    first = client.post("/v1/games", json=body, headers={"Idempotency-Key": "order-7"})
    again = client.post("/v1/games", json=body, headers={"Idempotency-Key": "order-7"})
    assert first.status_code == 201 and again.status_code in (200, 201)
    assert again.get_json()["game"]["id"] == first.get_json()["game"]["id"]
    assert again.get_json()["players"] == first.get_json()["players"]
    game_id = first.get_json()["game"]["id"]
    for seat, player in enumerate(first.get_json()["players"]):
        assert client.get(f"/v1/games/{game_id}", headers=bearer(player["token"])).get_json()["you"]["seat"] == seat
    listed = client.get("/v1/players/idem-1/games", headers={"X-API-Key": API_KEY}).get_json()["games"]
    assert [g["id"] for g in listed].count(game_id) == 1


def test_a_creation_key_reused_with_another_body_is_refused(client):
    assert client.post("/v1/games", json=classic(), headers={"Idempotency-Key": "k-1"}).status_code == 201
    other = classic([{"name": "Ann"}, {"name": "Zed"}])
    body = assert_problem(client.post("/v1/games", json=other, headers={"Idempotency-Key": "k-1"}),
                          422, "idempotency_key_reused", "Idempotency-Key")
    assert isinstance(body["params"], dict)


def test_creation_keys_are_scoped_per_api_key(client):
    mine = client.post("/v1/games", json=classic(), headers={"Idempotency-Key": "shared"}).get_json()
    theirs = client.post("/v1/games", json=classic(), headers={"Idempotency-Key": "shared", "X-API-Key": OTHER_KEY})
    assert theirs.status_code == 201 and theirs.get_json()["game"]["id"] != mine["game"]["id"]


def test_anonymous_creation_keys_are_scoped_per_client_address(redis_url, key_prefix):
    # Shared by every anonymous caller, a key once seen (in a log, a proxy) would hand its
    # match's tokens to anyone who sent it again with the usual body.
    app = build_app(REDIS_URL=redis_url, KEY_PREFIX=key_prefix, ALLOW_ANONYMOUS_CREATE="true")
    try:
        def create(address: str):
            client = app.test_client()
            client.environ_base["REMOTE_ADDR"] = address
            answer = client.post("/v1/games", json=classic(), headers={"Idempotency-Key": "order-1", "X-API-Key": None})
            assert answer.status_code in (200, 201)
            return answer.get_json()

        first, retried, stranger = create("192.0.2.1"), create("192.0.2.1"), create("192.0.2.2")
        assert retried["game"]["id"] == first["game"]["id"] and retried["players"] == first["players"]
        assert stranger["game"]["id"] != first["game"]["id"]
        assert not {p["token"] for p in first["players"]} & {p["token"] for p in stranger["players"]}
    finally:
        store_of(app).close()


def test_racing_retries_of_a_creation_make_one_match(app):
    barrier = threading.Barrier(4)

    def post(_):
        other = app.test_client()
        barrier.wait()
        return other.post("/v1/games", json=classic(), headers={"Idempotency-Key": "race"})

    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(post, range(4)))
    assert {a.status_code for a in answers} <= {200, 201}
    assert len({a.get_json()["game"]["id"] for a in answers}) == 1
    assert all(a.get_json()["players"] == answers[0].get_json()["players"] for a in answers)


# --- replacing a seat's token -----------------------------------------------------------------

def reissue(client, game_id: str, seat: int | str, key: str | None = API_KEY):
    return client.post(f"/v1/games/{game_id}/players/{seat}/token", headers={} if key is None else {"X-API-Key": key})


def test_a_new_token_replaces_the_old_one_at_once(client):
    created = client.post("/v1/games", json=classic(), headers={"Idempotency-Key": "tok"}).get_json()
    game_id, old = created["game"]["id"], [p["token"] for p in created["players"]]
    version = created["game"]["version"]
    response = reissue(client, game_id, 1)
    assert response.status_code == 200 and "no-store" in response.headers["Cache-Control"]
    new = response.get_json()
    assert new["seat"] == 1 and new["token"] not in old and new["version"] == version + 1
    assert_problem(client.get(f"/v1/games/{game_id}", headers=bearer(old[1])), 401, "unauthorized")
    assert_problem(client.post(f"/v1/games/{game_id}/resign", headers=bearer(old[1])), 401, "unauthorized")
    assert client.get(f"/v1/games/{game_id}", headers=bearer(new["token"])).get_json()["you"]["seat"] == 1
    assert client.get(f"/v1/games/{game_id}", headers=bearer(old[0])).get_json()["you"]["seat"] == 0
    # The creation retried shows the replaced token no more.
    again = client.post("/v1/games", json=classic(), headers={"Idempotency-Key": "tok"}).get_json()
    assert [p["token"] for p in again["players"]] == [old[0], None]
    turn = client.get(f"/v1/games/{game_id}").get_json()["hand"]["turn"]
    token = new["token"] if turn == 1 else old[0]
    assert client.post(f"/v1/games/{game_id}/pass", headers=bearer(token)).status_code == 200


def test_a_replaced_token_gets_no_replay_of_its_earlier_answers(client):
    # A retried move is answered with its first answer, which holds the seat's cards: a leaked
    # token that is replaced must not read them through a key it used.
    created = client.post("/v1/games", json=classic()).get_json()
    game_id, tokens = created["game"]["id"], [p["token"] for p in created["players"]]
    turn = created["game"]["hand"]["turn"]
    first = client.post(f"/v1/games/{game_id}/pass", headers={**bearer(tokens[turn]), "Idempotency-Key": "k1"})
    assert first.status_code == 200 and first.get_json()["you"]["hand"]
    assert client.post(f"/v1/games/{game_id}/pass",
                       headers={**bearer(tokens[turn]), "Idempotency-Key": "k1"}).get_json() == first.get_json()
    assert reissue(client, game_id, turn).status_code == 200
    for body in (None, {}):  # the same request, and one that would be idempotency_key_reused
        retried = client.post(f"/v1/games/{game_id}/pass", json=body,
                              headers={**bearer(tokens[turn]), "Idempotency-Key": "k1"})
        assert_problem(retried, 401, "unauthorized")
        assert "hand" not in retried.get_data(as_text=True)


def test_only_the_creating_api_key_replaces_a_person_s_token(client):
    created = client.post("/v1/games", json=classic([{"name": "Ann"}, {"name": "Robo", "bot": True}])).get_json()
    game_id = created["game"]["id"]
    version = client.get(f"/v1/games/{game_id}").get_json()["version"]
    assert_problem(reissue(client, game_id, 0, OTHER_KEY), 403, "forbidden")
    assert_problem(reissue(client, game_id, 0, None), 401, "unauthorized")
    assert_problem(reissue(client, game_id, 1), 422, "invalid_request")  # the bot's seat
    for seat in (5, -1, "abc", "１", "0" * 300):
        assert_problem(reissue(client, game_id, seat), 422, "invalid_request", "seat")
    assert client.get(f"/v1/games/{game_id}").get_json()["version"] == version


# --- expired versus never existing ------------------------------------------------------------

def wait_until_gone(redis_url: str, key: str, timeout: float = 10) -> None:
    with Redis.from_url(redis_url) as redis_client:
        deadline = time.monotonic() + timeout
        while redis_client.exists(key):
            assert time.monotonic() < deadline, f"{key} did not expire"
            time.sleep(0.05)


@pytest.mark.slow
def test_an_expired_match_is_410_until_its_tombstone_goes_then_404(redis_url, key_prefix):
    app = build_app(REDIS_URL=redis_url, KEY_PREFIX=key_prefix, UNSTARTED_GAME_TTL_SECONDS="1",
                    GAME_TTL_SECONDS="1", GAME_TOMBSTONE_SECONDS="1")
    try:
        client = app.test_client()
        created = client.post("/v1/games", json=classic()).get_json()
        game_id, tokens = created["game"]["id"], [p["token"] for p in created["players"]]
        moved_at = time.time()
        turn = created["game"]["hand"]["turn"]
        assert client.post(f"/v1/games/{game_id}/pass", headers=bearer(tokens[turn])).status_code == 200
        keys = game_keys(key_prefix, game_id)
        wait_until_gone(redis_url, keys.state)
        requests = {
            "public view": lambda: client.get(f"/v1/games/{game_id}"),
            "player view": lambda: client.get(f"/v1/games/{game_id}", headers=bearer(tokens[0])),
            "events": lambda: client.get(f"/v1/games/{game_id}/events"),
            "move": lambda: client.post(f"/v1/games/{game_id}/pass", headers=bearer(tokens[1 - turn])),
            "rematch": lambda: client.post(f"/v1/games/{game_id}/rematch", headers=bearer(tokens[0])),
            "abort": lambda: client.post(f"/v1/games/{game_id}/abort", headers={"X-API-Key": API_KEY}),
        }
        for name, send in requests.items():
            body = assert_problem(send(), 410, "game_expired")
            expired_at = body["params"]["expired_at"]
            assert rules.iso_time(moved_at) <= expired_at <= rules.iso_time(time.time()), name
        assert_problem(client.get(f"/v1/games/{ids_never_issued()}"), 404, "game_not_found")
        wait_until_gone(redis_url, keys.tombstone)
        assert_problem(client.get(f"/v1/games/{game_id}"), 404, "game_not_found")
    finally:
        store_of(app).close()


def ids_never_issued() -> str:
    return ids.new_game_id()


def test_an_id_that_never_existed_is_404(client):
    assert_problem(client.get(f"/v1/games/{ids_never_issued()}"), 404, "game_not_found")
    assert_problem(client.get("/v1/games/g_not-even-an-id"), 404, "game_not_found")


# --- codes for people's texts; the next turn in every event -------------------------------------

def test_hints_carry_a_code_and_its_parameters_in_every_phase(app):
    session = Session.open(app, "box", [("Ann", None), ("Bob", None), ("Cy", None)], seed=71)
    phases = set()
    for _ in range(400):
        match = session.match()
        if match.is_finished or session.replay.counts.get("hand_scored", 0) >= 2:
            break
        for seat in range(3):
            hint = session.get(seat, "/hint")
            assert hint.status_code == 200, hint.get_json()
            body = hint.get_json()
            assert isinstance(body["reason"], str) and body["reason"]
            assert isinstance(body["reason_code"], str) and body["reason_code"] and isinstance(body["params"], dict)
            if seat == match.sitter:
                assert body["seat"] == match.captain
            if body["seat"] == match.turn:
                legal = session.view(match.turn)["you"]["legal_actions"]
                assert body["action"]["type"] in legal
                phases.add(match.hand.phase.value)
            else:
                assert body["action"] is None and body["reason_code"] == "waiting"
                assert body["params"] == {"turn": match.turn}
        session.play_move(match.turn)
    assert {"upcard_offer", "draw", "discard", "layoff"} <= phases


def test_every_event_names_the_seat_to_act_next(app):
    session = Session.open(app, "classic", [("Ann", None), ("Bob", None)], seed=73)
    session.play_until(lambda: session.replay.counts.get("hand_scored", 0) >= 2)
    for viewer in (None, 0, 1):
        shown = session.get(viewer, "/events").get_json()["events"]
        assert shown and all("turn" in event for event in shown)
        # The turn an event names is the seat of the next action.
        for event, following in zip(shown, shown[1:]):
            if following["type"] in ("draw", "pass", "discard", "knock", "layoff"):
                assert following["seat"] == event["turn"], (event, following)
        assert shown[-1]["turn"] == session.view(None)["hand"]["turn"]
    session.post(0, "resign")
    last = session.get(None, "/events").get_json()["events"][-2:]
    assert [e["turn"] for e in last] == [None, None]
