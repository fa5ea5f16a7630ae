"""GET /v1/stream: an API key's announcements (the webhooks' payloads of its matches and tickets)
as Server-Sent Events, read by a real SSE client (sseclient-py), on the embedded store (its own
background loop) and on Redis (the service's background runner in this process, as
``ginrummy worker`` runs it): in order, for its own key only, resumed after a drop without gap
or repeat, kept across a restart, bounded."""
from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from flask import Flask

from service.api.context import EXTENSION
from service.background.setup import background_runner
from service.store.areas import redis_areas
from service.store.feed import FeedEntry
from service.store.redis_client import client_from_url, worker_options
from service.streams.writer import StreamWriter
from tests.api.conftest import build_app
from tests.api.streams import Reader
from tests.api.support import API_KEY, store_of
from tests.api.test_errors import assert_problem

OTHER_KEY = "another-api-key-of-the-tests-0123456789"


@contextmanager
def worker_runner(app: Flask, url: str, prefix: str) -> Iterator[None]:
    """Every consumer and timer of the service, run in this process on a client of its own."""
    context = app.extensions[EXTENSION]
    client = client_from_url(url, **worker_options(1.0))
    runner = background_runner(context.config, context.games, redis_areas(context.store, client, prefix)).start()
    try:
        yield
    finally:
        runner.stop()
        runner.join(10)
        client.close()


@pytest.fixture(params=["memory", "redis"])
def served(request, redis_url, key_prefix) -> Iterator[tuple[Flask, str]]:
    """(app, its Redis URL or memory://), with two API keys and its background work running."""
    # A heartbeat each second: a reader that stops is let go at the next one.
    keys = {"API_KEYS": f"{API_KEY},{OTHER_KEY}", "STREAM_HEARTBEAT_SECONDS": "1"}
    if request.param == "memory":
        yield build_app(REDIS_URL="memory://", **keys), "memory://"
        return
    prefix = f"{key_prefix}keystream-{uuid.uuid4().hex[:8]}:"
    app = build_app(REDIS_URL=redis_url, KEY_PREFIX=prefix, **keys)
    try:
        with worker_runner(app, redis_url, prefix):
            yield app, redis_url
    finally:
        store_of(app).close()


def resigned_match(client, key: str = API_KEY) -> str:
    """A match of ``key`` against a bot, resigned at once: a turn, then match_over."""
    created = client.post("/v1/games", headers={"X-API-Key": key}, json={
        "variant": "classic", "players": [{"name": "Ann", "external_id": "ann"}, {"name": "Robo", "bot": True}]})
    assert created.status_code == 201, created.get_json()
    body = created.get_json()
    token = next(p["token"] for p in body["players"] if p["token"])
    assert client.post(f"/v1/games/{body['game']['id']}/resign", headers={"Authorization": f"Bearer {token}"}
                       ).status_code == 200
    return body["game"]["id"]


def payloads(reader: Reader) -> list[dict]:
    return [json.loads(event.data) for event in reader.events]


def of_game(reader: Reader, game_id: str) -> list[str]:
    return [p["type"] for p in payloads(reader) if p["data"].get("game_id") == game_id]


def test_the_stream_brings_the_webhooks_payloads_of_the_keys_matches_in_order(served):
    app, _ = served
    client = app.test_client()
    reader = Reader(client, "/v1/stream", {"X-API-Key": API_KEY})
    assert reader.response.status_code == 200
    assert reader.response.mimetype == "text/event-stream"
    game_id = resigned_match(client)
    reader.until(lambda events: "match_over" in of_game(reader, game_id))
    reader.stop()
    assert of_game(reader, game_id)[-1] == "match_over"
    for event, payload in zip(reader.events, payloads(reader)):
        assert event.event == payload["type"]
        assert payload["data"]["metadata"] is None and "token" not in json.dumps(payload)
    ids = [tuple(map(int, event.id.split("-"))) for event in reader.events]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)


def test_a_key_never_sees_another_keys_announcements(served):
    app, _ = served
    client = app.test_client()
    mine = Reader(client, "/v1/stream", {"X-API-Key": API_KEY})
    theirs = Reader(client, "/v1/stream", {"X-API-Key": OTHER_KEY})
    other_game = resigned_match(client, OTHER_KEY)
    my_game = resigned_match(client)
    mine.until(lambda events: "match_over" in of_game(mine, my_game))
    theirs.until(lambda events: "match_over" in of_game(theirs, other_game))
    mine.stop()
    theirs.stop()
    assert {p["data"]["game_id"] for p in payloads(mine)} == {my_game}
    assert {p["data"]["game_id"] for p in payloads(theirs)} == {other_game}


