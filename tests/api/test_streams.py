"""GET /v1/games/{id}/stream, read by a real SSE client (sseclient-py) on both stores: the view
first, then every new event exactly as /events shows it to that viewer (``id:`` its seq,
``event:`` its type), resumable after a dropped connection without gap or repeat, heartbeats
while quiet, the end after the match, refusals as problems before the stream starts, turn
deadlines settled while it waits, and no hidden card in any stream over whole matches."""
from __future__ import annotations

import json
import time

import pytest
import redis

from service.api.context import EXTENSION
from service.rules.events import EventType
from tests.api.conftest import build_app
from tests.api.streams import Reader, bearer
from tests.api.support import API_KEY, Table, holding, play_one, store_of
from tests.api.test_deadlines import START, TURN, RunningClock, clocked
from tests.api.test_errors import assert_problem

PROBLEM = "application/problem+json"
HIDDEN_CHECK_SEEDS = {"classic": 31, "box": 31}


def stream_path(table: Table, **query) -> str:
    suffix = "&".join(f"{name}={value}" for name, value in query.items())
    return f"/v1/games/{table.game_id}/stream" + (f"?{suffix}" if suffix else "")


def events_page(table: Table, seat: int | None, after: int) -> list[dict]:
    response = table.get(seat, "/events", after=after)
    assert response.status_code == 200
    return response.get_json()["events"]


@pytest.fixture
def quick_app(redis_url, key_prefix, request):
    """Each store, with a heartbeat every second (a stopped reader notices within one)."""
    if getattr(request, "param", "redis") == "memory":
        app = build_app(REDIS_URL="memory://", STREAM_HEARTBEAT_SECONDS="1")
    else:
        app = build_app(REDIS_URL=redis_url, KEY_PREFIX=key_prefix, STREAM_HEARTBEAT_SECONDS="1")
    yield app
    store_of(app).close()


both_stores = pytest.mark.parametrize("quick_app", ["redis", "memory"], indirect=True)


@both_stores
@pytest.mark.parametrize("viewer", [None, 0, 1])
def test_the_view_then_every_new_event_as_events_shows_it(quick_app, viewer):
    table = Table.open(quick_app, quick_app.test_client(), "classic", seed=5)
    reader = Reader(table.client, stream_path(table), bearer(None if viewer is None else table.tokens[viewer]))
    assert reader.response.mimetype == "text/event-stream"
    assert reader.response.headers["Cache-Control"] == "private, no-store"
    first = reader.until(bool)[0]
    view = json.loads(first.data)
    assert first.event == "view" and view == table.view(viewer)
    assert first.id == str(view["last_seq"])  # the stream goes on after the view's last event
    for _ in range(8):
        assert play_one(table).status_code == 200
    last = table.view()["last_seq"]
    reader.until_seq(last)
    reader.stop()
    received = [e for e in reader.events if e.event not in ("view", "presence")]
    assert [int(e.id) for e in received] == list(range(view["last_seq"] + 1, last + 1))
    assert [e.event for e in received] == [json.loads(e.data)["type"] for e in received]
    assert [json.loads(e.data) for e in received] == events_page(table, viewer, view["last_seq"])
    assert all(e.id is None for e in reader.events if e.event == "presence")
    assert reader.chunks[0].startswith(b"retry: ")


@both_stores
def test_a_dropped_stream_resumes_after_its_last_event_id_without_gap_or_repeat(quick_app):
    table = Table.open(quick_app, quick_app.test_client(), "classic", seed=6)
    start = table.view()["last_seq"]
    first = Reader(table.client, stream_path(table))
    first.until(bool)
    for _ in range(5):
        assert play_one(table).status_code == 200
    first.until_seq(table.view()["last_seq"])
    first.stop()  # the connection drops
    kept = first.shown()
    last_id = [e.id for e in first.events if e.id is not None][-1]
    for _ in range(5):  # the match goes on meanwhile
        assert play_one(table).status_code == 200
    second = Reader(table.client, stream_path(table, after=1), {"Last-Event-ID": last_id})
    view = second.view
    assert second.events[0].id == last_id  # the header wins over ?after
    for _ in range(3):
        assert play_one(table).status_code == 200
    second.until_seq(table.view()["last_seq"])
    second.stop()
    seqs = [event["seq"] for event in kept + second.shown()]
    assert seqs == list(range(start + 1, table.view()["last_seq"] + 1))
    # The view of a resumed stream is the game now: the events it includes are those up to its last_seq.
    assert view["last_seq"] >= int(last_id)


@both_stores
def test_after_resumes_like_last_event_id(quick_app):
    table = Table.open(quick_app, quick_app.test_client(), "classic", seed=6)
    for _ in range(3):
        assert play_one(table).status_code == 200
    reader = Reader(table.client, stream_path(table, after=2))
    last = table.view()["last_seq"]
    reader.until_seq(last)
    reader.stop()
    assert reader.events[0].id == "2"
    assert [event["seq"] for event in reader.shown()] == list(range(3, last + 1))
    assert reader.shown() == events_page(table, None, 2)


