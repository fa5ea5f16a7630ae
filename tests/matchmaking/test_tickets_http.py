"""Quick-play tickets through HTTP, on the embedded store and on Redis (with the worker's
background runner beside the app, as deployed): queueing, reading, cancelling, one waiting
ticket per player, Idempotency-Key, the long-poll, the seat's token, who is paired with whom,
expiry and the bound on open tickets. Every refusal is problem+json with its code and changes
nothing."""
from __future__ import annotations

import threading
import time

import pytest

from tests.api.support import API_KEY
from tests.api.test_errors import assert_problem
from tests.matchmaking.support import OTHER_KEY, TICKETS, seats_of

WAITING_FIELDS = {"game_id": None, "seat": None, "token": None}


def test_a_ticket_is_queued_read_and_cancelled(start_quick_play):
    service = start_quick_play()
    created = service.open("ann")
    assert created.status_code == 201
    ticket = created.get_json()["ticket"]
    assert created.headers["Location"] == f"{TICKETS}/{ticket['id']}"
    assert created.headers["Cache-Control"] == "private, no-store"
    assert ticket["id"].startswith("t_") and ticket["status"] == "waiting"
    assert ticket["player"] == {"external_id": "ann", "name": "Ann", "metadata": None}
    assert ticket["variant"] == "classic" and ticket["rated"] is True and ticket["rating"] == 1500.0
    assert ticket["bot_after_seconds"] is None and ticket["rules"]["knock_limit"] == 10
    assert {name: ticket[name] for name in WAITING_FIELDS} == WAITING_FIELDS

    assert service.ticket(ticket["id"]) == ticket
    assert service.cancel(ticket["id"]).status_code == 204
    assert service.ticket(ticket["id"]) == {**ticket, "status": "cancelled"}
    # Cancelling again changes nothing.
    assert service.cancel(ticket["id"]).status_code == 204
    assert service.ticket(ticket["id"])["status"] == "cancelled"


def test_another_key_unknown_and_malformed_ids_are_not_found(start_quick_play):
    service = start_quick_play()
    ticket = service.opened("ann")
    for ticket_id, key in ((ticket["id"], OTHER_KEY), ("t_" + "A" * 22, API_KEY), ("nonsense", API_KEY),
                           ("g_" + ticket["id"][2:], API_KEY)):
        assert_problem(service.read(ticket_id, key=key), 404, "ticket_not_found")
        assert_problem(service.cancel(ticket_id, key=key), 404, "ticket_not_found")
    assert service.ticket(ticket["id"])["status"] == "waiting"  # another key's cancel did nothing


def test_requests_without_a_valid_api_key_are_refused(start_quick_play):
    service = start_quick_play()
    ticket = service.opened("ann")
    client = service.client()
    body = {"player": {"external_id": "bob", "name": "Bob"}, "variant": "classic"}
    for headers in ({}, {"X-API-Key": "not-a-key"}):
        assert_problem(client.post(TICKETS, json=body, headers=headers), 401, "unauthorized")
        assert_problem(client.get(f"{TICKETS}/{ticket['id']}", headers=headers), 401, "unauthorized")
        assert_problem(client.delete(f"{TICKETS}/{ticket['id']}", headers=headers), 401, "unauthorized")
    # Nothing was queued for Bob: his first ticket pairs with Ann's.
    assert service.opened("bob")["status"] == "matched"


