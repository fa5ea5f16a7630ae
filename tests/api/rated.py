"""Rated matches through HTTP in tests: creating them, ending them, waiting for their rating
changes, the ratings runner on Redis, and every read of ratings checked against the tests' own
Glicko-2 (tests/ratings/reference.py)."""
from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest
from flask import Flask
from flask.testing import FlaskClient

from service.api.context import EXTENSION
from service.app import BACKGROUND_EXTENSION
from service.background.runner import Runner, RunnerSettings
from service.background.setup import background_runner
from service.ratings.bots import BOT_RATINGS
from service.store.areas import redis_areas
from service.store.feed import FeedEntry
from service.store.redis_client import client_from_url, worker_options
from tests.api.support import API_KEY, SpecChecker
from tests.ratings.reference import Ledger

KEY_A = API_KEY
KEY_B = "ratings-tests-key-b-5e1d7c"
# The contract: readable within a second of the finishing move.
LAG = 1.0
CLOSE = 1e-6


def person(external_id: str) -> dict:
    return {"name": external_id.title(), "external_id": external_id}


def bot(level: str) -> dict:
    return {"name": f"Bot {level}", "bot": True, "level": level}


def new_ledger() -> Ledger:
    return Ledger({level: (rating.rating, rating.rd) for level, rating in BOT_RATINGS.items()})


@dataclass(frozen=True)
class Rated:
    """A rated match as its creator sees it."""

    game_id: str
    tokens: list[str | None]
    key: str | None


def create_rated(client: FlaskClient, key: str | None, variant: str, players: list[dict], **extra) -> Rated:
    response = client.post("/v1/games", json={"variant": variant, "players": players, "rated": True, **extra},
                           headers={"X-API-Key": key})
    assert response.status_code == 201, response.get_json()
    body = response.get_json()
    assert body["game"]["rated"] is True
    return Rated(body["game"]["id"], [p["token"] for p in body["players"]], key)


def resign(client: FlaskClient, match: Rated, seat: int) -> float:
    """The seat resigns; returns when the answer came (time.monotonic)."""
    response = client.post(f"/v1/games/{match.game_id}/resign",
                           headers={"Authorization": f"Bearer {match.tokens[seat]}"})
    assert response.status_code == 200, response.get_json()
    return time.monotonic()


def public_view(client: FlaskClient, game_id: str) -> dict:
    response = client.get(f"/v1/games/{game_id}")
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def rated_view(client: FlaskClient, game_id: str, ended: float, within: float = LAG) -> dict:
    """The match's view once it shows its rating changes, which must be within ``within`` s
    of ``ended`` (the finishing move's answer)."""
    while True:
        view = public_view(client, game_id)
        if view["result"]["rating_changes"] is not None:
            break
        assert time.monotonic() - ended <= within, f"{game_id}: no rating changes within {within} s of its end"
        time.sleep(0.01)
    assert time.monotonic() - ended <= within, f"{game_id}: rating changes came later than {within} s after its end"
    return view


def assert_close(found: dict, expected: dict, what: str) -> None:
    assert set(found) == set(expected), (what, found, expected)
    for name, value in expected.items():
        if isinstance(value, float):
            assert found[name] == pytest.approx(value, abs=CLOSE), (what, name, found[name], value)
        else:
            assert found[name] == value, (what, name, found[name], value)


class Noting:
    """A feed consumer that notes what the consumer it wraps has applied (without raising)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.group = inner.group
        self._done: set[tuple[str, str]] = set()
        self._changed = threading.Condition()

    def apply(self, entry: FeedEntry) -> None:
        self.inner.apply(entry)
        with self._changed:
            self._done.add((entry.subject, entry.type))
            self._changed.notify_all()

    def wait_for(self, game_id: str, entry_type: str = "match_over", timeout: float = 10.0) -> None:
        with self._changed:
            assert self._changed.wait_for(lambda: (game_id, entry_type) in self._done, timeout), \
                f"{entry_type} of {game_id} not applied within {timeout} s"


def noting_runner(app: Flask) -> Noting:
    """Wrap the ratings consumer of the embedded store's own runner."""
    runner = app.extensions[BACKGROUND_EXTENSION]
    noting = Noting(runner.consumers[0])
    runner.consumers = [noting]
    return noting


@contextmanager
def redis_runner(app: Flask, url: str, prefix: str, settings: RunnerSettings = RunnerSettings(),
                 wrap=Noting, name: str | None = None) -> Iterator[tuple[Runner, object]]:
    """The service's background runner (what ``ginrummy worker`` runs) on the app's Redis, in
    this process, on a client of its own as the worker has; its ratings consumer wrapped by
    ``wrap``. Stopped at the end."""
    context = app.extensions[EXTENSION]
    client = client_from_url(url, **worker_options(settings.block_seconds))
    runner = background_runner(context.config, context.games, redis_areas(context.store, client, prefix), settings)
    if name is not None:
        runner.name = name
    wrapped = wrap(runner.consumers[0])
    runner.consumers = [wrapped]
    runner.start()
    try:
        yield runner, wrapped
    finally:
        runner.stop()
        runner.join(10)
        client.close()


