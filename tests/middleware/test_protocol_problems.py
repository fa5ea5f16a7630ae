"""What the HTTP servers answer themselves speaks as the app does: one title per code."""
from __future__ import annotations

import http
import json

import pytest

from service.app import create_app
from service.middleware.protocol_problems import PROTOCOL_PROBLEMS, UNFORESEEN, protocol_problem

# The codes a server answers that the app answers too, with the app's titles for them (as its
# OpenAPI document shows them); every other code a server answers has the status's phrase.
APP_TITLES = {"invalid_request": "The request is malformed", "forbidden": "Not allowed for this player",
              "internal_error": "Internal error"}


@pytest.fixture(scope="module", autouse=True)
def app_loaded():
    # The app's modules declare the titles of its codes as they are imported, as in a worker.
    create_app({"REDIS_URL": "memory://"})


@pytest.mark.parametrize("status", [*PROTOCOL_PROBLEMS, 502])  # 502: no code of its own
def test_a_code_the_app_answers_too_has_the_apps_title(status: int) -> None:
    code, _ = PROTOCOL_PROBLEMS.get(status, UNFORESEEN)
    phrase, _, body = protocol_problem(status)
    problem = json.loads(body)
    assert phrase == http.HTTPStatus(status).phrase
    assert (problem["status"], problem["code"], problem["title"]) == (status, code, APP_TITLES.get(code, phrase))
