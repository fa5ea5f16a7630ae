"""Whole matches played through HTTP, checked against docs/rules.md: every hand's score, the
scores, who deals and who sits out next, the end bonuses; every response against the
OpenAPI document."""
from __future__ import annotations

import pytest

from tests.api.conftest import build_app
from tests.api.support import SpecChecker, Table, holding, play_one, store_of

MAX_ACTIONS = 3000


def hand_points(last_hand: dict, rules: dict) -> int:
    """docs/rules.md, "Scoring a hand", from the figures the view reports."""
    knocker, defender = last_hand["knocker_deadwood"], last_hand["defender_deadwood"]
    if last_hand["outcome"] == "dead":
        return 0
    if knocker == 0:
        return rules["gin_bonus"] + defender
    if knocker < defender:
        return defender - knocker
    return rules["undercut_bonus"] + knocker - defender


def roles(view: dict) -> dict[int, str]:
    return {p["seat"]: p["role"] for p in view["players"]}


def next_roles(variant: str, before: dict[int, str], winner: int | None) -> dict[int, str]:
    """Who holds which role after a hand (docs/rules.md, "Seats, the cut and the dealer")."""
    if winner is None:
        return before
    if variant == "classic":
        return {seat: "dealer" if seat == winner else "player" for seat in before}
    by_role = {role: seat for seat, role in before.items()}
    if winner == by_role["box"]:
        return {by_role["box"]: "box", by_role["sitter"]: "captain", by_role["captain"]: "sitter"}
    return {by_role["captain"]: "box", by_role["sitter"]: "captain", by_role["box"]: "sitter"}


def expected_result(view: dict, hands_won: dict[int, int], scores: dict[int, int]) -> dict:
    rules = view["rules"]
    winner = max(scores, key=scores.get)
    shutout = all(hands_won[s] == 0 for s in scores if s != winner)
    players = []
    for seat in sorted(scores):
        bonuses = {
            "game_bonus": rules["game_bonus"] if seat == winner else 0,
            "line_bonus": rules["line_bonus"] * hands_won[seat],
            "shutout_bonus": rules["shutout_bonus"] if seat == winner and shutout else 0,
        }
        players.append({"seat": seat, "hand_points": scores[seat], **bonuses, "total": scores[seat] + sum(bonuses.values())})
    return {"status": "finished", "winner": winner, "forfeit": None, "players": players, "rating_changes": None}


def play_match(table: Table, checker: SpecChecker) -> tuple[dict, int, list[str]]:
    """Play to the end, checking each finished hand; returns the final view, the number of
    actions and the outcomes of the hands."""
    view = table.view()
    variant = view["variant"]
    seats = range(len(view["players"]))
    scores = {s: 0 for s in seats}
    won = {s: 0 for s in seats}
    current_roles = roles(view)
    outcomes: list[str] = []
    actions = 0
    while view["status"] == "active":
        assert actions < MAX_ACTIONS, "the match does not end"
        explicit = view["hand"]["number"] % 2 == 0
        response = play_one(table, explicit=explicit)
        actions += 1
        assert response.status_code == 200, response.get_json()
        view = table.view()
        last = view["last_hand"]
        if last is not None and len(outcomes) < last["number"]:
            assert last["number"] == len(outcomes) + 1, "a hand went unscored"
            outcomes.append(last["outcome"])
            assert last["points"] == hand_points(last, view["rules"])
            if last["outcome"] == "dead":
                assert last["winner"] is None
            else:
                scores[last["winner"]] += last["points"]
                won[last["winner"]] += 1
            assert {p["seat"]: p["score"] for p in view["players"]} == scores
            assert {p["seat"]: p["hands_won"] for p in view["players"]} == won
            if view["status"] == "active":
                current_roles = next_roles(variant, current_roles, last["winner"])
                assert roles(view) == current_roles
                assert view["hand"]["number"] == last["number"] + 1
                assert view["hand"]["dealer"] == next(s for s, r in current_roles.items() if r in ("dealer", "box"))
    for method, path, response in table.responses:
        checker.check(method, path, response)
    assert view["hand"] is None and view["result"] == expected_result(view, won, scores)
    assert max(scores.values()) >= view["rules"]["target_score"]
    return view, actions, outcomes


