"""What a request costs: one HTTP request per move, and Redis round trips counted on the
wire of the real store (every command sent to the socket is one round trip)."""
from __future__ import annotations

import threading

import pytest
import redis

from service.store import store_from_url
from tests.api.conftest import build_app
from tests.api.support import Table, seat_to_act


class CountingConnection(redis.Connection):
    """A redis-py connection that counts its writes (one per command, pipeline or script)."""

    sent = threading.local()

    def send_packed_command(self, command, check_health=True):
        CountingConnection.sent.count = getattr(CountingConnection.sent, "count", 0) + 1
        super().send_packed_command(command, check_health)


def round_trips(send) -> tuple[int, object]:
    CountingConnection.sent.count = 0
    response = send()
    return CountingConnection.sent.count, response


@pytest.fixture
def table(redis_url, key_prefix):
    store = store_from_url(redis_url, key_prefix, connection_class=CountingConnection)
    app = build_app(store, REDIS_URL=redis_url, KEY_PREFIX=key_prefix)
    table = Table.open(app, app.test_client(), "classic", seed=8)
    # Warm up: the first save loads the store's scripts into Redis, once per process.
    seat = seat_to_act(table.view())
    assert table.act(seat, "pass").status_code == 200
    yield table
    store.close()


def test_a_move_is_one_request_and_two_round_trips(table):
    seat = seat_to_act(table.view())
    trips, response = round_trips(lambda: table.act(seat, "pass", headers={"Idempotency-Key": "m1"}))
    assert response.status_code == 200 and response.get_json()["you"]["seat"] == seat
    assert trips == 2  # load (with the idempotency lookup) + compare-and-set save
    trips, replay = round_trips(lambda: table.act(seat, "pass", headers={"Idempotency-Key": "m1"}))
    assert replay.get_json() == response.get_json() and trips == 1


def test_reads_are_one_round_trip(table):
    seat = seat_to_act(table.view())
    assert round_trips(lambda: table.get(seat))[0] == 1
    assert round_trips(lambda: table.get(None))[0] == 1
    # The game is loaded first (a deadline that passed is settled, the token checked), then the log.
    assert round_trips(lambda: table.get(None, "/events"))[0] == 2
    assert round_trips(lambda: table.get(seat, "/events"))[0] == 2
    assert round_trips(lambda: table.get(seat, "/hint"))[0] == 1
    # Creation counts against the API key's quota first, then stores the match.
    assert round_trips(lambda: table.client.post("/v1/games", json={"variant": "classic", "players": [{"name": "A"}, {"name": "B"}]}))[0] == 2


def test_a_refused_move_costs_one_round_trip(table):
    seat = seat_to_act(table.view())
    trips, response = round_trips(lambda: table.act(1 - seat, "pass"))
    assert response.status_code == 409 and trips == 1
