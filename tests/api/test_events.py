"""GET /v1/games/{id}/events: numbering, redaction per viewer, long-poll."""
from __future__ import annotations

import threading
import time

import pytest
import redis

from service.store import RedisStore, StoreError
from service.store.keys import game_keys
from tests.api.conftest import build_app
from tests.api.support import Table, play_one, seat_to_act, store_of


@pytest.fixture
def table(any_app) -> Table:
    return Table.open(any_app, any_app.test_client(), "classic", seed=23)


def events(table: Table, seat: int | None = None, **query) -> dict:
    response = table.get(seat, "/events", **query)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def test_events_are_numbered_from_one_and_paged_by_after(table):
    page = events(table)
    seqs = [e["seq"] for e in page["events"]]
    assert seqs == list(range(1, len(seqs) + 1)) and page["last_seq"] == seqs[-1]
    assert events(table, after=page["last_seq"]) == {"events": [], "last_seq": page["last_seq"]}
    assert table.act(seat_to_act(table.view()), "pass").status_code == 200
    newer = events(table, after=page["last_seq"])
    assert [e["type"] for e in newer["events"]] == ["pass"] and newer["last_seq"] == page["last_seq"] + 1


def test_a_stock_draw_shows_its_card_to_the_drawer_only(table):
    non_dealer = seat_to_act(table.view())
    table.act(non_dealer, "pass")
    table.act(1 - non_dealer, "pass")
    drawn = table.act(non_dealer, "draw", {"source": "stock"}).get_json()["you"]["hand"]
    last = events(table)["last_seq"]
    mine = events(table, non_dealer, after=last - 1)["events"][0]
    theirs = events(table, 1 - non_dealer, after=last - 1)["events"][0]
    public = events(table, after=last - 1)["events"][0]
    assert mine["type"] == "draw" and mine["card"] in drawn
    assert theirs["card"] is None and public["card"] is None
    assert theirs == public


def test_long_poll_returns_as_soon_as_a_move_happens(table):
    seat = seat_to_act(table.view())
    last = events(table)["last_seq"]
    mover = threading.Timer(0.5, lambda: table.app.test_client().post(f"/v1/games/{table.game_id}/pass", headers=table.auth(seat)))
    started = time.monotonic()
    mover.start()
    page = events(table, after=last, wait=10)
    elapsed = time.monotonic() - started
    mover.join()
    assert [e["type"] for e in page["events"]] == ["pass"]
    assert 0.4 <= elapsed < 3


def test_long_poll_without_news_waits_then_answers_empty(table):
    last = events(table)["last_seq"]
    started = time.monotonic()
    assert events(table, after=last, wait=0.5)["events"] == []
    assert 0.45 <= time.monotonic() - started < 3


def test_the_server_caps_the_wait(redis_url, key_prefix):
    app = build_app(REDIS_URL=redis_url, KEY_PREFIX=key_prefix, LONG_POLL_MAX_SECONDS="1")
    table = Table.open(app, app.test_client(), "classic", seed=23)
    last = events(table)["last_seq"]
    started = time.monotonic()
    assert events(table, after=last, wait=30)["events"] == []
    assert time.monotonic() - started < 3
    store_of(app).close()


# A finished match is kept in Redis as its state, with its events in one compressed field.
FINISHED_MATCH_MAX_BYTES = 16 * 1024


@pytest.mark.slow
def test_a_finished_match_keeps_its_events_compressed_and_reads_them_alike(redis_app, redis_url, key_prefix):
    # Gin only, to 60: a long match (dead hands run the stock out), 400+ events.
    table = Table.open(redis_app, redis_app.test_client(), "classic", seed=32,
                       rules={"knock_limit": 0, "target_score": 60})
    while table.view()["status"] == "active":
        before = {seat: events(table, seat) for seat in (None, 0, 1)}
        response = play_one(table)
        assert response.status_code == 200
    after = {seat: events(table, seat) for seat in (None, 0, 1)}
    for seat, page in after.items():
        assert page["events"][:len(before[seat]["events"])] == before[seat]["events"]
        assert [e["seq"] for e in page["events"]] == list(range(1, page["last_seq"] + 1))
        assert page["events"][-1]["type"] == "match_finished" and page["last_seq"] > 400
        assert events(table, seat, after=17)["events"] == page["events"][17:]
    with redis.Redis.from_url(redis_url, decode_responses=True) as client:
        keys = game_keys(key_prefix, table.game_id)
        assert not client.exists(keys.events) and client.hget(keys.state, "a").startswith("z1:")
        stored = sum(client.memory_usage(key, samples=0) or 0 for key in client.scan_iter(match=f"{key_prefix}{{{table.game_id}}}*"))
    assert stored <= FINISHED_MATCH_MAX_BYTES, stored


class ArchiveFails(RedisStore):
    """The real store, whose archiving step fails as if Redis went away right after the save."""

    def archive_events(self, game_id: str) -> None:
        raise StoreError()


def test_the_move_that_ends_a_match_stands_when_archiving_fails(redis_url, key_prefix, caplog):
    store = ArchiveFails(redis_url, key_prefix)
    app = build_app(store, REDIS_URL=redis_url, KEY_PREFIX=key_prefix)
    table = Table.open(app, app.test_client(), "classic", seed=0, rules={"knock_limit": 0, "target_score": 30})
    while table.view()["status"] == "active":
        assert play_one(table).status_code == 200
    page = events(table)
    assert page["events"][-1]["type"] == "match_finished"
    assert [e["seq"] for e in page["events"]] == list(range(1, page["last_seq"] + 1))
    assert "stay unarchived" in caplog.text
    store.close()


def test_an_archive_that_cannot_be_read_answers_a_logged_500_and_leaves_the_game_playable(
    redis_app, redis_url, key_prefix, caplog
):
    table = Table.open(redis_app, redis_app.test_client(), "classic", seed=23)
    assert table.act(seat_to_act(table.view()), "pass").status_code == 200
    store_of(redis_app).archive_events(table.game_id)
    assert events(table)["last_seq"] > 1  # read from the archive as before
    with redis.Redis.from_url(redis_url, decode_responses=True) as client:
        client.hset(game_keys(key_prefix, table.game_id).state, "a", "z1:not base64 at all")
    response = table.get(None, "/events")
    problem = response.get_json()
    assert response.status_code == 500 and response.mimetype == "application/problem+json"
    body = response.get_data(as_text=True)
    assert problem["code"] == "internal_error" and "Traceback" not in body and "base64" not in body.lower()
    assert "unhandled error" in caplog.text
    # Only the events' history is unreadable: the game itself still answers and moves.
    assert table.view()["status"] == "active"
    assert table.act(seat_to_act(table.view()), "pass").status_code == 200
