"""Friends accepting one invite at the same moment: on a classic invite one gets the match and
their own token, the other is told the invite is used and never gets anyone's token; on a box
invite of three, one takes the first seat (202), one the last (201, the match), one is told."""
from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from flask import Flask

from tests.api.conftest import build_app
from tests.api.support import API_KEY, store_of

RACES = 30
KEY = {"X-API-Key": API_KEY}


@pytest.fixture(params=["redis", "memory"])
def any_app(request: pytest.FixtureRequest) -> Iterator[Flask]:
    """The app on each store, without the per-minute bound on accepting (the races make more
    acceptances than a minute allows, and the session's other tests share the key's count)."""
    url = "memory://" if request.param == "memory" else request.getfixturevalue("redis_url")
    app = build_app(REDIS_URL=url, KEY_PREFIX=request.getfixturevalue("key_prefix"), INVITE_ACCEPTS_PER_MINUTE="0")
    yield app
    store_of(app).close()


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


def test_three_friends_racing_for_a_box_invite_take_its_two_seats_once(any_app: Flask):
    app = any_app
    client = app.test_client()
    guests = ("Bob", "Cy", "Dee")
    for n in range(RACES):
        code = client.post("/v1/invites", headers=KEY, json={
            "host": {"external_id": f"host-{n}", "name": "Ann"}, "variant": "box"}).get_json()["invite"]["code"]
        barrier, answers = threading.Barrier(len(guests)), {}

        def accept(guest: str) -> None:
            own = app.test_client()
            barrier.wait()
            answers[guest] = own.post(f"/v1/invites/{code}/accept", headers=KEY,
                                      json={"player": {"external_id": f"{guest}-{n}", "name": guest}})

        threads = [threading.Thread(target=accept, args=(guest,)) for guest in guests]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        by_status = {answer.status_code: guest for guest, answer in answers.items()}
        assert sorted(by_status) == [201, 202, 404], (n, {g: a.status_code for g, a in answers.items()})
        first, last = by_status[202], by_status[201]
        created = answers[last].get_json()
        assert [p["name"] for p in created["game"]["players"]] == ["Ann", first, last]
        assert [p["token"] is not None for p in created["players"]] == [False, False, True]
        again = client.post(f"/v1/invites/{code}/accept", headers=KEY,
                            json={"player": {"external_id": f"{first}-{n}", "name": first}}).get_json()
        tokens = {1: again["players"][1]["token"], 2: created["players"][2]["token"]}
        for seat, token in tokens.items():
            view = client.get(f"/v1/games/{created['game']['id']}", headers={"Authorization": f"Bearer {token}"})
            assert view.get_json()["you"]["seat"] == seat
