"""One JSON line per request on the ``ginrummy.access`` logger.

The line holds only what is safe to keep: never headers (Authorization, X-API-Key), query
strings, request or response bodies, tokens or cards; from a problem+json response only
its ``code`` is read.
"""
from __future__ import annotations

import logging

import flask

from service.observability.jsonlog import FIELDS_ATTRIBUTE
from service.observability.request_id import current_request_id
from service.problems import problem_code

ACCESS_LOGGER = logging.getLogger("ginrummy.access")

# A game id comes from the path, so any client can make it long; the real ones are short.
_MAX_LOGGED_GAME_ID = 64


def log_request(route: str | None, response: flask.Response, duration_seconds: float) -> None:
    """Log the request being handled and its ``response`` at INFO.

    ``route`` is the matched URL rule (``/v1/games/<game_id>/draw``), None when no rule
    matched. Fields besides those the formatter adds: request_id, method, route, game_id, status,
    duration_ms, remote_addr and, for problem+json responses, code.
    """
    request = flask.request
    game_id = (request.view_args or {}).get("game_id")
    fields: dict[str, object] = {
        "request_id": current_request_id(),
        "method": request.method,
        "route": route,
        "game_id": game_id[:_MAX_LOGGED_GAME_ID] if isinstance(game_id, str) else None,
        "status": response.status_code,
        "duration_ms": round(duration_seconds * 1000, 3),
        "remote_addr": request.remote_addr,
    }
    code = problem_code(response)
    if code is not None:
        fields["code"] = code
    ACCESS_LOGGER.info("request", extra={FIELDS_ATTRIBUTE: fields})
