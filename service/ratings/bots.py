"""The computer players' fixed ratings, on the players' scale (docs/ratings.md, "The computer
players' ratings"). A match against a bot is rated for the person only, against these values;
they never change.

Measured on 2026-12-04 by `python bench/bot_ratings.py --matches 4000 --seed 29` (12,000
classic matches to 100, 4,000 per pair of levels; finished 17:20 UTC; a first run of the same
seed, finished 16:04, gave the same rates and ratings): the maximum-likelihood Bradley-Terry fit on the Glicko
scale, anchored at standard = 1500 (where new players start). RD is one standard error of the
level's rating (against the mean of the three levels), widened x2.92 because the three pairs
disagree more than chance allows (Pearson's chi-square 8.53 on 1 degree of freedom), rounded
up. The volatility is the default; it is never used, since bots are not rated.
"""
from __future__ import annotations

from .glicko2 import Rating

BOT_RATINGS: dict[str, Rating] = {
    "easy": Rating(1167.0, 12.0, 0.06),
    "standard": Rating(1500.0, 10.0, 0.06),
    "strong": Rating(1544.0, 10.0, 0.06),
}
