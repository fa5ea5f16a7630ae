"""The application factory: everything is built here, nothing at import time."""
from __future__ import annotations

from collections.abc import Mapping

from flask import Flask

from service import observability
from service.api import register_api
from service.api.context import EXTENSION, ServiceContext
from service.api.problems import register_problem_handlers
from service.config import Config
from service.games import GameService, Settings
from service.limits import init_limits
from service.observability import init_observability
from service.store import GameStore, store_from_url


def create_app(config: Config | Mapping[str, str] | None = None, store: GameStore | None = None) -> Flask:
    """A ready app with its own store.

    ``config`` is a Config, or overrides of the environment keyed by variable name
    (``{"REDIS_URL": "memory://"}``); None reads the environment only. ``store`` replaces
    the store that REDIS_URL names (tests use it to observe a real store). Raises ConfigError.
    """
    if not isinstance(config, Config):
        config = Config.from_env(**dict(config or {}))
    app = Flask(__name__)
    app.config.from_mapping(config.flask_settings())
    # Views are JSON objects whose field order (id first) reads like the documentation.
    app.json.sort_keys = False
    init_observability(app)
    init_limits(app)
    if store is None:
        store = store_from_url(config.redis_url, config.key_prefix)
    settings = Settings(
        game_ttl_seconds=config.game_ttl_seconds,
        idempotency_ttl_seconds=config.idempotency_ttl_seconds,
        long_poll_max_seconds=config.long_poll_max_seconds,
    )
    app.extensions[EXTENSION] = ServiceContext(config, store, GameService(store, settings, observability))
    register_problem_handlers(app)
    register_api(app)
    return app
