"""The webhooks of ``ginrummy serve`` alone (the embedded store, service/webhooks/local.py): a
match's notices reach its callback signed, from the process itself, with the worker's retries,
bounds and refusals; a receiver that hangs never holds up the process's background work."""
from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import requests

from service.store.feed import FeedEntry
from service.webhook_signing import WebhookSecret
from service.webhooks.local import LocalDeliveries
from service.webhooks.sender import Sender
from tests.api.conftest import build_app
from tests.client.served import running
from tests.webhooks.receiver import HANG, Receiver, always

pytestmark = pytest.mark.timeout(60)


def deliveries(secret: str, **settings) -> LocalDeliveries:
    sender = Sender(WebhookSecret.parse(secret), allow_private=settings.pop("allow_private", True),
                    total_timeout=settings.pop("total_timeout", 2.0))
    return LocalDeliveries(sender, **{"max_attempts": 3, "threads": 4, "max_waiting": 100, "backoff_base_seconds": 0.05,
                                      "backoff_cap_seconds": 0.2, **settings})


def entry(url: str, number: int = 1) -> FeedEntry:
    return FeedEntry(f"wh_g_{number}_turn", "game", "g", "turn", "", json.dumps({"type": "turn", "n": number}), url)


@contextmanager
def resigned_match(secret: str, name: str = "Ann", **fields) -> Iterator[tuple[Receiver, str]]:
    """While inside: a classic match on the embedded store, ``name`` against a bot, with its
    callback to a receiver and resigned by the person; the receiver and the game id."""
    receiver = Receiver(secret).start()
    app = build_app(REDIS_URL="memory://", WEBHOOK_SECRET=secret, WEBHOOK_ALLOWED_HOSTS=f"http://127.0.0.1:{receiver.port}",
                    WEBHOOK_ALLOW_PRIVATE="true")
    try:
        client = app.test_client()
        created = client.post("/v1/games", json={
            "variant": "classic", "players": [{"name": name}, {"name": "Robo", "bot": True}],
            "callback_url": receiver.url(), **fields})
        assert created.status_code == 201, created.get_json()
        game_id, token = created.get_json()["game"]["id"], created.get_json()["players"][0]["token"]
        assert client.post(f"/v1/games/{game_id}/resign", headers={"Authorization": f"Bearer {token}"}).status_code == 200
        yield receiver, game_id
    finally:
        app.extensions["ginrummy.background"].stop()
        receiver.close()


def test_a_match_on_the_embedded_store_calls_its_callback_signed(secret: str) -> None:
    with resigned_match(secret) as (receiver, game_id):
        # Sent side by side, they may arrive in either order (docs/api.md says so).
        received = receiver.wait_for(lambda got: {json.loads(r.body)["type"] for r in got} == {"turn", "match_over"})
        assert all(request.verified for request in received)
        assert {json.loads(request.body)["data"]["game_id"] for request in received} == {game_id}
        assert len({request.webhook_id for request in received}) == len(received)  # each once


def test_text_beyond_ascii_reaches_the_callback_as_utf8_and_verified(secret: str) -> None:
    """A name and metadata beyond ASCII travel as UTF-8 (not as \\u escapes) and the signature,
    made over those bytes, verifies."""
    with resigned_match(secret, "Zoë", metadata={"club": "Café Ünter"}) as (receiver, _):
        received = receiver.wait_for(lambda got: any(json.loads(r.body)["type"] == "match_over" for r in got))
        over = next(r for r in received if json.loads(r.body)["type"] == "match_over")
        assert over.verified
        assert '"name":"Zoë"' in over.body and '"club":"Café Ünter"' in over.body
        assert json.loads(over.body)["data"]["players"][0]["name"] == "Zoë"


def test_without_a_webhook_secret_nothing_is_called_and_the_start_says_so(secret: str, caplog) -> None:
    receiver = Receiver(secret).start()
    app = build_app(REDIS_URL="memory://", WEBHOOK_ALLOWED_HOSTS=f"http://127.0.0.1:{receiver.port}",
                    WEBHOOK_ALLOW_PRIVATE="true")
    try:
        created = app.test_client().post("/v1/games", json={
            "variant": "classic", "players": [{"name": "Ann"}, {"name": "Robo", "bot": True}],
            "callback_url": receiver.url()})
        assert created.status_code == 201
        time.sleep(0.5)
        assert receiver.received == []
        assert "WEBHOOK_SECRET is not: no callback will be called" in caplog.text
    finally:
        app.extensions["ginrummy.background"].stop()
        receiver.close()


