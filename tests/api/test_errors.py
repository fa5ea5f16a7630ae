"""Every error code, provoked through HTTP; a refused request changes nothing.

Each refusal is checked for its status, its problem+json body and its stable code, and
then the public view, the ETag, the raw stored record and the event log are compared with
what they were before the request.
"""
from __future__ import annotations

import json
from http import HTTPStatus

import pytest
import redis
from flask import Flask

from service.api.context import EXTENSION
from service.api.docs.routes import openapi_text
from tests.api.conftest import build_app
from tests.api.support import API_KEY, PROBLEM, Table, play_one, seat_to_act, store_of

SEED = 5
TRACE_MARKERS = ("Traceback", 'File "', "service/", "Error:")


def assert_problem(response, status: int, code: str, field: str | None = None) -> dict:
    body = response.get_json(force=True)
    assert response.status_code == status, body
    assert response.mimetype == PROBLEM
    assert body["status"] == status and body["code"] == code
    assert set(body) <= {"type", "title", "status", "detail", "code", "params", "errors"}
    assert isinstance(body["params"], dict)
    assert body["type"].endswith(code) and body["title"] and body["detail"]
    assert not any(marker in response.get_data(as_text=True) for marker in TRACE_MARKERS)
    if field is not None:
        assert field in body["errors"], body
    return body


@pytest.fixture
def table(redis_app: Flask, client) -> Table:
    return Table.open(redis_app, client, "classic", seed=SEED)


def refused(table: Table, send, status: int, code: str, field: str | None = None) -> dict:
    """Send a request that must be refused, and check that nothing changed."""
    before = table.snapshot()
    body = assert_problem(send(), status, code, field)
    assert table.snapshot() == before
    return body


def advance_to(table: Table, phase: str) -> dict:
    """Play the policy until the hand is in ``phase``; returns the public view."""
    for _ in range(500):
        view = table.view()
        if view["hand"]["phase"] == phase:
            return view
        assert play_one(table).status_code == 200
    raise AssertionError(f"never reached {phase}")


def to_discard_phase(table: Table) -> tuple[int, dict]:
    """Both pass the upcard, the non-dealer draws from the stock: the non-dealer to discard."""
    view = table.view()
    non_dealer = view["hand"]["turn"]
    assert table.act(non_dealer, "pass").status_code == 200
    assert table.act(1 - non_dealer, "pass").status_code == 200
    assert table.act(non_dealer, "draw", {"source": "stock"}).status_code == 200
    return non_dealer, table.view(non_dealer)["you"]


# --- 400 / 415 / 413 / 422: the request itself is wrong --------------------------------------

def test_malformed_json_is_400(table):
    seat = seat_to_act(table.view())
    refused(table, lambda: table.act(seat, "draw", data='{"source": ', content_type="application/json"), 400, "invalid_request")


@pytest.mark.parametrize("data", ["1" * 5000, "[" * 50000, '{"source": NaN}', b'{"source": "\xff"}'])
def test_json_that_python_cannot_take_safely_is_400(table, data):
    seat = seat_to_act(table.view())
    refused(table, lambda: table.act(seat, "draw", data=data, content_type="application/json"), 400, "invalid_request")


def test_a_body_that_is_not_json_is_415(table):
    seat = seat_to_act(table.view())
    refused(table, lambda: table.act(seat, "draw", data='{"source": "stock"}', content_type="text/plain"), 415, "unsupported_media_type")


@pytest.mark.parametrize("content_type", [
    "application/json; charset=latin-1", "application/json; charset=utf-16", "application/json-patch+json",
    "application/merge-patch+json", "application/json; profile=x", "text/json",
])
def test_json_in_another_charset_or_media_type_is_415(table, content_type):
    # JSON between systems is UTF-8 (RFC 8259): application/json, charset=utf-8 at most.
    seat = seat_to_act(table.view())
    refused(table, lambda: table.act(seat, "pass", data="{}", content_type=content_type), 415, "unsupported_media_type")


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-32", "utf-8-sig"])
def test_a_body_that_is_not_utf8_is_400(table, encoding):
    # Python's json.loads guesses UTF-16 and UTF-32 from the bytes; a byte order mark is not JSON text either.
    seat = seat_to_act(table.view())
    body = '{"source": "stock"}'.encode(encoding)
    refused(table, lambda: table.act(seat, "draw", data=body, content_type="application/json"), 400, "invalid_request")


