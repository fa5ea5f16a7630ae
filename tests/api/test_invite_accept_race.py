"""Two friends accepting one invite at the same moment: one gets the match and their own
token; the other is told the invite is used, and never gets anyone's token."""
from __future__ import annotations

import threading

from flask import Flask

from tests.api.support import API_KEY

RACES = 30
KEY = {"X-API-Key": API_KEY}


def test_simultaneous_acceptances_make_one_match_for_one_guest(any_app: Flask):
    app = any_app
    client = app.test_client()
    for n in range(RACES):
        code = client.post("/v1/invites", headers=KEY, json={
            "host": {"external_id": f"host-{n}", "name": "Ann"}, "variant": "classic"}).get_json()["invite"]["code"]
        barrier, answers = threading.Barrier(2), {}

        def accept(guest: str) -> None:
            own = app.test_client()
            barrier.wait()
            answers[guest] = own.post(f"/v1/invites/{code}/accept", headers=KEY,
                                      json={"player": {"external_id": f"{guest}-{n}", "name": guest}})

        threads = [threading.Thread(target=accept, args=(guest,)) for guest in ("Bob", "Cy")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        statuses = {guest: answer.status_code for guest, answer in answers.items()}
        assert sorted(statuses.values()) == [201, 404], (n, statuses)
        (winner,) = [guest for guest, status in statuses.items() if status == 201]
        created = answers[winner].get_json()
        assert created["game"]["players"][1]["name"] == winner
        token = created["players"][1]["token"]
        view = client.get(f"/v1/games/{created['game']['id']}", headers={"Authorization": f"Bearer {token}"})
        assert view.get_json()["you"]["seat"] == 1
