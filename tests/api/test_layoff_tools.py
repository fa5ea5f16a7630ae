"""The defender's tools in the lay-off phase, through HTTP on the real Redis:
``you.layoff_targets`` (checked against melds computed here) and ``layoff?dry_run=true``
(validates and answers the deadwood without changing anything; refuses what the real lay-off
refuses, with the same code)."""
from __future__ import annotations

from itertools import combinations

import pytest

from tests.api.checks import extends, is_meld, value
from tests.api.sessions import Session
from tests.api.support import store_of
from tests.api.test_errors import assert_problem


@pytest.fixture
def app(redis_app):
    return redis_app


def at_layoff(app, want_targets: bool = True, gin: bool = False, **rules) -> Session:
    """A match of two people stopped at a knock, the defender to answer; with ``want_targets``
    one whose defender can lay off a card."""
    for seed in range(200):
        session = Session.open(app, "classic", [("Ann", None), ("Bob", None)], seed=seed, rules=rules)
        session.play_until(lambda: session.match().hand.phase.value == "layoff" or session.match().hand.number > 1)
        hand = session.match().hand
        if hand.phase.value != "layoff" or hand.knock.gin != gin:
            continue
        you = session.view(hand.turn)["you"]
        if not want_targets or any(you["layoff_targets"].values()):
            return session
    pytest.fail("no seed reached such a knock")


def snapshot(session: Session) -> tuple:
    loaded = store_of(session.app).load(session.game_id)
    events = store_of(session.app).events(session.game_id, 0)
    return loaded.state, loaded.version, len(events), session.view(None)


def test_the_defender_sees_where_each_card_could_go(app):
    session = at_layoff(app)
    public = session.view(None)
    defender = public["hand"]["turn"]
    knocker = public["hand"]["knock"]["knocker"]
    melds = public["hand"]["knock"]["melds"]
    you = session.view(defender)["you"]
    assert you["legal_actions"] == ["layoff"]
    assert set(you["layoff_targets"]) == set(you["hand"])
    for card, targets in you["layoff_targets"].items():
        assert targets == [i for i, meld in enumerate(melds) if extends(meld, card)], card
    assert "layoff_targets" not in session.view(knocker)["you"]
    assert "you" not in public


def test_no_targets_before_the_lay_off_phase(app):
    session = Session.open(app, "classic", [("Ann", None), ("Bob", None)], seed=3)
    for seat in (0, 1):
        assert "layoff_targets" not in session.view(seat)["you"]


def test_against_gin_there_is_nowhere_to_lay_off(app, dry_run):
    session = at_layoff(app, want_targets=False, gin=True, knock_limit=0)
    defender = session.match().turn
    you = session.view(defender)["you"]
    assert you["layoff_targets"] == {card: [] for card in you["hand"]}
    # Laying off against gin is refused alike by the dry run and the real lay-off.
    before = snapshot(session)
    body = {"melds": [], "layoffs": [{"card": you["hand"][0], "meld": 0}]}
    assert_problem(dry_run(session, defender, body), 409, "invalid_layoff")
    assert_problem(session.post(defender, "layoff", body), 409, "invalid_layoff")
    assert snapshot(session) == before


@pytest.fixture(params=["layoff/dry-run", "layoff?dry_run=true"])
def dry_run(request):
    """A dry run of a lay-down, by the operation of its own or by the lay-off's query flag (kept
    for the clients that used it before): both answer alike."""

    def post(session: Session, seat: int | None, body: dict | None):
        session.requests += 1
        kwargs = {} if body is None else {"json": body}
        return session.client.post(f"/v1/games/{session.game_id}/{request.param}", headers=session.auth(seat),
                                   **kwargs)

    return post


