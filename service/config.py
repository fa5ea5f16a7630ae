"""Settings of one service process, read from the environment (every one has a default).

| variable | default | meaning |
|---|---|---|
| REDIS_URL | unset → ``memory://`` | where games live; ``memory://`` keeps them in this process only |
| KEY_PREFIX | ``ginrummy:`` | prefix of every Redis key this service writes |
| GAME_TTL_SECONDS | 604800 (7 days) | a game expires this long after its last move |
| UNSTARTED_GAME_TTL_SECONDS | 3600 (1 h) | a game that no person has moved in yet expires this soon (after its first deadline, when timed) |
| GAME_TOMBSTONE_SECONDS | 2592000 (30 days) | how long an expired game answers 410 (then 404) |
| MAX_EVENTS_PER_GAME | 5000 | events kept per game; the oldest go first |
| IDEMPOTENCY_TTL_SECONDS | 86400 (24 h) | how long a response is kept under its Idempotency-Key |
| API_KEYS | empty | comma-separated keys for ``X-API-Key`` (creating games, abort, tokens, player lists) |
| ALLOW_ANONYMOUS_CREATE | false with Redis, true in memory | whether games may be created without an API key |
| CREATE_QUOTA_PER_MINUTE | 600 | games one API key (or, anonymous, one address) may create per minute; 0: no quota |
| SERVER_SECRET | unset: kept in Redis | key of token MACs, seed mixing and derived ids; the same for every process |
| METRICS_TOKEN | empty | when set, ``GET /metrics`` needs ``Authorization: Bearer <token>`` |
| TRUSTED_PROXY_HOPS | 0 | proxies in front whose X-Forwarded-For names the client (rate limits, quotas) |
| WEBHOOK_ALLOWED_HOSTS | empty | comma-separated hosts a game's ``callback_url`` may name (https); an entry ``http://host[:port]`` also allows plain http there |
| WEBHOOK_SECRET | empty | Standard Webhooks signing secret, ``whsec_<base64 of 24-64 bytes>``; the worker needs it, and ``ginrummy serve`` calls back only with it |
| WEBHOOK_ALLOW_PRIVATE | ``false`` | ``true`` lets webhooks reach private, loopback and link-local addresses |
| WEBHOOK_CONCURRENCY | 32 | deliveries one worker (or ``ginrummy serve`` alone) runs at once |
| WEBHOOK_MAX_ATTEMPTS | 8 | attempts per webhook before it goes to the dead-letter stream |
| WEBHOOK_MAX_WAITING | 10000 | ``ginrummy serve`` alone: deliveries it keeps waiting in memory; beyond, a new one is given up |
| WORKER_PORT | 8001 | port of the worker's /healthz, /readyz and /metrics |
| WORKER_GRACEFUL_SECONDS | 20 | on SIGTERM, how long the worker lets deliveries in flight finish |
| LOG_LEVEL | ``INFO`` | |
| MAX_CONTENT_LENGTH | 65536 | largest accepted request body, in bytes |
| RATE_LIMIT_PER_MINUTE | 0 | requests per client per minute; 0 turns limiting off |
| LONG_POLL_MAX_SECONDS | 30 | cap on ``wait`` of the long-polls: events, tickets, invites (0-30: the API allows no longer wait) |
| LONG_POLL_MAX_WAITERS | 1000 (gunicorn: 3/4 of its worker connections) | long-polls one process holds at once; beyond, 503 ``long_poll_capacity`` with Retry-After |
| REQUEST_BODY_TIMEOUT_SECONDS | 10 | a request body must arrive within this (under gunicorn each deadline falls in its last fifth), else 408 and the connection is closed |
| RESPONSE_SEND_TIMEOUT_SECONDS | 10 | a client must take each part of an answer within this (gevent worker), else the connection is dropped |
| RATING_INITIAL | 1500 | a new player's Glicko-2 rating (docs/ratings.md) |
| RATING_INITIAL_RD | 350 | a new player's rating deviation |
| RATING_INITIAL_VOLATILITY | 0.06 | a new player's volatility |
| RATING_TAU | 0.5 | Glicko-2's tau: how fast volatility may change |
| RATING_EPSILON | 0.000001 | Glicko-2's convergence tolerance for the volatility |
| MATCHMAKING_TICKET_SECONDS | 900 | a quick-play ticket nobody matched expires this long after it was queued |
| MATCHMAKING_MAX_OPEN_TICKETS | 50000 | waiting tickets one API key may hold; beyond, 429 `ticket_limit_reached` |
| MATCHMAKING_GAP_INITIAL | 100 | a rated ticket's accepted rating gap when queued, either side |
| MATCHMAKING_GAP_PER_SECOND | 10 | how much that gap widens per second of waiting |
| MATCHMAKING_GAP_MAX | 600 | the widest it gets |
| INVITE_MAX_OPEN | 10000 | open invites one API key may hold; beyond, 429 `invite_limit_reached` |
| INVITE_ACCEPTS_PER_MINUTE | 60 | invite acceptances (right or wrong codes) one API key may try per minute; 0: no limit |
| KEY_STREAM_RETENTION_SECONDS | 90000 (25 h) | how long an API key's stream (`GET /v1/stream`) keeps what it announces, so a client resumes after up to that long (at least 86400) |
| STREAM_HEARTBEAT_SECONDS | 15 | longest silence on a live stream before a comment line keeps it open (1-15); also how long a reader may take (next to) nothing of what waits for it |
| STREAMS_PER_API_KEY | 10000 | live streams one process holds at once for one API key (``X-API-Key``); beyond, 429 ``too_many_streams`` |
| STREAMS_PER_ADDRESS | 200 | live streams one process holds at once for one client address (without an API key); beyond, 429 ``too_many_streams`` |
| ANALYSIS_PER_MINUTE | 10 | analyses of finished matches one client may have computed per minute (reading one already computed is not counted); 0: no limit |
"""
from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields

