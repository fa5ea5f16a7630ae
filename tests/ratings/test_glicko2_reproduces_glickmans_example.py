"""service/ratings/glicko2.py against the worked example of Glickman's "Example of the Glicko-2
system" (glicko.net/glicko/glicko2.pdf, docs/ratings.md): a player rated 1500, RD 200,
volatility 0.06 beats a 1400 (RD 30) and loses to a 1550 (RD 100) and a 1700 (RD 300) in one
rating period, tau 0.5."""
from __future__ import annotations

import math

import pytest

from service.ratings.glicko2 import SCALE, Game, Rating, Settings, rate

PLAYER = Rating(1500, 200, 0.06)
GAMES = [Game(Rating(1400, 30, 0.06), 1), Game(Rating(1550, 100, 0.06), 0), Game(Rating(1700, 300, 0.06), 0)]


def test_the_published_result_to_its_published_precision():
    after = rate(PLAYER, GAMES, Settings(tau=0.5))
    # The paper prints mu' = -0.2069, phi' = 0.8722 and sigma' = 0.05999 (four and five places).
    assert round((after.rating - 1500) / SCALE, 4) == -0.2069
    assert round(after.rd / SCALE, 4) == 0.8722
    assert math.floor(after.volatility * 100_000) / 100_000 == 0.05999  # 0.0599960: printed cut, not rounded
    # and r' = 1464.06, RD' = 151.52; the paper converts its rounded mu' (173.7178 * -0.2069
    # + 1500 = 1464.0572), the unrounded mu' gives 1464.0507.
    assert after.rating == pytest.approx(1464.06, abs=0.01)
    assert round(after.rd, 2) == 151.52
    assert after.volatility == pytest.approx(0.05999, abs=0.00001)


def test_the_example_with_the_service_defaults():
    """The service's settings (docs/ratings.md) are the paper's: tau 0.5, epsilon 0.000001; a new player 1500/350/0.06."""
    settings = Settings()
    assert (settings.tau, settings.epsilon) == (0.5, 0.000001)
    assert settings.new_rating() == Rating(1500, 350, 0.06)
    assert rate(PLAYER, GAMES, settings) == rate(PLAYER, GAMES, Settings(tau=0.5))


def test_the_order_of_a_periods_games_does_not_matter():
    assert rate(PLAYER, GAMES[::-1], Settings()) == pytest.approx(rate(PLAYER, GAMES, Settings()))


def test_a_period_without_games_only_widens_the_rd():
    """Step 6 alone: RD' = sqrt(RD^2 + (173.7178 sigma)^2); rating and volatility stay."""
    after = rate(PLAYER, [], Settings())
    assert after == Rating(1500, SCALE * math.hypot(200 / SCALE, 0.06), 0.06)
    assert after.rd == pytest.approx(200.2714, abs=0.0001)  # sqrt(200^2 + 10.42307^2)


def test_a_tighter_epsilon_moves_the_volatility_only_in_digits_the_default_already_settles():
    loose, tight = rate(PLAYER, GAMES, Settings()), rate(PLAYER, GAMES, Settings(epsilon=1e-12))
    assert tight.volatility == pytest.approx(loose.volatility, abs=1e-9)
    assert tight.rating == pytest.approx(loose.rating, abs=1e-6)


@pytest.mark.parametrize("values", [(1500, 0, 0.06), (1500, -1, 0.06), (1500, 350, 0), (math.nan, 350, 0.06),
                                    (1500, math.inf, 0.06)])
def test_a_rating_refuses_values_the_formulas_cannot_take(values):
    with pytest.raises(ValueError):
        Rating(*values)


@pytest.mark.parametrize("changes", [{"tau": 0}, {"tau": -0.5}, {"epsilon": 0}, {"tau": math.nan},
                                     {"initial_rd": 0}])
def test_settings_refuse_values_the_formulas_cannot_take(changes):
    with pytest.raises(ValueError):
        Settings(**changes)


@pytest.mark.parametrize("score", [-0.5, 1.5, math.nan])
def test_a_game_refuses_a_score_outside_zero_to_one(score):
    with pytest.raises(ValueError):
        Game(Rating(1500, 350, 0.06), score)
