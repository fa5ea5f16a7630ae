"""Observability and limits inside the real service (service.app.create_app)."""
from __future__ import annotations

import json

import pytest
from prometheus_client.parser import text_string_to_metric_families

from service import ids
from service.app import create_app

NEW_MATCH = {"variant": "classic", "players": [{"name": "Ann"}, {"name": "Bob"}]}


def service_client(**settings: str):
    return create_app({"REDIS_URL": "memory://", **settings}).test_client()


def metric(client, name: str, **labels: str) -> float:
    text = client.get("/metrics").get_data(as_text=True)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and sample.labels == labels:
                return sample.value
    return 0.0


def test_the_metrics_route_counts_api_requests_and_created_games():
    client = service_client()
    response = client.post("/v1/games", json=NEW_MATCH)
    assert response.status_code == 201

    assert client.get("/metrics").headers["Content-Type"].startswith("text/plain; version=0.0.4")
    assert metric(client, "http_requests_total", endpoint="/v1/games", method="POST",
                  status="201") == 1
    assert metric(client, "games_created_total", variant="classic") == 1


def test_an_api_error_echoes_the_request_id_and_logs_its_code(capsys):
    client = service_client()
    capsys.readouterr()
    missing = ids.new_game_id()
    response = client.get(f"/v1/games/{missing}", headers={"X-Request-ID": "svc-404"})

    assert response.status_code == 404
    assert response.mimetype == "application/problem+json"
    assert response.json["code"] == "game_not_found"
    assert response.headers["X-Request-ID"] == "svc-404"
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line.strip()]
    [access] = [line for line in lines if line["logger"] == "ginrummy.access"]
    assert (access["request_id"], access["route"], access["game_id"], access["code"]) == (
        "svc-404", "/v1/games/<game_id>", missing, "game_not_found")


def test_the_metrics_route_is_not_in_the_api_document():
    document = service_client().get("/openapi.json").json
    assert "/v1/games" in document["paths"]
    assert "/metrics" not in document["paths"]


def test_the_service_refuses_an_oversize_body_as_a_problem():
    response = service_client().post(
        "/v1/games", data=b"{" + b" " * 70_000 + b"}", content_type="application/json")
    assert response.status_code == 413
    assert response.json["code"] == "payload_too_large"
    assert "X-Request-ID" in response.headers


@pytest.mark.usefixtures("steady_minute")
def test_the_service_limits_the_rate_when_configured():
    client = service_client(RATE_LIMIT_PER_MINUTE="2")
    statuses = [client.get("/v1/games/g_missing").status_code for _ in range(3)]
    assert statuses == [404, 404, 429]
    assert client.get("/healthz").status_code == 200


@pytest.mark.usefixtures("steady_minute")
def test_the_service_counts_a_real_token_as_its_own_and_a_misused_one_as_the_address():
    client = service_client(RATE_LIMIT_PER_MINUTE="2", API_KEYS="svc-key")
    key = {"X-API-Key": "svc-key"}
    games = [client.post("/v1/games", json=NEW_MATCH, headers=key).json for _ in range(2)]
    assert client.post("/v1/games", json=NEW_MATCH, headers=key).status_code == 429  # the key's third
    first, second = games
    token = {"Authorization": f"Bearer {first['players'][0]['token']}"}
    first_path, second_path = (f"/v1/games/{game['game']['id']}" for game in games)

    assert [client.get(first_path, headers=token).status_code for _ in range(3)] == [200, 200, 429]
    # The same token on another game is not that game's: it counts as the address (which then
    # has one request left), as an invented token would.
    assert client.get(second_path, headers=token).status_code == 401
    assert client.get(second_path).status_code == 200
    assert client.get(second_path).status_code == 429
