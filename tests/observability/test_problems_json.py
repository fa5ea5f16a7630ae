"""problem+json responses (RFC 9457) and reading their code back."""
from __future__ import annotations

import json

import flask
import pytest

from service.problems import problem, problem_code


def test_a_problem_has_the_standard_members_and_media_type():
    response = problem(409, "not_your_turn", "Not your turn", "Seat 1 must act now.", {"turn": 1})
    assert response.status_code == 409
    assert response.headers["Content-Type"] == "application/problem+json"
    assert json.loads(response.get_data()) == {
        "type": "urn:ginrummy:problem:not_your_turn",
        "title": "Not your turn",
        "status": 409,
        "detail": "Seat 1 must act now.",
        "code": "not_your_turn",
        "params": {"turn": 1},
    }


def test_extra_members_are_added_and_type_can_be_replaced():
    errors = {"json": {"card": ["Unknown card."]}}
    response = problem(422, "invalid_request", "Invalid request", "See errors.",
                       errors=errors, type="about:blank")
    body = json.loads(response.get_data())
    assert body["errors"] == errors
    assert body["type"] == "about:blank"


def test_the_code_of_a_problem_is_read_back():
    assert problem_code(problem(404, "game_not_found", "Game not found", "x")) == "game_not_found"


@pytest.mark.parametrize("response", [
    flask.Response('{"code": "x"}', mimetype="application/json"),
    flask.Response("not json", mimetype="application/problem+json"),
    flask.Response(b"\xff\xfe", mimetype="application/problem+json"),
    flask.Response('["code"]', mimetype="application/problem+json"),
    flask.Response('{"code": 7}', mimetype="application/problem+json"),
    flask.Response(iter([b'{"code": "streamed"}']), mimetype="application/problem+json"),
])
def test_anything_else_has_no_code(response):
    assert problem_code(response) is None
