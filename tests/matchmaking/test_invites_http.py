"""Invites through HTTP, on the embedded store and on Redis (with the worker's runner beside the
app): the code, accepting it (once, by one guest; a box invite by two, in turn), the host's
long-poll, withdrawing, expiry on time, the rate limit on accepting, the bound on open invites,
and rated invites."""
from __future__ import annotations

import re
import threading
import time
from dataclasses import replace

import pytest

from service.api.context import EXTENSION
from service.store.matchmaking import Player
from service.matchmaking.invites import ALPHABET
from tests.api.support import API_KEY
from tests.api.test_errors import assert_problem
from tests.matchmaking.support import OTHER_KEY, seats_of

INVITES = "/v1/invites"
CODE = re.compile(r"[0-9A-HJKMNP-TV-Z]{8}")  # Crockford's base32: no I, L, O or U


def invite(service, host: str = "ann", key: str = API_KEY, **fields):
    body = {"host": {"external_id": host, "name": host.title()}, "variant": "classic", **fields}
    return service.client().post(INVITES, json=body, headers={"X-API-Key": key})


def invited(service, host: str = "ann", key: str = API_KEY, **fields) -> dict:
    response = invite(service, host, key, **fields)
    assert response.status_code == 201, response.get_json()
    return response.get_json()["invite"]


def accept(service, code: str, guest: str = "bob", key: str = API_KEY, **player):
    body = {"player": {"external_id": guest, "name": guest.title(), **player}}
    return service.client().post(f"{INVITES}/{code}/accept", json=body, headers={"X-API-Key": key})


def read(service, code: str, wait: float = 0, key: str = API_KEY):
    return service.client().get(f"{INVITES}/{code}", query_string={"wait": wait}, headers={"X-API-Key": key})


def withdraw(service, code: str, key: str = API_KEY):
    return service.client().delete(f"{INVITES}/{code}", headers={"X-API-Key": key})


def test_an_invite_has_a_code_of_eight_characters_without_look_alikes(start_quick_play):
    service = start_quick_play()
    created = invite(service)
    assert created.status_code == 201 and created.headers["Cache-Control"] == "private, no-store"
    found = created.get_json()["invite"]
    assert CODE.fullmatch(found["code"]) and set(ALPHABET) == set("0123456789ABCDEFGHJKMNPQRSTVWXYZ")
    assert created.headers["Location"] == f"{INVITES}/{found['code']}"
    assert found["status"] == "open" and found["rated"] is False and found["variant"] == "classic"
    assert found["host"] == {"external_id": "ann", "name": "Ann", "metadata": None}
    assert found["guest"] is None and found["guests"] == []
    assert {found[name] for name in ("game_id", "seat", "token")} == {None}
    assert read(service, found["code"]).get_json()["invite"] == found
    codes = {invited(service, f"host-{n}")["code"] for n in range(20)}
    assert len(codes) == 20 and all(CODE.fullmatch(code) for code in codes)


def test_accepting_creates_the_match_once_and_the_host_learns_it(start_quick_play):
    service = start_quick_play()
    code = invited(service, "ann")["code"]
    answered: dict = {}

    def host_waits() -> None:
        answered["invite"] = read(service, code, wait=10).get_json()["invite"]
        answered["at"] = time.monotonic()

    waiter = threading.Thread(target=host_waits)
    waiter.start()
    time.sleep(0.5)
    assert "invite" not in answered
    accepted = accept(service, code, "bob", metadata={"level": 3})
    accepted_at = time.monotonic()
    assert accepted.status_code == 201, accepted.get_json()
    assert accepted.headers["Cache-Control"] == "private, no-store"
    body = accepted.get_json()
    game_id = body["game"]["id"]
    assert accepted.headers["Location"] == f"/v1/games/{game_id}"
    assert body["players"][0] == {"seat": 0, "name": "Ann", "token": None}
    guest_token = body["players"][1]["token"]
    assert body["players"][1]["seat"] == 1 and body["players"][1]["name"] == "Bob" and guest_token
    assert seats_of(body["game"]) == ["ann", "bob"] and body["game"]["rated"] is False
    assert body["game"]["players"][1]["metadata"] == {"level": 3}
    waiter.join(15)
    host = answered["invite"]
    assert answered["at"] - accepted_at < 0.5
    assert host["status"] == "accepted" and host["game_id"] == game_id and host["seat"] == 0
    assert host["guest"] == {"external_id": "bob", "name": "Bob", "metadata": {"level": 3}}
    assert service.view(game_id, host["token"]).get_json()["you"]["seat"] == 0
    assert service.view(game_id, guest_token).get_json()["you"]["seat"] == 1
    # The same guest again: the same match and token. Anyone else: no such invite.
    again = accept(service, code, "bob", metadata={"level": 3})
    assert again.status_code == 201 and again.get_json()["game"]["id"] == game_id
    assert again.get_json()["players"][1]["token"] == guest_token
    assert_problem(accept(service, code, "cy"), 404, "invite_not_found")
    assert_problem(accept(service, code, "ann"), 404, "invite_not_found")
    # Accepted: it cannot be withdrawn.
    refused = assert_problem(withdraw(service, code), 409, "invite_accepted")
    assert refused["params"] == {"game_id": game_id}
    # A new token for the host's seat: the invite no longer shows the old one.
    reissued = service.client().post(f"/v1/games/{game_id}/players/0/token", headers={"X-API-Key": API_KEY})
    assert reissued.status_code == 200
    assert read(service, code).get_json()["invite"]["token"] is None


