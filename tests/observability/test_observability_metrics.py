"""Prometheus metrics at GET /metrics: requests by endpoint and status, latency, game events."""
from __future__ import annotations

import flask
import pytest
from prometheus_client.parser import text_string_to_metric_families

from service.observability import (
    record_conflict,
    record_game_created,
    record_game_finished,
    record_move,
    record_store_error,
)
from service.observability.metrics import LATENCY_BUCKETS


def scrape(client) -> dict[tuple[str, frozenset], float]:
    """The samples of GET /metrics as {(sample name, labels): value}."""
    response = client.get("/metrics")
    assert response.status_code == 200
    samples = {}
    for family in text_string_to_metric_families(response.get_data(as_text=True)):
        for sample in family.samples:
            samples[sample.name, frozenset(sample.labels.items())] = sample.value
    return samples


def sample(samples, name, **labels) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def test_the_metrics_route_speaks_the_prometheus_text_format(make_app):
    response = make_app().test_client().get("/metrics")
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert "# TYPE http_requests_total counter" in response.get_data(as_text=True)


def test_requests_are_counted_by_route_method_and_status(make_app):
    client = make_app().test_client()
    client.get("/v1/games/g_1")
    client.get("/v1/games/g_2")
    client.get("/v1/games/g_3/missing")
    client.get("/no/such/path")
    client.open("/v1/games/g_1", method="BREW")

    samples = scrape(client)
    counted = "http_requests_total"
    assert sample(samples, counted, endpoint="/v1/games/<game_id>", method="GET", status="200") == 2
    assert sample(samples, counted, endpoint="/v1/games/<game_id>/missing", method="GET",
                  status="404") == 1
    # Raw paths and invented methods never become label values.
    assert sample(samples, counted, endpoint="unmatched", method="GET", status="404") == 1
    assert sample(samples, counted, endpoint="unmatched", method="OTHER", status="405") == 1
    assert not any("g_1" in str(labels) or "/no/such" in str(labels) for _, labels in samples)


def test_latency_is_a_histogram_with_fine_buckets_below_50_ms(make_app):
    client = make_app().test_client()
    for _ in range(3):
        client.get("/v1/games/g_1")

    samples = scrape(client)
    labels = {"endpoint": "/v1/games/<game_id>", "method": "GET"}
    assert sample(samples, "http_request_duration_seconds_count", **labels) == 3
    assert sample(samples, "http_request_duration_seconds_bucket", le="+Inf", **labels) == 3
    assert 0 < sample(samples, "http_request_duration_seconds_sum", **labels) < 3
    assert sum(1 for bound in LATENCY_BUCKETS if 0.001 <= bound <= 0.05) >= 8


def test_the_record_functions_move_the_game_counters(make_app):
    app = make_app()
    client = app.test_client()
    client.post("/v1/games/g_1/draw", json={"source": "stock"})  # the view records a draw
    with app.test_request_context("/v1/games/g_1/knock"):
        record_move("knock")
        record_conflict()
        record_conflict()
        record_store_error()
        record_game_created("classic")
        record_game_created("box")
        record_game_finished("box")

    samples = scrape(client)
    assert sample(samples, "game_moves_total", kind="draw") == 1
    assert sample(samples, "game_moves_total", kind="knock") == 1
    assert sample(samples, "game_version_conflicts_total") == 2
    assert sample(samples, "store_errors_total") == 1
    assert sample(samples, "games_created_total", variant="classic") == 1
    assert sample(samples, "games_created_total", variant="box") == 1
    assert sample(samples, "games_finished_total", variant="box") == 1
    assert sample(samples, "games_finished_total", variant="classic") == 0


def test_each_app_counts_on_its_own(make_app):
    first, second = make_app(), make_app()
    first.test_client().get("/v1/games/g_1")
    with first.app_context():
        record_move("discard")

    samples = scrape(second.test_client())
    assert sample(samples, "http_requests_total", endpoint="/v1/games/<game_id>", method="GET",
                  status="200") == 0
    assert sample(samples, "game_moves_total", kind="discard") == 0


@pytest.mark.parametrize("record", [
    lambda: record_move("draw"), record_conflict, record_store_error,
    lambda: record_game_created("classic"), lambda: record_game_finished("classic"),
])
def test_recording_outside_an_app_context_raises(record):
    with pytest.raises(RuntimeError):
        record()


def test_recording_for_an_app_without_observability_raises():
    with flask.Flask("bare").app_context(), pytest.raises(RuntimeError, match="init_observability"):
        record_move("draw")


def test_a_multiprocess_dir_set_after_import_is_refused(make_app, monkeypatch, tmp_path):
    # prometheus_client chose in-memory values when this process imported it.
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    with pytest.raises(RuntimeError, match="PROMETHEUS_MULTIPROC_DIR"):
        make_app()


METRICS_TOKEN = "metrics-token-0123456789abcdef"


@pytest.mark.parametrize("authorization", [
    None, "", "Bearer", f"Bearer {METRICS_TOKEN[:-1]}", f"Bearer {METRICS_TOKEN}x", f"Basic {METRICS_TOKEN}",
    "Bearer other-token",
])
def test_with_a_metrics_token_a_scrape_without_it_gets_401(make_app, authorization):
    client = make_app(METRICS_TOKEN=METRICS_TOKEN).test_client()
    headers = {} if authorization is None else {"Authorization": authorization}
    response = client.get("/metrics", headers=headers)
    assert response.status_code == 401
    assert response.mimetype == "application/problem+json"
    assert response.json["code"] == "unauthorized"
    assert response.headers["WWW-Authenticate"] == 'Bearer realm="metrics"'
    assert "http_requests_total" not in response.get_data(as_text=True)


@pytest.mark.parametrize("scheme", ["Bearer", "bearer"])
def test_with_a_metrics_token_a_scrape_with_it_gets_the_metrics(make_app, scheme):
    client = make_app(METRICS_TOKEN=METRICS_TOKEN).test_client()
    response = client.get("/metrics", headers={"Authorization": f"{scheme} {METRICS_TOKEN}"})
    assert response.status_code == 200
    assert "# TYPE http_requests_total counter" in response.get_data(as_text=True)


def test_the_service_puts_its_metrics_behind_its_metrics_token():
    from service.app import create_app as create_service

    client = create_service({"REDIS_URL": "memory://", "METRICS_TOKEN": METRICS_TOKEN}).test_client()
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}).status_code == 200
    # The rest of the API does not need it.
    assert client.get("/healthz").status_code == 200
