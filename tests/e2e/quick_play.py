"""Quick play over real HTTP, and the checks of many tickets at once: every ticket matched exactly
once, each match's seats exactly its tickets, nothing made that no ticket names.

Used by tests/e2e/test_quick_play_e2e.py (gunicorn) and tests/matchmaking/test_quick_play_cluster.py
(Redis Cluster): the checks take tickets and views as the API gives them, whoever fetched them.
"""
from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterable

import requests
from redis import Redis
from redis.cluster import RedisCluster

from tests.e2e.sessions import FreshSession
from tests.gunicorn_server import TEST_API_KEY

SEATS = {"classic": 2, "box": 3}
TICKETS = "/v1/matchmaking/tickets"
REQUEST_TIMEOUT = 40.0


class TicketsApi:
    """Tickets and games on ``base_url``, one keep-alive session per thread."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")
        self._local = threading.local()
        self._sessions: list[requests.Session] = []
        self._lock = threading.Lock()

    def _session(self) -> requests.Session:
        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = FreshSession()
            with self._lock:
                self._sessions.append(session)
        return session

    def close(self) -> None:
        for session in self._sessions:
            session.close()

    def request(self, method: str, path: str, **kwargs) -> requests.Response:
        return self._session().request(method, self.base_url + path, timeout=REQUEST_TIMEOUT, **kwargs)

    def queue(self, external_id: str, variant: str = "classic", key: str = TEST_API_KEY, **fields) -> dict:
        """Queue a ticket; AssertionError unless 201."""
        body = {"player": {"external_id": external_id, "name": external_id.title()}, "variant": variant, **fields}
        response = self.request("POST", TICKETS, json=body, headers={"X-API-Key": key})
        assert response.status_code == 201, (response.status_code, response.text)
        return response.json()["ticket"]

    def ticket(self, ticket_id: str, key: str = TEST_API_KEY, wait: float = 0) -> dict:
        response = self.request("GET", f"{TICKETS}/{ticket_id}", params={"wait": wait}, headers={"X-API-Key": key})
        assert response.status_code == 200, (response.status_code, response.text)
        return response.json()["ticket"]

    def until_settled(self, ticket_id: str, key: str = TEST_API_KEY, timeout: float = 30.0) -> dict:
        """The ticket once it no longer waits (long-polled); AssertionError after ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            ticket = self.ticket(ticket_id, key, wait=max(min(left, 10.0), 0))
            if ticket["status"] != "waiting":
                return ticket
            assert left > 0, f"ticket {ticket_id} still waits after {timeout} s"

    def game(self, game_id: str, token: str | None = None) -> requests.Response:
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        return self.request("GET", f"/v1/games/{game_id}", headers=headers)


def matches_of(tickets: Iterable[dict], queue_of=lambda ticket: (ticket["variant"], ticket["rated"])) -> dict:
    """The matches the tickets name: {game id: [ticket of seat 0, of seat 1, ...]}, checking that
    each ticket is matched, with a token, that no seat of a match is named twice, that every seat
    of a match is named, and that a match's tickets share their queue (``queue_of``)."""
    games: dict[str, dict[int, dict]] = {}
    for ticket in tickets:
        assert ticket["status"] == "matched" and ticket["game_id"] and ticket["token"], ticket
        seats = games.setdefault(ticket["game_id"], {})
        assert ticket["seat"] not in seats, f"two tickets in seat {ticket['seat']} of {ticket['game_id']}"
        seats[ticket["seat"]] = ticket
    matches = {}
    for game_id, seats in games.items():
        in_order = [seats[seat] for seat in sorted(seats)]
        assert sorted(seats) == list(range(SEATS[in_order[0]["variant"]])), (game_id, sorted(seats))
        assert len({queue_of(ticket) for ticket in in_order}) == 1, f"{game_id} pairs tickets of several queues"
        matches[game_id] = in_order
    return matches


def check_match(view: dict, tickets: list[dict]) -> None:
    """A match as its public view shows it has exactly these tickets' players, seat by seat."""
    assert [player["external_id"] for player in view["players"]] == [t["player"]["external_id"] for t in tickets]
    assert not any(player["bot"] for player in view["players"])
    assert view["variant"] == tickets[0]["variant"] and view["rated"] is tickets[0]["rated"]
    assert view["rules"] == tickets[0]["rules"]


def stored_games(client: Redis | RedisCluster, prefix: str) -> set[str]:
    """Every game stored under ``prefix`` (its state hash ``<prefix>{g_...}:s``)."""
    found = {key.decode() if isinstance(key, bytes) else key for key in client.scan_iter(match=f"{prefix}{{g_*}}:s",
                                                                                         count=1000)}
    return {key[len(prefix) + 1:-3] for key in found}


def announced(client: Redis | RedisCluster, prefix: str, scope: str) -> Counter:
    """How many ``ticket_matched`` entries the key's stream holds per ticket id."""
    entries = client.xrange(f"{prefix}{{k:{scope}}}:stream", "-", "+")
    counted: Counter = Counter()
    for _, fields in entries:
        fields = {(k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
                  for k, v in fields.items()}
        if fields["type"] == "ticket_matched":
            counted[json.loads(fields["body"])["data"]["ticket_id"]] += 1
    return counted
