"""Request limits: a cap on body size and an optional per-client rate limit.

Configuration (``app.config``):

- ``MAX_CONTENT_LENGTH`` (bytes, default 65536): larger bodies get 413 ``payload_too_large``.
  A declared ``Content-Length`` above it is refused before the view runs, without reading
  the body; a chunked body is read (at most one byte past the cap) before the view runs.
- ``RATE_LIMIT_PER_MINUTE`` (default 0 = off): requests a client may make per clock minute;
  beyond it, 429 ``rate_limited`` with ``Retry-After`` (``service.ratelimit`` says who a
  client is). ``/healthz``, ``/readyz`` and ``/metrics`` are never limited.
- ``TRUSTED_PROXY_HOPS`` (default 0): proxies in front of the service whose X-Forwarded-For
  names the client (``service.proxies``); it decides ``request.remote_addr`` for everything
  (rate limit, creation quota, access log).
- ``REDIS_URL`` / ``KEY_PREFIX``: with a Redis URL (one server or ``redis+cluster://``) the
  counts live in Redis under ``KEY_PREFIX + "rl:"``, shared by every worker; otherwise each
  process counts on its own. When Redis fails the limiter logs a warning and counts in its
  own process for a few seconds (a per-worker limit) before it tries Redis again.
"""
from __future__ import annotations

import io
import typing

import flask
from werkzeug.exceptions import NotImplemented as NotImplementedCoding
from werkzeug.exceptions import RequestEntityTooLarge

from service.http_limits import transfer_codings, unsupported_codings
from service.problems import problem
from service.proxies import trust_proxies
from service.ratelimit import WINDOW_SECONDS, RateLimiter, SecretSource, window_counter
from service.api.context import EXTENSION
from service.tokens import ServerSecret

__all__ = ["DEFAULT_MAX_CONTENT_LENGTH", "WINDOW_SECONDS", "init_limits"]

DEFAULT_MAX_CONTENT_LENGTH = 65536


def init_limits(app: flask.Flask, secret: SecretSource | None = None) -> None:
    """Apply the trusted proxies, the body-size cap and, when configured, the rate limit.

    ``secret`` gives the server secret for checking bearer tokens; by default the app's game
    service's (looked up per request, so the service may be set up after this call).
    The settings are the service's Config (checked there) as Flask config keys."""
    trust_proxies(app, int(app.config.get("TRUSTED_PROXY_HOPS") or 0))
    per_minute = int(app.config.get("RATE_LIMIT_PER_MINUTE") or 0)
    if per_minute:
        counter = window_counter(str(app.config.get("REDIS_URL") or ""), str(app.config.get("KEY_PREFIX") or ""))
        limiter = RateLimiter(per_minute, counter, _api_keys(app.config), secret or _service_secret)
        # Before the body cap: a client over its limit is refused before its body is read.
        app.before_request(limiter.check_request)
        app.after_request(limiter.add_headers)

    if app.config.get("MAX_CONTENT_LENGTH") is None:
        app.config["MAX_CONTENT_LENGTH"] = DEFAULT_MAX_CONTENT_LENGTH
    app.register_error_handler(RequestEntityTooLarge, _payload_too_large)
    app.before_request(_enforce_body_cap)


def _api_keys(config: flask.Config) -> tuple[str, ...]:
    """API_KEYS as the service's Config gives it (a tuple) or as text (comma-separated)."""
    keys = config.get("API_KEYS") or ()
    if isinstance(keys, str):
        keys = keys.split(",")
    return tuple(key.strip() for key in keys if key.strip())


def _service_secret() -> ServerSecret | None:
    """The server secret of the app's game service; None in an app without one.

    Raises StoreError when the store keeps the secret and cannot be reached."""
    # The game service, where create_app keeps it, knows the secret token MACs are checked with.
    context = flask.current_app.extensions.get(EXTENSION)
    return None if context is None else context.games.ctx.secret()


def _enforce_body_cap() -> None:
    """Before any view, raise NotImplemented (501 ``not_implemented``) for a transfer coding
    other than chunked, and RequestEntityTooLarge for a body over the cap.

    Gunicorn takes ``Transfer-Encoding: gzip, chunked``: it removes the chunking and hands on
    the compressed bytes, which no view would read as such (an empty body was even taken as
    a move's).

    A declared Content-Length over the cap is refused without reading the body (some views
    never read it and would accept it). A chunked body is read here, up to one byte past the
    cap, and handed on from memory: Werkzeug alone would stop reading at the cap and give the
    view a silently truncated body (a confusing 400 instead of 413).
    """
    request = flask.request
    header = request.headers.get("Transfer-Encoding", "")
    if unsupported_codings(header):
        raise NotImplementedCoding(description="the only transfer coding this service takes is chunked")
    cap = request.max_content_length
    if cap is None:
        return
    declared = request.content_length
    if declared is not None and declared > cap:
        raise RequestEntityTooLarge()
    # Only a server that marks the input as terminated can be read without a length
    # (Werkzeug's own rule); anywhere else the read could wait for bytes that never come.
    is_chunked = "chunked" in transfer_codings(header)
    if is_chunked and "wsgi.input_terminated" in request.environ:
        body = _read_up_to(request.environ["wsgi.input"], cap + 1)
        if len(body) > cap:
            raise RequestEntityTooLarge()
        request.environ["wsgi.input"] = io.BytesIO(body)


def _read_up_to(stream: typing.BinaryIO, limit: int) -> bytes:
    """Read from ``stream`` until it ends or ``limit`` bytes have been read."""
    chunks: list[bytes] = []
    remaining = limit
    while remaining > 0:
        chunk = stream.read(min(remaining, 65536))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _payload_too_large(_error: RequestEntityTooLarge) -> flask.Response:
    cap = flask.request.max_content_length
    return problem(413, "payload_too_large", "Request body too large",
                   f"The request body may not exceed {cap} bytes.", {"max_bytes": cap})