@pytest.mark.parametrize(("headers", "query"), [
    ({"Last-Event-ID": "abc"}, ""), ({"Last-Event-ID": "-3"}, ""), ({"Last-Event-ID": "99999999999"}, ""),
    ({}, "?after=-1"), ({}, "?after=x"), ({"Last-Event-ID": "500"}, ""), ({}, "?after=500"),
])
def test_a_resume_point_that_is_no_event_is_refused_before_the_stream(any_app, headers, query):
    table = Table.open(any_app, any_app.test_client(), "classic", seed=6)
    response = table.client.get(f"/v1/games/{table.game_id}/stream{query}", headers=headers)
    assert_problem(response, 422, "invalid_request")


def test_unknown_games_and_tokens_are_refused_before_the_stream(any_app):
    client = any_app.test_client()
    assert_problem(client.get("/v1/games/g_AAAAAAAAAAAAAAAAAAAAAA/stream"), 404, "game_not_found")
    assert_problem(client.get("/v1/games/not-a-game/stream"), 404, "game_not_found")
    table = Table.open(any_app, client, "classic", seed=6)
    assert_problem(client.get(stream_path(table), headers=bearer("made-up")), 401, "unauthorized")


@both_stores
def test_the_stream_ends_after_the_match_and_a_client_with_every_event_gets_204(quick_app):
    table = Table.open(quick_app, quick_app.test_client(), "classic", seed=7)
    reader = Reader(table.client, stream_path(table), bearer(table.tokens[1]))
    reader.until(bool)
    assert table.act(0, "resign").status_code == 200
    reader.wait_end()
    shown = reader.shown()
    assert shown[-1]["type"] == EventType.MATCH_FINISHED.value
    # The end, said once more without an id: the match's result as its view has it.
    assert reader.events[-1].event == "match_over"
    assert b"id:" not in next(chunk for chunk in reversed(reader.chunks) if b"event: match_over" in chunk)
    view = table.view()
    assert json.loads(reader.events[-1].data) == {"game_id": table.game_id, "status": view["status"],
                                                  "result": view["result"]}
    last = shown[-1]["seq"]
    # EventSource reconnects with the last id it got: nothing more, and it stops reconnecting.
    again = table.client.get(stream_path(table), headers={"Last-Event-ID": str(last)})
    assert again.status_code == 204 and again.data == b""
    # Without a resume point: the finished match's view, then the end.
    fresh = Reader(table.client, stream_path(table))
    fresh.wait_end()
    assert [e.event for e in fresh.events] == ["view", "match_over"]
    assert json.loads(fresh.events[0].data)["status"] == "finished"
    assert fresh.events[0].id == str(last)


@both_stores
def test_a_quiet_stream_sends_a_comment_every_heartbeat(quick_app):
    table = Table.open(quick_app, quick_app.test_client(), "classic", seed=7)
    reader = Reader(table.client, stream_path(table))
    reader.until(bool)
    time.sleep(2.5)
    reader.stop()
    assert reader.chunks.count(b": keep-alive\n\n") >= 2
    assert [e.event for e in reader.events] == ["view"]


@pytest.mark.parametrize("scope", ["address", "api_key"])
def test_open_streams_are_bounded_per_address_and_per_api_key(redis_url, key_prefix, scope):
    app = build_app(REDIS_URL=redis_url, KEY_PREFIX=key_prefix, STREAMS_PER_ADDRESS="2", STREAMS_PER_API_KEY="1",
                    STREAM_HEARTBEAT_SECONDS="1")
    try:
        table = Table.open(app, app.test_client(), "classic", seed=8)
        headers = {"X-API-Key": API_KEY} if scope == "api_key" else {}
        bound = 1 if scope == "api_key" else 2
        open_ones = [Reader(table.client, stream_path(table), headers) for _ in range(bound)]
        for reader in open_ones:
            reader.until(bool)
        refused = table.client.get(stream_path(table), headers=headers)
        assert_problem(refused, 429, "too_many_streams")
        assert refused.headers["Retry-After"] == "5"
        assert refused.get_json()["params"] == {"limit": bound, "scope": scope, "retry_after": 5}
        # The other scope is counted apart: a stream with the key does not take an address's place.
        other = Reader(table.client, stream_path(table), {} if headers else {"X-API-Key": API_KEY})
        assert other.response.status_code == 200
        other.stop()
        open_ones[0].stop()  # a closed stream frees its place
        again = Reader(table.client, stream_path(table), headers)
        assert again.response.status_code == 200
        again.stop()
        for reader in open_ones[1:]:
            reader.stop()
    finally:
        store_of(app).close()


def test_a_full_process_refuses_a_stream_with_503(redis_url, key_prefix):
    app = build_app(REDIS_URL=redis_url, KEY_PREFIX=key_prefix, LONG_POLL_MAX_WAITERS="1", STREAM_HEARTBEAT_SECONDS="1")
    try:
        table = Table.open(app, app.test_client(), "classic", seed=8)
        holder = Reader(table.client, stream_path(table))
        holder.until(bool)
        refused = table.client.get(stream_path(table))
        assert_problem(refused, 503, "long_poll_capacity")
        assert "Retry-After" in refused.headers
        holder.stop()
    finally:
        store_of(app).close()