def test_bad_tickets_are_refused_with_their_codes_and_change_nothing(start_quick_play):
    service = start_quick_play(WEBHOOK_ALLOWED_HOSTS="hooks.example")
    client = service.client()
    player = {"external_id": "bob", "name": "Bob"}
    bad = [
        ({"variant": "classic"}, 422, "invalid_request"),
        ({"player": player, "variant": "poker"}, 422, "invalid_request"),
        ({"player": player, "variant": "classic", "bot_after_seconds": 601}, 422, "invalid_request"),
        ({"player": player, "variant": "classic", "bot_after_seconds": "5"}, 422, "invalid_request"),
        ({"player": player, "variant": "classic", "rated": "yes"}, 422, "invalid_request"),
        ({"player": {"external_id": "", "name": "Bob"}, "variant": "classic"}, 422, "invalid_request"),
        ({"player": {"external_id": "bob", "name": "B" * 200}, "variant": "classic"}, 422, "invalid_request"),
        ({"player": {**player, "metadata": {"blob": "x" * 2000}}, "variant": "classic"}, 422, "invalid_request"),
        ({"player": player, "variant": "classic", "rules": {"knock_limit": 99}}, 422, "invalid_rules"),
        ({"player": player, "variant": "classic", "rules": {"no_such_rule": 1}}, 422, "invalid_rules"),
        ({"player": player, "variant": "classic", "callback_url": "https://evil.example/x"}, 422,
         "callback_not_allowed"),
    ]
    for body, status, code in bad:
        assert_problem(client.post(TICKETS, json=body, headers={"X-API-Key": API_KEY}), status, code)
    assert_problem(client.post(TICKETS, data="{", content_type="application/json", headers={"X-API-Key": API_KEY}),
                   400, "invalid_request")
    ticket = service.opened("ann")
    assert_problem(service.read(ticket["id"], wait=31), 422, "invalid_request")
    assert_problem(service.read(ticket["id"], wait=-1), 422, "invalid_request")
    # No refused request queued Bob: his ticket now pairs with Ann's, the only one waiting.
    assert service.opened("bob")["game_id"] == service.ticket(ticket["id"])["game_id"] is not None


def test_one_waiting_ticket_per_player_and_key(start_quick_play):
    service = start_quick_play()
    first = service.opened("ann")
    again = assert_problem(service.open("ann", "box"), 409, "already_queued")
    assert again["params"] == {"ticket_id": first["id"]}
    # Another key's player of the same external id is another player.
    assert service.opened("ann", key=OTHER_KEY)["status"] == "waiting"
    # Cancelled: a new ticket is accepted.
    assert service.cancel(first["id"]).status_code == 204
    second = service.opened("ann", "box")
    assert second["id"] != first["id"]
    # Matched: a new ticket is accepted too.
    service.opened("bob", "box")
    assert service.opened("cy", "box")["status"] == "matched"
    assert service.ticket(second["id"])["status"] == "matched"
    assert service.opened("ann", "box")["status"] == "waiting"


def test_an_idempotency_key_answers_the_first_ticket_again(start_quick_play):
    service = start_quick_play()
    headers = {"Idempotency-Key": "queue-ann-1"}
    first = service.opened("ann", headers=headers)
    again = service.open("ann", headers=headers)
    assert again.status_code == 201 and again.get_json()["ticket"] == first
    # Matched meanwhile: the retry shows the ticket as it is now, with its token.
    service.opened("bob")
    matched = service.open("ann", headers=headers).get_json()["ticket"]
    assert matched["id"] == first["id"] and matched["status"] == "matched" and matched["token"]
    # The same key under another API key is another request.
    assert service.open("ann", headers=headers, key=OTHER_KEY).get_json()["ticket"]["id"] != first["id"]


def test_a_reused_idempotency_key_with_another_player_is_refused_and_changes_nothing(start_quick_play):
    service = start_quick_play()
    headers = {"Idempotency-Key": "queue-1"}
    first = service.opened("ann", "box", headers=headers)
    assert_problem(service.open("bob", "box", headers=headers), 422, "idempotency_key_reused", "Idempotency-Key")
    # The refusal left Bob free to queue: his ticket waits with Ann's.
    bob = service.open("bob", "box")
    assert bob.status_code == 201, bob.get_json()
    assert service.ticket(first["id"])["status"] == "waiting"


@pytest.mark.parametrize("other", [{"variant": "box"}, {"rated": False}, {"rules": {"knock_limit": 5}}])
def test_a_reused_idempotency_key_with_another_queue_is_refused(start_quick_play, other):
    service = start_quick_play()
    headers = {"Idempotency-Key": "queue-2"}
    first = service.opened("ann", headers=headers)
    assert_problem(service.open("ann", headers=headers, **other), 422, "idempotency_key_reused", "Idempotency-Key")
    assert_problem(service.open("bob", headers=headers, **other), 422, "idempotency_key_reused", "Idempotency-Key")
    # Nothing was queued for Bob by the refusal: his own ticket pairs with Ann's.
    assert service.opened("bob")["game_id"] == service.ticket(first["id"])["game_id"] is not None


