"""The per-client rate limit: off by default; when on, 429 rate_limited with Retry-After and
RateLimit-* headers, counted per checked identity (a configured API key, a token issued for the
game in the path), else per client address, never per credential a client merely sends."""
from __future__ import annotations

import logging
import socket
import threading
import time
from pathlib import Path

import flask
import pytest
import redis

from observability_probe_app import PROBE_SECRET, create_app
from service import ids, tokens
from service.middleware import init_middleware
from service.middleware.rate_limit import CounterUnavailable, RedisWindowCounter
from service.store.redis_client import LIMITER_MAX_CONNECTIONS, LIMITER_TIMEOUT_SECONDS
from service.store.errors import StoreError
from tests.redis_servers import RedisServer

GAME = ids.new_game_id()
OTHER_GAME = ids.new_game_id()
TOKEN_A = PROBE_SECRET.new_token(GAME)
TOKEN_B = PROBE_SECRET.new_token(GAME)
API_KEY = "probe-api-key-0123456789"
BEARER_A = {"Authorization": f"Bearer {TOKEN_A}"}
BEARER_B = {"Authorization": f"Bearer {TOKEN_B}"}
PATH = f"/v1/games/{GAME}"


def assert_rate_limited(response, per_minute):
    assert response.status_code == 429
    assert response.mimetype == "application/problem+json"
    body = response.json
    assert (body["status"], body["code"], body["title"]) == (429, "rate_limited", "Too many requests")
    assert body["type"] == "urn:ginrummy:problem:rate_limited"
    assert f"At most {per_minute} requests per minute" in body["detail"]
    retry_after = int(response.headers["Retry-After"])
    assert 1 <= retry_after <= 60
    assert body["params"] == {"limit": per_minute, "retry_after": retry_after}
    assert response.headers["RateLimit-Remaining"] == "0"


def statuses(client, count, path=PATH, **kwargs):
    return [client.get(path, **kwargs).status_code for _ in range(count)]


def test_the_limiter_is_off_by_default(make_app):
    client = make_app().test_client()
    assert set(statuses(client, 300, headers=BEARER_A)) == {200}
    assert "RateLimit-Limit" not in client.get(PATH).headers


def test_requests_past_the_limit_get_429_with_retry_after(make_app, steady_minute):
    client = make_app(RATE_LIMIT_PER_MINUTE=3).test_client()
    assert statuses(client, 3, headers=BEARER_A) == [200] * 3
    assert_rate_limited(client.get(PATH, headers=BEARER_A), per_minute=3)
    assert_rate_limited(client.post(f"{PATH}/draw", json={}, headers=BEARER_A), per_minute=3)


def test_limited_answers_carry_the_ratelimit_headers(make_app, steady_minute):
    client = make_app(RATE_LIMIT_PER_MINUTE=5).test_client()
    answers = [client.get(PATH) for _ in range(6)]
    assert [a.headers["RateLimit-Limit"] for a in answers] == ["5"] * 6
    assert [a.headers["RateLimit-Remaining"] for a in answers] == ["4", "3", "2", "1", "0", "0"]
    resets = {int(a.headers["RateLimit-Reset"]) for a in answers}
    assert all(1 <= reset <= 60 for reset in resets)
    assert int(answers[-1].headers["Retry-After"]) in resets
    # Routes that are never limited say nothing about a limit.
    assert "RateLimit-Limit" not in client.get("/healthz").headers


def test_each_checked_identity_has_its_own_count(make_app, steady_minute):
    client = make_app(RATE_LIMIT_PER_MINUTE=2, API_KEYS=API_KEY).test_client()
    for headers in (BEARER_A, {"X-API-Key": API_KEY}, {}):
        assert statuses(client, 3, headers=headers) == [200, 200, 429], headers
    # Another issued token, and another address, still have their whole allowance.
    assert client.get(PATH, headers=BEARER_B).status_code == 200
    assert client.get(PATH, environ_base={"REMOTE_ADDR": "10.1.2.3"}).status_code == 200


@pytest.mark.parametrize("credential", [
    "made-up token", "token of another game", "token on a path without a game", "unknown API key",
    "token on a malformed game id"])
def test_bogus_credentials_count_against_the_address(make_app, steady_minute, credential):
    client = make_app(RATE_LIMIT_PER_MINUTE=3, API_KEYS=API_KEY).test_client()
    assert statuses(client, 2) == [200, 200]  # the address, without credentials
    path, headers = {
        "made-up token": (PATH, {"Authorization": "Bearer " + "A" * 43}),
        "token of another game": (PATH, {"Authorization": f"Bearer {PROBE_SECRET.new_token(OTHER_GAME)}"}),
        "token on a path without a game": ("/boom-free", BEARER_A),
        "unknown API key": (PATH, {"X-API-Key": "not-" + API_KEY}),
        "token on a malformed game id": ("/v1/games/g_1", BEARER_A),
    }[credential]
    assert client.get(path, headers=headers).status_code in (200, 404)  # the address's third
    assert_rate_limited(client.get(PATH), per_minute=3)


