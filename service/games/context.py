"""What every use case works with: the store, the settings, the metrics, the secret, the clock."""
from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from service.store.base import GameStore
from service.tokens import ServerSecret
from service.callback_urls import AllowedHosts


# The scope of the players of an embedded store without API keys (a key id is hex: never this).
UNSCOPED = "-"


class Metrics(Protocol):
    """What the use cases report (``service.observability`` implements it)."""

    def record_move(self, kind: str) -> None: ...
    def record_conflict(self) -> None: ...
    def record_store_error(self) -> None: ...
    def record_game_created(self, variant: str) -> None: ...
    def record_game_finished(self, variant: str) -> None: ...


@dataclass(frozen=True)
class Settings:
    """The parts of the configuration the use cases need (seconds unless named otherwise)."""

    game_ttl_seconds: int = 604800
    unstarted_game_ttl_seconds: int = 3600
    tombstone_ttl_seconds: int = 2592000
    idempotency_ttl_seconds: int = 86400
    long_poll_max_seconds: float = 30
    # Whether a game may be created without an API key, and how many a key (or, anonymous,
    # an address) may create per minute (0: no quota).
    anonymous_create: bool = True
    create_quota_per_minute: int = 0
    webhook_allowed_hosts: AllowedHosts = AllowedHosts()
    # Whether a request without an API key acts for everyone's players (the embedded store
    # without API keys): then its players, ratings and streams are one unscoped set.
    unscoped_players: bool = False
    # Live streams: the longest silence on a stream before a heartbeat comment.
    stream_heartbeat_seconds: float = 15


@dataclass
class Context:
    store: GameStore
    settings: Settings
    metrics: Metrics
    # The configured secret; None: the one the store keeps for every process of the deployment.
    configured_secret: str | None = None
    clock: Callable[[], float] = time.time
    _secret: ServerSecret | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def secret(self) -> ServerSecret:
        """The server secret (asked of the store once per process when not configured).

        Raises StoreError when the store must be asked and cannot answer."""
        if self._secret is None:
            with self._lock:
                if self._secret is None:
                    value = self.configured_secret or self.store.shared_secret(secrets.token_urlsafe(32))
                    self._secret = ServerSecret(value)
        return self._secret

    def now(self) -> float:
        return self.clock()

    def scope_of(self, owner: str | None) -> str | None:
        """The players' scope of what the API key ``owner`` (None: no key) makes: its key id,
        ``-`` for the unscoped players of an embedded store, or None (no one's players)."""
        if owner is not None:
            return owner
        return UNSCOPED if self.settings.unscoped_players else None
