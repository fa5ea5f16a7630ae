"""Request limits: a cap on body size and an optional per-client rate limit.

Configuration (``app.config``):

- ``MAX_CONTENT_LENGTH`` (bytes, default 65536): larger bodies get 413 ``payload_too_large``.
  A declared ``Content-Length`` above it is refused before the view runs, without reading
  the body; a chunked body is read (at most one byte past the cap) before the view runs.
- ``RATE_LIMIT_PER_MINUTE`` (default 0 = off): requests a client may make per clock minute
  (a fixed window: a client can send up to twice as many across a minute boundary).
  Beyond it, 429 ``rate_limited`` with ``Retry-After``. ``/healthz``, ``/readyz`` and
  ``/metrics`` are never limited.
- ``REDIS_URL`` / ``KEY_PREFIX``: with a ``redis...`` URL the counts live in Redis under
  ``KEY_PREFIX + "rl:"``, shared by every worker; otherwise each process counts on its own.
  When Redis fails the limiter lets requests through (fail open) and logs a warning.

A client is the bearer token, else the X-API-Key, else the remote address. Tokens and keys
are only seen as SHA-256 digests here. Behind a proxy the remote address is the proxy's
unless the app trusts X-Forwarded-For (werkzeug's ProxyFix).
"""
from __future__ import annotations

import hashlib
import io
import logging
import math
import threading
import time
import typing

import flask
import redis
from werkzeug.exceptions import RequestEntityTooLarge

from service.problems import problem

DEFAULT_MAX_CONTENT_LENGTH = 65536
WINDOW_SECONDS = 60
UNLIMITED_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})
RATE_LIMITER_EXTENSION = "ginrummy.rate_limiter"

# The limiter sits in front of every request: a Redis that stopped answering must cost a
# request little, and after a failure the limiter stays out of Redis's way (and out of the
# log) for a while instead of paying the timeout on every request.
REDIS_TIMEOUT_SECONDS = 0.25
BACKEND_RETRY_SECONDS = 5.0

logger = logging.getLogger(__name__)


def init_limits(app: flask.Flask) -> None:
    """Apply the body-size cap and, when configured, the rate limit to ``app``.

    Raises ValueError when RATE_LIMIT_PER_MINUTE is negative or not a number."""
    if app.config.get("MAX_CONTENT_LENGTH") is None:
        app.config["MAX_CONTENT_LENGTH"] = DEFAULT_MAX_CONTENT_LENGTH
    app.register_error_handler(RequestEntityTooLarge, _payload_too_large)
    app.before_request(_enforce_body_cap)

    per_minute = int(app.config.get("RATE_LIMIT_PER_MINUTE") or 0)
    if per_minute < 0:
        raise ValueError(f"RATE_LIMIT_PER_MINUTE must be 0 (off) or more, not {per_minute}")
    if per_minute:
        limiter = RateLimiter(per_minute, _window_counter(app.config))
        app.extensions[RATE_LIMITER_EXTENSION] = limiter
        app.before_request(limiter.check_request)


def _enforce_body_cap() -> None:
    """Before any view, raise RequestEntityTooLarge for a body over the cap.

    A declared Content-Length over the cap is refused without reading the body (some views
    never read it and would accept it). A chunked body is read here, up to one byte past the
    cap, and handed on from memory: Werkzeug alone would stop reading at the cap and give the
    view a silently truncated body (a confusing 400 instead of 413).
    """
    request = flask.request
    cap = request.max_content_length
    if cap is None:
        return
    declared = request.content_length
    if declared is not None and declared > cap:
        raise RequestEntityTooLarge()
    # Only a server that marks the input as terminated can be read without a length
    # (Werkzeug's own rule); anywhere else the read could wait for bytes that never come.
    is_chunked = "chunked" in request.headers.get("Transfer-Encoding", "").lower()
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
                   f"The request body may not exceed {cap} bytes.")


