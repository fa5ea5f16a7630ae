"""Building the use cases from the configuration (the HTTP app and the worker share this)."""
from __future__ import annotations

from service.config import Config
from service.games.context import Context, Metrics, Settings
from service.games.service import GameService
from service.store.base import GameStore
from service.callback_urls import AllowedHosts


class Uncounted:
    """Metrics for a process that does not count game events (the worker counts its own)."""

    def record_move(self, kind: str) -> None: ...
    def record_conflict(self) -> None: ...
    def record_store_error(self) -> None: ...
    def record_game_created(self, variant: str) -> None: ...
    def record_game_finished(self, variant: str) -> None: ...


def game_service(config: Config, store: GameStore, metrics: Metrics | None = None) -> GameService:
    """The use cases over ``store`` with the settings of ``config``."""
    settings = Settings(
        game_ttl_seconds=config.game_ttl_seconds,
        unstarted_game_ttl_seconds=config.unstarted_game_ttl_seconds,
        tombstone_ttl_seconds=config.game_tombstone_seconds,
        idempotency_ttl_seconds=config.idempotency_ttl_seconds,
        long_poll_max_seconds=config.long_poll_max_seconds,
        anonymous_create=config.allow_anonymous_create,
        create_quota_per_minute=config.create_quota_per_minute,
        webhook_allowed_hosts=AllowedHosts.parse(config.webhook_allowed_hosts),
        unscoped_players=config.is_embedded and not config.api_keys,
        stream_heartbeat_seconds=config.stream_heartbeat_seconds,
    )
    return GameService(Context(store, settings, metrics or Uncounted(), config.server_secret))
