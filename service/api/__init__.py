"""The HTTP API: one folder per resource (routes + schemas), errors as problem+json.

``register_api(app)`` builds the OpenAPI-documented API on an app whose extensions are set,
and the OpenAPI document that describes it (``document_text``).
"""
from __future__ import annotations

import json

from flask import Flask
from flask_smorest import Api
from werkzeug.exceptions import HTTPException

from service.api import openapi
from service.api.problems import ProblemSchema, problem_from_http, problem_response

DOCUMENT_EXTENSION = "ginrummy.openapi"


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
    """Register every resource and the documentation on ``app`` (whose service context is set)."""
    # Imported here: the route modules build their blueprints at import time.
    from service.api.credentials import refuse_unknown_api_key
    from service.api.docs.routes import assets, blp as docs_blp
    from service.api.examples import recorded
    from service.api.games.event_schemas import event_components
    from service.api.games.routes import blp as games_blp
    from service.api.games import stream  # noqa: F401 - adds the match's stream to the games blueprint
    from service.api.hands.routes import blp as hands_blp
    from service.api.health.routes import blp as health_blp
    from service.api.players.routes import blp as players_blp
    from service.api.problems import problem_examples, problem_responses
    from service.api.invites.routes import blp as invites_blp
    from service.api.matchmaking.routes import blp as matchmaking_blp
    from service.api.ratings.routes import blp as ratings_blp
    from service.api.streams.routes import blp as streams_blp
    from service.api.records.routes import blp as records_blp
    from service.api.vocabulary import COMPONENTS
    from service.api.watch.routes import assets as watch_assets
    from service.api.watch.routes import blp as watch_blp

    app.config.update(
        API_TITLE=openapi.API_TITLE,
        API_VERSION=openapi.API_VERSION,
        OPENAPI_VERSION=openapi.OPENAPI_VERSION,
        # The docs blueprint serves the document and the UI itself, with local assets.
        OPENAPI_URL_PREFIX=None,
        API_SPEC_OPTIONS={
            "info": {"description": openapi.API_DESCRIPTION, "contact": openapi.CONTACT, "license": openapi.LICENSE},
            "servers": openapi.SERVERS,
            "externalDocs": openapi.EXTERNAL_DOCS,
            "security": openapi.OPTIONAL_PLAYER_TOKEN,
        },
    )
    api = ProblemApi(app, spec_kwargs={"marshmallow_plugin": openapi.DocumentPlugin()})
    components = api.spec.components
    for name, scheme in openapi.SECURITY_SCHEMES.items():
        components.security_scheme(name, scheme)
    for name, header in openapi.HEADERS.items():
        components.header(name, header)
    examples = recorded()
    for code, example in problem_examples(examples.problems).items():
        components.example(code, example)
    for name, response in problem_responses().items():
        components.response(name, response)
    for name, schema in {**COMPONENTS, **event_components()}.items():
        components.schema(name, schema)
    platform = (ratings_blp, matchmaking_blp, invites_blp, streams_blp, records_blp)
    for blp in (games_blp, players_blp, *platform, hands_blp, health_blp, docs_blp, watch_blp):
        api.register_blueprint(blp)
    for blp in (games_blp, players_blp, *platform, hands_blp):
        app.before_request_funcs.setdefault(blp.name, []).append(refuse_unknown_api_key)
    app.register_blueprint(assets)
    app.register_blueprint(watch_assets)
    document = openapi.finish(api.spec.to_dict(), examples.responses)
    app.extensions[DOCUMENT_EXTENSION] = json.dumps(document, sort_keys=True, indent=2) + "\n"
    return api


def document_text(app: Flask) -> str:
    """The app's OpenAPI document as checked in: sorted keys, indent 2, final newline."""
    return app.extensions[DOCUMENT_EXTENSION]