def test_a_box_invite_seats_two_friends_in_the_order_they_accept(start_quick_play):
    service = start_quick_play()
    code = invited(service, "ann", variant="box")["code"]
    woken: dict = {}
    waiter = threading.Thread(target=lambda: woken.update(read(service, code, wait=10).get_json()["invite"]))
    waiter.start()
    time.sleep(0.3)
    first = accept(service, code, "bob")
    assert first.status_code == 202, first.get_json()
    bob = {"external_id": "bob", "name": "Bob", "metadata": None}
    seated = first.get_json()["invite"]
    assert seated["status"] == "open" and seated["guests"] == [bob] and seated["guest"] == bob
    assert {seated[name] for name in ("game_id", "seat", "token")} == {None}
    waiter.join(15)
    assert woken["status"] == "open" and woken["guests"] == [bob]  # the host's long-poll saw the seat taken
    again = accept(service, code, "bob")
    assert again.status_code == 202 and again.get_json()["invite"]["guests"] == [bob]
    for who, name in (("ann", "Ann"), ("bob", "Robert")):  # the host, or bob under another name: no second seat
        assert_problem(accept(service, code, who, name=name), 409, "own_invite")
    last = accept(service, code, "cy", metadata={"level": 2})
    assert last.status_code == 201, last.get_json()
    body = last.get_json()
    game_id = body["game"]["id"]
    assert body["game"]["variant"] == "box" and seats_of(body["game"]) == ["ann", "bob", "cy"]
    assert [(p["seat"], p["name"]) for p in body["players"]] == [(0, "Ann"), (1, "Bob"), (2, "Cy")]
    assert [p["token"] is not None for p in body["players"]] == [False, False, True]
    # Bob asks again for his token; the host reads the invite for hers.
    bobs = accept(service, code, "bob")
    assert bobs.status_code == 201 and bobs.get_json()["game"]["id"] == game_id
    assert [p["token"] is not None for p in bobs.get_json()["players"]] == [False, True, False]
    host = read(service, code).get_json()["invite"]
    assert host["status"] == "accepted" and host["game_id"] == game_id and host["seat"] == 0
    assert [guest["external_id"] for guest in host["guests"]] == ["bob", "cy"]
    tokens = [host["token"], bobs.get_json()["players"][1]["token"], body["players"][2]["token"]]
    assert [service.view(game_id, token).get_json()["you"]["seat"] for token in tokens] == [0, 1, 2]
    assert_problem(accept(service, code, "dee"), 404, "invite_not_found")


def test_a_box_invite_withdrawn_with_one_friend_seated_is_used_by_nobody(start_quick_play):
    service = start_quick_play()
    code = invited(service, "ann", variant="box")["code"]
    assert accept(service, code, "bob").status_code == 202
    assert withdraw(service, code).status_code == 204
    assert_problem(accept(service, code, "bob"), 404, "invite_not_found")
    assert_problem(accept(service, code, "cy"), 404, "invite_not_found")
    withdrawn = read(service, code).get_json()["invite"]
    assert withdrawn["status"] == "withdrawn" and withdrawn["game_id"] is None


def test_a_box_invite_past_its_time_seats_nobody_more_nor_answers_its_first_friend(start_quick_play):
    """Between an invite's time and its expiry timer's firing it is already gone for everyone."""
    service = start_quick_play()
    invites = service.app.extensions[EXTENSION].invites
    code = invited(service, "ann", variant="box", expires_in=60)["code"]
    assert accept(service, code, "bob").status_code == 202
    real_clock = invites.ctx.clock
    invites.ctx.clock = lambda: real_clock() + 61
    try:
        assert_problem(accept(service, code, "bob"), 404, "invite_not_found")
        assert_problem(accept(service, code, "cy"), 404, "invite_not_found")
    finally:
        invites.ctx.clock = real_clock


