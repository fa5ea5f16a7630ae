"""Quick play and invites through the HTTP API in tests: the app on a store, the background
work that a deployment runs beside it, and short ways to queue, read and cancel tickets.

On the embedded store the app runs its background work itself (service/background/in_process.py);
on Redis, ``worker_runner`` starts what ``ginrummy worker`` runs (service/cli.py): the runner of
service/background/setup.py over service.store.areas.redis_areas, on a store and a client of its
own, as that process builds them.
"""
from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from service import tokens
from service.api.context import EXTENSION
from service.app import BACKGROUND_EXTENSION
from service.background.runner import Runner, RunnerSettings
from service.background.setup import background_runner
from service.config import Config
from service.games.setup import game_service
from service.store import store_from_url
from service.store.areas import Areas, areas_of, redis_areas
from service.store.ratings import Change, HistoryEntry, Standing
from service.store.redis_client import client_from_url, worker_options
from tests.api.conftest import build_app
from tests.api.support import API_KEY, store_of

OTHER_KEY = "tests-other-api-key-77d1e0"
# Short pauses: a timer fires within a twentieth of a second of its time.
TEST_RUNNER = RunnerSettings(block_seconds=0.2, lease_seconds=5.0, poll_seconds=0.05, trim_seconds=1.0)
TICKETS = "/v1/matchmaking/tickets"


@dataclass
class WorkerRunner:
    """The background work of ``ginrummy worker`` in this process, on its own store and client."""

    runner: Runner
    closers: list[Callable[[], None]]

    def stop(self) -> None:
        self.runner.stop()
        assert self.runner.join(10), "the background runner did not stop"
        for close in self.closers:
            close()


def worker_runner(config: Config, settings: RunnerSettings = TEST_RUNNER) -> WorkerRunner:
    """Started; as service/cli.py builds it for ``ginrummy worker``."""
    store = store_from_url(config.redis_url, config.key_prefix, config.max_events_per_game)
    games = game_service(config, store)
    client = client_from_url(config.redis_url, **worker_options(settings.block_seconds))
    areas = redis_areas(store, client, config.key_prefix, config.key_stream_retention_seconds)
    runner = background_runner(config, games, areas, settings).start()
    return WorkerRunner(runner, [client.close, store.close])


@dataclass
class QuickPlayService:
    """One app (and, on Redis, a worker's runner beside it) and the requests of quick play."""

    app: Flask
    kind: str  # "memory" or "redis"
    prefix: str
    worker: WorkerRunner | None = None
    _areas: Areas | None = field(default=None, repr=False)

    @property
    def config(self) -> Config:
        return self.app.extensions[EXTENSION].config

    def client(self) -> FlaskClient:
        """A client of its own (one per thread)."""
        return self.app.test_client()

    @property
    def areas(self) -> Areas:
        if self._areas is None:
            self._areas = areas_of(store_of(self.app), self.prefix)
        return self._areas

    def open(self, external_id: str, variant: str = "classic", *, key: str = API_KEY,
             headers: dict | None = None, client: FlaskClient | None = None, **fields) -> TestResponse:
        body = {"player": {"external_id": external_id, "name": external_id.title()}, "variant": variant, **fields}
        return (client or self.client()).post(TICKETS, json=body, headers={"X-API-Key": key, **(headers or {})})

    def opened(self, external_id: str, variant: str = "classic", **fields) -> dict:
        """The ticket of a queueing that must succeed."""
        response = self.open(external_id, variant, **fields)
        assert response.status_code == 201, response.get_json()
        return response.get_json()["ticket"]

    def read(self, ticket_id: str, wait: float = 0, *, key: str = API_KEY,
             client: FlaskClient | None = None) -> TestResponse:
        return (client or self.client()).get(f"{TICKETS}/{ticket_id}", query_string={"wait": wait},
                                             headers={"X-API-Key": key})

    def ticket(self, ticket_id: str, wait: float = 0, key: str = API_KEY) -> dict:
        response = self.read(ticket_id, wait, key=key)
        assert response.status_code == 200, response.get_json()
        return response.get_json()["ticket"]

    def cancel(self, ticket_id: str, *, key: str = API_KEY, client: FlaskClient | None = None) -> TestResponse:
        return (client or self.client()).delete(f"{TICKETS}/{ticket_id}", headers={"X-API-Key": key})

    def until_settled(self, ticket_id: str, timeout: float = 10.0) -> dict:
        """The ticket once it no longer waits (long-polled), failing after ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            ticket = self.ticket(ticket_id, wait=max(min(left, 5.0), 0))
            if ticket["status"] != "waiting":
                return ticket
            assert left > 0, f"ticket {ticket_id} still waits after {timeout} s"

    def view(self, game_id: str, token: str | None = None) -> TestResponse:
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        return self.client().get(f"/v1/games/{game_id}", headers=headers)

    def set_rating(self, external_id: str, rating: float, variant: str = "classic", key: str = API_KEY) -> None:
        """Give a player a standing as if rated matches had made it (through the ratings store)."""
        standing = Standing(external_id, external_id.title(), rating, 60.0, 0.06, games=30, wins=15, losses=15)
        history = HistoryEntry(f"seed-{uuid.uuid4().hex[:8]}", "2026-01-01T00:00:00Z", rating, 60.0, 0.0)
        self.areas.ratings.apply(tokens.key_id(key), variant, history.game_id, [Change(None, standing, history, True)],
                                 "{}")

    def close(self) -> None:
        if self.worker is not None:
            self.worker.stop()
        in_process = self.app.extensions.get(BACKGROUND_EXTENSION)
        if in_process is not None:
            in_process.stop()
        if self.kind == "redis":
            store_of(self.app).close()


def quick_play_service(kind: str, redis_url: str | None, prefix: str, *, worker: bool = True,
                       **settings: str) -> QuickPlayService:
    """The app on ``kind``'s store with ``settings`` (variables as in the environment), two API
    keys, and on Redis (with ``worker``) a worker's runner."""
    settings = {"API_KEYS": f"{API_KEY},{OTHER_KEY}", **settings}
    if kind == "memory":
        return QuickPlayService(build_app(REDIS_URL="memory://", **settings), kind, prefix)
    app = build_app(REDIS_URL=redis_url, KEY_PREFIX=prefix, **settings)
    service = QuickPlayService(app, kind, prefix)
    if worker:
        service.worker = worker_runner(service.config)
    return service


def seats_of(view: dict) -> list[str | None]:
    """The external ids of a match's seats, seat by seat."""
    return [player["external_id"] for player in view["players"]]
