"""Every error as ``application/problem+json`` (RFC 9457), and how each one is documented.

Errors reach the client only through ``problem_response``: a body with ``type``, ``title``,
``status``, ``detail`` and a stable ``code`` (plus ``errors`` for field-level validation),
never a stack trace. ``register_problem_handlers`` maps every exception kind to one.
"""
from __future__ import annotations

import http
import inspect
import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import marshmallow as ma
from flask import Flask, Response
from werkzeug.exceptions import HTTPException, default_exceptions

from service.api.openapi import HEADERS, RETRY_AFTER, documentation_only, header_ref
from service.api.parser import INVALID_JSON
from service.problems import PROBLEM_MIMETYPE, PROBLEM_TYPE_PREFIX, problem_body
from service.problems import problem as problem_json
from service.rules import ADVICE_PER_HAND, GameError, InvalidInput
from service.rules.errors import codes_answered_with, declare, title_of

log = logging.getLogger(__name__)

PROBLEM_MEDIA_TYPE = PROBLEM_MIMETYPE
TYPE_PREFIX = PROBLEM_TYPE_PREFIX

# What Flask and werkzeug answer themselves (routing, the body cap, a body that is not JSON, a
# bug), by status: the code and title of each (a malformed request's title is the engine's).
HTTP_PROBLEMS = {
    400: ("invalid_request", InvalidInput.titles["invalid_request"]),
    404: ("not_found", "No such resource"),
    405: ("method_not_allowed", "Method not allowed on this resource"),
    413: ("payload_too_large", "Request body too large"),
    415: ("unsupported_media_type", "The body must be JSON"),
    500: ("internal_error", "Internal error"),
}
for _status, (_code, _title) in HTTP_PROBLEMS.items():
    declare(_status, _code, _title)
# A body that breaks the schema is refused as the engine refuses malformed input.
HTTP_CODES = {status: code for status, (code, _) in HTTP_PROBLEMS.items()} | {422: "invalid_request"}
# The rate limiter (service/middleware) answers every route so; each route documents it.
declare(429, "rate_limited", "Too many requests")


class Problem(Exception):
    """An error response to send as it is (raised by the API layer itself)."""

    def __init__(
        self,
        status: int,
        code: str,
        detail: str,
        errors: Mapping[str, list[str]] | None = None,
        headers: Mapping[str, str] | None = None,
        params: Mapping[str, object] | None = None,
    ):
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.errors = dict(errors) if errors else None
        self.headers = dict(headers or {})
        self.params = dict(params or {})


def problem_response(problem: Problem) -> Response:
    """The problem+json response for ``problem``."""
    extra = {"errors": problem.errors} if problem.errors else {}
    response = problem_json(problem.status, problem.code, _title(problem), problem.detail, problem.params, **extra)
    response.headers.extend(problem.headers)
    return response


def problem_document(problem: Problem) -> dict:
    """The body of ``problem_response(problem)``, as JSON values."""
    extra = {"errors": problem.errors} if problem.errors else {}
    return json.loads(problem_body(problem.status, problem.code, _title(problem), problem.detail, problem.params,
                                   **extra))


def _title(problem: Problem) -> str:
    return title_of(problem.code) or http.HTTPStatus(problem.status).phrase


def codes_of(status: int | str) -> tuple[str, ...]:
    """Every code declared with ``status`` (``default``: 500)."""
    return codes_answered_with(500 if status == "default" else status)


def refusal_problem(error: GameError) -> Problem:
    """The problem of a refusal, naming its field in ``errors`` when it has one."""
    errors = {error.field: [error.detail]} if error.field else None
    return Problem(error.status, error.code, error.detail, errors, error.headers, error.params)


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
        code = validation_code(errors) if status == 422 else HTTP_CODES.get(status, "invalid_request")
        field, first = next(iter(errors.items()))
        detail = f"{field}: {first[0]}" if field != "body" else first[0]
        return Problem(status, code, detail, errors, headers, {"fields": list(errors)})
    code = HTTP_CODES.get(status) or error.name.lower().replace(" ", "_").replace("'", "")
    detail = _HTTP_DETAILS.get(status) or error.description or http.HTTPStatus(status).phrase
    return Problem(status, code, detail, headers=headers)


