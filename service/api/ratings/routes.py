"""/v1/players/{external_id}/ratings and /v1/leaderboards: ratings per API key and variant."""
from __future__ import annotations

from flask import current_app, request
from flask.views import MethodView

from service.api.context import current
from service.api.credentials import players_owner
from service.api.openapi import API_KEY_ONLY
from service.api.parser import ApiBlueprint
from service.api.players.routes import EXTERNAL_ID_PARAMETER, checked_external_id
from service.api.problems import documents_problems
from service.api.ratings.schemas import (RatingHistoryQuerySchema, RatingHistorySchema, LeaderboardQuerySchema, LeaderboardSchema,
                                         PlayerRatingsSchema)
from service.ratings.service import VARIANTS
from service.rules.errors import InvalidInput

blp = ApiBlueprint("ratings", __name__, url_prefix="/v1",
                   description="Glicko-2 ratings of your players per variant, their history, and leaderboards "
                               "(docs/ratings.md).")

VARIANT_PARAMETER = {
    "in": "path",
    "name": "variant",
    "description": "`classic` or `box`",
    "example": "classic",
    "schema": {"type": "string", "enum": list(VARIANTS)},
}
READ_PROBLEMS = {401: ["unauthorized"], 404: ["player_not_found"], 422: ["invalid_request"],
                 429: ["rate_limited"], 503: ["store_unavailable"]}


def _private(body: dict):
    response = current_app.json.response(body)
    response.cache_control.private = True
    response.cache_control.no_cache = True
    return response


def _variant(variant: str) -> str:
    if variant not in VARIANTS:
        raise InvalidInput(f"unknown variant; use one of {', '.join(VARIANTS)}", field="variant",
                           params={"allowed": list(VARIANTS)})
    return variant


@blp.route("/players/<path:external_id>/ratings", endpoint="player_ratings", parameters=[EXTERNAL_ID_PARAMETER])
class PlayerRatings(MethodView):
    @blp.doc(operationId="getPlayerRatings", security=API_KEY_ONLY)
    @blp.response(200, PlayerRatingsSchema)
    @documents_problems(blp, {401: ["unauthorized"], 404: ["player_not_found"], 422: ["invalid_request"],
                              429: ["rate_limited"], 503: ["store_unavailable"]})
    def get(self, external_id):
        """A player's ratings

        The player's Glicko-2 rating, RD and volatility in every variant they have played rated
        matches in under your API key, with their record and their place on the leaderboard
        (null while provisional: RD above 110).
        """
        owner = players_owner(request)
        return _private(current().ratings.player(owner, checked_external_id(external_id)))


@blp.route("/players/<path:external_id>/ratings/<variant>/history", endpoint="rating_history",
           parameters=[EXTERNAL_ID_PARAMETER, VARIANT_PARAMETER])
class RatingHistory(MethodView):
    @blp.doc(operationId="getRatingHistory", security=API_KEY_ONLY)
    @blp.arguments(RatingHistoryQuerySchema(), location="query")
    @blp.response(200, RatingHistorySchema)
    @documents_problems(blp, READ_PROBLEMS)
    def get(self, query, external_id, variant):
        """A player's rating history

        The player's rated matches in this variant, newest first: the rating and RD after each,
        and the change it made. A page at a time.
        """
        owner = players_owner(request)
        return _private(current().ratings.history(owner, checked_external_id(external_id), _variant(variant),
                                                  query.get("cursor"), query["limit"]))


@blp.route("/leaderboards/<variant>", endpoint="leaderboard", parameters=[VARIANT_PARAMETER])
class Leaderboard(MethodView):
    @blp.doc(operationId="getLeaderboard", security=API_KEY_ONLY)
    @blp.arguments(LeaderboardQuerySchema(), location="query")
    @blp.response(200, LeaderboardSchema)
    @documents_problems(blp, {401: ["unauthorized"], 404: ["player_not_ranked"], 422: ["invalid_request"],
                              429: ["rate_limited"], 503: ["store_unavailable"]})
    def get(self, query, variant):
        """A leaderboard

        The ranked players of your API key in this variant, best first (rank 1-based), a page
        at a time; players still provisional (RD above 110) are not on it. With `around`, that
        player's row with its neighbours instead: `limit` rows in all, theirs in the middle
        where it can be.
        """
        owner = players_owner(request)
        return _private(current().ratings.leaderboard(owner, _variant(variant), query.get("cursor"), query["limit"],
                                                      query.get("around")))
