"""Every error as ``application/problem+json`` (RFC 9457), and how each one is documented.

Errors reach the client only through ``problem_response``: a body with ``type``, ``title``,
``status``, ``detail`` and a stable ``code`` (plus ``errors`` for field-level validation),
never a stack trace. ``register_problem_handlers`` maps every exception kind to one.
"""
from __future__ import annotations

import http
import logging
from collections.abc import Iterable, Mapping

import marshmallow as ma
from flask import Flask, Response
from werkzeug.exceptions import HTTPException

from service import games
from service.problems import PROBLEM_MIMETYPE, PROBLEM_TYPE_PREFIX
from service.problems import problem as problem_json
from service.api.fields import CardField, field_at
from service.rules import Forbidden, IllegalMove, InvalidInput, RulesError
from service.store.base import GameMissing, StoreError

log = logging.getLogger(__name__)

PROBLEM_MEDIA_TYPE = PROBLEM_MIMETYPE
TYPE_PREFIX = PROBLEM_TYPE_PREFIX
# Clients back off this many seconds when the store is down.
STORE_RETRY_AFTER_SECONDS = 1

TITLES = {
    "invalid_request": "The request is malformed",
    "invalid_card": "Not a card",
    "invalid_rules": "Invalid rule options",
    "bots_not_supported": "Bots are not supported",
    "idempotency_key_reused": "Idempotency key reused for a different request",
    "unauthorized": "Missing or unknown credentials",
    "forbidden": "Not allowed for this player",
    "not_found": "No such resource",
    "game_not_found": "No such game",
    "method_not_allowed": "Method not allowed on this resource",
    "conflict": "The game changed meanwhile",
    "not_your_turn": "Not your turn",
    "wrong_phase": "Not possible in this phase",
    "card_not_in_hand": "Card not in hand",
    "cannot_discard_drawn_card": "Cannot discard the card just taken",
    "deadwood_too_high": "Deadwood too high to knock",
    "invalid_melds": "Invalid melds",
    "invalid_layoff": "Invalid lay-off",
    "game_finished": "The match is over",
    "version_mismatch": "The game is not at the expected version",
    "payload_too_large": "Request body too large",
    "unsupported_media_type": "The body must be JSON",
    "store_unavailable": "Game store unavailable",
    "internal_error": "Internal error",
    "rate_limited": "Too many requests",
}

# HTTP errors raised by Flask/werkzeug (routing, body limits) and their codes.
HTTP_CODES = {
    400: "invalid_request",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    500: "internal_error",
}

USE_CASE_STATUS = {
    games.Unauthorized: 401,
    games.PreconditionFailed: 412,
    games.ConcurrentChange: 409,
    games.Unprocessable: 422,
}
RULES_STATUS = {InvalidInput: 422, IllegalMove: 409, Forbidden: 403}


class Problem(Exception):
    """An error response to send as it is (raised by the API layer itself)."""

    def __init__(
        self,
        status: int,
        code: str,
        detail: str,
        errors: Mapping[str, list[str]] | None = None,
        headers: Mapping[str, str] | None = None,
    ):
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.errors = dict(errors) if errors else None
        self.headers = dict(headers or {})


def problem_response(problem: Problem) -> Response:
    """The problem+json response for ``problem``."""
    extra = {"errors": problem.errors} if problem.errors else {}
    title = TITLES.get(problem.code) or http.HTTPStatus(problem.status).phrase
    response = problem_json(problem.status, problem.code, title, problem.detail, **extra)
    response.headers.extend(problem.headers)
    return response


def field_problem(status: int, code: str, detail: str, field: str | None) -> Problem:
    """A problem about one request field (named in ``errors`` when known)."""
    return Problem(status, code, detail, {field: [detail]} if field else None)