def test_a_dropped_stream_resumes_after_its_last_event_id_without_gap_or_repeat(served):
    app, _ = served
    client = app.test_client()
    everything = Reader(client, "/v1/stream", {"X-API-Key": API_KEY})
    first = Reader(client, "/v1/stream", {"X-API-Key": API_KEY})
    game_one = resigned_match(client)
    first.until(lambda events: "match_over" in of_game(first, game_one))
    first.stop()  # the connection drops here
    last_seen = first.events[-1].id
    game_two = resigned_match(client)
    everything.until(lambda events: "match_over" in of_game(everything, game_two))
    everything.stop()
    resumed = Reader(client, "/v1/stream", {"X-API-Key": API_KEY, "Last-Event-ID": last_seen})
    resumed.until(lambda events: "match_over" in of_game(resumed, game_two))
    resumed.stop()
    seen = [event.id for event in first.events] + [event.id for event in resumed.events]
    assert seen == [event.id for event in everything.events]
    by_query = Reader(client, f"/v1/stream?after={last_seen}", {"X-API-Key": API_KEY})
    by_query.until(lambda events: "match_over" in of_game(by_query, game_two))
    by_query.stop()
    assert [event.id for event in by_query.events] == [event.id for event in resumed.events]


def test_the_stream_of_a_key_outlives_a_restart_of_the_service(redis_url, key_prefix):
    prefix = f"{key_prefix}keystream-{uuid.uuid4().hex[:8]}:"
    first = build_app(REDIS_URL=redis_url, KEY_PREFIX=prefix, STREAM_HEARTBEAT_SECONDS="1")
    client = first.test_client()
    reader = Reader(client, "/v1/stream", {"X-API-Key": API_KEY})
    with worker_runner(first, redis_url, prefix):
        game_id = resigned_match(client)
        reader.until(lambda events: "match_over" in of_game(reader, game_id))
    reader.stop()
    store_of(first).close()
    # Another process of the service, after the first one stopped: the entries are in Redis.
    second = build_app(REDIS_URL=redis_url, KEY_PREFIX=prefix, STREAM_HEARTBEAT_SECONDS="1")
    try:
        again = Reader(second.test_client(), "/v1/stream", {"X-API-Key": API_KEY, "Last-Event-ID": "0-0"})
        again.until(lambda events: len(events) >= len(reader.events))
        again.stop()
        assert [event.id for event in again.events] == [event.id for event in reader.events]
    finally:
        store_of(second).close()


def test_bad_resume_points_and_missing_keys_are_refused_before_the_stream_starts(redis_url, key_prefix):
    app = build_app(REDIS_URL=redis_url, KEY_PREFIX=key_prefix)
    client = app.test_client()
    try:
        assert_problem(client.get("/v1/stream"), 401, "unauthorized")
        assert_problem(client.get("/v1/stream", headers={"X-API-Key": API_KEY, "Last-Event-ID": "12"}), 422,
                       "invalid_request")
        assert_problem(client.get("/v1/stream?after=soon", headers={"X-API-Key": API_KEY}), 422, "invalid_request")
    finally:
        store_of(app).close()


def test_open_streams_of_a_key_are_bounded(redis_url, key_prefix):
    app = build_app(REDIS_URL=redis_url, KEY_PREFIX=key_prefix, STREAMS_PER_API_KEY="1", STREAM_HEARTBEAT_SECONDS="1")
    client = app.test_client()
    try:
        held = Reader(client, "/v1/stream", {"X-API-Key": API_KEY})
        assert held.response.status_code == 200
        refused = assert_problem(client.get("/v1/stream", headers={"X-API-Key": API_KEY}), 429, "too_many_streams")
        assert refused["params"]["limit"] == 1
        held.stop()
        again = Reader(client, "/v1/stream", {"X-API-Key": API_KEY})
        assert again.response.status_code == 200
        again.stop()
    finally:
        store_of(app).close()


def test_a_feed_entry_read_twice_is_in_the_stream_once():
    app = build_app(REDIS_URL="memory://")
    streams = store_of(app).key_streams
    writer = StreamWriter(lambda: streams)
    entry = FeedEntry("wh_g_1_3_turn", "game", "g_1", "turn", "scope-1", '{"type":"turn"}')
    writer.apply(entry)
    writer.apply(entry)
    assert [found.type for found in streams.after("scope-1", None, 10)] == ["turn"]
