"""What happens at a time rather than at a request, on both stores with the background work each
deployment runs (the app's own loop on the embedded store, the worker's runner on Redis): rated
tickets pair once their widening gaps reach each other, never beyond the widest gap, and a ticket
nobody came for is matched with computer players at its bot time, at the level nearest its
rating. Gaps are a few points per second here, so that a widening takes a second or two; times are
the real clock's."""
from __future__ import annotations

import threading
import time

import pytest

from service.ratings.bots import BOT_RATINGS
from tests.matchmaking.support import seats_of

# Ratings 100 apart pair 1 s after the younger ticket was queued; 150 apart, never.
GAPS = {"MATCHMAKING_GAP_INITIAL": "50", "MATCHMAKING_GAP_PER_SECOND": "50", "MATCHMAKING_GAP_MAX": "100"}
# How late a timer's work may come: the worker polls every 0.05 s here; the rest is the machine.
# Never early: a ticket's times count from when its request was handled, after it was sent.
LATE = 1.0


def settle_times(service, ticket_ids: list[str], timeout: float) -> dict[str, tuple[dict, float]]:
    """Each ticket once it no longer waits, with the monotonic time its long-poll returned it."""
    settled: dict[str, tuple[dict, float]] = {}

    def follow(ticket_id: str) -> None:
        ticket = service.until_settled(ticket_id, timeout)
        settled[ticket_id] = (ticket, time.monotonic())

    threads = [threading.Thread(target=follow, args=(ticket_id,)) for ticket_id in ticket_ids]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout + 5)
    assert set(settled) == set(ticket_ids), "a ticket was not settled in time"
    return settled


@pytest.mark.exclusive
def test_rated_tickets_pair_when_their_gaps_have_widened_enough(start_quick_play):
    service = start_quick_play(**GAPS)
    for name, rating in (("ann", 1500), ("bob", 1600), ("cy", 1750)):
        service.set_rating(name, rating)
    ann = service.opened("ann")
    asked = time.monotonic()
    bob = service.opened("bob")
    queued = time.monotonic()
    cy = service.opened("cy")
    assert ann["rating"] == 1500 and bob["rating"] == 1600 and cy["rating"] == 1750
    assert service.ticket(bob["id"])["status"] == "waiting"  # 100 apart, each accepting 50 for now
    settled = settle_times(service, [ann["id"], bob["id"]], timeout=5)
    (matched, at), (other, _) = settled[ann["id"]], settled[bob["id"]]
    assert matched["status"] == other["status"] == "matched" and matched["game_id"] == other["game_id"]
    assert at - asked >= 1.0 and at - queued <= 1.0 + LATE, (at - asked, at - queued)
    assert seats_of(service.view(matched["game_id"]).get_json()) == ["ann", "bob"]
    # Cy is 150 from Bob and 250 from Ann: further than the widest gap, however long she waits.
    time.sleep(1.0)
    assert service.ticket(cy["id"])["status"] == "waiting"


@pytest.mark.exclusive
def test_pairs_that_become_possible_at_the_same_time_are_all_made(start_quick_play):
    service = start_quick_play(**GAPS)
    players = (("ann", 1500), ("bob", 1600), ("cy", 1750), ("dee", 1850))  # ann-bob and cy-dee, 100 apart
    for name, rating in players:
        service.set_rating(name, rating)
    tickets = [service.opened(name) for name, _ in players]
    queued = time.monotonic()
    assert all(ticket["status"] == "waiting" for ticket in tickets)
    settled = settle_times(service, [ticket["id"] for ticket in tickets], timeout=5)
    for ticket, at in settled.values():
        assert ticket["status"] == "matched"
        assert at - queued <= 1.0 + LATE, (ticket["player"]["external_id"], at - queued)
    games = {settled[ticket["id"]][0]["game_id"] for ticket in tickets}
    assert sorted(seats_of(service.view(game_id).get_json()) for game_id in games) == [["ann", "bob"], ["cy", "dee"]]


@pytest.mark.exclusive
@pytest.mark.parametrize(("rating", "variant", "rated", "level"), [
    (1230.0, "classic", True, "easy"), (1600.0, "classic", True, "strong"), (1500.0, "box", True, "standard"),
    (1200.0, "classic", False, "easy"),
])
def test_a_ticket_nobody_came_for_is_matched_with_bots_at_its_time(start_quick_play, rating, variant, rated, level):
    service = start_quick_play()
    service.set_rating("ann", rating, variant)
    asked = time.monotonic()
    ann = service.opened("ann", variant, rated=rated, bot_after_seconds=1)
    queued = time.monotonic()
    assert service.ticket(ann["id"])["status"] == "waiting"
    (matched, at), = settle_times(service, [ann["id"]], timeout=5).values()
    assert matched["status"] == "matched" and matched["seat"] == 0 and matched["token"]
    assert at - asked >= 1.0 and at - queued <= 1.0 + LATE, (at - asked, at - queued)
    view = service.view(matched["game_id"], matched["token"]).get_json()
    assert view["you"]["seat"] == 0 and view["rated"] is rated and view["variant"] == variant
    people, *bots = view["players"]
    assert people["external_id"] == "ann" and not people["bot"]
    assert len(bots) == (1 if variant == "classic" else 2)
    assert all(bot["bot"] and bot["level"] == level for bot in bots)
    nearest = min(BOT_RATINGS, key=lambda name: abs(BOT_RATINGS[name].rating - rating))
    assert level == nearest


@pytest.mark.exclusive
def test_a_person_who_comes_before_the_bot_time_is_matched_instead(start_quick_play):
    service = start_quick_play()
    ann = service.opened("ann", bot_after_seconds=1)
    bob = service.opened("bob")
    assert bob["status"] == "matched"
    time.sleep(1.5)  # past Ann's bot time: her ticket stays matched with Bob
    ticket = service.ticket(ann["id"])
    assert ticket["game_id"] == bob["game_id"]
    assert seats_of(service.view(bob["game_id"]).get_json()) == ["ann", "bob"]