def test_a_dry_run_answers_the_deadwood_and_changes_nothing(app, dry_run):
    session = at_layoff(app)
    defender = session.match().turn
    you = session.view(defender)["you"]
    best = you["best_layoff"]
    before = snapshot(session)
    automatic = dry_run(session, defender, None)
    assert automatic.status_code == 200, automatic.get_json()
    explicit = dry_run(session, defender, {"melds": best["melds"], "layoffs": best["layoffs"]})
    assert explicit.get_json() == automatic.get_json()
    answer = automatic.get_json()
    assert answer["deadwood"] == best["deadwood"] == sum(value(c) for c in answer["deadwood_cards"])
    # Nothing laid down: every card is deadwood.
    bare = dry_run(session, defender, {"melds": [], "layoffs": []}).get_json()
    assert sorted(bare["deadwood_cards"]) == sorted(you["hand"])
    assert bare["deadwood"] == sum(value(c) for c in you["hand"])
    assert snapshot(session) == before
    # The real lay-off then leaves what the dry run said.
    applied = session.post(defender, "layoff", {"melds": best["melds"], "layoffs": best["layoffs"]})
    assert applied.status_code == 200
    last = applied.get_json()["last_hand"]
    assert last["defender_deadwood"] == answer["deadwood"]
    assert (last["outcome"], last["winner"], last["points"]) == (answer["outcome"], answer["winner"], answer["points"])
    assert last["layoffs"] == answer["layoffs"]


def refusals(you: dict, knock_melds: list[list[str]]) -> list[tuple[dict, str | None]]:
    """Lay-downs the real lay-off must refuse, with the code when this test knows it."""
    hand, targets = you["hand"], you["layoff_targets"]
    not_a_meld = next(list(cards) for cards in combinations(hand, 3) if not is_meld(list(cards)))
    misfit = next((card, i) for card in hand for i in range(len(knock_melds)) if i not in targets[card])
    cases: list[tuple[dict, str | None]] = [
        ({"melds": [not_a_meld]}, "invalid_melds"),
        ({"melds": [], "layoffs": [{"card": knock_melds[0][0], "meld": 0}]}, "card_not_in_hand"),
        ({"melds": [], "layoffs": [{"card": hand[0], "meld": len(knock_melds)}]}, "invalid_layoff"),
        ({"melds": [], "layoffs": [{"card": misfit[0], "meld": misfit[1]}]}, "invalid_layoff"),
        ({"melds": [["Zz", "2c", "3c"]]}, "invalid_card"),
    ]
    fitting = next(card for card in hand if targets[card])
    cases.append(({"melds": [], "layoffs": [{"card": fitting, "meld": targets[fitting][0]}] * 2}, None))
    return cases


def test_a_dry_run_refuses_what_the_lay_off_refuses_with_the_same_code(app, dry_run):
    session = at_layoff(app)
    defender = session.match().turn
    knocker = 1 - defender
    you = session.view(defender)["you"]
    knock_melds = session.view(None)["hand"]["knock"]["melds"]
    before = snapshot(session)
    for body, code in refusals(you, knock_melds):
        real = session.post(defender, "layoff", body)
        assert 400 <= real.status_code < 500 and (code is None or real.get_json()["code"] == code), real.get_json()
        assert_problem(dry_run(session, defender, body), real.status_code, real.get_json()["code"])
        assert_problem(real, real.status_code, real.get_json()["code"])
        assert snapshot(session) == before, body
    assert_problem(dry_run(session, knocker, None), 409, "not_your_turn")
    assert_problem(session.post(knocker, "layoff"), 409, "not_your_turn")
    assert_problem(dry_run(session, None, None), 401, "unauthorized")
    assert snapshot(session) == before


def test_a_dry_run_outside_the_lay_off_phase_is_wrong_phase(app, dry_run):
    session = Session.open(app, "classic", [("Ann", None), ("Bob", None)], seed=3)
    seat = session.match().turn
    before = snapshot(session)
    assert_problem(dry_run(session, seat, None), 409, "wrong_phase")
    assert_problem(session.post(seat, "layoff"), 409, "wrong_phase")
    assert_problem(dry_run(session, 1 - seat, None), 409, "not_your_turn")
    assert snapshot(session) == before
