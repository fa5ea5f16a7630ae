"""GET /v1/games/{id}/events: numbering, redaction per viewer, long-poll."""
from __future__ import annotations

import threading
import time

import pytest

from tests.api.conftest import build_app
from tests.api.support import Table, seat_to_act, store_of


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
