"""A Redis that is down or hung: 503 store_unavailable with Retry-After, liveness stays up,
readiness goes down, and the stored game is intact once Redis is back."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.api.conftest import build_app
from tests.api.support import API_KEY, Table, seat_to_act, store_of
from tests.api.test_errors import assert_problem
from tests.redis_servers import RedisServer, free_port


@pytest.fixture
def private_redis(tmp_path) -> Iterator[RedisServer]:
    """A redis-server of this test's own, persisting every write so a restart keeps the game."""
    server = RedisServer(tmp_path / "redis", extra_args=("--appendonly", "yes", "--appendfsync", "always")).start()
    yield server
    server.stop()


@pytest.mark.parametrize("outage", ["stopped", "hung"])
def test_store_outage_is_503_and_changes_nothing(private_redis, outage):
    app = build_app(REDIS_URL=private_redis.url, KEY_PREFIX="outage:")
    client = app.test_client()
    table = Table.open(app, client, "classic", seed=3)
    seat = seat_to_act(table.view())
    before = table.snapshot()
    if outage == "stopped":
        private_redis.stop()
    else:
        private_redis.pause()
    try:
        for response in (
            table.act(seat, "pass"),
            table.get(seat),
            table.get(None, "/events"),
            client.post("/v1/games", json={"variant": "classic", "players": [{"name": "A"}, {"name": "B"}]}),
            client.get("/readyz"),
        ):
            assert_problem(response, 503, "store_unavailable")
            assert response.headers["Retry-After"] == "1"
        assert client.get("/healthz").status_code == 200
    finally:
        if outage == "stopped":
            private_redis.start()
        else:
            private_redis.resume()
    assert client.get("/readyz").status_code == 200
    assert table.snapshot() == before
    assert table.act(seat, "pass").status_code == 200
    store_of(app).close()


def test_the_service_starts_while_its_cluster_is_away_and_says_so():
    """A cluster client needs the cluster's layout at once: the service starts anyway (not
    ready), its areas (ratings, feed, timers) built at their first use, and answers 503."""
    app = build_app(REDIS_URL=f"redis+cluster://127.0.0.1:{free_port()}", KEY_PREFIX="away:")
    client = app.test_client()
    assert client.get("/healthz").status_code == 200
    for response in (client.get("/readyz"), client.get("/v1/leaderboards/classic", headers={"X-API-Key": API_KEY}),
                     client.get("/v1/players/ann/ratings", headers={"X-API-Key": API_KEY})):
        assert_problem(response, 503, "store_unavailable")
        assert response.headers["Retry-After"] == "1"
