"""Glicko-2, step by step as in Mark Glickman's "Example of the Glicko-2 system"
(glicko.net/glicko/glicko2.pdf; docs/ratings.md): one player's rating after one rating period.

Pure: the standard library only. The steps below carry the paper's numbers; its symbols are
spelled out (mu, phi, sigma on the Glicko-2 scale; r, RD on the displayed one).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

# Step 2: the Glicko-2 scale is the displayed one shrunk by 400 / ln 10 around 1500.
SCALE = 173.7178
CENTRE = 1500.0


@dataclass(frozen=True)
class Rating:
    """A rating on the displayed scale: ``rating`` (r), ``rd`` (the rating deviation: one
    standard deviation of the rating's uncertainty) and ``volatility`` (sigma).

    Raises ValueError for a non-finite value, or an RD or volatility that is not positive."""

    rating: float
    rd: float
    volatility: float

    def __post_init__(self) -> None:
        if not all(math.isfinite(value) for value in (self.rating, self.rd, self.volatility)):
            raise ValueError(f"a rating's values must be finite numbers: {self}")
        if self.rd <= 0 or self.volatility <= 0:
            raise ValueError(f"a rating's RD and volatility must be positive: {self}")


@dataclass(frozen=True)
class Settings:
    """The system's constants (step 1): a new player's rating, RD and volatility; ``tau``, which
    constrains how fast volatility changes; ``epsilon``, step 5's convergence tolerance.

    Raises ValueError for a tau or epsilon that is not a positive number."""

    initial_rating: float = 1500.0
    initial_rd: float = 350.0
    initial_volatility: float = 0.06
    tau: float = 0.5
    epsilon: float = 0.000001

    def __post_init__(self) -> None:
        for name in ("tau", "epsilon"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive number, not {value!r}")
        self.new_rating()  # refuses initial values that no Rating may hold

    def new_rating(self) -> Rating:
        """The rating of a player who has not played yet."""
        return Rating(self.initial_rating, self.initial_rd, self.initial_volatility)


@dataclass(frozen=True)
class Game:
    """One game of the period against ``opponent`` (their rating before the period):
    ``score`` 1 for a win, 0 for a loss, 0.5 for a draw.

    Raises ValueError for a score outside 0-1."""

    opponent: Rating
    score: float

    def __post_init__(self) -> None:
        if not 0 <= self.score <= 1:
            raise ValueError(f"a game's score is between 0 and 1, not {self.score!r}")


def rate(player: Rating, games: Sequence[Game], settings: Settings) -> Rating:
    """The player's rating after one rating period in which they played ``games`` (every game
    of the period is rated against the opponents' ratings before it).

    With no games only the RD grows (step 6: sqrt(RD^2 + (SCALE * volatility)^2)); rating and
    volatility stay. The results stay finite for ratings up to 20,000 points apart (tests
    check it; an upset that large raises the volatility enormously, as the formulas say);
    near 30,000 points apart a float overflows (OverflowError).
    """
    mu, phi, sigma = (player.rating - CENTRE) / SCALE, player.rd / SCALE, player.volatility
    if not games:
        return Rating(player.rating, SCALE * math.hypot(phi, sigma), sigma)
    # Steps 3 and 4, summed as 1/v (the information the games carry) and delta / v (the score
    # above expectation, weighted by g), with E and 1 - E each computed directly: 1 - E
    # computed as a difference would be 0 for a near-certain result, and v infinite.
    information = 0.0
    surprise = 0.0
    for game in games:
        g = _g(game.opponent.rd / SCALE)
        x = g * (mu - (game.opponent.rating - CENTRE) / SCALE)
        expected, unexpected = _logistic(x), _logistic(-x)  # E and 1 - E, each exact near 0
        information += g * g * expected * unexpected
        surprise += g * (game.score * unexpected - (1 - game.score) * expected)  # g (s - E)
    v = 1 / information
    delta = v * surprise
    new_sigma = _volatility(delta, phi, v, sigma, settings)  # step 5
    phi_star = math.hypot(phi, new_sigma)  # step 6
    new_phi = 1 / math.sqrt(1 / phi_star ** 2 + information)  # step 7
    new_mu = mu + new_phi ** 2 * surprise
    return Rating(CENTRE + SCALE * new_mu, SCALE * new_phi, new_sigma)  # step 8


def _g(phi: float) -> float:
    return 1 / math.sqrt(1 + 3 * phi ** 2 / math.pi ** 2)


def _logistic(x: float) -> float:
    """1 / (1 + e^-x), without overflow for any x."""
    if x >= 0:
        return 1 / (1 + math.exp(-x))
    ex = math.exp(x)
    return ex / (1 + ex)


def _volatility(delta: float, phi: float, v: float, sigma: float, settings: Settings) -> float:
    """Step 5: sigma', the root of f found by the Illinois algorithm (regula falsi that halves
    the stale end's value), as the paper gives it."""
    tau = settings.tau
    a = math.log(sigma ** 2)

    def f(x: float) -> float:
        ex = math.exp(x)
        return ex * (delta ** 2 - phi ** 2 - v - ex) / (2 * (phi ** 2 + v + ex) ** 2) - (x - a) / tau ** 2

    big_a = a
    if delta ** 2 > phi ** 2 + v:
        big_b = math.log(delta ** 2 - phi ** 2 - v)
    else:
        k = 1
        while f(a - k * tau) < 0:
            k += 1
        big_b = a - k * tau
    f_a, f_b = f(big_a), f(big_b)
    while abs(big_b - big_a) > settings.epsilon:
        big_c = big_a + (big_a - big_b) * f_a / (f_b - f_a)
        f_c = f(big_c)
        if f_c * f_b <= 0:
            big_a, f_a = big_b, f_b
        else:
            f_a /= 2
        big_b, f_b = big_c, f_c
    return math.exp(big_a / 2)