def test_a_failed_attempt_is_tried_again_with_the_same_id_until_delivered(secret: str) -> None:
    receiver = Receiver(secret, lambda request, count: 500 if count <= 2 else 204).start()
    local = deliveries(secret)
    try:
        local.apply(entry(receiver.url()))
        received = receiver.wait_for_count(3)
        assert [request.webhook_id for request in received] == ["wh_g_1_turn"] * 3
        assert all(request.verified for request in received)
        time.sleep(0.5)
        assert len(receiver.received) == 3 and local.waiting == 0
    finally:
        local.close()
        receiver.close()


def test_after_the_last_attempt_or_a_refusal_the_delivery_is_given_up(secret: str, caplog) -> None:
    caplog.set_level(logging.INFO)
    failing = Receiver(secret, always(503)).start()
    local = deliveries(secret)
    try:
        local.apply(entry(failing.url()))
        failing.wait_for_count(3)
        time.sleep(0.5)
        assert len(failing.received) == 3 and local.waiting == 0
        assert "webhook given up" in caplog.text
    finally:
        local.close()
        failing.close()
    refused = deliveries(secret, allow_private=False)
    try:
        refused.apply(entry("http://127.0.0.1:9/hooks"))  # a loopback address, not allowed here
        deadline = time.monotonic() + 5
        while caplog.text.count("webhook given up") < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert caplog.text.count("webhook given up") == 2 and refused.waiting == 0  # not retried
    finally:
        refused.close()


def test_a_hanging_receiver_neither_holds_up_apply_nor_lets_the_queue_grow(secret: str, caplog) -> None:
    receiver = Receiver(secret, always(HANG)).start()
    local = deliveries(secret, threads=1, max_waiting=2, total_timeout=5.0)
    try:
        local.apply(entry(receiver.url(), 0))
        receiver.wait_for_count(1)  # the one thread is held by the first
        started = time.monotonic()
        for number in range(1, 5):
            local.apply(entry(receiver.url(), number))
        assert time.monotonic() - started < 0.5  # the runner's thread went on at once
        assert local.waiting == 2  # two wait; the two after them are given up
        assert caplog.text.count("too many deliveries wait") == 2
    finally:
        receiver.release()
        local.close()
        receiver.close()


def test_an_entry_without_a_url_is_nothing_to_deliver(secret: str, caplog) -> None:
    caplog.set_level(logging.DEBUG, logger="service.webhooks")
    local = deliveries(secret, threads=1)
    try:
        local.apply(entry(""))
        assert local.waiting == 0
        time.sleep(0.3)  # an attempt queued and taken at once would have logged its ending by now
        assert [record for record in caplog.records if record.name.startswith("service.webhooks")] == []
    finally:
        local.close()


def test_ginrummy_serve_alone_calls_a_matchs_callback(secret: str, tmp_path) -> None:
    """The quick start's server, no other process: a match's notices reach its callback."""
    receiver = Receiver(secret).start()
    try:
        with running(tmp_path, WEBHOOK_SECRET=secret, WEBHOOK_ALLOWED_HOSTS=f"http://127.0.0.1:{receiver.port}",
                     WEBHOOK_ALLOW_PRIVATE="true") as served:
            created = requests.post(f"{served.url}/v1/games", timeout=10, json={
                "variant": "classic", "players": [{"name": "Ann"}, {"name": "Robo", "bot": True}],
                "callback_url": receiver.url()})
            assert created.status_code == 201, created.text
            game_id = created.json()["game"]["id"]
            [request] = receiver.wait_for_count(1)
            assert request.verified and request.webhook_id.startswith(f"wh_{game_id}_")
            assert json.loads(request.body)["type"] == "turn"
    finally:
        receiver.close()
