"""Requests about the same tickets at the same moment, from threads of one process, on both
stores: whoever wins, the outcome is one of the allowed ones and nothing is half made: every
matched ticket has its match, and its feed entry (what the webhook, the key's stream and the
ratings follow). Many processes at once: tests/e2e/test_quick_play_e2e.py and the cluster's
tests/matchmaking/test_quick_play_cluster.py."""
from __future__ import annotations

import json
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis

from service import ids, tokens
from service.matchmaking import service as service_module
from service.store.feed_redis import feed_key
from tests.api.support import API_KEY
from tests.matchmaking.support import seats_of

ROUNDS = 15


def at_once(*calls):
    """Run ``calls`` on threads released together; their results in order."""
    barrier = threading.Barrier(len(calls))
    results: list = [None] * len(calls)

    def run(index: int) -> None:
        barrier.wait()
        results[index] = calls[index]()

    threads = [threading.Thread(target=run, args=(index,)) for index in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return results


def test_one_player_queued_from_many_requests_at_once_has_one_waiting_ticket(start_quick_play):
    service = start_quick_play()
    clients = [service.client() for _ in range(6)]
    for round_number in range(ROUNDS):
        player = f"ann-{round_number}"
        answers = at_once(*(lambda client=client, player=player: service.open(player, "box", client=client)
                            for client in clients))
        statuses = sorted(answer.status_code for answer in answers)
        assert statuses == [201] + [409] * (len(clients) - 1), (round_number, statuses)
        (created,) = (answer.get_json()["ticket"] for answer in answers if answer.status_code == 201)
        assert created["status"] == "waiting"
        assert all(answer.get_json()["params"]["ticket_id"] == created["id"]
                   for answer in answers if answer.status_code == 409)
        assert service.cancel(created["id"]).status_code == 204


def test_a_cancel_racing_a_match_has_exactly_one_winner(start_quick_play):
    service = start_quick_play()
    outcomes = Counter()
    for round_number in range(ROUNDS):
        ann = service.opened(f"ann-{round_number}")
        cancelled, bob = at_once(lambda ticket_id=ann["id"]: service.cancel(ticket_id),
                                 lambda player=f"bob-{round_number}": service.open(player))
        assert bob.status_code == 201, bob.get_json()
        bob = bob.get_json()["ticket"]
        ann = service.ticket(ann["id"])
        if cancelled.status_code == 204:
            outcomes["cancel"] += 1
            assert ann["status"] == "cancelled" and ann["game_id"] is None
            bob = service.ticket(bob["id"])
            assert bob["status"] == "waiting", bob
            assert service.cancel(bob["id"]).status_code == 204
        else:
            outcomes["match"] += 1
            assert cancelled.status_code == 409 and cancelled.get_json()["code"] == "ticket_matched"
            assert ann["status"] == "matched" and ann["game_id"] == bob["game_id"]
            assert cancelled.get_json()["params"] == {"game_id": ann["game_id"]}
            assert seats_of(service.view(ann["game_id"]).get_json()) == [f"ann-{round_number}", f"bob-{round_number}"]
    assert sum(outcomes.values()) == ROUNDS


@pytest.mark.parametrize("variant", ["classic", "box"])
def test_tickets_queued_at_once_are_all_matched_once(start_quick_play, variant):
    service = start_quick_play()
    size = 2 if variant == "classic" else 3
    players = [f"p{n}" for n in range(12 * size)]
    answers = at_once(*(lambda player=player: service.open(player, variant) for player in players))
    assert all(answer.status_code == 201 for answer in answers), [a.get_json() for a in answers]
    tickets = [service.ticket(answer.get_json()["ticket"]["id"]) for answer in answers]
    games: dict[str, dict[int, str]] = {}
    for ticket in tickets:
        assert ticket["status"] == "matched", ticket
        seats = games.setdefault(ticket["game_id"], {})
        assert ticket["seat"] not in seats
        seats[ticket["seat"]] = ticket["player"]["external_id"]
    assert len(games) == len(players) // size
    for game_id, seats in games.items():
        assert seats_of(service.view(game_id).get_json()) == [seats[seat] for seat in range(size)]


def test_what_a_request_could_not_pair_after_losing_its_races_the_worker_pairs(start_quick_play, monkeypatch):
    # A request pairs its queue a few times at most, each time after losing the race for some
    # tickets to another request. Here it has no attempt at all, as if it had lost every one: the
    # tickets it leaves are paired by the background work, with no ticket to come.
    service = start_quick_play()
    attempts = service_module.PAIRING_ATTEMPTS
    monkeypatch.setattr(service_module, "PAIRING_ATTEMPTS", 0)
    ann = service.opened("ann")
    bob = service.opened("bob")
    monkeypatch.setattr(service_module, "PAIRING_ATTEMPTS", attempts)
    assert bob["status"] == "waiting"
    ann, bob = service.until_settled(ann["id"], timeout=3), service.until_settled(bob["id"], timeout=3)
    assert ann["status"] == bob["status"] == "matched" and ann["game_id"] == bob["game_id"]


def test_each_matched_ticket_has_one_feed_entry_in_the_step_that_matched_it(start_on_redis, redis_url):
    # No worker: nothing reads the feed, nor trims it.
    service = start_on_redis(worker=False)
    players = [f"p{n}" for n in range(6)]
    with ThreadPoolExecutor(6) as pool:
        tickets = list(pool.map(lambda player: service.opened(player, "box"), players))
    settled = {ticket["id"]: service.ticket(ticket["id"]) for ticket in tickets}
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    entries = [fields for shard in range(ids.SHARDS)
               for _, fields in client.xrange(feed_key(service.prefix, shard), "-", "+")
               if fields["type"] == "ticket_matched"]
    client.close()
    assert sorted(entry["subject"] for entry in entries) == sorted(settled)
    for entry in entries:
        ticket = settled[entry["subject"]]
        assert entry["id"] == f"tm_{ticket['id']}" and entry["kind"] == "ticket"
        assert entry["owner"] == tokens.key_id(API_KEY)
        data = json.loads(entry["body"])["data"]
        assert (data["game_id"], data["seat"]) == (ticket["game_id"], ticket["seat"])
