"""A player's backend that sends the same "Play now" twice at once (a double tap, a retry
without an Idempotency-Key) gets one waiting ticket and a 409 already_queued, never two
tickets, and so never a match of the player against themselves."""
from __future__ import annotations

import threading

from flask import Flask

from tests.api.support import API_KEY

DOUBLE_SUBMITS = 60


def ticket_of(player: str, queue: int) -> dict:
    # A queue of its own per player (rules nobody else asks for): only their own tickets meet.
    return {"player": {"external_id": player, "name": "Ann"}, "variant": "classic", "rated": False,
            "rules": {"target_score": 200 + queue}}


def test_simultaneous_tickets_of_one_player_leave_one_waiting(redis_app: Flask):
    answers: list[list] = []
    for n in range(DOUBLE_SUBMITS):
        barrier, got = threading.Barrier(2), [None, None]

        def submit(slot: int, player: str = f"double-{n}", queue: int = n) -> None:
            client = redis_app.test_client()
            barrier.wait()
            got[slot] = client.post("/v1/matchmaking/tickets", json=ticket_of(player, queue),
                                    headers={"X-API-Key": API_KEY})

        threads = [threading.Thread(target=submit, args=(slot,)) for slot in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        answers.append(got)

    for n, (first, second) in enumerate(answers):
        statuses = sorted([first.status_code, second.status_code])
        assert statuses == [201, 409], (n, first.get_json(), second.get_json())
        created, refused = (first, second) if first.status_code == 201 else (second, first)
        ticket = created.get_json()["ticket"]
        assert ticket["status"] == "waiting" and ticket["game_id"] is None
        assert refused.get_json()["code"] == "already_queued"
        assert refused.get_json()["params"]["ticket_id"] == ticket["id"]
