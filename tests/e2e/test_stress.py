"""Stress: 32 clients on 20 matches against gunicorn with 3 workers on the real Redis.

The clients mix legal moves with the requests a busy, buggy or impatient client sends:
duplicates, moves for the wrong seat, stale If-Match and retried Idempotency-Keys (one after
the other, and both at once). Afterwards nothing answered 5xx, every refusal is the problem
its situation calls for, every match in Redis keeps the rules' invariants, and every move
answered 200 is in the events exactly once.
"""
from __future__ import annotations

import random
import threading
import uuid
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import pytest
import requests

from tests.e2e.players import Acknowledged, ApiClient, Game, Move, legal_move
from tests.e2e.stored_games import acknowledgement_violations, invariant_violations, load_game

pytestmark = pytest.mark.slow

WORKERS = 3
MATCHES = 20
CLIENTS = 32
REQUESTS = 3000
# What each client does with the move it picked, and how often.
SCENARIOS = {"legal": 40, "duplicate": 15, "wrong_seat": 15, "stale_if_match": 15, "retry": 10, "retry_racing": 5}
# Refusals that a legal-looking move may meet when other clients play the same seats.
RACE_CONFLICTS = {
    "not_your_turn", "wrong_phase", "card_not_in_hand", "cannot_discard_drawn_card",
    "deadwood_too_high", "conflict", "game_finished",
}
PROBLEM = "application/problem+json"


class BudgetSpent(Exception):
    """The test's fixed number of requests has been sent."""


