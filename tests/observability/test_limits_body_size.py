"""The body-size cap: 413 payload_too_large as problem+json, declared or streamed."""
from __future__ import annotations

import io
import json

import pytest


def assert_payload_too_large(response, cap=65536):
    assert response.status_code == 413
    assert response.mimetype == "application/problem+json"
    body = response.json
    assert body == {
        "type": "urn:ginrummy:problem:payload_too_large",
        "title": "Request body too large",
        "status": 413,
        "detail": f"The request body may not exceed {cap} bytes.",
        "code": "payload_too_large",
        "params": {"max_bytes": cap},
    }


def test_a_body_under_the_default_cap_is_accepted(make_app):
    payload = json.dumps({"pad": "x" * 60_000}).encode()
    response = make_app().test_client().post(
        "/v1/games/g_1/draw", data=payload, content_type="application/json")
    assert response.status_code == 200


def test_a_declared_oversize_body_is_refused_before_the_view_runs(make_app):
    app = make_app()
    response = app.test_client().post("/v1/games/g_1/ignore-body", data=b"x" * 65_537)
    assert_payload_too_large(response)
    assert "views_run" not in app.extensions  # the view never ran, the body was never read


def test_the_cap_comes_from_the_config(make_app):
    client = make_app(MAX_CONTENT_LENGTH=100).test_client()
    assert client.post("/v1/games/g_1/draw", json={"pad": "x" * 50}).status_code == 200
    assert_payload_too_large(client.post("/v1/games/g_1/draw", json={"pad": "x" * 100}), cap=100)


@pytest.mark.parametrize("size, status", [
    (1000, 200), (65_525, 200), (65_526, 413), (1_000_000, 413),  # 65_525 + 11 = the cap
])
def test_a_chunked_body_is_held_to_the_cap(make_app, size, status):
    # A chunked request declares no length (Transfer-Encoding overrides the length the test
    # client adds); servers such as gunicorn decode the chunks and mark the input terminated.
    body = json.dumps({"pad": "x" * size}).encode()
    response = make_app().test_client().post(
        "/v1/games/g_1/draw",
        input_stream=io.BytesIO(body),
        headers={"Transfer-Encoding": "chunked"},
        content_type="application/json",
        environ_overrides={"wsgi.input_terminated": True},
    )
    if status == 413:
        assert_payload_too_large(response)
    else:
        assert response.status_code == 200
        assert response.json["received"]["pad"] == "x" * size


def test_a_chunked_oversize_body_is_refused_before_the_view_runs(make_app):
    app = make_app()
    response = app.test_client().post(
        "/v1/games/g_1/ignore-body",
        input_stream=io.BytesIO(b"x" * 70_000),
        headers={"Transfer-Encoding": "chunked"},
        environ_overrides={"wsgi.input_terminated": True},
    )
    assert_payload_too_large(response)
    assert "views_run" not in app.extensions