def test_a_long_poll_answers_as_soon_as_the_ticket_is_matched(start_quick_play):
    service = start_quick_play()
    ann = service.opened("ann")
    answered: dict = {}

    def wait() -> None:
        started = time.monotonic()
        answered["ticket"] = service.ticket(ann["id"], wait=10)
        answered["at"], answered["seconds"] = time.monotonic(), time.monotonic() - started

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.5)
    assert "ticket" not in answered  # nothing happened: it waits
    bob = service.opened("bob")
    matched_at = time.monotonic()
    waiter.join(15)
    assert answered["ticket"]["status"] == "matched" and answered["ticket"]["game_id"] == bob["game_id"]
    assert answered["at"] - matched_at < 0.5 and answered["seconds"] < 5


def test_a_long_poll_of_a_ticket_that_does_not_change_ends_after_its_wait(start_quick_play):
    service = start_quick_play()
    ann = service.opened("ann")
    started = time.monotonic()
    assert service.ticket(ann["id"], wait=1)["status"] == "waiting"
    assert 0.9 < time.monotonic() - started < 3


def test_a_long_poll_is_capped_at_the_longest_wait_the_server_allows(start_quick_play):
    service = start_quick_play(LONG_POLL_MAX_SECONDS="1")
    ann = service.opened("ann")
    started = time.monotonic()
    assert service.ticket(ann["id"], wait=10)["status"] == "waiting"
    assert time.monotonic() - started < 3


def test_a_matched_ticket_hands_out_its_seat_token_until_the_token_is_reissued(start_quick_play):
    service = start_quick_play()
    ann = service.opened("ann")
    bob = service.opened("bob")
    ann = service.ticket(ann["id"])
    assert ann["status"] == bob["status"] == "matched" and ann["game_id"] == bob["game_id"]
    assert (ann["seat"], bob["seat"]) == (0, 1)  # the longest-waiting ticket sits first
    game_id = ann["game_id"]
    for ticket in (ann, bob):
        view = service.view(game_id, ticket["token"])
        assert view.status_code == 200 and view.get_json()["you"]["seat"] == ticket["seat"]
    public = service.view(game_id).get_json()
    assert seats_of(public) == ["ann", "bob"] and [p["name"] for p in public["players"]] == ["Ann", "Bob"]
    assert public["rated"] is True and not any(p["bot"] for p in public["players"])
    # The token acts: whoever is to move takes the upcard offer's first step.
    to_move = public["hand"]["turn"]
    token = (ann, bob)[to_move]["token"]
    moved = service.client().post(f"/v1/games/{game_id}/pass", headers={"Authorization": f"Bearer {token}"})
    assert moved.status_code == 200, moved.get_json()
    # A new token for Bob's seat: his ticket no longer shows the old one, which stops working.
    reissued = service.client().post(f"/v1/games/{game_id}/players/1/token", headers={"X-API-Key": API_KEY})
    assert reissued.status_code == 200, reissued.get_json()
    assert service.ticket(bob["id"])["token"] is None
    assert service.ticket(ann["id"])["token"] == ann["token"]
    assert_problem(service.view(game_id, bob["token"]), 401, "unauthorized")


def test_cancelling_a_matched_ticket_is_refused(start_quick_play):
    service = start_quick_play()
    ann = service.opened("ann")
    bob = service.opened("bob")
    refused = assert_problem(service.cancel(ann["id"]), 409, "ticket_matched")
    assert refused["params"] == {"game_id": bob["game_id"]}
    assert service.ticket(ann["id"])["status"] == "matched"


