"""Turn deadlines end to end: gunicorn + ``ginrummy worker`` + the real Redis + a verifying
receiver. Nobody sends a request after the match is created, yet the worker plays the absent
player's turn on time (the shortest deadline, 10 s: the processes' clocks cannot be moved)."""
from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator

import pytest

from service import rules
from service.store import RedisStore
from tests.api.checks import LogReplay
from tests.e2e.players import ApiClient
from tests.e2e.webhook_stack import Stack, check_deliveries, expected_webhooks
from tests.gunicorn_server import TEST_API_KEY

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]
TURN = 10  # the shortest turn the rules allow
# The worker looks for due deadlines every 0.1 s here; the rest is a settle and a save.
ON_TIME = 2.5


@pytest.fixture
def stack(tmp_path, redis_url: str, key_prefix: str) -> Iterator[Stack]:
    running = Stack(tmp_path, redis_url, f"{key_prefix}dl-{uuid.uuid4().hex[:8]}:")
    running.start()
    try:
        yield running
    finally:
        running.stop()


def test_the_worker_plays_an_absent_player_s_turn_on_time(stack: Stack, redis_url: str):
    api = ApiClient(stack.service.url)
    truth = RedisStore(redis_url, stack.prefix)
    try:
        asked = time.time()
        response = api.request("POST", "/v1/games", headers={"X-API-Key": TEST_API_KEY}, json={
            "variant": "classic", "players": [{"name": "Ann"}, {"name": "Bob"}],
            "rules": {"turn_seconds": TURN}, "callback_url": stack.callback_url})
        assert response.status_code == 201, response.text
        created = response.json()
        game_id, tokens = created["game"]["id"], [p["token"] for p in created["players"]]
        absent = created["game"]["hand"]["turn"]
        deadline = rules.decode(json.loads(truth.load(game_id).state)["m"]).hand.deadline
        assert created["game"]["hand"]["deadline"] == rules.iso_time(deadline)

        # From here on, no request reaches the service: only the worker can settle the turn.
        timeout_id_prefix = f"wh_{game_id}_"
        received = stack.receiver.wait_for(
            lambda got: any(r.webhook_id.startswith(timeout_id_prefix) and r.webhook_id.endswith("_timeout")
                            for r in got), timeout=TURN + 15)
        settled_at = next(r for r in received if r.webhook_id.startswith(timeout_id_prefix)
                          and r.webhook_id.endswith("_timeout"))
        events = [rules.decode_event(text) for text in truth.events(game_id, 0)]
        timeout = next(e for e in events if e.type.value == "timeout")
        assert timeout.seat == absent and timeout.public == {"deadline": rules.iso_time(deadline), "timeouts": 1}
        assert settled_at.payload["data"]["seat"] == absent
        # Played on time: delivered after the deadline, and soon after it (wall clock).
        arrived = settled_at.arrived + (time.time() - time.monotonic())
        assert asked <= deadline - TURN + 1 and deadline <= arrived <= deadline + ON_TIME
        assert settled_at.payload["timestamp"] >= rules.iso_time(deadline)
        stored = truth.load(game_id)
        match = rules.decode(json.loads(stored.state)["m"])
        assert match.timeouts[absent] == 1 and match.turn == 1 - absent
        assert match.hand.deadline is not None and match.hand.deadline >= deadline + TURN - 1
        LogReplay([None, None]).check(events)

        # The deliveries are those of the log: the first turn, the timeout, the other's turn.
        people = {0, 1}
        expected = expected_webhooks(game_id, events, people)
        assert [e.type for e in expected] == ["turn", "timeout", "turn"]
        delivered = stack.wait_for(game_id, {e.webhook_id for e in expected}, timeout=10)
        view = api.view(game_id).json()
        assert view["players"][absent]["timeouts"] == 1
        check_deliveries(delivered, expected, view, tokens)
    finally:
        api.close()
        truth.close()