def test_a_seat_is_taken_only_from_the_invite_as_read_and_while_it_is_open(start_quick_play):
    """The store's compare-and-set: a second seat from the same read, or a seat in a withdrawn
    invite, changes nothing."""
    service = start_quick_play()
    store = service.app.extensions[EXTENSION].invites._invites()
    code = invited(service, "ann", variant="box")["code"]
    read_once = store.get(code)
    bob, cy = Player("bob", "Bob"), Player("cy", "Cy")
    assert store.seat(read_once, replace(read_once, guests=(bob,), version=read_once.version + 1))
    assert not store.seat(read_once, replace(read_once, guests=(cy,), version=read_once.version + 1))
    seated = store.get(code)
    assert (seated.status, seated.guests, seated.version) == ("open", (bob,), read_once.version + 1)
    assert withdraw(service, code).status_code == 204
    withdrawn = store.get(code)
    assert not store.seat(withdrawn, replace(withdrawn, guests=(bob, cy), version=withdrawn.version + 1))
    assert store.get(code).guests == (bob,)


def test_the_host_long_poll_is_capped_at_the_longest_wait_the_server_allows(start_quick_play):
    service = start_quick_play(LONG_POLL_MAX_SECONDS="1")
    code = invited(service)["code"]
    started = time.monotonic()
    assert read(service, code, wait=10).get_json()["invite"]["status"] == "open"
    assert time.monotonic() - started < 3


def test_the_host_cannot_accept_their_own_invite(start_quick_play):
    service = start_quick_play()
    code = invited(service, "ann")["code"]
    assert_problem(accept(service, code, "ann"), 409, "own_invite")
    assert read(service, code).get_json()["invite"]["status"] == "open"
    assert accept(service, code, "bob").status_code == 201


def test_a_code_is_read_back_whatever_its_case_and_look_alikes(start_quick_play):
    service = start_quick_play()
    # A code with a 0 or a 1 in it, to write with the letters that look like them.
    code = next(code for code in (invited(service, f"host-{n}")["code"] for n in range(60)) if set(code) & {"0", "1"})
    written = code.lower().replace("0", "o").replace("1", "l")
    hyphenated = f"{written[:4]}-{written[4:]}"
    assert read(service, hyphenated).get_json()["invite"]["code"] == code
    first = accept(service, written.replace("l", "I"), "bob")
    assert first.status_code == 201, first.get_json()
    again = accept(service, hyphenated, "bob")
    assert again.get_json()["game"]["id"] == first.get_json()["game"]["id"]


def test_unknown_malformed_and_other_keys_codes_are_not_found(start_quick_play):
    service = start_quick_play()
    code = invited(service)["code"]
    for text, key in ((code, OTHER_KEY), ("ZZZZZZZZ", API_KEY), ("short", API_KEY), ("UUUUUUUU", API_KEY),
                      (code + "0", API_KEY)):
        assert_problem(read(service, text, key=key), 404, "invite_not_found")
        assert_problem(withdraw(service, text, key=key), 404, "invite_not_found")
        assert_problem(accept(service, text, key=key), 404, "invite_not_found")
    assert read(service, code).get_json()["invite"]["status"] == "open"


def test_bad_invites_and_acceptances_are_refused(start_quick_play):
    service = start_quick_play()
    client = service.client()
    host = {"external_id": "ann", "name": "Ann"}
    for body, code in (({"variant": "classic"}, "invalid_request"),
                       ({"host": host, "variant": "poker"}, "invalid_request"),
                       ({"host": host, "variant": "classic", "expires_in": 59}, "invalid_request"),
                       ({"host": host, "variant": "classic", "expires_in": 7 * 86400 + 1}, "invalid_request"),
                       ({"host": host, "variant": "classic", "rated": 1}, "invalid_request"),
                       ({"host": host, "variant": "classic", "rules": {"knock_limit": 99}}, "invalid_rules")):
        assert_problem(client.post(INVITES, json=body, headers={"X-API-Key": API_KEY}), 422, code)
    assert_problem(client.post(INVITES, json={"host": host, "variant": "classic"}), 401, "unauthorized")
    code = invited(service)["code"]
    for body in ({}, {"player": {"external_id": "bob"}}, {"player": {"external_id": "", "name": "Bob"}}):
        assert_problem(client.post(f"{INVITES}/{code}/accept", json=body, headers={"X-API-Key": API_KEY}),
                       422, "invalid_request")
    assert_problem(accept(service, code, key="not-a-key"), 401, "unauthorized")
    assert_problem(read(service, code, wait=31), 422, "invalid_request")
    assert read(service, code).get_json()["invite"]["status"] == "open"


