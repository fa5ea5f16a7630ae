"""service/ratings/bots.py: one fixed rating per bot level, as measured (docs/ratings.md)."""
from __future__ import annotations

from service.bots import Level
from service.matchmaking.pairing import bot_level_for
from service.ratings.bots import BOT_RATINGS
from service.ratings.glicko2 import Settings


def test_every_level_has_a_rating_and_only_the_levels_do():
    assert set(BOT_RATINGS) == {level.value for level in Level}


def test_standard_is_the_anchor_where_new_players_start_and_the_levels_rank_by_strength():
    assert BOT_RATINGS["standard"].rating == Settings().initial_rating
    assert BOT_RATINGS["easy"].rating < BOT_RATINGS["standard"].rating < BOT_RATINGS["strong"].rating


def test_the_bots_ratings_are_precise_and_keep_the_default_volatility():
    """RDs of a few points (the fit's standard errors) and the default volatility."""
    for rating in BOT_RATINGS.values():
        assert 0 < rating.rd < 50 and rating.volatility == Settings().initial_volatility


def test_each_level_is_the_fallback_for_a_player_at_its_rating():
    for level, rating in BOT_RATINGS.items():
        assert bot_level_for(rating.rating, BOT_RATINGS) == level
    assert bot_level_for(None, BOT_RATINGS) == "standard"