@dataclass
class Run:
    """What all clients share: the request budget and everything they observed."""

    budget: int
    lock: threading.Lock = field(default_factory=threading.Lock)
    sent: int = 0
    server_errors: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    acknowledged: list[Acknowledged] = field(default_factory=list)
    # (scenario, game, idempotency key) -> every (status, ETag, body) answered for it, in order
    keyed: dict[tuple[str, str, str], list[tuple[int, str | None, str]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    turns: dict[str, int] = field(default_factory=dict)

    def take(self) -> None:
        with self.lock:
            if self.sent >= self.budget:
                raise BudgetSpent
            self.sent += 1

    def note(self, kind: str, response: requests.Response, allowed: dict[int, set[str] | None]) -> None:
        """Check ``response`` against the statuses (and problem codes) ``allowed`` for it."""
        code = _problem_code(response)
        with self.lock:
            if response.status_code >= 500:
                self.server_errors.append(f"{kind}: {response.status_code} {response.text[:300]}")
            elif response.status_code not in allowed or (
                allowed[response.status_code] is not None and code not in allowed[response.status_code]
            ):
                self.unexpected.append(f"{kind}: {response.status_code} {code} {response.text[:300]}")


class StressClient(ApiClient):
    """An ApiClient that spends the shared budget and checks every answer for 5xx."""

    def __init__(self, base_url: str, run: Run):
        super().__init__(base_url)
        self.run = run

    def request(self, method: str, path: str, token: str | None = None, **kwargs) -> requests.Response:
        self.run.take()
        response = super().request(method, path, token, **kwargs)
        if response.status_code >= 500:
            self.run.note(f"{method} {path}", response, {})
        return response


def _problem_code(response: requests.Response) -> str | None:
    if not response.headers.get("Content-Type", "").startswith(PROBLEM):
        return None
    return response.json().get("code")


def play(client: StressClient, run: Run, games: list[Game], seed: int) -> None:
    """One client's loop until the budget is spent."""
    rng = random.Random(seed)
    racing = StressClient(client.base_url, run)
    try:
        while True:
            game = rng.choice(games)
            view = client.mover_view(game, run.turns.get(game.game_id))
            move = None if view is None else legal_move(view, rng)
            if move is None:  # the match is over, or another client moved between the reads
                continue
            scenario = rng.choices(list(SCENARIOS), weights=list(SCENARIOS.values()))[0]
            act(scenario, client, racing, run, game, view, move, rng)
    except BudgetSpent:
        pass
    finally:
        racing.close()
        client.close()


def act(scenario: str, client: StressClient, racing: StressClient, run: Run, game: Game,
        view: dict, move: Move, rng: random.Random) -> None:
    seat, version = view["you"]["seat"], view["version"]
    token = game.tokens[seat]
    moved = {200: None, 409: RACE_CONFLICTS}

    def record(response: requests.Response, acting_seat: int) -> None:
        if response.status_code == 200:
            body = response.json()
            with run.lock:
                run.acknowledged.append(Acknowledged(game.game_id, body["version"], acting_seat, move))
                if body["hand"] is not None:
                    run.turns[game.game_id] = body["hand"]["turn"]

    if scenario == "legal":
        conditional = rng.random() < 0.5
        headers = {"If-Match": f'"{version}"'} if conditional else {}
        response = client.act(game.game_id, token, move, headers)
        run.note(scenario, response, {**moved, 412: {"version_mismatch"}} if conditional else moved)
        record(response, seat)
    elif scenario == "duplicate":
        for _ in range(2):
            response = client.act(game.game_id, token, move)
            run.note(scenario, response, moved)
            record(response, seat)
    elif scenario == "wrong_seat":
        other = rng.choice([s for s in range(len(game.tokens)) if s != seat])
        response = client.act(game.game_id, game.tokens[other], move)
        # Refused unless the turn passed to ``other`` meanwhile and the move suits them.
        run.note(scenario, response, moved)
        record(response, other)
    elif scenario == "stale_if_match":
        # The version only grows: an older one can never match.
        response = client.act(game.game_id, token, move, {"If-Match": f'"{version - 1}"'})
        run.note(scenario, response, {412: {"version_mismatch"}})
    else:
        key = f"stress-{uuid.uuid4().hex}"
        headers = {"Idempotency-Key": key}

        def answered(response: requests.Response) -> None:
            run.note(scenario, response, moved)
            record(response, seat)
            with run.lock:
                run.keyed[(scenario, game.game_id, key)].append(
                    (response.status_code, response.headers.get("ETag"), response.text)
                )

        if scenario == "retry":
            for _ in range(2):
                answered(client.act(game.game_id, token, move, headers))
            return
        with ThreadPoolExecutor(2) as pair:
            pending = [pair.submit(c.act, game.game_id, token, move, headers) for c in (client, racing)]
        # Every answer is recorded before a spent budget ends this client.
        outcomes = [future.exception() or future.result() for future in pending]
        for outcome in outcomes:
            if isinstance(outcome, requests.Response):
                answered(outcome)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome


@pytest.mark.timeout(300)
def test_concurrent_clients_never_break_a_match(start_gunicorn, redis_url, test_prefix, truth) -> None:
    server = start_gunicorn({"REDIS_URL": redis_url, "KEY_PREFIX": test_prefix}, workers=WORKERS)
    setup = ApiClient(server.url)
    games = [setup.create(seed=seed) for seed in range(MATCHES)]
    setup.close()
    run = Run(REQUESTS)

    with ThreadPoolExecutor(CLIENTS) as pool:
        clients = [pool.submit(play, StressClient(server.url, run), run, games, seed) for seed in range(CLIENTS)]
        for finished in clients:
            finished.result()  # re-raises a client's failure (a non-200 read, a lost connection)

    assert run.sent == REQUESTS
    assert run.server_errors == []
    assert run.unexpected == []
    for (scenario, game_id, key), answers in run.keyed.items():
        accepted = {answer for answer in answers if answer[0] == 200}
        assert len(accepted) <= 1, f"Idempotency-Key {key} on {game_id} got different 200 answers: {answers}"
        if scenario == "retry" and len(answers) == 2 and answers[0][0] == 200:
            # A retry after a success gets that success again, whatever happened meanwhile.
            assert answers[1] == answers[0], f"Idempotency-Key {key} on {game_id}: {answers}"
    # Enough moves went through for the checks below to mean something.
    assert len({(a.game_id, a.version) for a in run.acknowledged}) >= REQUESTS // 10
    for game in games:
        stored = load_game(truth, game.game_id)
        assert invariant_violations(stored) == [], game.game_id
        assert acknowledgement_violations(stored, run.acknowledged) == [], game.game_id
    log = server.log_text()
    assert '"level": "ERROR"' not in log and "WORKER TIMEOUT" not in log, log[-3000:]