from service.ratings import glicko2
from service.tokens import SECRET_MIN_LENGTH
from service.callback_urls import AllowedHosts, AllowedHostsError
from service.webhook_signing import SecretError, WebhookSecret
EMBEDDED_STORE_URL = "memory://"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
TRUE_WORDS = ("true", "yes", "1", "on")
FALSE_WORDS = ("false", "no", "0", "off", "")
MAX_PORT = 65535


# The longest ``wait`` the API allows on the events long-poll (its schema's maximum); a server
# may cap it lower (LONG_POLL_MAX_SECONDS).
LONGEST_WAIT_SECONDS = 30
# A stream's heartbeat comes at least this often (proxies close connections silent for longer).
LONGEST_HEARTBEAT_SECONDS = 15


class ConfigError(ValueError):
    """An environment variable holds a value the service cannot use."""


@dataclass(frozen=True)
class Config:
    """All settings; build it with ``Config.from_env()``."""

    redis_url: str = EMBEDDED_STORE_URL
    key_prefix: str = "ginrummy:"
    game_ttl_seconds: int = 604800
    unstarted_game_ttl_seconds: int = 3600
    game_tombstone_seconds: int = 2592000
    max_events_per_game: int = 5000
    idempotency_ttl_seconds: int = 86400
    api_keys: tuple[str, ...] = ()
    allow_anonymous_create: bool = True
    create_quota_per_minute: int = 600
    # repr=False: a logged Config must not show a secret.
    server_secret: str | None = field(default=None, repr=False)
    metrics_token: str | None = field(default=None, repr=False)
    trusted_proxy_hops: int = 0
    webhook_allowed_hosts: tuple[str, ...] = ()
    log_level: str = "INFO"
    max_content_length: int = 65536
    rate_limit_per_minute: int = 0
    long_poll_max_seconds: int = LONGEST_WAIT_SECONDS
    long_poll_max_waiters: int = 1000
    request_body_timeout_seconds: int = 10
    response_send_timeout_seconds: int = 10
    webhook_secret: str = field(default="", repr=False)
    webhook_allow_private: bool = False
    webhook_concurrency: int = 32
    webhook_max_attempts: int = 8
    webhook_max_waiting: int = 10_000
    worker_port: int = 8001
    worker_graceful_seconds: int = 20
    # Ratings (service/ratings)
    rating_initial: float = 1500.0
    rating_initial_rd: float = 350.0
    rating_initial_volatility: float = 0.06
    rating_tau: float = 0.5
    rating_epsilon: float = 0.000001
    # Quick play and invites (service/matchmaking)
    matchmaking_ticket_seconds: int = 900
    matchmaking_max_open_tickets: int = 50_000
    matchmaking_gap_initial: int = 100
    matchmaking_gap_per_second: int = 10
    matchmaking_gap_max: int = 600
    invite_max_open: int = 10_000
    invite_accepts_per_minute: int = 60
    # The API keys' streams (service/streams)
    key_stream_retention_seconds: int = 90000
    # Live streams (GET /v1/games/{id}/stream): heartbeat, and open streams per process.
    stream_heartbeat_seconds: int = LONGEST_HEARTBEAT_SECONDS
    streams_per_api_key: int = 10000
    streams_per_address: int = 200
    # Records, replays and analysis: each analysis costs up to ~2 s of CPU once per match.
    analysis_per_minute: int = 10

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: str) -> Config:
        """Read the settings from ``environ`` (default ``os.environ``), then ``overrides``.

        Both are keyed by the variable names of the module docstring (``REDIS_URL``...).
        Raises ConfigError naming a variable that is unknown (in ``overrides``) or invalid.
        """
        source = dict(os.environ if environ is None else environ)
        unknown = sorted(set(overrides) - set(_ENV_NAMES))
        if unknown:
            raise ConfigError(f"unknown setting(s): {', '.join(unknown)}")
        source.update(overrides)
        # Unset means the embedded store (which warns that games stay in one process).
        redis_url = source.get("REDIS_URL", "").strip() or EMBEDDED_STORE_URL
        embedded = redis_url == EMBEDDED_STORE_URL
        config = cls(
            redis_url=redis_url,
            key_prefix=source.get("KEY_PREFIX", cls.key_prefix),
            game_ttl_seconds=_positive_int(source, "GAME_TTL_SECONDS", cls.game_ttl_seconds),
            unstarted_game_ttl_seconds=_positive_int(source, "UNSTARTED_GAME_TTL_SECONDS", cls.unstarted_game_ttl_seconds),
            game_tombstone_seconds=_positive_int(source, "GAME_TOMBSTONE_SECONDS", cls.game_tombstone_seconds),
            max_events_per_game=_int_at_least(source, "MAX_EVENTS_PER_GAME", cls.max_events_per_game, 100),
            idempotency_ttl_seconds=_positive_int(
                source, "IDEMPOTENCY_TTL_SECONDS", cls.idempotency_ttl_seconds
            ),
            api_keys=_comma_list(source, "API_KEYS"),
            # In memory the service is a single process someone is trying out; with Redis it is
            # a deployment, where an open creation endpoint is a tap anyone can leave running.
            allow_anonymous_create=_boolean(source, "ALLOW_ANONYMOUS_CREATE", embedded),
            create_quota_per_minute=_int_at_least(source, "CREATE_QUOTA_PER_MINUTE", cls.create_quota_per_minute, 0),
            server_secret=source.get("SERVER_SECRET", "").strip() or None,
            metrics_token=source.get("METRICS_TOKEN", "").strip() or None,
            trusted_proxy_hops=_int_at_least(source, "TRUSTED_PROXY_HOPS", cls.trusted_proxy_hops, 0),
            webhook_allowed_hosts=_allowed_hosts(source),
            log_level=_log_level(source),
            max_content_length=_positive_int(source, "MAX_CONTENT_LENGTH", cls.max_content_length),
            rate_limit_per_minute=_int_at_least(source, "RATE_LIMIT_PER_MINUTE", cls.rate_limit_per_minute, 0),
            long_poll_max_seconds=_int_at_least(source, "LONG_POLL_MAX_SECONDS", cls.long_poll_max_seconds, 0,
                                                maximum=LONGEST_WAIT_SECONDS),
            long_poll_max_waiters=_positive_int(source, "LONG_POLL_MAX_WAITERS", cls.long_poll_max_waiters),
            request_body_timeout_seconds=_positive_int(
                source, "REQUEST_BODY_TIMEOUT_SECONDS", cls.request_body_timeout_seconds
            ),
            response_send_timeout_seconds=_positive_int(
                source, "RESPONSE_SEND_TIMEOUT_SECONDS", cls.response_send_timeout_seconds
            ),
            webhook_secret=_webhook_secret(source),
            webhook_allow_private=_boolean(source, "WEBHOOK_ALLOW_PRIVATE", cls.webhook_allow_private),
            webhook_concurrency=_positive_int(source, "WEBHOOK_CONCURRENCY", cls.webhook_concurrency),
            webhook_max_attempts=_positive_int(source, "WEBHOOK_MAX_ATTEMPTS", cls.webhook_max_attempts),
            webhook_max_waiting=_positive_int(source, "WEBHOOK_MAX_WAITING", cls.webhook_max_waiting),
            worker_port=_port(source, "WORKER_PORT", cls.worker_port),
            worker_graceful_seconds=_int_at_least(source, "WORKER_GRACEFUL_SECONDS", cls.worker_graceful_seconds, 0),
            **{name: _positive_float(source, name.upper(), getattr(cls, name)) for name in RATING_SETTINGS},
            matchmaking_ticket_seconds=_positive_int(source, "MATCHMAKING_TICKET_SECONDS",
                                                     cls.matchmaking_ticket_seconds),
            matchmaking_max_open_tickets=_positive_int(source, "MATCHMAKING_MAX_OPEN_TICKETS",
                                                       cls.matchmaking_max_open_tickets),
            matchmaking_gap_initial=_int_at_least(source, "MATCHMAKING_GAP_INITIAL", cls.matchmaking_gap_initial, 0),
            matchmaking_gap_per_second=_int_at_least(source, "MATCHMAKING_GAP_PER_SECOND",
                                                     cls.matchmaking_gap_per_second, 0),
            matchmaking_gap_max=_int_at_least(source, "MATCHMAKING_GAP_MAX", cls.matchmaking_gap_max, 0),
            invite_max_open=_positive_int(source, "INVITE_MAX_OPEN", cls.invite_max_open),
            invite_accepts_per_minute=_int_at_least(source, "INVITE_ACCEPTS_PER_MINUTE",
                                                    cls.invite_accepts_per_minute, 0),
            key_stream_retention_seconds=_int_at_least(source, "KEY_STREAM_RETENTION_SECONDS",
                                                       cls.key_stream_retention_seconds, 86400),
            stream_heartbeat_seconds=_int_at_least(source, "STREAM_HEARTBEAT_SECONDS", cls.stream_heartbeat_seconds,
                                                   1, maximum=LONGEST_HEARTBEAT_SECONDS),
            streams_per_api_key=_positive_int(source, "STREAMS_PER_API_KEY", cls.streams_per_api_key),
            streams_per_address=_positive_int(source, "STREAMS_PER_ADDRESS", cls.streams_per_address),
            analysis_per_minute=_int_at_least(source, "ANALYSIS_PER_MINUTE", cls.analysis_per_minute, 0),
        )
        if config.matchmaking_gap_max < config.matchmaking_gap_initial:
            raise ConfigError("MATCHMAKING_GAP_MAX must be at least MATCHMAKING_GAP_INITIAL")
        if not embedded:
            _refuse_placeholders(config)
        try:
            config.glicko2()
        except ValueError as error:
            raise ConfigError(f"RATING_*: {error}") from None
        if config.server_secret is not None and len(config.server_secret) < SECRET_MIN_LENGTH:
            raise ConfigError(f"SERVER_SECRET must be at least {SECRET_MIN_LENGTH} characters")
        return config

    def glicko2(self) -> glicko2.Settings:
        """The Glicko-2 constants. Raises ValueError for values no rating may hold."""
        return glicko2.Settings(self.rating_initial, self.rating_initial_rd, self.rating_initial_volatility,
                                self.rating_tau, self.rating_epsilon)

    @property
    def is_embedded(self) -> bool:
        """Whether games live in this process (memory://), not in Redis."""
        return self.redis_url == EMBEDDED_STORE_URL

    def flask_settings(self) -> dict[str, object]:
        """The settings as Flask config keys (the variable names), for extensions to read."""
        settings: dict[str, object] = {f.name.upper(): getattr(self, f.name) for f in fields(self)}
        # Flask itself enforces the body limit under this very name.
        settings["MAX_CONTENT_LENGTH"] = self.max_content_length
        return settings