@pytest.mark.parametrize("content_type", ["application/json; charset=utf-8", "APPLICATION/JSON; CHARSET=UTF-8",
                                          'application/json;charset="utf-8"'])
def test_json_in_utf8_may_say_so_in_any_case(table, content_type):
    seat = seat_to_act(table.view())
    assert table.act(seat, "pass", data="{}", content_type=content_type).status_code == 200


@pytest.mark.parametrize("length", ["-1", "abc", "+2", "2, 2", " 2"])
def test_a_content_length_that_is_not_a_size_is_400(table, length):
    # Werkzeug reads such a length as an empty body: a pass would be played without its body.
    seat = seat_to_act(table.view())
    refused(table, lambda: table.act(seat, "pass", data="{}", content_type="application/json",
                                     environ_overrides={"CONTENT_LENGTH": length}), 400, "invalid_request")


@pytest.mark.parametrize(("suffix", "query", "field"), [
    ("/events", "after=1&after=2", "after"), ("/events", "wait=0&wait=1", "wait"),
    ("/events", "after=0&wait=0&after=0", "after"),
])
def test_a_query_parameter_given_twice_is_422(table, suffix, query, field):
    refused(table, lambda: table.client.get(f"/v1/games/{table.game_id}{suffix}?{query}"), 422, "invalid_request", field)


def test_a_dry_run_flag_given_twice_is_422(table):
    seat = seat_to_act(table.view())
    refused(table, lambda: table.act(seat, "layoff?dry_run=true&dry_run=false", {}), 422, "invalid_request", "dry_run")


def test_a_body_over_the_limit_is_413(table):
    seat = seat_to_act(table.view())
    big = {"source": "stock", "pad": "x" * 70000}
    refused(table, lambda: table.act(seat, "draw", big), 413, "payload_too_large")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"source": "table"}, "source"),
        ({}, "source"),
        ({"source": "stock", "extra": 1}, "extra"),
        ([], "body"),
        ({"source": 5}, "source"),
    ],
)
def test_schema_violations_are_422_naming_the_field(table, body, field):
    seat = seat_to_act(table.view())
    refused(table, lambda: table.act(seat, "draw", body), 422, "invalid_request", field)


@pytest.mark.parametrize("card", ["10d", "KD", "", "Xx", 7, None, ["As"], "A" * 100])
def test_a_bad_card_is_422_invalid_card_naming_it(table, card):
    seat, _ = to_discard_phase(table)
    body = refused(table, lambda: table.act(seat, "discard", {"card": card}), 422, "invalid_card", "card")
    if isinstance(card, str) and 0 < len(card) < 10:
        assert card in body["detail"]
    # params hold the value as sent (JSON for what is not text), cut short, for a client's own message.
    sent = card if isinstance(card, str) else json.dumps(card)
    assert body["params"]["value"] == (sent if len(sent) <= 20 else sent[:20] + "…")


def test_a_bad_card_inside_melds_is_named_by_its_path(table):
    seat, you = to_discard_phase(table)
    body = {"discard": you["best_discard"], "melds": [["As", "2s", "3x"]]}
    refused(table, lambda: table.act(seat, "knock", body), 422, "invalid_card", "melds.0.2")


def test_query_and_header_violations_are_422(table):
    refused(table, lambda: table.get(None, "/events", after="-1"), 422, "invalid_request", "after")
    refused(table, lambda: table.get(None, "/events", after=str(10**9 + 1)), 422, "invalid_request", "after")
    refused(table, lambda: table.get(None, "/events", wait="31"), 422, "invalid_request", "wait")
    refused(table, lambda: table.get(None, "/events", wait="nan"), 422, "invalid_request", "wait")
    seat = seat_to_act(table.view())
    refused(
        table, lambda: table.act(seat, "pass", headers={"Idempotency-Key": "x" * 201}), 422, "invalid_request", "Idempotency-Key"
    )
    for not_visible in ("a\tb", "a b"):
        refused(table, lambda: table.act(seat, "pass", headers={"Idempotency-Key": not_visible}), 422, "invalid_request",
                "Idempotency-Key")


