"""The per-client rate limit: off by default; 429 rate_limited with Retry-After when on."""
from __future__ import annotations

import logging
import socket

import pytest

from observability_probe_app import create_app

BEARER_A = {"Authorization": "Bearer token-of-player-a"}
BEARER_B = {"Authorization": "Bearer token-of-player-b"}


def assert_rate_limited(response, per_minute):
    assert response.status_code == 429
    assert response.mimetype == "application/problem+json"
    body = response.json
    assert (body["status"], body["code"], body["title"]) == (429, "rate_limited", "Too many requests")
    assert body["type"] == "urn:ginrummy:problem:rate_limited"
    assert f"At most {per_minute} requests per minute" in body["detail"]
    assert 1 <= int(response.headers["Retry-After"]) <= 60


def test_the_limiter_is_off_by_default(make_app):
    client = make_app().test_client()
    statuses = {client.get("/v1/games/g_1", headers=BEARER_A).status_code for _ in range(300)}
    assert statuses == {200}


def test_requests_past_the_limit_get_429_with_retry_after(make_app, steady_minute):
    client = make_app(RATE_LIMIT_PER_MINUTE=3).test_client()
    assert [client.get("/v1/games/g_1", headers=BEARER_A).status_code for _ in range(3)] == [200] * 3
    assert_rate_limited(client.get("/v1/games/g_1", headers=BEARER_A), per_minute=3)
    assert_rate_limited(client.post("/v1/games/g_1/draw", json={}, headers=BEARER_A), per_minute=3)


def test_each_client_has_its_own_count(make_app, steady_minute):
    client = make_app(RATE_LIMIT_PER_MINUTE=2).test_client()
    for headers in (BEARER_A, {"X-API-Key": "service-key"}, {}):
        assert client.get("/v1/games/g_1", headers=headers).status_code == 200
        assert client.get("/v1/games/g_1", headers=headers).status_code == 200
        assert client.get("/v1/games/g_1", headers=headers).status_code == 429
    # Another token, and another address, still have their whole allowance.
    assert client.get("/v1/games/g_1", headers=BEARER_B).status_code == 200
    other_address = {"REMOTE_ADDR": "10.1.2.3"}
    assert client.get("/v1/games/g_1", environ_base=other_address).status_code == 200


def test_health_readiness_and_metrics_are_never_limited(make_app, steady_minute):
    app = make_app(RATE_LIMIT_PER_MINUTE=1)

    @app.get("/readyz")
    def readyz():
        return {"status": "ready"}

    client = app.test_client()
    client.get("/v1/games/g_1")
    assert client.get("/v1/games/g_1").status_code == 429
    for path in ("/healthz", "/readyz", "/metrics"):
        assert {client.get(path).status_code for _ in range(5)} == {200}


def test_a_negative_limit_is_refused(make_app):
    with pytest.raises(ValueError, match="RATE_LIMIT_PER_MINUTE"):
        make_app(RATE_LIMIT_PER_MINUTE=-1)


def test_with_redis_every_worker_shares_the_count(redis_url, redis_prefix, redis_client,
                                                  steady_minute):
    config = {"RATE_LIMIT_PER_MINUTE": 3, "REDIS_URL": redis_url,
              "KEY_PREFIX": redis_prefix}
    # Two apps stand for two gunicorn workers: only Redis connects them.
    worker_1 = create_app(config).test_client()
    worker_2 = create_app(config).test_client()
    assert worker_1.get("/v1/games/g_1", headers=BEARER_A).status_code == 200
    assert worker_2.get("/v1/games/g_1", headers=BEARER_A).status_code == 200
    assert worker_1.get("/v1/games/g_1", headers=BEARER_A).status_code == 200
    assert_rate_limited(worker_2.get("/v1/games/g_1", headers=BEARER_A), per_minute=3)
    assert worker_2.get("/v1/games/g_1", headers=BEARER_B).status_code == 200

    keys = [key.decode() for key in redis_client.scan_iter(match=redis_prefix + "*")]
    assert len(keys) == 2 and all(key.startswith(redis_prefix + "rl:") for key in keys)
    assert not any("token-of-player" in key for key in keys)  # only digests of tokens
    assert all(0 < redis_client.ttl(key) <= 120 for key in keys)


def closed_loopback_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # nothing listens once the socket is closed


def test_an_unreachable_redis_lets_requests_through_with_a_warning(make_app, caplog):
    app = make_app(RATE_LIMIT_PER_MINUTE=1,
                   REDIS_URL=f"redis://127.0.0.1:{closed_loopback_port()}/0", KEY_PREFIX="x:")
    client = app.test_client()
    with caplog.at_level(logging.WARNING, logger="service.limits"):
        statuses = [client.get("/v1/games/g_1", headers=BEARER_A).status_code for _ in range(5)]
    assert statuses == [200] * 5
    warnings = [record for record in caplog.records if record.name == "service.limits"]
    # One warning, then the limiter leaves Redis alone for a while instead of retrying.
    assert len(warnings) == 1
    assert "rate limit counter unavailable" in warnings[0].getMessage()