_ENV_NAMES = tuple(f.name.upper() for f in fields(Config))
RATING_SETTINGS = ("rating_initial", "rating_initial_rd", "rating_initial_volatility", "rating_tau", "rating_epsilon")


def _int_at_least(source: Mapping[str, str], name: str, default: int, minimum: int,
                  maximum: int | None = None) -> int:
    raw = source.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be an integer, not {raw!r}") from None
    if value < minimum:
        raise ConfigError(f"{name} must be at least {minimum}, not {value}")
    if maximum is not None and value > maximum:
        raise ConfigError(f"{name} must be at most {maximum}, not {value}")
    return value


def _positive_float(source: Mapping[str, str], name: str, default: float) -> float:
    raw = source.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number, not {raw!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{name} must be a positive number, not {raw!r}")
    return value


def _positive_int(source: Mapping[str, str], name: str, default: int) -> int:
    return _int_at_least(source, name, default, 1)


def _comma_list(source: Mapping[str, str], name: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in source.get(name, "").split(",") if item.strip())


def _allowed_hosts(source: Mapping[str, str]) -> tuple[str, ...]:
    entries = _comma_list(source, "WEBHOOK_ALLOWED_HOSTS")
    try:
        AllowedHosts.parse(entries)  # only to refuse a bad entry at start-up
    except AllowedHostsError as error:
        raise ConfigError(str(error)) from None
    return entries


def _webhook_secret(source: Mapping[str, str]) -> str:
    secret = source.get("WEBHOOK_SECRET", "").strip()
    if secret:
        try:
            WebhookSecret.parse(secret)
        except SecretError as error:
            raise ConfigError(f"WEBHOOK_SECRET: {error}") from None
    return secret


def _boolean(source: Mapping[str, str], name: str, default: bool) -> bool:
    raw = source.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in TRUE_WORDS:
        return True
    if raw in FALSE_WORDS:
        return False
    raise ConfigError(f"{name} must be true or false, not {raw!r}")


def _port(source: Mapping[str, str], name: str, default: int) -> int:
    port = _positive_int(source, name, default)
    if port > MAX_PORT:
        raise ConfigError(f"{name} must be a port number (1-{MAX_PORT}), not {port}")
    return port


# What the shipped example secrets (k8s/secrets.env) start with: a deployment that kept one
# would run with a secret everyone can read in this repository.
PLACEHOLDER_MARK = "REPLACE-ME"


def _refuse_placeholders(config: Config) -> None:
    """Raise ConfigError naming each setting that still holds a placeholder secret."""
    secrets = {"REDIS_URL": [config.redis_url], "API_KEYS": list(config.api_keys),
               "SERVER_SECRET": [config.server_secret or ""], "METRICS_TOKEN": [config.metrics_token or ""],
               "WEBHOOK_SECRET": [config.webhook_secret]}
    named = sorted(name for name, values in secrets.items() if any(PLACEHOLDER_MARK in v for v in values))
    if named:
        raise ConfigError(f"replace the placeholder secret in: {', '.join(named)} (see k8s/secrets.env)")


def _log_level(source: Mapping[str, str]) -> str:
    level = source.get("LOG_LEVEL", "INFO").strip().upper() or "INFO"
    if level not in LOG_LEVELS:
        raise ConfigError(f"LOG_LEVEL must be one of {', '.join(LOG_LEVELS)}, not {level!r}")
    return level