# A rated match needs a distinct external id on every person's seat.
RATED_REFUSALS = [
    ({"variant": "classic", "rated": True, "players": [{"name": "Ann"}, {"name": "Bob", "external_id": "b"}]}, 422,
     "external_id_required", "players"),
    ({"variant": "classic", "rated": True,
      "players": [{"name": "Ann", "external_id": "a"}, {"name": "Bob", "external_id": "a"}]}, 422,
     "duplicate_external_id", "players"),
]


@pytest.mark.parametrize(
    ("payload", "status", "code", "field"),
    [
        ({"variant": "classic", "players": [{"name": "Ann"}, {"name": "Bob"}], "rules": {"knock_limit": 11}}, 422, "invalid_rules", "rules.knock_limit"),
        ({"variant": "classic", "players": [{"name": "Ann"}, {"name": "Bob"}], "rules": {"oklahoma": True}}, 422, "invalid_rules", "rules.oklahoma"),
        ({"variant": "classic", "players": [{"name": "Ann"}, {"name": "Bob"}], "rules": {"layoff_on_gin": 1}}, 422, "invalid_rules", "rules.layoff_on_gin"),
        ({"variant": "classic", "players": [{"name": "Ann", "bot": True}, {"name": "Bob", "bot": True}]}, 422, "no_human_seat", "players"),
        ({"variant": "box", "players": [{"name": "Ann"}, {"name": "Bob"}]}, 422, "invalid_request", "players"),
        ({"variant": "poker", "players": [{"name": "Ann"}, {"name": "Bob"}]}, 422, "invalid_request", "variant"),
        ({"variant": "classic", "players": [{"name": ""}, {"name": "Bob"}]}, 422, "invalid_request", "players.0.name"),
        ({"variant": "classic", "players": [{"name": "A" * 41}, {"name": "Bob"}]}, 422, "invalid_request", "players.0.name"),
        ({"variant": "classic", "players": [{"name": "Ann\u0000"}, {"name": "Bob"}]}, 422, "invalid_request", "players.0.name"),
        ({"variant": "classic", "players": [{"name": "Ann\u2028"}, {"name": "Bob"}]}, 422, "invalid_request", "players.0.name"),
        ({"variant": "classic", "players": [{"name": "Ann"}, {"name": "Bob"}], "seed": -1}, 422, "invalid_request", "seed"),
        ({"variant": "classic", "players": [{"name": "Ann"}, {"name": "Bob"}], "seed": 2**64}, 422, "invalid_request", "seed"),
        ({"variant": "classic", "players": [{"name": "Ann"}, {"name": "Bob"}], "seed": 1.5}, 422, "invalid_request", "seed"),
        *RATED_REFUSALS,
    ],
)
def test_creation_refusals_create_nothing(redis_app, client, payload, status, code, field):
    games_before = store_keys(redis_app)
    assert_problem(client.post("/v1/games", json=payload), status, code, field)
    assert store_keys(redis_app) == games_before


@pytest.mark.parametrize(("payload", "status", "code", "field"), RATED_REFUSALS)
def test_rated_creation_refusals_have_titles_of_their_own_and_are_documented(client, payload, status, code, field):
    body = assert_problem(client.post("/v1/games", json=payload), status, code, field)
    assert body["title"] != HTTPStatus(status).phrase
    creation = json.loads(openapi_text(build_app(REDIS_URL="memory://")))["paths"]["/v1/games"]["post"]
    assert f"`{code}`" in creation["description"]


def store_keys(app: Flask) -> set[bytes]:
    """Every Redis key of this app's prefix (to see that nothing was written)."""
    config = app.extensions[EXTENSION].config
    with redis.Redis.from_url(config.redis_url) as raw:
        return set(raw.scan_iter(match=f"{config.key_prefix}*"))


def test_analyze_refusals(client):
    ten = ["As", "2s", "3s", "7d", "7c", "7h", "Td", "Jd", "Qd", "4c"]
    assert_problem(client.post("/v1/hands/analyze", json={"cards": ten[:9]}), 422, "invalid_request", "cards")
    assert_problem(client.post("/v1/hands/analyze", json={"cards": ten + ["Kd", "Kc"]}), 422, "invalid_request", "cards")
    body = assert_problem(client.post("/v1/hands/analyze", json={"cards": ten[:9] + ["As"]}), 422, "invalid_card", "cards.9")
    assert "As" in body["detail"]
    body = assert_problem(client.post("/v1/hands/analyze", json={"cards": ten[:9] + ["1s"]}), 422, "invalid_card", "cards.9")
    assert "1s" in body["detail"]
    assert_problem(client.post("/v1/hands/analyze", json={"cards": ten, "knock_limit": 11}), 422, "invalid_request", "knock_limit")


