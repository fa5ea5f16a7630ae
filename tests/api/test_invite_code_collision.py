"""An invite code drawn twice (40 random bits: rare, not impossible among millions of open
invites): the second invite gets a code of its own, never the first one's invite."""
from __future__ import annotations

from flask import Flask

from service.matchmaking import invites
from tests.api.support import API_KEY

TAKEN, FREE = "7KQ9M2XR", "0M85KP25"


def test_a_code_already_taken_is_drawn_again(any_app: Flask, monkeypatch):
    client = any_app.test_client()
    drawn = iter([TAKEN, TAKEN, FREE])
    monkeypatch.setattr(invites, "new_code", lambda: next(drawn))
    first = client.post("/v1/invites", headers={"X-API-Key": API_KEY},
                        json={"host": {"external_id": "user-ann", "name": "Ann"}, "variant": "classic"})
    second = client.post("/v1/invites", headers={"X-API-Key": API_KEY},
                         json={"host": {"external_id": "user-bob", "name": "Bob"}, "variant": "classic",
                               "rules": {"knock_limit": 7}})
    assert first.status_code == second.status_code == 201
    assert first.get_json()["invite"]["code"] == TAKEN
    invite = second.get_json()["invite"]
    assert (invite["code"], invite["host"]["name"], invite["rules"]["knock_limit"]) == (FREE, "Bob", 7)