def test_a_withdrawn_invite_cannot_be_accepted(start_quick_play):
    service = start_quick_play()
    code = invited(service)["code"]
    assert withdraw(service, code).status_code == 204
    assert read(service, code).get_json()["invite"]["status"] == "withdrawn"
    assert withdraw(service, code).status_code == 204  # again: nothing changes
    assert_problem(accept(service, code, "bob"), 404, "invite_not_found")
    assert read(service, code).get_json()["invite"]["status"] == "withdrawn"


@pytest.mark.exclusive
def test_an_invite_expires_on_time(start_quick_play):
    service = start_quick_play(INVITE_MAX_OPEN="1")
    invites = service.app.extensions[EXTENSION].invites
    # Made 59 s ago with the shortest life there is (60 s): it expires in a second.
    real_clock = invites.ctx.clock
    invites.ctx.clock = lambda: real_clock() - 59
    try:
        code = invited(service, expires_in=60)["code"]
    finally:
        invites.ctx.clock = real_clock
    started = time.monotonic()
    host = read(service, code, wait=5).get_json()["invite"]
    assert host["status"] == "expired" and host["game_id"] is None
    assert time.monotonic() - started < 2.5
    assert_problem(accept(service, code, "bob"), 404, "invite_not_found")
    assert invite(service, "cy").status_code == 201  # an expired invite no longer counts among the open ones


def test_open_invites_per_key_are_bounded(start_quick_play):
    service = start_quick_play(INVITE_MAX_OPEN="2")
    first = invited(service, "ann")["code"]
    invited(service, "bob")
    refused = invite(service, "cy")
    assert assert_problem(refused, 429, "invite_limit_reached")["params"] == {"limit": 2}
    assert refused.headers["Retry-After"]
    assert invite(service, "cy", key=OTHER_KEY).status_code == 201  # another key's bound
    assert withdraw(service, first).status_code == 204
    third = invited(service, "cy")["code"]
    assert_problem(invite(service, "dee"), 429, "invite_limit_reached")
    assert accept(service, third, "dee").status_code == 201  # accepted: no longer open
    assert invite(service, "eve").status_code == 201


def test_accepting_is_rate_limited_per_key(start_quick_play):
    service = start_quick_play(INVITE_ACCEPTS_PER_MINUTE="2")
    code = invited(service)["code"]
    for _ in range(2):  # one more round if a clock minute began meanwhile
        answers = [accept(service, "WRONG000", "bob"), accept(service, "WRONG111", "bob"), accept(service, code, "bob")]
        if answers[-1].status_code == 429:
            break
    assert [answer.status_code for answer in answers[:2]] == [404, 404]
    refused = assert_problem(answers[-1], 429, "rate_limited")
    assert refused["params"]["limit"] == 2 and 1 <= refused["params"]["retry_after"] <= 60
    assert answers[-1].headers["Retry-After"] == str(refused["params"]["retry_after"])
    assert read(service, code).get_json()["invite"]["status"] == "open"
    # Another key counts its own.
    other = invited(service, "cy", key=OTHER_KEY)["code"]
    assert accept(service, other, "dee", key=OTHER_KEY).status_code == 201


def test_a_rated_invite_makes_a_rated_match_that_rates_its_players(start_quick_play):
    service = start_quick_play()
    code = invited(service, "ann", rated=True)["code"]
    assert read(service, code).get_json()["invite"]["rated"] is True
    body = accept(service, code, "bob").get_json()
    game_id, token = body["game"]["id"], body["players"][1]["token"]
    assert body["game"]["rated"] is True
    resigned = service.client().post(f"/v1/games/{game_id}/resign", headers={"Authorization": f"Bearer {token}"})
    assert resigned.status_code == 200, resigned.get_json()
    deadline = time.monotonic() + 5
    while not service.view(game_id).get_json()["result"].get("rating_changes"):
        assert time.monotonic() < deadline, "the match was not rated"
        time.sleep(0.05)
    ratings = service.client().get("/v1/players/ann/ratings", headers={"X-API-Key": API_KEY}).get_json()["ratings"]
    assert [(r["variant"], r["games"], r["wins"]) for r in ratings] == [("classic", 1, 1)]
