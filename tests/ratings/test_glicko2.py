"""Glicko-2: the service's (service/ratings/glicko2.py) and the tests' own (reference.py) both give
Glickman's published example, and agree with each other everywhere else; the match's games
(outcomes.py) are those the contract states."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.ratings.glicko2 import Game, Rating, Settings, rate
from service.ratings.outcomes import pairwise_games
from tests.ratings.reference import glicko2, seat_scores

# "Example of the Glicko-2 system": a player rated 1500 (RD 200, volatility 0.06) beats the
# 1400 (RD 30) and loses to the 1550 (RD 100) and the 1700 (RD 300), with tau 0.5.
PAPER_PLAYER = (1500.0, 200.0, 0.06)
PAPER_GAMES = [(1400.0, 30.0, 1.0), (1550.0, 100.0, 0.0), (1700.0, 300.0, 0.0)]
# The paper rounds as it goes: mu' = -0.2069 and phi' = 0.8722 on the Glicko-2 scale, shown as
# r' = 1464.06 and RD' = 151.52; sigma' = 0.05999 (0.059996 unrounded).
PAPER_SCALED = (-0.2069, 0.8722)
PAPER_RESULT = (1464.06, 151.52, 0.05999)


def assert_the_papers_result(rating: float, rd: float, volatility: float) -> None:
    assert (round((rating - 1500) / 173.7178, 4), round(rd / 173.7178, 4)) == PAPER_SCALED
    assert rating == pytest.approx(PAPER_RESULT[0], abs=0.01)
    assert rd == pytest.approx(PAPER_RESULT[1], abs=0.005)
    assert volatility == pytest.approx(PAPER_RESULT[2], abs=0.00001)


def service_rate(player: tuple[float, float, float], games: list[tuple[float, float, float]]) -> Rating:
    return rate(Rating(*player), [Game(Rating(r, rd, 0.06), s) for r, rd, s in games], Settings())


def test_the_reference_gives_the_papers_example():
    assert_the_papers_result(*glicko2(*PAPER_PLAYER, PAPER_GAMES))


def test_the_service_gives_the_papers_example():
    new = service_rate(PAPER_PLAYER, PAPER_GAMES)
    assert_the_papers_result(new.rating, new.rd, new.volatility)


ratings = st.floats(600, 2600)
deviations = st.floats(30, 350)
volatilities = st.floats(0.02, 0.12)
opponents = st.lists(st.tuples(ratings, deviations, st.sampled_from([0.0, 0.5, 1.0])), min_size=1, max_size=4)


@settings(max_examples=300, deadline=None)
@given(ratings, deviations, volatilities, opponents)
def test_the_service_agrees_with_the_reference(rating, rd, volatility, games):
    new = service_rate((rating, rd, volatility), games)
    expected = glicko2(rating, rd, volatility, games)
    assert new.rating == pytest.approx(expected[0], abs=1e-6)
    assert new.rd == pytest.approx(expected[1], abs=1e-6)
    assert new.volatility == pytest.approx(expected[2], abs=1e-9)


@pytest.mark.parametrize(("variant", "winner", "forfeit", "totals"), [
    ("classic", 0, None, [150, 80]), ("classic", 1, 0, [40, 0]), ("classic", 0, 1, [0, 0]),
    ("box", 0, None, [200, 80, 80]), ("box", 2, 0, [90, 30, 10]), ("box", 1, 2, [0, 0, 0]),
    ("box", 0, 1, [10, 0, 40]),
])
def test_a_match_counts_as_the_games_the_contract_states(variant, winner, forfeit, totals):
    counted = pairwise_games(variant, winner, forfeit, totals)
    assert {seat: sorted(games) for seat, games in counted.items()} == \
        {seat: sorted(games) for seat, games in seat_scores(variant, winner, forfeit, totals).items()}


def test_an_aborted_match_counts_for_nothing():
    assert pairwise_games("box", None, None, [10, 0, 40]) == {}
