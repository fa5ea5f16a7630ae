"""The request id: one token per request that ties its log lines to what the client saw.

A client or proxy may choose it with the ``X-Request-ID`` header; the service echoes it on
every response, errors included, and its log lines carry it (``flask.g.request_id``).
"""
from __future__ import annotations

import random
import re

import flask

REQUEST_ID_HEADER = "X-Request-ID"
# Where the WSGI server puts the header (request.headers reads it there too, at more cost).
_REQUEST_ID_ENVIRON = "HTTP_X_REQUEST_ID"

# The id lands in log lines and response headers: a restricted alphabet and length keep a
# client from forging log records (newlines, quotes) or bloating every line it causes.
_ACCEPTABLE_ID = re.compile(r"[A-Za-z0-9._-]{1,128}")


def init_request_ids(app: flask.Flask) -> None:
    """Give every request of ``app`` an id (see ``current_request_id``) and echo it on its answer."""
    # First of all before-request hooks, so that the id exists even when a hook registered
    # earlier (a rate limit, a size check) answers the request itself.
    app.before_request_funcs.setdefault(None, []).insert(0, _choose_request_id)
    app.after_request(_echo_request_id)


def _choose_request_id() -> None:
    current_request_id()  # a before-request hook's answer must be None, not the id


def _echo_request_id(response: flask.Response) -> flask.Response:
    response.headers[REQUEST_ID_HEADER] = current_request_id()
    return response


def is_acceptable_request_id(value: str) -> bool:
    """Whether a client-chosen id may be used as is: 1-128 characters of [A-Za-z0-9._-]."""
    return _ACCEPTABLE_ID.fullmatch(value) is not None


def new_request_id() -> str:
    """A fresh id: 32 random hex digits. Not a secret, only unique: the module's generator
    (reseeded in each forked worker) spares every request a getrandom system call."""
    return f"{random.getrandbits(128):032x}"


def chosen_request_id(offered: str) -> str:
    """The id of a request whose ``X-Request-ID`` header is ``offered`` ('' when absent)."""
    return offered if is_acceptable_request_id(offered) else new_request_id()


def current_request_id() -> str:
    """The id of the request being handled, chosen on first use and kept on ``flask.g``.

    The ``X-Request-ID`` header's value when acceptable, else 32 new random hex digits.
    Raises RuntimeError outside a request context.
    """
    request_id = flask.g.get("request_id")
    if request_id is None:
        request_id = chosen_request_id(flask.request.environ.get(_REQUEST_ID_ENVIRON, ""))
        flask.g.request_id = request_id
    return request_id
