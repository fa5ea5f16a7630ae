"""The application factory: everything is built here, nothing at import time."""
from __future__ import annotations

import logging
import types
from collections.abc import Callable, Mapping

from flask import Flask, Response

from service import observability
from service.api import register_api
from service.api.json_provider import OrjsonProvider
from service.api.paths import init_paths
from service.api.context import EXTENSION, ServiceContext
from service.api.problems import register_problem_handlers
from service.config import Config
from service.games.setup import game_service
from service.middleware import init_middleware
from service.observability import init_observability
from service.background.in_process import run_in_process
from service.background.setup import IN_PROCESS, background_runner
from service.matchmaking.setup import invites, quick_play
from service.ratings.service import RatingService
from service.streams.reader import KeyStreamReader
from service.webhooks.local import local_deliveries
from service.store import GameStore, store_from_url
from service.store.areas import MemoryAreas, areas_of

logger = logging.getLogger(__name__)

BACKGROUND_EXTENSION = "ginrummy.background"


class ServiceFlask(Flask):
    """Flask, answering OPTIONS on a resource with 204 and ``Allow`` (Flask's own answer is an
    empty text/html 200), whichever server runs the app; and asking once per function whether
    it is a coroutine function."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # Flask asks for every hook and view of every request (~14 times a move, each an
        # inspection of the code's flags); the answer is the function's for good.
        self._synchronous: dict[Callable, bool] = {}

    def ensure_sync(self, func: Callable) -> Callable:
        if not isinstance(func, (types.FunctionType, types.MethodType)):
            return super().ensure_sync(func)  # a partial or other callable: not kept
        # A bound method is keyed by its function: views are bound to a new instance per request.
        key = getattr(func, "__func__", func)
        synchronous = self._synchronous.get(key)
        if synchronous is None:
            synchronous = self._synchronous[key] = super().ensure_sync(func) is func
        return func if synchronous else super().ensure_sync(func)

    def make_default_options_response(self) -> Response:
        response = super().make_default_options_response()
        response.status_code = 204
        del response.headers["Content-Type"]
        return response


def create_app(config: Config | Mapping[str, str] | None = None, store: GameStore | None = None) -> Flask:
    """A ready app with its own store.

    ``config`` is a Config, or overrides of the environment keyed by variable name
    (``{"REDIS_URL": "memory://"}``); None reads the environment only. ``store`` replaces
    the store that REDIS_URL names (tests use it to observe a real store). Raises ConfigError.
    """
    if not isinstance(config, Config):
        config = Config.from_env(**dict(config or {}))
    app = ServiceFlask(__name__, static_folder=None)  # no static files: the docs blueprint serves its own
    init_paths(app)  # before any route: each rule takes the map's slash merging when added
    app.config.from_mapping(config.flask_settings())
    # Views are JSON objects whose field order (id first) reads like the documentation.
    app.json = OrjsonProvider(app)
    init_observability(app)
    if store is None:
        store = store_from_url(config.redis_url, config.key_prefix, config.max_events_per_game,
                               max_waiters=config.long_poll_max_waiters)
    if config.allow_anonymous_create and not config.is_embedded:
        logger.warning("ALLOW_ANONYMOUS_CREATE is on: anyone who reaches this service may create games")
    if not config.allow_anonymous_create and not config.api_keys:
        logger.warning("no API_KEYS and anonymous creation is off: no game can be created")
    games = game_service(config, store, observability)
    areas = areas_of(store, config.key_prefix, config.key_stream_retention_seconds)
    ratings = RatingService(lambda: areas.ratings, games.ctx.scope_of)
    app.extensions[EXTENSION] = ServiceContext(config, store, games, ratings, quick_play(config, games, areas),
                                               invites(config, games, areas), KeyStreamReader(lambda: areas.streams))
    init_middleware(app, secret=games.ctx.secret)
    if isinstance(areas, MemoryAreas):
        # Nothing else can reach this process's memory: its background work runs here.
        runner = background_runner(config, games, areas, IN_PROCESS, deliveries=local_deliveries(config))
        app.extensions[BACKGROUND_EXTENSION] = runner
        run_in_process(runner, store.activity, app)
    register_problem_handlers(app)
    register_api(app)
    return app
