"""/v1/players: the matches of one of the integrator's players (by its external id)."""
from __future__ import annotations

from flask import current_app, request
from flask.views import MethodView

from service.api.context import current
from service.api.credentials import players_owner
from service.api.games.schemas import EXTERNAL_ID_MAX, PlayerGamesQuerySchema, PlayerGamesSchema
from service.api.openapi import API_KEY_ONLY
from service.api.parser import ApiBlueprint
from service.api.problems import documents_problems
from service.rules.errors import InvalidInput

blp = ApiBlueprint("players", __name__, url_prefix="/v1/players",
                   description="Your players' matches, by the external ids you gave their seats.")

EXTERNAL_ID_PARAMETER = {
    "in": "path",
    "name": "external_id",
    "description": "The external id you gave the player's seat when creating matches "
                   "(a `/` in it may be sent as `%2F`)",
    "example": "user-4711",
    "schema": {"type": "string", "minLength": 1, "maxLength": EXTERNAL_ID_MAX},
}


@blp.route("/<path:external_id>/games", endpoint="player_games", parameters=[EXTERNAL_ID_PARAMETER])
class PlayerGames(MethodView):
    @blp.doc(operationId="listPlayerGames", security=API_KEY_ONLY)
    @blp.arguments(PlayerGamesQuerySchema(), location="query")
    @blp.response(200, PlayerGamesSchema)
    @documents_problems(blp, {401: ["unauthorized"], 403: ["forbidden"], 422: ["invalid_request"],
                              429: ["rate_limited"], 503: ["store_unavailable"]})
    def get(self, query, external_id):
        """List a player's matches

        The matches created with your API key in which a seat carries this external id, newest
        first, `active` or `finished` (played out, resigned or aborted), a page at a time.
        Matches that expired are left out.
        """
        owner = players_owner(request)
        page = current().games.player_games(owner, checked_external_id(external_id), query["status"] == "finished",
                                            query.get("cursor"), query["limit"])
        response = current_app.json.response(page)
        response.cache_control.private = True
        response.cache_control.no_cache = True
        return response


def checked_external_id(external_id: str) -> str:
    """The external id of a path. Raises InvalidInput when it is longer than any seat's may be."""
    if len(external_id) > EXTERNAL_ID_MAX:
        raise InvalidInput(f"an external id has at most {EXTERNAL_ID_MAX} characters", field="external_id",
                           params={"max_length": EXTERNAL_ID_MAX})
    return external_id