def test_only_tickets_of_one_key_variant_rules_and_rated_are_paired(start_quick_play):
    service = start_quick_play()
    kinds = [{"key": API_KEY}, {"key": OTHER_KEY}, {"key": API_KEY, "rated": False},
             {"key": API_KEY, "rules": {"knock_limit": 5}}, {"key": API_KEY, "rules": {"knock_limit": 5},
                                                             "rated": False}]
    firsts = [service.opened(f"first-{n}", **kind) for n, kind in enumerate(kinds)]
    assert all(ticket["status"] == "waiting" for ticket in firsts)  # none of them pairs with another
    box = service.opened("first-box", "box")
    assert box["status"] == "waiting"
    for n, (kind, first) in enumerate(zip(kinds, firsts)):
        key = kind.pop("key")
        second = service.open(f"second-{n}", key=key, **kind).get_json()["ticket"]
        assert second["status"] == "matched", (kind, second)
        assert service.ticket(first["id"], key=key)["game_id"] == second["game_id"]
        view = service.view(second["game_id"]).get_json()
        assert seats_of(view) == [f"first-{n}", f"second-{n}"]
        assert view["rated"] is kind.get("rated", True)
        assert view["rules"]["knock_limit"] == kind.get("rules", {}).get("knock_limit", 10)
    assert service.ticket(box["id"])["status"] == "waiting"


def test_classic_pairs_two_and_box_three(start_quick_play):
    service = start_quick_play()
    ann = service.opened("ann", "box")
    assert service.opened("bob", "box")["status"] == "waiting"
    cy = service.opened("cy", "box")
    assert cy["status"] == "matched" and cy["seat"] == 2
    view = service.view(cy["game_id"]).get_json()
    assert view["variant"] == "box" and seats_of(view) == ["ann", "bob", "cy"]
    assert service.ticket(ann["id"])["seat"] == 0
    dee = service.opened("dee")
    assert dee["status"] == "waiting"
    eve = service.opened("eve")
    assert eve["status"] == "matched" and seats_of(service.view(eve["game_id"]).get_json()) == ["dee", "eve"]


@pytest.mark.parametrize("older", ["low", "high"])
def test_the_longest_waiting_compatible_ticket_goes_first(start_quick_play, older):
    # 1400 and 1600 are too far apart for each other, and 1500 is within reach of both.
    service = start_quick_play(MATCHMAKING_GAP_INITIAL="100", MATCHMAKING_GAP_PER_SECOND="0",
                               MATCHMAKING_GAP_MAX="100")
    for name, rating in (("low", 1400), ("high", 1600), ("middle", 1500)):
        service.set_rating(name, rating)
    younger = "high" if older == "low" else "low"
    first = service.opened(older)
    second = service.opened(younger)
    assert second["status"] == "waiting"
    middle = service.opened("middle")
    assert middle["status"] == "matched" and middle["rating"] == 1500
    assert service.ticket(first["id"])["game_id"] == middle["game_id"]
    assert service.ticket(second["id"])["status"] == "waiting"
    assert seats_of(service.view(middle["game_id"]).get_json()) == [older, "middle"]


def test_a_ticket_nobody_matches_expires(start_quick_play):
    service = start_quick_play(MATCHMAKING_TICKET_SECONDS="1")
    ann = service.opened("ann", "box")
    started = time.monotonic()
    expired = service.until_settled(ann["id"], timeout=5)
    assert expired["status"] == "expired" and expired["token"] is None and expired["game_id"] is None
    assert time.monotonic() - started < 3
    assert service.cancel(ann["id"]).status_code == 204
    assert service.ticket(ann["id"])["status"] == "expired"
    # Gone from its queue: the next two box tickets wait for a third.
    assert service.opened("bob", "box")["status"] == "waiting"
    assert service.opened("cy", "box")["status"] == "waiting"
    # And Ann may queue again.
    assert service.opened("ann", "box")["status"] == "matched"


def test_open_tickets_per_key_are_bounded(start_quick_play):
    service = start_quick_play(MATCHMAKING_MAX_OPEN_TICKETS="2")
    ann = service.opened("ann")
    bob = service.opened("bob", "box")
    answer = service.open("cy", "box")
    assert assert_problem(answer, 429, "ticket_limit_reached")["params"] == {"limit": 2}
    assert answer.headers["Retry-After"] == "5"
    # Another key has its own bound.
    assert service.opened("cy", "box", key=OTHER_KEY)["status"] == "waiting"
    # Neither a cancelled ticket nor a matched one counts.
    assert service.cancel(bob["id"]).status_code == 204
    assert service.opened("cy")["status"] == "matched"
    assert service.ticket(ann["id"])["status"] == "matched"
    service.opened("dee", "box")
    service.opened("eve", "box")
    assert_problem(service.open("fay", "box"), 429, "ticket_limit_reached")
