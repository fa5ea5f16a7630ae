"""Ratings through HTTP, on the embedded store (its own background loop) and on Redis and a Redis
Cluster (the service's background runner started in this process, as ``ginrummy worker`` runs
it): a sequence of rated matches, each checked at once against the tests' own Glicko-2 in every
read (the player's ratings, their history, the match's ``rating_changes``, the leaderboards);
two API keys apart; an abort that changes nothing; refused reads."""
from __future__ import annotations

import itertools
import time
import uuid

import pytest

from tests.api.conftest import build_app
from tests.api.rated import (KEY_A, KEY_B, Reads, assert_close, bot, create_rated, new_ledger, noting_runner, person,
                             public_view, rated_view, redis_runner, resign)
from tests.api.sessions import Session
from tests.api.support import store_of
from tests.api.test_errors import assert_problem

MAX_MATCHES_TO_THE_BOARD = 40


@pytest.fixture
def served(backend):
    """(app, the ratings consumer as noted) on ``backend``, its ratings applied in this process."""
    url, prefix = backend
    app = build_app(REDIS_URL=url, KEY_PREFIX=prefix, API_KEYS=f"{KEY_A},{KEY_B}")
    if url == "memory://":
        yield app, noting_runner(app)
        return
    try:
        with redis_runner(app, url, prefix) as (_, noting):
            yield app, noting
    finally:
        store_of(app).close()


def players(*names: str) -> list[str]:
    """External ids of this test alone."""
    run = uuid.uuid4().hex[:6]
    return [f"{name}-{run}" for name in names]


class Sequence:
    """Rated matches of one app, each checked against the ledger as soon as it ends."""

    def __init__(self, app) -> None:
        self.app = app
        self.client = app.test_client()
        self.ledger = new_ledger()
        self.reads = {KEY_A: Reads(self.client, self.ledger, KEY_A, "A"),
                      KEY_B: Reads(self.client, self.ledger, KEY_B, "B")}
        self.scopes = {KEY_A: "A", KEY_B: "B"}

    def resigned(self, key: str, variant: str, seats: list[dict], resigning: int) -> dict:
        match = create_rated(self.client, key, variant, seats)
        return self.checked(key, match.game_id, resign(self.client, match, resigning))

    def checked(self, key: str, game_id: str, ended: float) -> dict:
        view = rated_view(self.client, game_id, ended)
        self.reads[key].spec.check("GET", f"/v1/games/{game_id}", self.client.get(f"/v1/games/{game_id}"))
        expected = self.ledger.rate(self.scopes[key], view)
        found = view["result"]["rating_changes"]
        assert [change["seat"] for change in found] == [change["seat"] for change in expected]
        for shown, wanted in zip(found, expected):
            assert_close(shown, wanted, f"rating_changes of {game_id}")
        for other in self.reads.values():
            other.check_everything()
        return view


def test_rated_matches_rate_their_players_as_glicko2_says(served):
    app, noting = served
    ann, bob, cy, dee = players("ann", "bob", "cy", "dee")
    run = Sequence(app)
    a = run.reads[KEY_A]
    for external_id in (ann, bob, cy, dee):
        assert_problem(a.get(f"/v1/players/{external_id}/ratings"), 404, "player_not_found")

    # Classic: person against person, and against bots of two levels (in either seat).
    run.resigned(KEY_A, "classic", [person(ann), person(bob)], resigning=1)
    run.resigned(KEY_A, "classic", [person(bob), person(cy)], resigning=1)
    view = run.resigned(KEY_A, "classic", [person(ann), bot("strong")], resigning=0)
    assert [change["seat"] for change in view["result"]["rating_changes"]] == [0]  # the bot's rating is fixed
    run.resigned(KEY_A, "classic", [bot("easy"), person(cy)], resigning=1)

    # Box after hands that left the totals apart: the pair that did not resign is decided by them.
    session = Session.open(app, "box", [("Ann", None), ("Bob", None), ("Cy", None)],
                           players=[person(ann), person(bob), person(cy)], rated=True, seed=61)
    session.play_until(lambda: session.replay.counts.get("hand_scored", 0) >= 1
                       and len(set(session.match().scores)) > 1)
    scores = session.match().scores
    resigning = next(seat for seat in range(3) if len({scores[other] for other in range(3) if other != seat}) == 2)
    assert session.post(resigning, "resign").status_code == 200
    view = run.checked(KEY_A, session.game_id, time.monotonic())
    totals = [line["total"] for line in view["result"]["players"]]
    assert len({totals[seat] for seat in range(3) if seat != resigning}) == 2

    # Box resigned at the start (equal totals: the other pair draws), with and without bots.
    run.resigned(KEY_A, "box", [person(dee), bot("standard"), bot("strong")], resigning=0)
    run.resigned(KEY_A, "box", [person(ann), person(bob), person(dee)], resigning=1)
    run.resigned(KEY_A, "box", [person(cy), person(ann), bot("standard")], resigning=0)
    assert run.ledger.standing("A", "box", ann).draws == 2

    # Enough box matches against the standard bot for three of them to reach the board.
    rotation = itertools.cycle([(ann, bob, 0), (bob, cy, 1), (cy, ann, 0), (ann, bob, 1), (bob, cy, 0), (cy, ann, 1)])
    for _ in range(MAX_MATCHES_TO_THE_BOARD):
        if len(run.ledger.board("A", "box")) >= 3:
            break
        first, second, resigning = next(rotation)
        run.resigned(KEY_A, "box", [person(first), person(second), bot("standard")], resigning)
    else:
        pytest.fail("three players never reached the board")
    assert run.ledger.standing("A", "box", dee).provisional  # one of them stays off it
    assert a.ok(f"/v1/players/{dee}/ratings")["ratings"][0]["rank"] is None

    # Another API key: the same external ids are other players, who start afresh.
    run.resigned(KEY_B, "classic", [person(ann), person(bob)], resigning=0)
    b = run.reads[KEY_B]
    assert_problem(b.get(f"/v1/players/{cy}/ratings"), 404, "player_not_found")
    assert b.ok("/v1/leaderboards/box")["players"] == []
    assert run.ledger.standing("B", "classic", ann).games == 1

    # An aborted rated match changes nothing, also once its end has been read by the ratings.
    before = {key: reads.snapshot() for key, reads in run.reads.items()}
    match = create_rated(run.client, KEY_A, "classic", [person(ann), person(bob)])
    aborted = run.client.post(f"/v1/games/{match.game_id}/abort", headers={"X-API-Key": KEY_A})
    assert aborted.status_code == 200
    noting.wait_for(match.game_id)
    assert public_view(run.client, match.game_id)["result"]["rating_changes"] is None
    assert {key: reads.snapshot() for key, reads in run.reads.items()} == before


