"""The HTTP API: one folder per resource (routes + schemas), errors as problem+json.

``register_api(app)`` builds the OpenAPI-documented API on an app whose extensions are set.
"""
from __future__ import annotations

from flask import Flask
from flask_smorest import Api
from werkzeug.exceptions import HTTPException

from service.api.problems import ProblemSchema, problem_from_http, problem_response

API_TITLE = "Gin Rummy"
API_VERSION = "1.0.0"
OPENAPI_VERSION = "3.0.3"
API_DESCRIPTION = """\
Host Gin Rummy matches: the classic two-player game and the three-player "in the box" game.

Create a match with `POST /v1/games`: the answer holds one secret **player token** per seat.
Act or read as that player with `Authorization: Bearer <token>`; without a token you get the
public (spectator) view. Every action answers with the actor's new view and an `ETag`
carrying the game's version; send it back in `If-Match` to act only on that version, and
add an `Idempotency-Key` to retry safely. Errors are `application/problem+json` with a
stable `code` to branch on. Cards are written rank then suit: `As`, `Td`, `Kh`.
"""
SECURITY_SCHEMES = {
    "playerToken": {
        "type": "http",
        "scheme": "bearer",
        "description": "A player token from the answer to `POST /v1/games`; it acts and reads as that seat.",
    },
    "apiKey": {
        "type": "apiKey",
        "in": "header",
        "name": "X-API-Key",
        "description": "Service key; needed to create games only when the server is configured with API keys.",
    },
}


class ProblemApi(Api):
    """flask-smorest's Api, answering HTTP errors as problem+json and documenting them so."""

    ERROR_SCHEMA = ProblemSchema
    # Each operation documents its own problems (see problems.documents_problems).
    DEFAULT_ERROR_RESPONSE_NAME = None

    def _register_pagination_header(self):
        # Nothing here is paginated: keep flask-smorest's pagination schema out of the document.
        pass

    def handle_http_exception(self, error: HTTPException):
        return problem_response(problem_from_http(error))


def register_api(app: Flask) -> ProblemApi:
    """Register every resource and the documentation on ``app``."""
    # Imported here: the route modules build their blueprints at import time.
    from service.api.docs.routes import assets, blp as docs_blp
    from service.api.games.routes import blp as games_blp
    from service.api.hands.routes import blp as hands_blp
    from service.api.health.routes import blp as health_blp

    app.config.update(
        API_TITLE=API_TITLE,
        API_VERSION=API_VERSION,
        OPENAPI_VERSION=OPENAPI_VERSION,
        # The docs blueprint serves the document and the UI itself, with local assets.
        OPENAPI_URL_PREFIX=None,
        API_SPEC_OPTIONS={"info": {"description": API_DESCRIPTION}},
    )
    api = ProblemApi(app)
    for name, scheme in SECURITY_SCHEMES.items():
        api.spec.components.security_scheme(name, scheme)
    for blp in (games_blp, hands_blp, health_blp, docs_blp):
        api.register_blueprint(blp)
    app.register_blueprint(assets)
    return api