# --- 401 / 403 / 404 / 405 -------------------------------------------------------------------

@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer ", "Bearer not-a-token", "Basic YW5uOmJvYg==", "bearer"],
)
def test_actions_need_a_valid_player_token(table, authorization):
    headers = {} if authorization is None else {"Authorization": authorization}
    refused(table, lambda: table.act(None, "pass", headers=headers), 401, "unauthorized")
    assert table.act(None, "pass", headers=headers).headers["WWW-Authenticate"].startswith("Bearer")


def test_an_unknown_token_is_refused_on_reads_not_downgraded(table):
    headers = {"Authorization": "Bearer forged"}
    refused(table, lambda: table.get(None, headers=headers), 401, "unauthorized")
    refused(table, lambda: table.get(None, "/events", headers=headers), 401, "unauthorized")
    refused(table, lambda: table.get(None, "/hint", headers=headers), 401, "unauthorized")
    refused(table, lambda: table.get(None, "/hint"), 401, "unauthorized")


def test_tokens_of_one_match_are_refused_on_another(redis_app, client, table):
    other = Table.open(redis_app, client, "classic", seed=SEED)
    seat = seat_to_act(table.view())
    stranger = {"Authorization": f"Bearer {other.tokens[seat]}"}
    refused(table, lambda: table.act(None, "pass", headers=stranger), 401, "unauthorized")
    refused(table, lambda: table.get(None, headers=stranger), 401, "unauthorized")
    refused(table, lambda: table.get(None, "/events", headers=stranger), 401, "unauthorized")


def test_a_classic_player_may_not_advise(table):
    seat = seat_to_act(table.view())
    refused(table, lambda: table.act(seat, "advice", {"message": "hi"}), 403, "forbidden")


def test_the_box_sitter_may_not_play_nor_the_box_advise(redis_app, client):
    box = Table.open(redis_app, client, "box", seed=SEED)
    by_role = {p["role"]: p["seat"] for p in box.view()["players"]}
    refused(box, lambda: box.act(by_role["sitter"], "pass"), 403, "forbidden")
    refused(box, lambda: box.act(by_role["box"], "advice", {"message": "psst"}), 403, "forbidden")


def test_unknown_games_are_404(table):
    for game_id in ("g_AAAAAAAAAAAAAAAAAAAAAA", "nonsense", "g_" + "A" * 23):
        for method, suffix in (("get", ""), ("get", "/events"), ("post", "/pass")):
            response = getattr(table.client, method)(f"/v1/games/{game_id}{suffix}", headers=table.auth(0))
            assert_problem(response, 404, "game_not_found")


def test_unknown_routes_and_methods(table):
    assert_problem(table.client.get("/v1/nothing"), 404, "not_found")
    response = refused(table, lambda: table.client.delete(f"/v1/games/{table.game_id}"), 405, "method_not_allowed")
    assert response["status"] == 405
    assert "GET" in table.client.delete(f"/v1/games/{table.game_id}").headers["Allow"]


@pytest.mark.parametrize(("path", "code"), [
    ("/v1/games/{game}%2Fpass", "game_not_found"),  # an encoded slash is part of the id
    ("/v1/games/{game}%2fevents", "game_not_found"),
    ("/v1//games/{game}//pass", "not_found"),  # doubled slashes are not merged, nor redirected
    ("/v1/games//{game}", "not_found"),
])
def test_paths_are_matched_as_written(table, path, code):
    # Werkzeug's server and test client keep the target as sent in REQUEST_URI (gunicorn's
    # RAW_URI: tests/e2e/test_hostile_input.py).
    url = path.format(game=table.game_id)
    send = table.client.post if url.endswith("pass") else table.client.get
    refused(table, lambda: send(url, headers=table.auth(table.view()["hand"]["turn"])), 404, code)


