"""Bodies and query parameters of the ratings and leaderboards (docs/ratings.md)."""
from __future__ import annotations

import marshmallow as ma

from service.api.fields import ResponseSchema, doc, nested_list
from service.api.games.schemas import PAGE_MAX
from service.api.vocabulary import VARIANT, enum_field

F = ma.fields
EXAMPLE_CURSOR = "YXQ6NTA"


def _cursor() -> ma.fields.String:
    return F.String(validate=ma.validate.Length(1, 200),
                    metadata=doc("`next_cursor` of the previous page", EXAMPLE_CURSOR))


def _limit(what: str, default: int) -> ma.fields.Integer:
    return F.Integer(load_default=default, validate=ma.validate.Range(1, PAGE_MAX),
                     metadata=doc(f"{what} per page (1–{PAGE_MAX})", default))


def _next_cursor() -> ma.fields.String:
    return F.String(required=True, allow_none=True,
                    metadata=doc("Pass as `cursor` for the next page (null: this is the last)", EXAMPLE_CURSOR))


class VariantRatingSchema(ResponseSchema):
    variant = enum_field(VARIANT, "Variant", "classic", required=True)
    rating = F.Float(required=True, metadata=doc("Glicko-2 rating (a new player starts at 1500)", 1662.31))
    rd = F.Float(required=True, metadata=doc("Rating deviation: the rating's uncertainty (starts at 350)", 95.4))
    volatility = F.Float(required=True, metadata=doc("Glicko-2 volatility (starts at 0.06)", 0.05999))
    games = F.Integer(required=True, metadata=doc("Rated games: one per classic match, two per box match (one "
                                                  "against each other player)", 12))
    wins = F.Integer(required=True, metadata=doc("Rated games won", 8))
    losses = F.Integer(required=True, metadata=doc("Rated games lost", 4))
    draws = F.Integer(required=True, metadata=doc("Rated games drawn (box: equal final totals)", 0))
    provisional = F.Boolean(required=True, metadata=doc("Whether the RD is still above 110: not yet ranked", False))
    rank = F.Integer(required=True, allow_none=True,
                     metadata=doc("1-based place on the variant's leaderboard (null while provisional)", 3))


class PlayerRatingsSchema(ResponseSchema):
    external_id = F.String(required=True, metadata=doc("The player's external id", "user-4711"))
    ratings = nested_list(VariantRatingSchema, "One entry per variant the player has played rated", required=True)


class RatingHistoryQuerySchema(ma.Schema):
    cursor = _cursor()
    limit = _limit("Matches", 20)


class RatingHistoryEntrySchema(ResponseSchema):
    game_id = F.String(required=True, metadata=doc("The rated match", "g_Q3xv0Jb8mPq1WZAkq5t2Rw"))
    at = F.String(required=True, metadata={**doc("When it ended (UTC)", "2026-12-01T10:00:00Z"), "format": "date-time"})
    rating = F.Float(required=True, metadata=doc("Rating after it", 1662.31))
    rd = F.Float(required=True, metadata=doc("Rating deviation after it", 95.4))
    delta = F.Float(required=True, metadata=doc("Change of the rating by it", 12.7))


class RatingHistorySchema(ResponseSchema):
    history = nested_list(RatingHistoryEntrySchema, "Rated matches, newest first", required=True)
    next_cursor = _next_cursor()


class LeaderboardQuerySchema(ma.Schema):
    cursor = _cursor()
    limit = _limit("Players", 50)
    around = F.String(validate=ma.validate.Length(1, 128),
                      metadata=doc("An external id: answer that player's row with its neighbours (`limit` rows in "
                                   "all) instead of a page", "user-4711"))


class BoardRowSchema(ResponseSchema):
    rank = F.Integer(required=True, metadata=doc("1-based place", 1))
    external_id = F.String(required=True, metadata=doc("The player's external id", "user-4711"))
    name = F.String(required=True, metadata=doc("The player's name in their latest rated match", "Ann"))
    rating = F.Float(required=True, metadata=doc("Rating", 1662.31))
    rd = F.Float(required=True, metadata=doc("Rating deviation", 95.4))
    games = F.Integer(required=True, metadata=doc("Rated games", 12))


class LeaderboardSchema(ResponseSchema):
    variant = enum_field(VARIANT, "Variant", "classic", required=True)
    size = F.Integer(required=True, metadata=doc("Players on the leaderboard (not provisional)", 1250))
    players = nested_list(BoardRowSchema, "Rows, best first", required=True)
    next_cursor = _next_cursor()