class Reads:
    """Every read of ratings for one API key, checked against the ledger."""

    def __init__(self, client: FlaskClient, ledger: Ledger, key: str | None, scope: str) -> None:
        self.client, self.ledger, self.key, self.scope = client, ledger, key, scope
        self.spec = SpecChecker(client.application)

    def get(self, path: str, **query):
        """The answer, checked against the app's own OpenAPI document."""
        response = self.client.get(path, headers={"X-API-Key": self.key} if self.key else {}, query_string=query)
        self.spec.check("GET", path, response)
        return response

    def ok(self, path: str, **query) -> dict:
        response = self.get(path, **query)
        assert response.status_code == 200, (path, query, response.get_json())
        return response.get_json()

    def check_player(self, external_id: str) -> None:
        rows = []
        for variant in ("classic", "box"):
            expected = self.ledger.standing(self.scope, variant, external_id)
            if expected is None:
                continue
            rows.append({"variant": variant, "rating": expected.rating, "rd": expected.rd,
                         "volatility": expected.volatility, "games": expected.games, "wins": expected.wins,
                         "losses": expected.losses, "draws": expected.draws, "provisional": expected.provisional,
                         "rank": self.ledger.rank(self.scope, variant, external_id)})
            self.check_history(external_id, variant)
        body = self.ok(f"/v1/players/{external_id}/ratings")
        assert body["external_id"] == external_id and len(body["ratings"]) == len(rows), body
        for found, expected in zip(body["ratings"], rows):
            assert_close(found, expected, f"ratings of {external_id}")

    def check_history(self, external_id: str, variant: str, limit: int = 2) -> None:
        expected = self.ledger.standing(self.scope, variant, external_id).history[::-1]
        found, cursor = [], None
        while True:
            body = self.ok(f"/v1/players/{external_id}/ratings/{variant}/history", limit=limit,
                           **({"cursor": cursor} if cursor else {}))
            assert len(body["history"]) <= limit
            found += body["history"]
            cursor = body["next_cursor"]
            if cursor is None:
                break
        assert len(found) == len(expected), (external_id, variant, found)
        for row, (game_id, rating, rd, delta) in zip(found, expected):
            assert row.pop("at").endswith("Z")
            assert_close(row, {"game_id": game_id, "rating": rating, "rd": rd, "delta": delta},
                         f"history of {external_id}")

    def check_board(self, variant: str, limit: int = 2) -> None:
        board = self.ledger.board(self.scope, variant)
        expected = [{"rank": rank, "external_id": s.external_id, "name": s.name, "rating": s.rating, "rd": s.rd,
                     "games": s.games} for rank, s in enumerate(board, start=1)]
        found, cursor = [], None
        while True:
            body = self.ok(f"/v1/leaderboards/{variant}", limit=limit, **({"cursor": cursor} if cursor else {}))
            assert body["variant"] == variant and body["size"] == len(expected)
            assert len(body["players"]) <= limit
            found += body["players"]
            cursor = body["next_cursor"]
            if cursor is None:
                break
        assert len(found) == len(expected), (variant, found, expected)
        for row, want in zip(found, expected):
            assert_close(row, want, f"{variant} leaderboard")
        for n, want in enumerate(expected):
            for size in (1, 3, 4):
                first = min(max(n - (size - 1) // 2, 0), max(len(expected) - size, 0))
                body = self.ok(f"/v1/leaderboards/{variant}", around=want["external_id"], limit=size)
                window = expected[first:first + size]
                assert [row["rank"] for row in body["players"]] == [row["rank"] for row in window]
                assert want["rank"] in [row["rank"] for row in body["players"]]
                assert body["next_cursor"] is None and body["size"] == len(expected)
                for row, wanted in zip(body["players"], window):
                    assert_close(row, wanted, f"{variant} leaderboard around {want['external_id']}")
        for (scope, board_variant, external_id), standing in self.ledger.players.items():
            if scope == self.scope and board_variant == variant and standing.provisional:
                response = self.get(f"/v1/leaderboards/{variant}", around=external_id)
                assert response.status_code == 404 and response.get_json()["code"] == "player_not_ranked"

    def check_everything(self) -> None:
        for external_id in sorted({e for (scope, _, e) in self.ledger.players if scope == self.scope}):
            self.check_player(external_id)
        for variant in ("classic", "box"):
            self.check_board(variant)

    def snapshot(self) -> list:
        """Every answer of every read of this key's players and boards."""
        answers = []
        for (scope, variant, external_id) in sorted(self.ledger.players):
            if scope == self.scope:
                answers.append(self.ok(f"/v1/players/{external_id}/ratings"))
                answers.append(self.ok(f"/v1/players/{external_id}/ratings/{variant}/history", limit=100))
        for variant in ("classic", "box"):
            answers.append(self.ok(f"/v1/leaderboards/{variant}", limit=100))
        return answers