def problem_from_http(error: HTTPException) -> Problem:
    """The problem for an HTTP error from Flask, werkzeug or webargs' ``abort``."""
    status = error.code or 500
    data = getattr(error, "data", None) or {}
    messages = data.get("messages")
    # Keep headers that tell the client what to do (Allow on 405, Retry-After on 429).
    headers = {k: v for k, v in error.get_headers() if k.lower() != "content-type"}
    headers.update(data.get("headers") or {})
    if messages:
        errors = flatten_messages(messages)
        code = validation_code(data.get("schema"), errors) if status == 422 else HTTP_CODES.get(status, "invalid_request")
        field, first = next(iter(errors.items()))
        detail = f"{field}: {first[0]}" if field != "body" else first[0]
        return Problem(status, code, detail, errors, headers)
    code = HTTP_CODES.get(status) or error.name.lower().replace(" ", "_").replace("'", "")
    detail = _HTTP_DETAILS.get(status) or error.description or http.HTTPStatus(status).phrase
    return Problem(status, code, detail, headers=headers)


_HTTP_DETAILS = {
    404: "there is no resource at this URL",
    405: "this resource does not support this method",
    413: "the request body is larger than this service accepts",
    415: "send the body as JSON with Content-Type: application/json",
    500: "the service failed to answer this request",
}


def flatten_messages(messages: Mapping) -> dict[str, list[str]]:
    """Validation messages keyed by dotted field path (``players.0.name``).

    webargs nests them as ``{location: {field: {index: [...]}}}``; the location is dropped and
    marshmallow's schema-level key ``_schema`` stands for the object that holds it.
    """
    flat: dict[str, list[str]] = {}

    def walk(node: object, path: list[str]) -> None:
        if isinstance(node, Mapping):
            for key, value in node.items():
                walk(value, path if key == "_schema" else [*path, str(key)])
        elif isinstance(node, (list, tuple)) and all(isinstance(m, str) for m in node):
            flat.setdefault(".".join(path) or "body", []).extend(node)
        elif isinstance(node, (list, tuple)):
            for item in node:
                walk(item, path)
        else:
            flat.setdefault(".".join(path) or "body", []).append(str(node))

    for location_messages in messages.values():
        walk(location_messages, [])
    return flat


def validation_code(schema: ma.Schema | None, errors: Iterable[str]) -> str:
    """``invalid_card`` when only cards failed, ``invalid_rules`` when only rule options did,
    else ``invalid_request``."""
    paths = list(errors)
    if schema is not None and paths and all(
        isinstance(field_at(schema, path.split(".")), CardField) for path in paths
    ):
        return "invalid_card"
    if paths and all(p == "rules" or p.startswith("rules.") for p in paths):
        return "invalid_rules"
    return "invalid_request"


def register_problem_handlers(app: Flask) -> None:
    """Answer every exception with a problem: domain errors, store errors and bugs.

    (HTTP errors are answered by ``ProblemApi.handle_http_exception``.)"""

    @app.errorhandler(Problem)
    def _problem(problem: Problem) -> Response:
        return problem_response(problem)

    @app.errorhandler(RulesError)
    def _rules(error: RulesError) -> Response:
        status = next((s for kind, s in RULES_STATUS.items() if isinstance(error, kind)), 422)
        return problem_response(field_problem(status, error.code, error.detail, error.field))

    @app.errorhandler(games.UseCaseError)
    def _use_case(error: games.UseCaseError) -> Response:
        status = next(s for kind, s in USE_CASE_STATUS.items() if isinstance(error, kind))
        problem = field_problem(status, error.code, error.detail, error.field)
        if isinstance(error, games.Unauthorized):
            problem.headers["WWW-Authenticate"] = error.challenge
        return problem_response(problem)

    @app.errorhandler(GameMissing)
    def _missing(error: GameMissing) -> Response:
        return problem_response(Problem(404, "game_not_found", "no game with this id (it may have expired)"))

    @app.errorhandler(StoreError)
    def _store(error: StoreError) -> Response:
        log.error("game store unavailable: %s", error)
        return problem_response(
            Problem(
                503,
                "store_unavailable",
                "the game store cannot be reached; retry shortly",
                headers={"Retry-After": str(STORE_RETRY_AFTER_SECONDS)},
            )
        )

    @app.errorhandler(Exception)
    def _bug(error: Exception) -> Response:
        log.exception("unhandled error")
        return problem_response(Problem(500, "internal_error", _HTTP_DETAILS[500]))