def test_refused_reads_answer_problems_and_change_nothing(served):
    app, _ = served
    ann, bob, nobody = players("ann", "bob", "nobody")
    run = Sequence(app)
    run.resigned(KEY_A, "classic", [person(ann), person(bob)], resigning=1)
    a = run.reads[KEY_A]
    before = a.snapshot()
    refused = [
        (a.get("/v1/leaderboards/chess"), 422, "invalid_request"),
        (a.get(f"/v1/players/{ann}/ratings/chess/history"), 422, "invalid_request"),
        (a.get(f"/v1/players/{nobody}/ratings"), 404, "player_not_found"),
        (a.get(f"/v1/players/{nobody}/ratings/classic/history"), 404, "player_not_found"),
        (a.get(f"/v1/players/{ann}/ratings/box/history"), 404, "player_not_found"),  # never rated in box
        (a.get(f"/v1/players/{'x' * 129}/ratings"), 422, "invalid_request"),
        (a.get("/v1/leaderboards/classic", around=nobody), 404, "player_not_ranked"),
        (a.get("/v1/leaderboards/classic", around=ann), 404, "player_not_ranked"),  # provisional
        (a.get("/v1/leaderboards/classic", cursor="not-a-cursor"), 422, "invalid_request"),
        (a.get("/v1/leaderboards/classic", cursor="YXQ6LTE"), 422, "invalid_request"),  # "at:-1"
        (a.get(f"/v1/players/{ann}/ratings/classic/history", cursor="bm9wZQ"), 422, "invalid_request"),
        (a.get("/v1/leaderboards/classic", cursor="YXQ6MQ", around=ann), 422, "invalid_request"),
        (a.get("/v1/leaderboards/classic", limit=0), 422, "invalid_request"),
        (a.get("/v1/leaderboards/classic", limit=101), 422, "invalid_request"),
        (a.get("/v1/leaderboards/classic", limit="ten"), 422, "invalid_request"),
        (a.get(f"/v1/players/{ann}/ratings/classic/history", limit=0), 422, "invalid_request"),
        (a.get(f"/v1/players/{ann}/ratings/classic/history", limit=101), 422, "invalid_request"),
        (run.client.get(f"/v1/players/{ann}/ratings", headers={"X-API-Key": "not-a-key"}), 401, "unauthorized"),
        (run.client.get("/v1/leaderboards/classic", headers={"X-API-Key": "not-a-key"}), 401, "unauthorized"),
    ]
    for response, status, code in refused:
        assert_problem(response, status, code)
    assert a.snapshot() == before


def test_reads_need_an_api_key_where_the_service_has_keys(served):
    app, _ = served
    client = app.test_client()
    for path in ("/v1/players/ann/ratings", "/v1/players/ann/ratings/classic/history", "/v1/leaderboards/classic"):
        assert_problem(client.get(path), 401, "unauthorized")


def test_the_embedded_store_without_api_keys_rates_one_unscoped_set_of_players():
    app = build_app(REDIS_URL="memory://", API_KEYS="")
    noting_runner(app)
    ann, bob = players("ann", "bob")
    client = app.test_client()
    run = Sequence(app)
    run.reads = {None: Reads(client, run.ledger, None, "-")}
    run.scopes = {None: "-"}
    run.resigned(None, "classic", [person(ann), person(bob)], resigning=0)
    run.resigned(None, "box", [person(bob), person(ann), bot("easy")], resigning=0)