def test_a_deadline_that_passes_while_streaming_is_played_and_streamed(redis_url, key_prefix):
    # a heartbeat every second: the reader stops at the next chunk, and after the timeout the
    # match may stay silent for longer than the reader waits
    app = build_app(REDIS_URL=redis_url, KEY_PREFIX=key_prefix, STREAM_HEARTBEAT_SECONDS="1")
    try:
        clocked(app)
        created = app.test_client().post("/v1/games", json={
            "variant": "classic", "players": [{"name": "Ann"}, {"name": "Bob"}], "rules": {"turn_seconds": TURN},
            "seed": 41})
        game_id = created.get_json()["game"]["id"]
        absent = created.get_json()["game"]["hand"]["turn"]
        app.extensions[EXTENSION].games.ctx.clock = RunningClock(START + TURN - 0.5)  # due in half a second
        reader = Reader(app.test_client(), f"/v1/games/{game_id}/stream")
        events = reader.until(lambda got: any(e.event == "timeout" for e in got), timeout=5)
        reader.stop()
        timeout = next(json.loads(e.data) for e in events if e.event == "timeout")
        assert timeout["seat"] == absent
    finally:
        store_of(app).close()


# --- hidden information: every stream of whole matches ------------------------------------

def allowed_to_see(event: dict, viewer: int | None, captain: int | None, sitter: int | None) -> bool:
    """Whether ``viewer`` may see the secret part of ``event`` (the seat's own, and in box the
    captain's cards to the sitter, the sitter's advice to the captain)."""
    seat = event["seat"]
    team = {captain, sitter} if sitter is not None else set()
    return viewer is not None and (viewer == seat or (seat in team and viewer in team))


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["classic", "box"])
def test_no_stream_shows_a_hidden_card_over_a_whole_match(redis_app, variant):
    table = Table.open(redis_app, redis_app.test_client(), variant, seed=HIDDEN_CHECK_SEEDS[variant])
    viewers = [None, *range(len(table.tokens))]
    readers = {viewer: Reader(table.client, stream_path(table, after=0),
                              bearer(None if viewer is None else table.tokens[viewer])) for viewer in viewers}
    teams: dict[int, tuple[int | None, int | None]] = {}  # hand number -> (captain, sitter)
    moves = 0
    while table.view()["status"] == "active":
        match = table.match()
        teams[match.hand.number] = (match.captain, match.sitter)
        if moves % 7 == 0:  # the hands as dealt are what a view may show its owner only
            for viewer, reader in readers.items():
                if viewer is not None and viewer in match.hand.seats:
                    assert set(table.view(viewer)["you"]["hand"]) == holding(match, viewer)
        assert play_one(table).status_code == 200
        moves += 1
    for viewer, reader in readers.items():
        reader.wait_end(timeout=30)
        view, *rest = reader.events
        assert ("you" in json.loads(view.data)) is (viewer is not None)
        shown = reader.shown()
        assert shown == events_page(table, viewer, 0), viewer
        assert shown[-1]["type"] == EventType.MATCH_FINISHED.value
        for event in shown:
            assert "deck" not in event
            captain, sitter = teams.get(event["hand"], (None, None))
            may_see = allowed_to_see(event, viewer, captain, sitter)
            if event["type"] == "dealt":
                assert ("cards" in event) is may_see, (viewer, event)
            if event["type"] == "draw" and event["source"] == "stock":
                assert (event["card"] is not None) is may_see, (viewer, event)
            if event["type"] == "advice":
                assert ("message" in event) is may_see, (viewer, event)
    assert moves > 50


def test_the_streams_of_a_game_in_one_process_share_one_read_per_change(tmp_path):
    from tests.e2e.waiters import changed, command_calls
    from tests.redis_servers import RedisServer

    server = RedisServer(tmp_path / "redis").start()
    app = build_app(REDIS_URL=server.url, KEY_PREFIX="s:", STREAM_HEARTBEAT_SECONDS="1")
    client = redis.Redis.from_url(server.url)
    try:
        table = Table.open(app, app.test_client(), "classic", seed=5)
        readers = [Reader(table.client, stream_path(table)) for _ in range(6)]
        for reader in readers:
            reader.until(bool)
        for _ in range(3):
            before, requests = command_calls(client), table.requests
            assert play_one(table).status_code == 200
            last = table.view()["last_seq"]
            for reader in readers:
                reader.until_seq(last)
            spent = changed(before, command_calls(client))
            # One read of the game and one of its events for the six streams (an HMGET each; the
            # events' script also an LRANGE): every request of the test reads the game once, and
            # a move reads no events.
            assert spent["hmget"] - (table.requests - requests) == 2 and spent["lrange"] == 1, spent
        for reader in readers:
            reader.stop()
    finally:
        client.close()
        store_of(app).close()
        server.stop()
