"""Settings of one service process, read from the environment (every one has a default).

| variable | default | meaning |
|---|---|---|
| REDIS_URL | unset → ``memory://`` | where games live; ``memory://`` keeps them in this process only |
| KEY_PREFIX | ``ginrummy:`` | prefix of every Redis key this service writes |
| GAME_TTL_SECONDS | 604800 (7 days) | a game expires this long after its last move |
| IDEMPOTENCY_TTL_SECONDS | 86400 (24 h) | how long a response is kept under its Idempotency-Key |
| API_KEYS | empty | comma-separated keys; when set, creating a game needs ``X-API-Key`` |
| WEBHOOK_ALLOWED_HOSTS | empty | comma-separated hosts (reserved for webhooks) |
| LOG_LEVEL | ``INFO`` | |
| MAX_CONTENT_LENGTH | 65536 | largest accepted request body, in bytes |
| RATE_LIMIT_PER_MINUTE | 0 | requests per client per minute; 0 turns limiting off |
| LONG_POLL_MAX_SECONDS | 30 | cap on ``wait`` of the events long-poll |
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields

EMBEDDED_STORE_URL = "memory://"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


class ConfigError(ValueError):
    """An environment variable holds a value the service cannot use."""


@dataclass(frozen=True)
class Config:
    """All settings; build it with ``Config.from_env()``."""

    redis_url: str = EMBEDDED_STORE_URL
    key_prefix: str = "ginrummy:"
    game_ttl_seconds: int = 604800
    idempotency_ttl_seconds: int = 86400
    api_keys: tuple[str, ...] = ()
    webhook_allowed_hosts: tuple[str, ...] = ()
    log_level: str = "INFO"
    max_content_length: int = 65536
    rate_limit_per_minute: int = 0
    long_poll_max_seconds: int = 30

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
        return cls(
            # Unset means the embedded store (which warns that games stay in one process).
            redis_url=source.get("REDIS_URL", "").strip() or EMBEDDED_STORE_URL,
            key_prefix=source.get("KEY_PREFIX", cls.key_prefix),
            game_ttl_seconds=_positive_int(source, "GAME_TTL_SECONDS", cls.game_ttl_seconds),
            idempotency_ttl_seconds=_positive_int(
                source, "IDEMPOTENCY_TTL_SECONDS", cls.idempotency_ttl_seconds
            ),
            api_keys=_comma_list(source, "API_KEYS"),
            webhook_allowed_hosts=_comma_list(source, "WEBHOOK_ALLOWED_HOSTS"),
            log_level=_log_level(source),
            max_content_length=_positive_int(source, "MAX_CONTENT_LENGTH", cls.max_content_length),
            rate_limit_per_minute=_int_at_least(source, "RATE_LIMIT_PER_MINUTE", cls.rate_limit_per_minute, 0),
            long_poll_max_seconds=_int_at_least(source, "LONG_POLL_MAX_SECONDS", cls.long_poll_max_seconds, 0),
        )

    def flask_settings(self) -> dict[str, object]:
        """The settings as Flask config keys (the variable names), for extensions to read."""
        settings: dict[str, object] = {f.name.upper(): getattr(self, f.name) for f in fields(self)}
        # Flask itself enforces the body limit under this very name.
        settings["MAX_CONTENT_LENGTH"] = self.max_content_length
        return settings


_ENV_NAMES = tuple(f.name.upper() for f in fields(Config))


def _int_at_least(source: Mapping[str, str], name: str, default: int, minimum: int) -> int:
    raw = source.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be an integer, not {raw!r}") from None
    if value < minimum:
        raise ConfigError(f"{name} must be at least {minimum}, not {value}")
    return value


def _positive_int(source: Mapping[str, str], name: str, default: int) -> int:
    return _int_at_least(source, name, default, 1)


def _comma_list(source: Mapping[str, str], name: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in source.get(name, "").split(",") if item.strip())


def _log_level(source: Mapping[str, str]) -> str:
    level = source.get("LOG_LEVEL", "INFO").strip().upper() or "INFO"
    if level not in LOG_LEVELS:
        raise ConfigError(f"LOG_LEVEL must be one of {', '.join(LOG_LEVELS)}, not {level!r}")
    return level
