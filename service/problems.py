"""Error responses as ``application/problem+json`` (RFC 9457), the one error format of the API.

Every error body has ``type``, ``title``, ``status``, ``detail`` and a stable ``code`` that
clients branch on (docs/api.md, "Errors"), and ``params``, the values of this occurrence a
client can put into its own translated message; validation errors add ``errors``.
"""
from __future__ import annotations

import json

import flask

PROBLEM_MIMETYPE = "application/problem+json"

# RFC 9457 wants an absolute URI that names the kind of problem; the code already names it,
# and a URN cannot be mistaken for a page that this service promises to serve.
PROBLEM_TYPE_PREFIX = "urn:ginrummy:problem:"


def problem_body(status: int, code: str, title: str, detail: str, params: dict | None = None, **extra: object) -> str:
    """The JSON text of a problem (see ``problem``); also written by gunicorn's own errors."""
    return json.dumps({"type": PROBLEM_TYPE_PREFIX + code, "title": title, "status": status,
                       "detail": detail, "code": code, "params": params or {}, **extra})


def problem(status: int, code: str, title: str, detail: str, params: dict | None = None,
            **extra: object) -> flask.Response:
    """A problem+json response with HTTP ``status``.

    ``title`` is a short summary that is the same for every occurrence of ``code``;
    ``detail`` explains this occurrence to a person and never holds internal details
    (exception text, stack traces, secrets). ``extra`` adds members, e.g. ``errors`` for
    field-level validation; ``type=`` replaces the default type URI. Headers such as
    ``Retry-After`` are set by the caller on the returned response. Works with or without
    an application context.
    """
    return flask.Response(problem_body(status, code, title, detail, params, **extra), status=status,
                          mimetype=PROBLEM_MIMETYPE)


def problem_code(response: flask.Response) -> str | None:
    """The ``code`` of a problem+json response; None for any other response.

    Never raises: a streamed body is not read (that would consume it), and a body that is
    not a JSON object with a string ``code`` counts as having none.
    """
    if response.mimetype != PROBLEM_MIMETYPE or response.is_streamed:
        return None
    try:
        body = json.loads(response.get_data())
    except ValueError:  # includes UnicodeDecodeError
        return None
    code = body.get("code") if isinstance(body, dict) else None
    return code if isinstance(code, str) else None