def test_a_valid_token_outranks_a_bogus_key_and_a_valid_key_a_bogus_token(make_app, steady_minute):
    client = make_app(RATE_LIMIT_PER_MINUTE=1, API_KEYS=API_KEY).test_client()
    assert client.get(PATH, headers={**BEARER_A, "X-API-Key": "bogus"}).status_code == 200
    assert client.get(PATH, headers={"X-API-Key": API_KEY, "Authorization": "Bearer bogus"}).status_code == 200
    assert client.get(PATH).status_code == 200  # the address was not charged by either
    assert client.get(PATH, headers=BEARER_A).status_code == 429


def test_behind_trusted_proxies_the_forwarded_client_counts(make_app, steady_minute):
    client = make_app(RATE_LIMIT_PER_MINUTE=1, TRUSTED_PROXY_HOPS=1).test_client()
    ingress = {"REMOTE_ADDR": "10.0.0.1"}

    def forwarded(chain):
        return client.get(PATH, environ_base=ingress, headers={"X-Forwarded-For": chain}).status_code

    # The ingress appends the peer it saw; what the client wrote before that is ignored.
    assert forwarded("203.0.113.7") == 200
    assert forwarded("198.51.100.1, 203.0.113.7") == 429
    assert forwarded("203.0.113.8") == 200
    assert forwarded("1.1.1.1, 2.2.2.2, 203.0.113.8") == 429


def test_without_trusted_proxies_x_forwarded_for_is_ignored(make_app, steady_minute):
    client = make_app(RATE_LIMIT_PER_MINUTE=1).test_client()
    assert client.get(PATH, headers={"X-Forwarded-For": "203.0.113.7"}).status_code == 200
    assert client.get(PATH, headers={"X-Forwarded-For": "203.0.113.8"}).status_code == 429


def test_an_ipv6_client_counts_as_its_64_network(make_app, steady_minute):
    client = make_app(RATE_LIMIT_PER_MINUTE=1).test_client()
    assert client.get(PATH, environ_base={"REMOTE_ADDR": "2001:db8:1:2::1"}).status_code == 200
    assert client.get(PATH, environ_base={"REMOTE_ADDR": "2001:db8:1:2:ffff::9"}).status_code == 429
    assert client.get(PATH, environ_base={"REMOTE_ADDR": "2001:db8:1:3::1"}).status_code == 200


def test_health_readiness_and_metrics_are_never_limited(make_app, steady_minute):
    app = make_app(RATE_LIMIT_PER_MINUTE=1)

    @app.get("/readyz")
    def readyz():
        return {"status": "ready"}

    client = app.test_client()
    client.get(PATH)
    assert client.get(PATH).status_code == 429
    for path in ("/healthz", "/readyz", "/metrics"):
        assert {client.get(path).status_code for _ in range(5)} == {200}


def test_with_redis_every_worker_shares_the_count(redis_url, redis_prefix, redis_client, steady_minute):
    config = {"RATE_LIMIT_PER_MINUTE": 3, "REDIS_URL": redis_url, "KEY_PREFIX": redis_prefix}
    # Two apps stand for two gunicorn workers: only Redis connects them.
    worker_1 = create_app(config).test_client()
    worker_2 = create_app(config).test_client()
    assert worker_1.get(PATH, headers=BEARER_A).status_code == 200
    assert worker_2.get(PATH, headers=BEARER_A).status_code == 200
    assert worker_1.get(PATH, headers=BEARER_A).status_code == 200
    assert_rate_limited(worker_2.get(PATH, headers=BEARER_A), per_minute=3)
    assert worker_2.get(PATH, headers=BEARER_B).status_code == 200

    keys = [key.decode() for key in redis_client.scan_iter(match=redis_prefix + "*")]
    assert len(keys) == 2 and all(key.startswith(redis_prefix + "rl:t:") for key in keys)
    assert not any(TOKEN_A in key or TOKEN_B in key for key in keys)  # only digests of tokens
    assert all(0 < redis_client.ttl(key) <= 120 for key in keys)


def test_bogus_credentials_create_no_redis_keys(redis_url, redis_prefix, redis_client, steady_minute):
    client = create_app({"RATE_LIMIT_PER_MINUTE": 1000, "REDIS_URL": redis_url, "KEY_PREFIX": redis_prefix,
                         "API_KEYS": API_KEY}).test_client()
    for n in range(200):
        made_up = {"Authorization": f"Bearer {tokens.ServerSecret('x' * 32).new_token(GAME)}"} if n % 2 else {
            "X-API-Key": f"made-up-key-{n}"}
        assert client.get(PATH, headers=made_up).status_code == 200
    keys = [key.decode() for key in redis_client.scan_iter(match=redis_prefix + "*")]
    assert keys == [f"{redis_prefix}rl:a:127.0.0.1:{keys[0].rsplit(':', 1)[1]}"]
    assert int(redis_client.get(keys[0])) == 200


