"""Quick play's timers on the embedded store, fired by the service's own process
(service/background/in_process.py): the match they make is counted like any other."""
from __future__ import annotations

import time

from service.app import create_app
from tests.observability.test_observability_service import metric

COUNTED_WITHIN_SECONDS = 5.0


def test_a_bot_fallback_made_in_the_background_is_counted():
    client = create_app({"REDIS_URL": "memory://", "LOG_LEVEL": "WARNING"}).test_client()
    queued = client.post("/v1/matchmaking/tickets", json={
        "player": {"external_id": "user-cy", "name": "Cy"}, "variant": "classic", "rated": False,
        "bot_after_seconds": 0}).get_json()["ticket"]
    ticket = client.get(f"/v1/matchmaking/tickets/{queued['id']}?wait=10").get_json()["ticket"]
    assert ticket["status"] == "matched"
    deadline = time.monotonic() + COUNTED_WITHIN_SECONDS
    while metric(client, "games_created_total", variant="classic") < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert metric(client, "games_created_total", variant="classic") == 1