def test_an_encoded_slash_in_an_external_id_is_its_text(client):
    # Clients generated from the document encode a / in a path parameter as %2F.
    body = {"variant": "classic", "players": [{"name": "Ann", "external_id": "team/ann"}, {"name": "Bob"}]}
    game_id = client.post("/v1/games", json=body).get_json()["game"]["id"]
    key = {"X-API-Key": API_KEY}
    for path in ("/v1/players/team%2Fann/games", "/v1/players/team%2fann/games", "/v1/players/team/ann/games"):
        response = client.get(path, headers=key)
        assert response.status_code == 200, response.get_data(as_text=True)
        assert [game["id"] for game in response.get_json()["games"]] == [game_id]
    for path in ("/v1/players/team%2Fann/ratings", "/v1/players/team%2Fann/ratings/classic/history"):
        assert_problem(client.get(path, headers=key), 404, "player_not_found")  # the route's answer: no rated match
    # Only inside the id: elsewhere an encoded slash is still no separator.
    for path in ("/v1/players/team%2Fann%2Fgames", "/v1/players/team/ann%2Fgames",
                 "/v1/players/team%2Fann/ratings/classic%2Fhistory", "/v1/players/team/ratings%2Fclassic%2Fhistory"):
        assert_problem(client.get(path, headers=key), 404, "not_found")


def test_creation_needs_the_api_key_when_configured(redis_url, key_prefix):
    app = build_app(REDIS_URL=redis_url, KEY_PREFIX=key_prefix, API_KEYS="k-one, k-two")
    client = app.test_client()
    body = {"variant": "classic", "players": [{"name": "A"}, {"name": "B"}]}
    assert_problem(client.post("/v1/games", json=body), 401, "unauthorized")
    assert_problem(client.post("/v1/games", json=body, headers={"X-API-Key": "k-one, k-two"}), 401, "unauthorized")
    # The key is checked before the body: a stranger learns nothing about the schema.
    assert_problem(client.post("/v1/games", json={}, headers={"X-API-Key": "wrong"}), 401, "unauthorized")
    assert_problem(client.post("/v1/games", json={}), 401, "unauthorized")  # ... and so is its absence
    assert client.post("/v1/games", json=body, headers={"X-API-Key": "k-two"}).status_code == 201
    store_of(app).close()


def test_a_wrong_api_key_is_refused_even_where_no_key_is_needed(table):
    # A stale or mistyped key must show at once, not at the integrator's first creation.
    wrong = {"X-API-Key": "not-one-of-ours"}
    hand = {"cards": ["As", "2s", "3s", "7d", "7c", "7h", "Td", "Jd", "Qd", "4c"]}
    seat = seat_to_act(table.view())
    version = table.view()["version"]
    for response in (table.client.get(f"/v1/games/{table.game_id}", headers=wrong),
                     table.client.get(f"/v1/games/{table.game_id}/events", headers=wrong),
                     table.client.get(f"/v1/games/{table.game_id}/hint", headers={**table.auth(seat), **wrong}),
                     table.client.post(f"/v1/games/{table.game_id}/pass", headers={**table.auth(seat), **wrong}),
                     table.client.post("/v1/hands/analyze", json=hand, headers=wrong)):
        refused = assert_problem(response, 401, "unauthorized")
        assert response.headers["WWW-Authenticate"] == 'ApiKey header="X-API-Key"', refused
    assert table.view()["version"] == version
    right = {"X-API-Key": API_KEY}
    assert table.client.get(f"/v1/games/{table.game_id}", headers=right).status_code == 200
    assert table.client.post("/v1/hands/analyze", json=hand, headers=right).status_code == 200
    assert table.client.get("/healthz", headers=wrong).status_code == 200


@pytest.mark.parametrize(("url", "reason"), [
    ("https://hooks.example/" + "a" * 2027, "too_long"),  # 2,049 characters
    ("https://elsewhere.example/gin", "host_not_allowed"),
    ("https://hooks.example/gin#top", "fragment"),
])
def test_a_callback_url_is_refused_with_its_reason(redis_url, key_prefix, url, reason):
    app = build_app(REDIS_URL=redis_url, KEY_PREFIX=key_prefix, WEBHOOK_ALLOWED_HOSTS="hooks.example")
    body = {"variant": "classic", "players": [{"name": "A"}, {"name": "B"}], "callback_url": url}
    refused = assert_problem(app.test_client().post("/v1/games", json=body), 422, "callback_not_allowed", "callback_url")
    assert refused["params"]["reason"] == reason
    store_of(app).close()