class ProblemSchema(ma.Schema):
    """An RFC 9457 problem (documentation only: problems are built by ``problem_response``)."""

    type = ma.fields.String(
        required=True,
        metadata={"description": "URI naming the kind of problem", "example": TYPE_PREFIX + "not_your_turn"},
    )
    title = ma.fields.String(
        required=True,
        metadata={"description": "Short summary of this kind of problem", "example": TITLES["not_your_turn"]},
    )
    status = ma.fields.Integer(
        required=True, metadata={"description": "The HTTP status code", "example": 409}
    )
    detail = ma.fields.String(
        required=True,
        metadata={"description": "What went wrong with this request", "example": "it is seat 1's turn"},
    )
    code = ma.fields.String(
        required=True,
        metadata={"description": "Stable machine-readable code to branch on", "example": "not_your_turn"},
    )
    errors = ma.fields.Dict(
        keys=ma.fields.String(),
        values=ma.fields.List(ma.fields.String()),
        metadata={
            "description": "Field-level messages keyed by dotted field path (validation errors only)",
            "example": {"players.0.name": ["Length must be between 1 and 40."]},
        },
    )


STATUS_MEANING = {
    400: "The body is not valid JSON",
    401: "A needed credential is missing or unknown",
    403: "This player may not do this",
    404: "No such game (or it expired)",
    409: "The rules forbid this now, or the game changed meanwhile",
    412: "The game is not at the version named in If-Match",
    413: "The body is larger than the service accepts",
    415: "The body is not JSON",
    422: "The request does not follow the schema or names an unknown card or rule option",
    429: "Too many requests from this client (only when the server limits the rate); see Retry-After",
    503: "The game store cannot be reached; retry after the Retry-After delay",
}
RETRY_AFTER_HEADER = {
    "description": "Seconds to wait before retrying",
    "schema": {"type": "integer"},
    "example": STORE_RETRY_AFTER_SECONDS,
}


def documents_problems(blp, problems: Mapping[int, Iterable[str]]):
    """Decorator documenting each ``status: codes`` of ``problems`` as a problem+json response.

    A ``default`` response (``internal_error``) is documented too.
    """

    def decorator(func):
        for status, codes in problems.items():
            codes = list(codes)
            func = blp.alt_response(
                status,
                schema=ProblemSchema,
                content_type=PROBLEM_MEDIA_TYPE,
                description=f"{STATUS_MEANING[status]}. `code`: " + ", ".join(f"`{c}`" for c in codes),
                example=_example(status, codes[0]),
                headers={"Retry-After": RETRY_AFTER_HEADER} if status in (429, 503) else None,
            )(func)
        return blp.alt_response(
            "default",
            schema=ProblemSchema,
            content_type=PROBLEM_MEDIA_TYPE,
            description="An unexpected error (`internal_error`); it carries no internal detail",
            example=_example(500, "internal_error"),
        )(func)

    return decorator


def _example(status: int, code: str) -> dict:
    return {
        "type": TYPE_PREFIX + code,
        "title": TITLES.get(code) or http.HTTPStatus(status).phrase,
        "status": status,
        "detail": EXAMPLE_DETAILS.get(code, STATUS_MEANING.get(status, _HTTP_DETAILS.get(status, ""))),
        "code": code,
    }


EXAMPLE_DETAILS = {
    "unauthorized": "this action needs a player token: Authorization: Bearer <token>",
    "not_your_turn": "it is seat 1's turn",
    "game_not_found": "no game with this id (it may have expired)",
    "version_mismatch": "the game is at version 18, not the one named in If-Match",
    "store_unavailable": "the game store cannot be reached; retry shortly",
}
