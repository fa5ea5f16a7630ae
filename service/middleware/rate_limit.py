"""The per-client rate limit: at most N requests per client and clock minute.

A client is an identity the service has checked, never one a request merely claims:

- a configured API key (``X-API-Key`` that is one of API_KEYS) counts as its key id;
- a bearer token that this service issued for the game in the path counts as that token (its
  MAC under the server secret is checked, without asking Redis);
- anything else (no credentials, a made-up token or key, a token of another game) counts as
  the client's address (``service.proxies``).

So inventing credentials never buys a fresh allowance, and the number of counters (Redis keys)
is bounded by real keys, real tokens and real addresses, not by what clients write.

It is a fixed window (a client can send up to twice the limit across a minute boundary).
Limited responses carry ``RateLimit-Limit``, ``RateLimit-Remaining`` and ``RateLimit-Reset``
(seconds until the window ends); a refusal is 429 ``rate_limited`` with ``Retry-After``.
When the counter's Redis fails (unreachable, or out of memory), the limiter logs a warning and
counts in its own process for a few seconds before it tries Redis again: each worker then allows
the limit on its own, which is looser but still a limit, and Redis is left alone meanwhile.
"""
from __future__ import annotations

import logging
import math
import threading
import time
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

import flask
import redis
from redis.exceptions import RedisClusterException

from service import ids, tokens
from service.problems import problem
from service.proxies import client_address
from service.store.errors import StoreError
from service.store.redis_client import SCHEMES as REDIS_SCHEMES
from service.store.redis_client import client_from_url, limiter_options

WINDOW_SECONDS = 60
UNLIMITED_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})

# After a failure of Redis the limiter stays out of its way (and out of the log) for a while
# instead of paying the timeout (redis_client.limiter_options) on every request.
BACKEND_RETRY_SECONDS = 5.0

LIMIT_HEADER = "RateLimit-Limit"
REMAINING_HEADER = "RateLimit-Remaining"
RESET_HEADER = "RateLimit-Reset"

# Where the request's count waits for the after-request hook that writes the headers.
_COUNT_ATTRIBUTE = "rate_limit_count"

logger = logging.getLogger(__name__)

SecretSource = Callable[[], "tokens.ServerSecret | None"]


def init_rate_limit(app: flask.Flask, secret: SecretSource) -> None:
    """When ``RATE_LIMIT_PER_MINUTE`` is set, count every request of ``app`` and refuse those
    past the limit; ``secret`` gives the server secret bearer tokens are checked with.

    Call it before other before-request hooks that may read the body: a client over its
    limit is refused before its body is read."""
    per_minute = int(app.config.get("RATE_LIMIT_PER_MINUTE") or 0)
    if per_minute:
        counter = window_counter(str(app.config.get("REDIS_URL") or ""), str(app.config.get("KEY_PREFIX") or ""))
        limiter = RateLimiter(per_minute, counter, _api_keys(app.config), secret)
        app.before_request(limiter.check_request)
        app.after_request(limiter.add_headers)


def _api_keys(config: flask.Config) -> tuple[str, ...]:
    """API_KEYS as the service's Config gives it (a tuple) or as text (comma-separated)."""
    keys = config.get("API_KEYS") or ()
    if isinstance(keys, str):
        keys = keys.split(",")
    return tuple(key.strip() for key in keys if key.strip())


def client_identity(request: flask.Request, api_keys: Iterable[str], secret: SecretSource) -> str:
    """Whom ``request`` counts against: ``k:<key id>``, ``t:<token digest>`` or ``a:<address>``.

    ``secret`` is asked only for a bearer token on a path with a well-formed game id; when it
    gives None (no secret at hand) the token counts as unchecked."""
    given_key = request.headers.get("X-API-Key")
    if given_key is not None and tokens.is_accepted_key(given_key, api_keys):
        return "k:" + tokens.key_id(given_key)
    token = _bearer_token(request)
    game_id = (request.view_args or {}).get("game_id")
    if token is not None and isinstance(game_id, str) and ids.is_game_id(game_id):
        server_secret = secret()
        if server_secret is not None and server_secret.is_issued_for(token, game_id):
            # A digest, not the token: the identity ends up in a Redis key name.
            return "t:" + tokens.hash_token(token)[:32]
    return "a:" + client_address(request)


def _bearer_token(request: flask.Request) -> str | None:
    scheme, _, token = request.headers.get("Authorization", "").strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


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


# One key per client and window; it outlives its window a little, so that workers whose
# clocks differ slightly still find it, and then goes. The shebang makes a Redis over its
# maxmemory refuse the script before it runs: the limiter then counts in process rather than
# write past maxmemory.
_INCREMENT_LUA = """#!lua
local count = redis.call('INCR', KEYS[1])
if count == 1 then
  redis.call('EXPIRE', KEYS[1], ARGV[1])
end
return count
"""