def test_the_creation_quota_says_when_its_minute_ends(redis_url, key_prefix):
    app = build_app(REDIS_URL=redis_url, KEY_PREFIX=key_prefix, CREATE_QUOTA_PER_MINUTE="2")
    app.extensions[EXTENSION].games.ctx.clock = lambda: 1_800_000_045.5  # 45.5 s into a clock minute
    client = app.test_client()
    body = {"variant": "classic", "players": [{"name": "A"}, {"name": "B"}]}
    # Three creations in one minute of the store's own clock (one more round if a minute began meanwhile).
    answers = [client.post("/v1/games", json=body) for _ in range(3)]
    if answers[-1].status_code == 201:
        answers = [client.post("/v1/games", json=body) for _ in range(3)]
    refused = assert_problem(answers[-1], 429, "creation_quota_exceeded")
    assert answers[-1].headers["Retry-After"] == "15" and refused["params"] == {"retry_after": 15, "limit": 2}
    store_of(app).close()


def test_a_server_without_api_keys_ignores_the_header(redis_url, key_prefix):
    # Nothing to check a key against: creation stays open, and what needs a key says why not.
    app = build_app(REDIS_URL=redis_url, KEY_PREFIX=key_prefix, API_KEYS="", ALLOW_ANONYMOUS_CREATE="true")
    client = app.test_client()
    body = {"variant": "classic", "players": [{"name": "A"}, {"name": "B"}]}
    created = client.post("/v1/games", json=body, headers={"X-API-Key": "any-key"})
    assert created.status_code == 201
    game_id = created.get_json()["game"]["id"]
    refused = assert_problem(client.post(f"/v1/games/{game_id}/abort", headers={"X-API-Key": "any-key"}),
                             401, "unauthorized")
    assert "none configured" in refused["detail"]
    assert client.get(f"/v1/games/{game_id}").get_json()["status"] == "active"
    assert_problem(client.get("/v1/players/someone/games", headers={"X-API-Key": "any-key"}), 401, "unauthorized")
    store_of(app).close()


# --- 409: the rules forbid it now --------------------------------------------------------------

def test_not_your_turn_and_wrong_phase(table):
    view = table.view()
    to_move = seat_to_act(view)
    assert view["hand"]["phase"] == "upcard_offer"
    refused(table, lambda: table.act(1 - to_move, "draw", {"source": "stock"}), 409, "not_your_turn")
    wrong_kind = refused(table, lambda: table.act(to_move, "discard", {"card": table.view(to_move)["you"]["hand"][0]}),
                         409, "wrong_phase")
    # One name for what the phase allows instead: the kinds of action, or for a draw the sources.
    assert wrong_kind["params"] == {"phase": "upcard_offer", "allowed": ["draw", "pass"]}
    wrong_source = refused(table, lambda: table.act(to_move, "draw", {"source": "stock"}), 409, "wrong_phase")
    assert wrong_source["params"] == {"phase": "upcard_offer", "allowed": ["discard"]}
    refused(table, lambda: table.act(to_move, "layoff"), 409, "wrong_phase")


def test_the_card_just_taken_may_not_be_discarded(table):
    view = table.view()
    seat, upcard = seat_to_act(view), view["hand"]["discard_top"]
    assert table.act(seat, "draw", {"source": "discard"}).status_code == 200
    refused(table, lambda: table.act(seat, "discard", {"card": upcard}), 409, "cannot_discard_drawn_card")
    refused(table, lambda: table.act(seat, "knock", {"discard": upcard}), 409, "cannot_discard_drawn_card")


def test_discarding_a_card_not_held(table):
    seat, you = to_discard_phase(table)
    missing = next(c for c in ("As", "2s", "3s", "4s", "5s") if c not in you["hand"])
    refused(table, lambda: table.act(seat, "discard", {"card": missing}), 409, "card_not_in_hand")


def test_knocking_with_too_much_deadwood_or_false_melds(table):
    seat, you = to_discard_phase(table)
    assert you["deadwood"] > 10 and not you["can_knock"]
    refused(table, lambda: table.act(seat, "knock", {"discard": you["best_discard"]}), 409, "deadwood_too_high")
    others = [c for c in you["hand"] if c != you["best_discard"]]
    refused(table, lambda: table.act(seat, "knock", {"discard": you["best_discard"], "melds": [others[:3]]}), 409, "invalid_melds")


