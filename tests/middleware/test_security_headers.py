"""Security headers on every answer: nosniff and no referrer everywhere, a Content-Security-Policy
that lets /docs run Swagger UI from this origin only and frames nothing, and none that lets a
data answer load anything. (tests/browser checks in Chromium that /docs breaks no rule of it.)"""
from __future__ import annotations

import json
import socket

import pytest
from werkzeug.test import EnvironBuilder

from tests.api.conftest import build_app
from tests.api.support import create


@pytest.fixture(scope="module")
def client():
    return build_app(REDIS_URL="memory://").test_client()


def directives(policy: str) -> dict[str, list[str]]:
    parsed = {}
    for directive in filter(None, (part.strip() for part in policy.split(";"))):
        name, *values = directive.split()
        parsed[name] = values
    return parsed


def answers(client) -> list:
    game = create(client).get_json()["game"]["id"]
    return [
        client.get("/healthz"), client.get("/openapi.json"), client.get(f"/v1/games/{game}"),
        client.post(f"/v1/games/{game}/draw", json={"source": "stock"}),  # 401 problem
        client.get("/v1/games/g_AAAAAAAAAAAAAAAAAAAAAA"), client.delete("/v1/games"), client.get("/nowhere"),
        client.post("/v1/hands/analyze", data="{", content_type="application/json"),
        client.get(f"/v1/games/{game}", headers={"If-None-Match": client.get(f"/v1/games/{game}").headers["ETag"]}),
        client.get("/docs"), client.get("/docs/start.js"), client.get("/docs/assets/swagger-ui.css"),
        client.get("/docs/assets/missing.js"),
    ]


def test_every_answer_is_nosniff_without_referrer(client):
    seen = answers(client)
    assert {response.status_code for response in seen} >= {200, 304, 400, 401, 404, 405}
    for response in seen:
        assert response.headers["X-Content-Type-Options"] == "nosniff", response.request.path
        assert response.headers["Referrer-Policy"] == "no-referrer", response.request.path


@pytest.mark.parametrize("path", ["/docs", "/docs/start.js", "/docs/assets/swagger-ui-bundle.js",
                                  "/docs/assets/swagger-ui.css", "/docs/assets/favicon-32x32.png"])
def test_the_docs_may_use_this_origin_only_and_are_never_framed(client, path):
    response = client.get(path)
    assert response.status_code == 200
    policy = directives(response.headers["Content-Security-Policy"])
    assert policy["default-src"] == ["'self'"] and policy["frame-ancestors"] == ["'none'"]
    assert policy["object-src"] == ["'none'"] and policy["base-uri"] == ["'none'"]
    for values in policy.values():
        # Nothing inline, nothing evaluated, no other origin (data: only for its stylesheet's images).
        assert not {"'unsafe-inline'", "'unsafe-eval'", "*", "http:", "https:"} & set(values), values
    assert policy["img-src"] == ["'self'", "data:"]


def test_data_answers_may_load_nothing(client):
    for response in answers(client):
        if not response.request.path.startswith("/docs"):
            assert directives(response.headers["Content-Security-Policy"]) == {
                "default-src": ["'none'"], "frame-ancestors": ["'none'"]}, response.request.path


@pytest.mark.parametrize(("offered", "echoed"), [("client-chosen.id_1", True), ("bad id\n", False), (None, False)])
def test_the_body_deadline_s_408_carries_them_too_and_a_request_id(offered, echoed):
    # The deadline is the WSGI middleware's, around the app; the app answers the 408 like any
    # other request. Here as under Werkzeug's threaded server (ginrummy serve): the body comes
    # from a real socket, which sends 5 bytes of 50 (tests/e2e/test_both_servers.py: both servers).
    from service.middleware.request_ids import is_acceptable_request_id

    app = build_app(REDIS_URL="memory://", REQUEST_BODY_TIMEOUT_SECONDS="1")
    server_end, client_end = socket.socketpair()
    environ = EnvironBuilder(path="/v1/games", method="POST", content_type="application/json").get_environ()
    environ.update({"CONTENT_LENGTH": "50", "wsgi.input": server_end.makefile("rb"), "werkzeug.socket": server_end})
    if offered is not None:
        environ["HTTP_X_REQUEST_ID"] = offered
    sent = {}
    with server_end, client_end:
        client_end.sendall(b'{"var')
        body = b"".join(app(environ, lambda status, headers, exc_info=None: sent.update(status=status,
                                                                                          headers=dict(headers))))
    assert sent["status"] == "408 REQUEST TIMEOUT" and json.loads(body)["code"] == "request_timeout"
    assert sent["headers"]["X-Content-Type-Options"] == "nosniff"
    assert sent["headers"]["Referrer-Policy"] == "no-referrer"
    assert directives(sent["headers"]["Content-Security-Policy"])["frame-ancestors"] == ["'none'"]
    request_id = sent["headers"]["X-Request-ID"]
    assert (request_id == offered) is echoed and is_acceptable_request_id(request_id)
