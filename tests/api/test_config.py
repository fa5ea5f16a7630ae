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
        }
    )
    assert config == Config(
        "redis://cache:6379/2", "gr:", 60, 30, ("a", "b"), ("hooks.example",), "DEBUG", 1024, 120, 5
    )


def test_overrides_win_over_the_environment():
    assert Config.from_env({"KEY_PREFIX": "env:"}, KEY_PREFIX="override:").key_prefix == "override:"


@pytest.mark.parametrize(
    ("name", "value"),
    [("GAME_TTL_SECONDS", "0"), ("GAME_TTL_SECONDS", "week"), ("RATE_LIMIT_PER_MINUTE", "-1"), ("LOG_LEVEL", "LOUD")],
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