class CounterUnavailable(Exception):
    """The shared counter could not be reached or failed."""


class WindowCounter(typing.Protocol):
    def increment(self, client: str, window: int) -> int:
        """Add one request of ``client`` in window number ``window``; return the new count.

        Raises CounterUnavailable."""


class MemoryWindowCounter:
    """Counts in this process only: right for a single worker, per-worker otherwise."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._window: int | None = None
        self._counts: dict[str, int] = {}

    def increment(self, client: str, window: int) -> int:
        with self._lock:
            # Only the current window matters: dropping older counts bounds the memory.
            # A thread that read the clock just before a newer window started counts its
            # request into the newer one, which errs towards limiting, never towards leaking.
            if self._window is None or window > self._window:
                self._window = window
                self._counts.clear()
            count = self._counts.get(client, 0) + 1
            self._counts[client] = count
            return count


class RedisWindowCounter:
    """Counts in Redis, one key per client and window, so that all workers share a count."""

    def __init__(self, client: redis.Redis, key_prefix: str) -> None:
        self._redis = client
        self._key_prefix = key_prefix

    def increment(self, client: str, window: int) -> int:
        key = f"{self._key_prefix}rl:{client}:{window}"
        try:
            pipe = self._redis.pipeline(transaction=True)
            pipe.incr(key)
            # The key outlives its window a little, so clocks that differ slightly between
            # workers still find it; after that it only takes memory.
            pipe.expire(key, 2 * WINDOW_SECONDS)
            count, _ = pipe.execute()
        except redis.RedisError as error:
            raise CounterUnavailable(str(error)) from error
        return int(count)


def _window_counter(config: flask.Config) -> WindowCounter:
    """Redis when REDIS_URL is a Redis URL (the client connects on first use), else memory."""
    url = str(config.get("REDIS_URL") or "")
    if not url.startswith("redis"):
        return MemoryWindowCounter()
    client = redis.Redis.from_url(
        url, socket_timeout=REDIS_TIMEOUT_SECONDS, socket_connect_timeout=REDIS_TIMEOUT_SECONDS)
    return RedisWindowCounter(client, str(config.get("KEY_PREFIX") or ""))


def client_key(request: flask.Request) -> str:
    """Who is asking, for counting: the bearer token's SHA-256, else the X-API-Key's,
    else the remote address. Kinds are tagged so that they never collide."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    token = token.strip()
    if scheme.lower() == "bearer" and token:
        return "t:" + hashlib.sha256(token.encode()).hexdigest()
    api_key = request.headers.get("X-API-Key", "")
    if api_key:
        return "k:" + hashlib.sha256(api_key.encode()).hexdigest()
    return "a:" + (request.remote_addr or "unknown")


class RateLimiter:
    """At most ``per_minute`` requests per client and clock minute."""

    def __init__(self, per_minute: int, counter: WindowCounter) -> None:
        self.per_minute = per_minute
        self._counter = counter
        self._skip_counter_until = 0.0

    def check_request(self) -> flask.Response | None:
        """Before-request hook: None to go on, or the 429 problem response."""
        if flask.request.path in UNLIMITED_PATHS:
            return None
        now = time.time()
        if now < self._skip_counter_until:
            return None
        window = int(now // WINDOW_SECONDS)
        try:
            count = self._counter.increment(client_key(flask.request), window)
        except CounterUnavailable as error:
            self._skip_counter_until = now + BACKEND_RETRY_SECONDS
            logger.warning("rate limit counter unavailable, not limiting for %.0f s: %s",
                           BACKEND_RETRY_SECONDS, error)
            return None
        if count <= self.per_minute:
            return None
        retry_after = max(1, math.ceil((window + 1) * WINDOW_SECONDS - now))
        response = problem(
            429, "rate_limited", "Too many requests",
            f"At most {self.per_minute} requests per minute; retry after {retry_after} s.")
        response.headers["Retry-After"] = str(retry_after)
        return response
