"""Settings from the environment (service/config.py)."""
from __future__ import annotations

import pytest

from service.app import create_app
from service.config import Config, ConfigError


def test_defaults():
    config = Config.from_env({})
    assert config.redis_url == "memory://" and config.key_prefix == "ginrummy:"
    assert config.game_ttl_seconds == 604800 and config.idempotency_ttl_seconds == 86400
    assert config.api_keys == () and config.webhook_allowed_hosts == ()
    assert config.log_level == "INFO" and config.max_content_length == 65536
    assert config.rate_limit_per_minute == 0 and config.long_poll_max_seconds == 30


def test_every_setting_comes_from_the_environment():
    config = Config.from_env(
        {
            "REDIS_URL": "redis://cache:6379/2",
            "KEY_PREFIX": "gr:",
            "GAME_TTL_SECONDS": "60",
            "IDEMPOTENCY_TTL_SECONDS": "30",
            "API_KEYS": " a , b,,",
            "WEBHOOK_ALLOWED_HOSTS": "hooks.example",
            "LOG_LEVEL": "debug",
            "MAX_CONTENT_LENGTH": "1024",
            "RATE_LIMIT_PER_MINUTE": "120",
            "LONG_POLL_MAX_SECONDS": "5",
            "UNSTARTED_GAME_TTL_SECONDS": "20",
            "GAME_TOMBSTONE_SECONDS": "90",
            "MAX_EVENTS_PER_GAME": "300",
            "ALLOW_ANONYMOUS_CREATE": "true",
            "CREATE_QUOTA_PER_MINUTE": "7",
            "SERVER_SECRET": "s" * 40,
            "METRICS_TOKEN": "scrape-me",
            "TRUSTED_PROXY_HOPS": "1",
            "WEBHOOK_MAX_WAITING": "50",
        }
    )
    assert config == Config(
        redis_url="redis://cache:6379/2", key_prefix="gr:", game_ttl_seconds=60, unstarted_game_ttl_seconds=20,
        game_tombstone_seconds=90, max_events_per_game=300, idempotency_ttl_seconds=30, api_keys=("a", "b"),
        allow_anonymous_create=True, create_quota_per_minute=7, server_secret="s" * 40, metrics_token="scrape-me",
        trusted_proxy_hops=1, webhook_allowed_hosts=("hooks.example",), log_level="DEBUG", max_content_length=1024,
        rate_limit_per_minute=120, long_poll_max_seconds=5, webhook_max_waiting=50,
    )


def test_with_redis_creation_needs_an_api_key_unless_allowed():
    assert Config.from_env({}).allow_anonymous_create
    assert not Config.from_env({"REDIS_URL": "redis://cache:6379/0"}).allow_anonymous_create
    assert Config.from_env({"REDIS_URL": "redis://cache:6379/0", "ALLOW_ANONYMOUS_CREATE": "true"}).allow_anonymous_create


@pytest.mark.parametrize("environment", [
    {"REDIS_URL": "redis://:REPLACE-ME-redis-password@redis:6379/0"},
    {"REDIS_URL": "redis://redis:6379/0", "API_KEYS": "real-key,REPLACE-ME-api-key"},
    {"REDIS_URL": "redis://redis:6379/0", "SERVER_SECRET": "REPLACE-ME-" + "x" * 40},
])
def test_placeholder_secrets_stop_the_start_outside_the_embedded_store(environment):
    with pytest.raises(ConfigError, match="REPLACE-ME|placeholder"):
        Config.from_env(environment)
    Config.from_env({key: value for key, value in environment.items() if key != "REDIS_URL"})


def test_a_short_server_secret_is_refused():
    with pytest.raises(ConfigError, match="SERVER_SECRET"):
        Config.from_env({"SERVER_SECRET": "short"})


def test_overrides_win_over_the_environment():
    assert Config.from_env({"KEY_PREFIX": "env:"}, KEY_PREFIX="override:").key_prefix == "override:"


@pytest.mark.parametrize(
    ("name", "value"),
    [("GAME_TTL_SECONDS", "0"), ("GAME_TTL_SECONDS", "week"), ("RATE_LIMIT_PER_MINUTE", "-1"),
     ("TRUSTED_PROXY_HOPS", "-1"), ("LOG_LEVEL", "LOUD"), ("WEBHOOK_MAX_WAITING", "0"),
     # The API refuses a wait above 30 s: a longer cap would be a setting that does nothing.
     ("LONG_POLL_MAX_SECONDS", "31")],
)
def test_bad_values_are_refused_by_name(name, value):
    with pytest.raises(ConfigError, match=name):
        Config.from_env({name: value})


def test_unknown_overrides_are_refused():
    with pytest.raises(ConfigError, match="REDIS_ULR"):
        Config.from_env({}, REDIS_ULR="memory://")


def test_the_app_applies_the_settings():
    app = create_app({"REDIS_URL": "memory://", "MAX_CONTENT_LENGTH": "2048", "LOG_LEVEL": "WARNING"})
    assert app.config["MAX_CONTENT_LENGTH"] == 2048
    big = app.test_client().post("/v1/hands/analyze", json={"cards": ["As"] * 500})
    assert big.status_code == 413