class RedisWindowCounter:
    """Counts in Redis (one server or a cluster), so that every worker shares a count.

    The client is built on first use: a cluster client asks the cluster for its layout when
    built, and a cluster that is not up yet must not stop the service from starting."""

    def __init__(self, url: str, key_prefix: str) -> None:
        self._url = url
        self._key_prefix = key_prefix
        self._lock = threading.Lock()
        self._script = None

    def increment(self, client: str, window: int) -> int:
        key = f"{self._key_prefix}rl:{client}:{window}"
        try:
            return int(self._increment_script()(keys=[key], args=[2 * WINDOW_SECONDS]))
        # RedisClusterException (not a RedisError): a cluster that cannot be reached at all.
        except (redis.RedisError, RedisClusterException) as error:
            raise CounterUnavailable(f"{type(error).__name__}: {error}") from error

    def _increment_script(self):
        if self._script is None:
            with self._lock:
                if self._script is None:
                    client = client_from_url(self._url, **limiter_options())
                    self._script = client.register_script(_INCREMENT_LUA)
        return self._script


def window_counter(redis_url: str, key_prefix: str) -> WindowCounter:
    """Redis when ``redis_url`` is a Redis URL of any form the store accepts (one server or
    a cluster), else memory (each process counts on its own)."""
    if urlsplit(redis_url).scheme in REDIS_SCHEMES:
        return RedisWindowCounter(redis_url, key_prefix)
    return MemoryWindowCounter()


@dataclass(frozen=True)
class _Counted:
    count: int
    reset_seconds: int


class RateLimiter:
    """At most ``per_minute`` requests per client and clock minute.

    ``api_keys`` are the configured keys; ``secret`` gives the server secret that token MACs
    are checked with (None when there is none to check with)."""

    def __init__(self, per_minute: int, counter: WindowCounter, api_keys: Iterable[str],
                 secret: SecretSource, clock: Callable[[], float] = time.time) -> None:
        self.per_minute = per_minute
        self._counter = counter
        self._api_keys = tuple(api_keys)
        self._secret = secret
        self._clock = clock
        self._fallback = MemoryWindowCounter()
        self._fallback_until = 0.0
        self._skip_secret_until = 0.0

    def check_request(self) -> flask.Response | None:
        """Before-request hook: None to go on, or the 429 problem response."""
        if flask.request.path in UNLIMITED_PATHS:
            return None
        now = self._clock()
        window = int(now // WINDOW_SECONDS)
        identity = client_identity(flask.request, self._api_keys, self._checked_secret)
        count = self._count(identity, window, now)
        reset = max(1, math.ceil((window + 1) * WINDOW_SECONDS - now))
        flask.g.setdefault(_COUNT_ATTRIBUTE, _Counted(count, reset))
        if count <= self.per_minute:
            return None
        response = problem(
            429, "rate_limited", "Too many requests",
            f"At most {self.per_minute} requests per minute; retry after {reset} s.",
            {"limit": self.per_minute, "retry_after": reset})
        response.headers["Retry-After"] = str(reset)
        return response

    def _count(self, identity: str, window: int, now: float) -> int:
        if now >= self._fallback_until:
            try:
                return self._counter.increment(identity, window)
            except CounterUnavailable as error:
                self._fallback_until = now + BACKEND_RETRY_SECONDS
                logger.warning("rate limit counter unavailable, counting in this process for %.0f s: %s",
                               BACKEND_RETRY_SECONDS, error)
        return self._fallback.increment(identity, window)

    def add_headers(self, response: flask.Response) -> flask.Response:
        """After-request hook: the RateLimit-* headers of a request that was counted."""
        counted: _Counted | None = flask.g.get(_COUNT_ATTRIBUTE)
        if counted is not None:
            response.headers[LIMIT_HEADER] = str(self.per_minute)
            response.headers[REMAINING_HEADER] = str(max(0, self.per_minute - counted.count))
            response.headers[RESET_HEADER] = str(counted.reset_seconds)
        return response

    def _checked_secret(self) -> tokens.ServerSecret | None:
        """The server secret, or None while it cannot be had (then tokens count as unchecked:
        their requests fall back to the address, which errs towards limiting)."""
        if self._clock() < self._skip_secret_until:
            return None
        try:
            return self._secret()
        except StoreError as error:
            self._skip_secret_until = self._clock() + BACKEND_RETRY_SECONDS
            logger.warning("server secret unavailable, tokens count as their address for %.0f s: %s",
                           BACKEND_RETRY_SECONDS, error.detail)
            return None