# Gin only: no knock below gin, so many hands run into the stock and end dead.
GIN_ONLY = {"knock_limit": 0, "target_score": 30}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("seed", "options", "possible"),
    [(39, {}, {"knock", "undercut", "gin"}), (52, {}, {"knock", "undercut", "gin"}), (0, GIN_ONLY, {"dead", "gin"})],
)
def test_classic_match_to_the_end(redis_app, client, seed, options, possible):
    table = Table.open(redis_app, client, "classic", seed=seed, rules=options)
    view, _, outcomes = play_match(table, SpecChecker(redis_app))
    assert view["status"] == "finished" and view["variant"] == "classic"
    assert set(outcomes) <= possible and ("gin" in outcomes if options else "knock" in outcomes)
    result = view["result"]
    assert result["players"][result["winner"]]["game_bonus"] == 100


@pytest.mark.slow
@pytest.mark.parametrize(
    ("seed", "options", "possible"),
    [(5, {}, {"knock", "undercut", "gin"}), (0, GIN_ONLY, {"dead", "gin"})],
)
def test_box_match_to_the_end(redis_app, client, seed, options, possible):
    table = Table.open(redis_app, client, "box", seed=seed, rules=options)
    view, _, outcomes = play_match(table, SpecChecker(redis_app))
    assert view["variant"] == "box" and set(outcomes) <= possible
    # Box defaults: no end bonuses.
    assert all(p["game_bonus"] == p["line_bonus"] == p["shutout_bonus"] == 0 for p in view["result"]["players"])


def test_the_sitter_advises_the_captain(redis_app, client):
    table = Table.open(redis_app, client, "box", seed=11)
    by_role = {p["role"]: p["seat"] for p in table.view()["players"]}
    advice = {"message": "keep the hearts", "action": {"type": "pass"}}
    advised = table.act(by_role["sitter"], "advice", advice)
    assert advised.status_code == 200
    assert advised.get_json()["you"]["advice"] == [{"seat": by_role["sitter"], **advice}]
    assert table.view(by_role["captain"])["you"]["advice"] == [{"seat": by_role["sitter"], **advice}]
    assert table.view(by_role["box"])["you"]["advice"] == []
    assert "advice" not in str(table.view())
    sitter_view = table.view(by_role["sitter"])["you"]
    assert sitter_view["hand"] == [] and sitter_view["partner"]["seat"] == by_role["captain"]
    assert set(sitter_view["partner"]["hand"]) == holding(table.match(), by_role["captain"])


def test_a_short_match_on_each_store(any_app):
    """target_score 1: the first hand that scores ends the match (both stores)."""
    client = any_app.test_client()
    table = Table.open(any_app, client, "classic", seed=3, rules={"target_score": 1})
    view, _, outcomes = play_match(table, SpecChecker(any_app))
    assert view["status"] == "finished"
    assert outcomes[-1] != "dead" and all(o == "dead" for o in outcomes[:-1])


@pytest.mark.slow
def test_a_full_match_on_redis_cluster(redis_cluster_url):
    """The same service, unchanged, on a 3-master Redis Cluster through redis-py's cluster client."""
    app = build_app(REDIS_URL=redis_cluster_url, KEY_PREFIX="test:")
    try:
        table = Table.open(app, app.test_client(), "classic", seed=39)
        view, actions, _ = play_match(table, SpecChecker(app))
        assert view["status"] == "finished" and actions
        assert view["result"]["players"][view["result"]["winner"]]["game_bonus"] == 100
    finally:
        store_of(app).close()
