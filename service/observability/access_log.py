"""One JSON line per request on the ``ginrummy.access`` logger.

The line holds only what is safe to keep: never headers (Authorization, X-API-Key), query
strings, request or response bodies, tokens or cards; from a problem+json response only
its ``code`` is read. The game id comes from the path, which a client writes: only a
well-formed one is logged (a token or a key pasted into the path would otherwise land in
the log); any other text is logged as ``MALFORMED_GAME_ID``.
"""
from __future__ import annotations

import logging

import flask

from service.ids import is_game_id
from service.observability.jsonlog import FIELDS_ATTRIBUTE
from service.problems import problem_code

ACCESS_LOGGER = logging.getLogger("ginrummy.access")

# Logged instead of a path's game id that no game can have. A fixed marker, not a digest: a
# short digest of a low-entropy secret (an API key pasted into the path) could be brute-forced.
MALFORMED_GAME_ID = "malformed"


def log_request(route: str | None, response: flask.Response, duration_seconds: float) -> None:
    """Log the request being handled and its ``response`` at INFO.

    ``route`` is the matched URL rule (``/v1/games/<game_id>/draw``), None when no rule
    matched. Fields besides those the formatter adds (the request id among them): method, route,
    game_id, status, duration_ms, remote_addr and, for problem+json responses, code.
    """
    if not ACCESS_LOGGER.isEnabledFor(logging.INFO):
        return  # a deployment logging at WARNING pays nothing for the line it drops
    request = flask.request
    game_id = (request.view_args or {}).get("game_id")
    fields: dict[str, object] = {
        "method": request.method,
        "route": route,
        "game_id": logged_game_id(game_id),
        "status": response.status_code,
        "duration_ms": round(duration_seconds * 1000, 3),
        "remote_addr": request.remote_addr,
    }
    code = problem_code(response)
    if code is not None:
        fields["code"] = code
    ACCESS_LOGGER.info("request", extra={FIELDS_ATTRIBUTE: fields})


def logged_game_id(game_id: object) -> str | None:
    """What the access log shows for the path's ``game_id``: the id when well formed,
    ``MALFORMED_GAME_ID`` for any other text, None without one."""
    if not isinstance(game_id, str):
        return None
    return game_id if is_game_id(game_id) else MALFORMED_GAME_ID
