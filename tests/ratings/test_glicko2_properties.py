"""Properties of service/ratings/glicko2.py over generated ratings (hypothesis)."""
from __future__ import annotations

import math

import pytest
from hypothesis import given, settings, strategies as st

from service.ratings.glicko2 import SCALE, Game, Rating, Settings, rate

DEFAULTS = Settings()


def ratings(low=-5000.0, high=15000.0, rd=(1e-3, 1e4), volatility=(1e-6, 10.0)):
    return st.builds(Rating, st.floats(low, high), st.floats(*rd), st.floats(*volatility))


scores = st.sampled_from([0.0, 0.5, 1.0])
realistic = ratings(0, 3500, rd=(30, 350), volatility=(0.03, 0.1))


@given(realistic, st.lists(st.builds(Game, realistic, scores), min_size=1, max_size=10))
def test_games_never_add_more_uncertainty_than_the_period_itself(player, games):
    """RD' <= sqrt(RD^2 + (173.7178 sigma')^2): whatever the results, the games of a period
    narrow the RD that the period's passage alone would give."""
    after = rate(player, games, DEFAULTS)
    assert after.rd < math.hypot(player.rd, SCALE * after.volatility)


@given(ratings(0, 3500, rd=(110, 350), volatility=(0.03, 0.06)), st.floats(-400, 400), st.floats(30, 350),
       st.floats(0.03, 0.1), scores)
def test_a_provisional_players_rd_never_grows_after_a_game_within_400_points(player, apart, rd, volatility, score):
    """Provisional (RD > 110, docs/ratings.md) at the default volatility or below, against an opponent at
    most 400 points away: one game always narrows the RD. (Not so in general: a player whose RD
    is already near the one-game-a-period floor of about 60, or who plays an opponent thousands
    of points away, comes out with an RD a little wider, as the formulas say.)"""
    opponent = Rating(player.rating + apart, rd, volatility)
    assert rate(player, [Game(opponent, score)], DEFAULTS).rd <= player.rd


@given(realistic, realistic)
def test_a_win_never_lowers_the_rating_and_a_loss_never_raises_it(player, opponent):
    assert rate(player, [Game(opponent, 1)], DEFAULTS).rating >= player.rating
    assert rate(player, [Game(opponent, 0)], DEFAULTS).rating <= player.rating


@given(realistic, st.lists(st.builds(Game, realistic, scores), min_size=1, max_size=10), st.data())
def test_turning_any_game_into_a_win_never_lowers_the_result(player, games, data):
    index = data.draw(st.integers(0, len(games) - 1))
    better = games[:index] + [Game(games[index].opponent, 1.0)] + games[index + 1:]
    assert rate(player, better, DEFAULTS).rating >= rate(player, games, DEFAULTS).rating - 1e-9


@given(realistic, st.floats(1e-3, 1e4), st.floats(1e-6, 10.0))
def test_a_draw_between_equally_rated_players_leaves_the_rating_alone(player, opponent_rd, opponent_volatility):
    opponent = Rating(player.rating, opponent_rd, opponent_volatility)
    assert rate(player, [Game(opponent, 0.5)], DEFAULTS).rating == pytest.approx(player.rating, abs=1e-9)


@given(realistic, st.floats(0, 3500))
def test_between_players_of_equal_rd_and_volatility_the_winners_gain_is_the_losers_loss(winner, loser_rating):
    loser = Rating(loser_rating, winner.rd, winner.volatility)
    won, lost = rate(winner, [Game(loser, 1)], DEFAULTS), rate(loser, [Game(winner, 0)], DEFAULTS)
    assert won.rating - winner.rating == pytest.approx(loser.rating - lost.rating, abs=1e-9)
    assert (won.rd, won.volatility) == pytest.approx((lost.rd, lost.volatility), rel=1e-12)


@settings(max_examples=300, deadline=None)
@given(ratings(), st.lists(st.builds(Game, ratings(), scores), min_size=0, max_size=12), st.floats(1e-4, 1e4))
def test_extreme_inputs_give_finite_ratings(player, games, tau):
    """Ratings 20,000 points apart, RDs from 0.001 to 10,000, volatilities from 1e-6 to 10, tau
    from 1e-4 to 10,000: no exception, no NaN or infinity (Rating itself refuses those)."""
    after = rate(player, games, Settings(tau=tau))
    assert all(math.isfinite(value) for value in (after.rating, after.rd, after.volatility))


def test_a_new_player_against_a_3000_rated_opponent():
    """RD 350 against a 3000 rated with RD 30: the win is a huge surprise, the loss none at all;
    both come out finite and the RD stays near 350 (such a game says little about the player)."""
    newcomer, master = DEFAULTS.new_rating(), Rating(3000, 30, 0.06)
    won = rate(newcomer, [Game(master, 1)], DEFAULTS)
    lost = rate(newcomer, [Game(master, 0)], DEFAULTS)
    assert 2000 < won.rating < 2400 and won.volatility > 0.06
    assert 1499 < lost.rating < 1500
    assert abs(won.rd - 350) < 1 and abs(lost.rd - 350) < 1


def test_tiny_and_huge_tau():
    player, games = Rating(1500, 200, 0.06), [Game(Rating(2600, 50, 0.06), 1)]
    calm, wild = rate(player, games, Settings(tau=1e-4)), rate(player, games, Settings(tau=1e4))
    assert calm.volatility == pytest.approx(0.06, abs=1e-6)
    assert wild.volatility > calm.volatility
