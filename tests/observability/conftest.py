"""Fixtures for the observability and limits tests: the probe app and a shared-Redis prefix."""
from __future__ import annotations

import logging
import os
import time
import uuid

import pytest
import redis

from observability_probe_app import create_app
from service.middleware.rate_limit import WINDOW_SECONDS

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")


@pytest.fixture
def make_app():
    """Build probe apps: ``make_app(RATE_LIMIT_PER_MINUTE=3, limits_first=True)``."""
    def build(limits_first: bool = False, **config):
        return create_app(config, limits_first=limits_first)
    return build


@pytest.fixture(autouse=True)
def _restore_root_logging():
    """init_observability sets the root logger's level; give each test a clean slate."""
    root = logging.getLogger()
    level = root.level
    yield
    root.setLevel(level)


@pytest.fixture
def redis_url():
    return REDIS_URL


@pytest.fixture
def redis_prefix():
    """A unique key prefix on the shared Redis; the keys under it are deleted afterwards.

    Skips when Redis is unreachable, except in CI (CI=true) where that fails the test."""
    client = redis.Redis.from_url(REDIS_URL)
    try:
        client.ping()
    except redis.RedisError as error:
        if os.environ.get("CI") == "true":
            pytest.fail(f"Redis at {REDIS_URL} is required in CI: {error}")
        pytest.skip(f"Redis at {REDIS_URL} unreachable: {error}")
    prefix = f"test:{uuid.uuid4().hex}:"
    yield prefix
    for key in client.scan_iter(match=prefix + "*"):
        client.delete(key)
    client.close()


@pytest.fixture
def redis_client():
    client = redis.Redis.from_url(REDIS_URL)
    yield client
    client.close()


@pytest.fixture
def steady_minute():
    """Wait, if needed, until at least 5 s remain in the current clock minute, so that a
    test counting requests against the per-minute limit never straddles two windows."""
    remaining = WINDOW_SECONDS - time.time() % WINDOW_SECONDS
    if remaining < 5:
        time.sleep(remaining + 0.05)