def test_invalid_layoffs(table):
    advance_to(table, "layoff")
    view = table.view()
    defender = seat_to_act(view)
    knock = view["hand"]["knock"]
    meld = knock["melds"][0]
    hand = table.view(defender)["you"]["hand"]
    # A card that shares neither rank nor suit with the meld cannot extend it.
    stranger = next(c for c in hand if all(c[0] != m[0] and c[1] != m[1] for m in meld))
    refused(table, lambda: table.act(defender, "layoff", {"layoffs": [{"card": stranger, "meld": 0}]}), 409, "invalid_layoff")
    refused(table, lambda: table.act(defender, "layoff", {"layoffs": [{"card": hand[0], "meld": 9}]}), 409, "invalid_layoff")
    refused(table, lambda: table.act(defender, "layoff", {"melds": [hand[:3]]}), 409, "invalid_melds")


def test_a_finished_match_refuses_everything(redis_app, client):
    done = Table.open(redis_app, client, "classic", seed=SEED, rules={"target_score": 1})
    while done.view()["status"] == "active":
        assert play_one(done).status_code == 200
    for seat in (0, 1):
        refused(done, lambda: done.act(seat, "draw", {"source": "stock"}), 409, "game_finished")
        refused(done, lambda: done.act(seat, "layoff"), 409, "game_finished")
        refused(done, lambda: done.get(seat, "/hint"), 409, "game_finished")


# --- 412 / 422 idempotency_key_reused ---------------------------------------------------------

@pytest.mark.parametrize("if_match", ['"999"', "999", 'W/"1"', "abc", '"0", "2"'])
def test_if_match_naming_another_version_is_412(table, if_match):
    seat = seat_to_act(table.view())
    refused(table, lambda: table.act(seat, "pass", headers={"If-Match": if_match}), 412, "version_mismatch")


def test_an_idempotency_key_reused_for_another_request_is_422(table):
    seat = seat_to_act(table.view())
    assert table.act(seat, "pass", headers={"Idempotency-Key": "k1"}).status_code == 200
    other = seat_to_act(table.view())
    assert other != seat
    # Same seat, same key, another body: refused.
    refused(table, lambda: table.act(seat, "draw", {"source": "stock"}, headers={"Idempotency-Key": "k1"}), 422, "idempotency_key_reused")


# --- 500: a bug answers without internals ------------------------------------------------------

def test_an_unexpected_error_is_a_bare_500(redis_url, key_prefix):
    app = build_app(REDIS_URL=redis_url, KEY_PREFIX=key_prefix)

    def broken():
        raise RuntimeError("secret internal detail")

    app.add_url_rule("/broken", view_func=broken)
    response = app.test_client().get("/broken")
    body = assert_problem(response, 500, "internal_error")
    assert "secret" not in response.get_data(as_text=True) and body["detail"]


@pytest.mark.parametrize("stored", ['{"m": {"fmt": 99}, "t": []}', "not json at all", '{"t": []}'])
def test_a_stored_record_that_cannot_be_read_is_a_logged_500(redis_app, client, caplog, stored):
    table = Table.open(redis_app, client, "classic", seed=SEED)
    config = redis_app.extensions[EXTENSION].config
    with redis.Redis.from_url(config.redis_url) as raw:
        raw.hset(f"{config.key_prefix}{{{table.game_id}}}:s", "s", stored)
    for response in (table.get(None), table.get(0), table.act(0, "pass")):
        body = assert_problem(response, 500, "internal_error")
        assert stored not in response.get_data(as_text=True) and body["params"] == {}
    assert "unhandled error" in caplog.text


def test_no_layoffs_against_gin(redis_app, client):
    gin_only = Table.open(redis_app, client, "classic", seed=0, rules={"knock_limit": 0})
    view = advance_to(gin_only, "layoff")
    assert view["hand"]["knock"]["gin"]
    defender = seat_to_act(view)
    card = gin_only.view(defender)["you"]["hand"][0]
    refused(gin_only, lambda: gin_only.act(defender, "layoff", {"layoffs": [{"card": card, "meld": 0}]}), 409, "invalid_layoff")