def test_on_a_redis_cluster_the_limiter_counts(redis_cluster_url, steady_minute):
    app = create_app({"RATE_LIMIT_PER_MINUTE": 2, "REDIS_URL": redis_cluster_url, "KEY_PREFIX": "rl-cluster:"})
    client = app.test_client()
    assert statuses(client, 3, headers=BEARER_A) == [200, 200, 429]
    assert statuses(client, 3) == [200, 200, 429]
    cluster = redis.RedisCluster.from_url(redis_cluster_url.replace("redis+cluster://", "redis://"))
    try:
        assert len(list(cluster.scan_iter(match="rl-cluster:rl:*"))) == 2
    finally:
        cluster.close()


def closed_loopback_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # nothing listens once the socket is closed


@pytest.mark.parametrize("scheme", ["redis", "redis+cluster"])
def test_an_unreachable_redis_leaves_each_process_counting_on_its_own(make_app, caplog, scheme):
    app = make_app(RATE_LIMIT_PER_MINUTE=2, REDIS_URL=f"{scheme}://127.0.0.1:{closed_loopback_port()}", KEY_PREFIX="x:")
    client = app.test_client()
    with caplog.at_level(logging.WARNING, logger="service.middleware.rate_limit"):
        answers = [client.get(PATH, headers=BEARER_A) for _ in range(5)]
    assert [answer.status_code for answer in answers] == [200, 200, 429, 429, 429]
    assert [answer.headers["RateLimit-Remaining"] for answer in answers] == ["1", "0", "0", "0", "0"]
    warnings = [record for record in caplog.records if record.name == "service.middleware.rate_limit"]
    # One warning, then the limiter leaves Redis alone for a while instead of retrying.
    assert len(warnings) == 1
    assert "rate limit counter unavailable, counting in this process" in warnings[0].getMessage()


def test_a_full_redis_is_not_written_to_and_the_limit_holds(tmp_path, steady_minute):
    server = RedisServer(tmp_path / "full-redis", extra_args=("--maxmemory-policy", "noeviction")).start()
    try:
        inspect = server.client()
        # Below what an empty Redis uses: every write is refused from now on.
        inspect.config_set("maxmemory", inspect.info("memory")["used_memory"] // 2)
        client = create_app({"RATE_LIMIT_PER_MINUTE": 2, "REDIS_URL": server.url, "KEY_PREFIX": "rl-full:"}).test_client()
        assert statuses(client, 3) == [200, 200, 429]
        assert list(inspect.scan_iter(match="rl-full:*")) == []
        inspect.close()
    finally:
        server.stop()


def connections_to(port: int) -> int:
    """Established TCP connections of this machine to 127.0.0.1:``port`` (the client ends)."""
    rows = Path("/proc/net/tcp").read_text().splitlines()[1:]
    return sum(1 for row in rows if row.split()[2] == f"0100007F:{port:04X}" and row.split()[3] == "01")


def test_the_limiter_holds_a_bounded_number_of_connections_to_a_hung_redis(tmp_path):
    """Under gevent every request counts at once: a Redis that stops answering must not get a
    connection per waiting request. The requests beyond the pool wait for a connection as long
    as for an answer, then count in the process."""
    server = RedisServer(tmp_path / "hung-redis").start()
    try:
        counter = RedisWindowCounter(server.url, "rl-hung:")
        assert counter.increment("a", 1) == 1
        server.pause()
        unavailable = []

        def count(number: int) -> None:
            try:
                counter.increment(f"c{number}", 1)
            except CounterUnavailable:
                unavailable.append(number)

        threads = [threading.Thread(target=count, args=(n,)) for n in range(4 * LIMITER_MAX_CONNECTIONS)]
        for thread in threads:
            thread.start()
        time.sleep(LIMITER_TIMEOUT_SECONDS / 2)
        held = connections_to(server.port)
        for thread in threads:
            thread.join(30)
        assert 1 <= held <= LIMITER_MAX_CONNECTIONS
        assert sorted(unavailable) == list(range(len(threads)))
    finally:
        server.stop()


def test_without_the_secret_tokens_count_against_the_address(steady_minute, caplog):
    calls = []

    def failing_secret():
        calls.append(1)
        raise StoreError()

    app = flask.Flask("no_secret")
    app.config["RATE_LIMIT_PER_MINUTE"] = 2
    init_middleware(app, secret=failing_secret)
    app.get("/v1/games/<game_id>")(lambda game_id: {"id": game_id})
    client = app.test_client()
    with caplog.at_level(logging.WARNING, logger="service.middleware.rate_limit"):
        assert statuses(client, 2, headers=BEARER_A) == [200, 200]
        assert client.get(PATH).status_code == 429  # the token's requests were the address's
    assert len(calls) == 1  # not asked again at once: the store is not hammered
    assert "server secret unavailable" in caplog.text