_HTTP_DETAILS = {
    404: "there is no resource at this URL",
    405: "this resource does not support this method",
    413: "the request body is larger than this service accepts",
    415: "send the body as JSON in UTF-8 with Content-Type: application/json (charset=utf-8 optional)",
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
    # A client chooses the names of unknown fields: echo a few, each cut short.
    return {_shown_path(path): found for path, found in list(flat.items())[:MAX_FIELD_ERRORS]}


MAX_FIELD_ERRORS = 20
MAX_FIELD_PATH = 64


def _shown_path(path: str) -> str:
    return path if len(path) <= MAX_FIELD_PATH else path[:MAX_FIELD_PATH] + "…"


def validation_code(errors: Iterable[str]) -> str:
    """``invalid_rules`` when only rule options failed, else ``invalid_request``."""
    paths = list(errors)
    if paths and all(p == "rules" or p.startswith("rules.") for p in paths):
        return "invalid_rules"
    return "invalid_request"


def register_problem_handlers(app: Flask) -> None:
    """Answer every exception with a problem: domain errors, store errors and bugs.

    (HTTP errors are answered by ``ProblemApi.handle_http_exception``.)"""

    @app.errorhandler(Problem)
    def _problem(problem: Problem) -> Response:
        return problem_response(problem)

    @app.errorhandler(GameError)
    def _refused(error: GameError) -> Response:
        return problem_response(refusal_problem(error))

    @app.errorhandler(Exception)
    def _bug(error: Exception) -> Response:
        log.exception("unhandled error")
        return problem_response(Problem(500, "internal_error", _HTTP_DETAILS[500]))


class ProblemSchema(ma.Schema):
    """An RFC 9457 problem (documentation only: problems are built by ``problem_response``)."""

    class Meta:
        # A response: open to members added later.
        unknown = ma.EXCLUDE

    type = ma.fields.String(
        required=True,
        metadata={"description": "URI naming the kind of problem", "example": TYPE_PREFIX + "not_your_turn"},
    )
    title = ma.fields.String(
        required=True,
        metadata={"description": "Short summary of this kind of problem", "example": title_of("not_your_turn")},
    )
    status = ma.fields.Integer(
        required=True, metadata={"description": "The HTTP status code", "example": 409}
    )
    detail = ma.fields.String(
        required=True,
        metadata={"description": "What went wrong with this request, in English", "example": "it is seat 1's turn"},
    )
    code = ma.fields.String(
        required=True,
        metadata={"description": "Stable machine-readable code to branch on", "example": "not_your_turn"},
    )
    params = ma.fields.Dict(
        keys=ma.fields.String(),
        required=True,
        metadata={
            "description": "The values of this occurrence that a client can put into its own translated message "
                           "(which ones depends on `code`)",
            "example": {"turn": 1},
        },
    )
    errors = ma.fields.Dict(
        keys=ma.fields.String(),
        values=ma.fields.List(ma.fields.String()),
        metadata={
            "description": "Field-level messages keyed by dotted field path (validation errors only)",
            "example": {"players.0.name": ["Length must be between 1 and 40."]},
        },
    )


@dataclass(frozen=True)
class ProblemResponse:
    """What one status means, whichever code it is answered with (the codes are declared
    where they are raised: service/rules/errors.py)."""

    name: str
    meaning: str


# Every status the API documents problems with. An operation documents the statuses it may
# answer, each with the examples of its own codes only, and lists those codes in its description.
PROBLEM_RESPONSES: dict[int | str, ProblemResponse] = {
    400: ProblemResponse("BadRequest", "The body is not valid JSON"),
    401: ProblemResponse("Unauthorized", "A needed credential is missing or unknown"),
    403: ProblemResponse("Forbidden", "This credential may not do this"),
    404: ProblemResponse("NotFound", "No such game (or player, ticket or invite, as the code says)"),
    409: ProblemResponse("Conflict", "The rules forbid this now, or the game changed meanwhile"),
    410: ProblemResponse("Gone", "The game expired (it answers so for a while after; then 404)"),
    412: ProblemResponse("PreconditionFailed", "The game is not at the version named in If-Match"),
    413: ProblemResponse("PayloadTooLarge", "The body is larger than the service accepts"),
    415: ProblemResponse("UnsupportedMediaType", "The body is not JSON in UTF-8"),
    422: ProblemResponse("UnprocessableContent", "The request does not follow the schema, or names an unknown "
                         "card or rule option, or cannot be processed as it is"),
    429: ProblemResponse("TooManyRequests", "Too many requests from this client (only when the server limits the "
                         "rate), too many games created or analyses computed, or too many streams open; retry after the "
                         "Retry-After delay"),
    503: ProblemResponse("ServiceUnavailable", "The game store cannot be reached or is full, or too many requests "
                         "wait; retry after the Retry-After delay"),
    "default": ProblemResponse("InternalError", "An unexpected error; it carries no internal detail"),
}
RETRY_AFTER_STATUSES = {429: True, 503: False}  # status: whether every such answer carries it


def problem_examples(examples: Mapping[str, dict]) -> dict[str, dict]:
    """The ``components/examples`` of every problem code the operations declared so far
    document: ``examples[code]`` when given (a real problem), else one made up from the code's
    title. Problem responses refer to them by code."""
    return {
        code: {"summary": title_of(code),
               "value": examples.get(code) or _validation_example(status, code) or _made_up(status, code)}
        for status in PROBLEM_RESPONSES
        for code in codes_of(status)
        if (status, code) in _DOCUMENTED
    }


# The problem responses the operations use, by name: one per status and set of codes, shared by
# the operations that answer that status with those codes (filled as the routes are declared).
_SHARED: dict[str, tuple[int | str, tuple[str, ...]]] = {}
# Every (status, code) an operation documents, shared or not: a code no operation answers (such
# as not_found, for an unknown URL) gets no example.
_DOCUMENTED: set[tuple[int | str, str]] = set()


def problem_responses() -> dict[str, dict]:
    """The ``components/responses`` the operations declared so far refer to: each shows the
    examples of its own codes only."""
    return {name: _problem_response(status, codes) for name, (status, codes) in sorted(_SHARED.items())}


def documents_problems(blp, problems: Mapping[int, Iterable[str]], limited: bool = True):
    """Decorator documenting each ``status: codes`` of ``problems``, and a ``default``
    (``internal_error``), as a problem+json response showing the examples of those codes only;
    the codes are also added to the operation's description.

    The responses are shared between the operations answering a status with the same codes
    (``problem_responses``), which declare the rate-limit headers too; ``limited=False`` (an
    operation the rate limiter never counts) documents them inline instead. Raises ValueError
    for a code its status is never answered with."""
    problems = {status: tuple(codes) for status, codes in problems.items()}
    for status, codes in problems.items():
        unknown = set(codes) - set(codes_of(status))
        if unknown:
            raise ValueError(f"codes {sorted(unknown)} are not among the documented {status} problems")

    def decorator(func):
        listed = "; ".join(f"{status} " + ", ".join(f"`{c}`" for c in codes) for status, codes in problems.items())
        if listed:
            func.__doc__ = f"{inspect.cleandoc(func.__doc__)}\n\nProblems (status and `code`): {listed}."
        for status, codes in [*problems.items(), ("default", ("internal_error",))]:
            _DOCUMENTED.update((status, code) for code in codes)
            if limited:
                documented = blp.alt_response(status, response=_shared(status, codes))
            else:
                documented = blp.alt_response(status, schema=ProblemSchema, content_type=PROBLEM_MEDIA_TYPE,
                                              **_problem_parts(status, codes))
            func = documentation_only(documented, func)
        return func

    return decorator


def _shared(status: int | str, codes: tuple[str, ...]) -> str:
    """The name of the shared response for ``codes`` of ``status`` (registered on first use).

    It names the codes even when they are all of the status's: which those are depends on the
    modules imported so far, and a code declared later must not rename a response."""
    name = "-".join((PROBLEM_RESPONSES[status].name, *codes))
    _SHARED[name] = (status, codes)
    return name


def _problem_response(status: int | str, codes: tuple[str, ...]) -> dict:
    parts = _problem_parts(status, codes)
    content = {"schema": {"$ref": "#/components/schemas/Problem"}, "examples": parts["examples"]}
    documented = {"description": parts["description"], "content": {PROBLEM_MEDIA_TYPE: content}}
    if parts["headers"]:
        documented["headers"] = parts["headers"]
    return documented


def _problem_parts(status: int | str, codes: Iterable[str]) -> dict:
    codes = list(codes)
    headers = None
    if status in RETRY_AFTER_STATUSES:
        headers = {RETRY_AFTER: {**HEADERS[RETRY_AFTER], "required": True} if RETRY_AFTER_STATUSES[status]
                   else header_ref(RETRY_AFTER)}
    return {
        "description": f"{PROBLEM_RESPONSES[status].meaning}. `code`: " + ", ".join(f"`{code}`" for code in codes),
        "headers": headers,
        "examples": {code: {"$ref": f"#/components/examples/{code}"} for code in codes},
    }


# What webargs reports for a body that is not JSON (400), and for one that breaks the schema (422).
VALIDATION_MESSAGES = {
    400: INVALID_JSON,
    422: {"json": {"players": {0: {"name": ["Length must be between 1 and 40."]}}}},
}


def _validation_example(status: int | str, code: str) -> dict | None:
    """The problem the service answers for ``VALIDATION_MESSAGES[status]``, built as it is."""
    if code != "invalid_request" or status not in VALIDATION_MESSAGES:
        return None
    error = default_exceptions[status]()
    error.data = {"messages": VALIDATION_MESSAGES[status]}
    return problem_document(problem_from_http(error))


def _made_up(status: int | str, code: str) -> dict:
    http_status = 500 if status == "default" else int(status)
    title = title_of(code)
    return json.loads(problem_body(http_status, code, title, EXAMPLE_DETAILS.get(code, title),
                                   EXAMPLE_PARAMS.get(code)))


# For the problems no example game shows (HTTP-level ones, outages, limits).
EXAMPLE_DETAILS = {
    "payload_too_large": "The request body may not exceed 65536 bytes.",
    "unsupported_media_type": "send the body as JSON in UTF-8 with Content-Type: application/json (charset=utf-8 optional)",
    "rate_limited": "at most 600 requests per minute",
    "creation_quota_exceeded": "at most 600 games may be created per minute",
    "store_unavailable": "the game store cannot be reached; retry shortly",
    "store_full": "the game store is full; retry later",
    "long_poll_capacity": "too many requests are waiting for events; retry shortly",
    "internal_error": "the service failed to answer this request",
    "game_expired": "this game expired",
    "callback_not_allowed": "this callback host is not allowed by the server's configuration",
    "cannot_discard_drawn_card": "9c was just taken from the discard pile and may not be discarded this turn",
    "advice_limit_reached": f"at most {ADVICE_PER_HAND} pieces of advice per hand",
    "invalid_melds": "meld 0 (7c 8d 9c) is neither a set of 3-4 of a rank nor a run of 3+ consecutive cards of a suit "
                     "(ace low)",
    "conflict": "the game kept changing; try again",
    "too_many_streams": "at most 200 streams may be open at once per address on this server",
    "record_incomplete": "this match was longer than the events the service keeps per match, so its record cannot "
                         "be complete",
    "analysis_quota_exceeded": "at most 10 analyses may be computed per minute (analyses already made are not "
                               "counted)",
}
EXAMPLE_PARAMS = {
    "record_incomplete": {"first_kept": 1201},
    "analysis_quota_exceeded": {"retry_after": 42, "limit": 10},
    "payload_too_large": {"max_bytes": 65536},
    "rate_limited": {"retry_after": 42},
    "creation_quota_exceeded": {"retry_after": 60, "limit": 600},
    "too_many_streams": {"retry_after": 5, "limit": 200, "scope": "address"},
    "store_unavailable": {"retry_after": 1},
    "cannot_discard_drawn_card": {"card": "9c"},
    "advice_limit_reached": {"limit": ADVICE_PER_HAND},
    "invalid_melds": {"meld": 0, "cards": ["7c", "8d", "9c"], "reason": "not_a_meld"},
}
