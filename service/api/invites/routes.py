"""/v1/invites: play a friend by a code (docs/api.md, "Invites")."""
from __future__ import annotations

from flask import Response, request
from flask.views import MethodView

from service.api.context import current
from service.api.credentials import players_owner
from service.api.games.schemas import CreatedGameSchema
from service.api.matchmaking.routes import private
from service.api.matchmaking.schemas import (AcceptRequestSchema, InviteAnswerSchema, InviteRequestSchema,
                                             WaitQuerySchema)
from service.api.openapi import API_KEY_ONLY
from service.api.parser import ApiBlueprint
from service.api.problems import documents_problems
from service.matchmaking.invites import HOST_SEAT
from service.rules.match import iso_time
from service.store.matchmaking import Invite, Player

blp = ApiBlueprint("invites", __name__, url_prefix="/v1/invites",
                   description="Play a friend: a short code to share; the friend's acceptance creates the match.")

CODE_PARAMETER = {"in": "path", "name": "code", "description": "The invite's code (any case; `O` reads as `0`, "
                  "`I` and `L` as `1`)", "example": "7KQ9M2XR", "schema": {"type": "string"}}


def _player(player: Player) -> dict:
    return {"external_id": player.external_id, "name": player.name, "metadata": player.metadata}


def invite_body(invite: Invite, token: str | None) -> dict:
    guests = [_player(guest) for guest in invite.guests]
    return {"invite": {
        "code": invite.code, "status": invite.status, "host": _player(invite.host),
        "guest": guests[0] if guests else None, "guests": guests,
        "variant": invite.variant, "rules": invite.rules, "rated": invite.rated,
        "created_at": iso_time(invite.created_at), "expires_at": iso_time(invite.expires_at),
        "game_id": invite.game_id, "seat": None if invite.game_id is None else HOST_SEAT, "token": token,
    }}


@blp.route("", endpoint="invites")
class Invites(MethodView):
    @blp.doc(operationId="createInvite", security=API_KEY_ONLY)
    @blp.arguments(InviteRequestSchema(), example={"host": {"external_id": "user-4711", "name": "Ann"},
                                                   "variant": "classic"})
    @blp.response(201, InviteAnswerSchema)
    @documents_problems(blp, {400: ["invalid_request"], 401: ["unauthorized"], 413: ["payload_too_large"],
                              415: ["unsupported_media_type"], 422: ["invalid_request", "invalid_rules"],
                              429: ["rate_limited", "invite_limit_reached"],
                              503: ["store_unavailable", "store_full"]})
    def post(self, new_invite):
        """Invite a friend

        Makes a code of 8 characters to share (single use, valid for `expires_in` seconds). The
        friend's backend accepts it with `POST /v1/invites/{code}/accept`; the host learns of the
        match by reading the invite (`wait` to long-poll).
        """
        invite = current().invites.open(players_owner(request), new_invite)
        response = private(invite_body(invite, None), 201)
        response.headers["Location"] = f"{blp.url_prefix}/{invite.code}"
        return response


@blp.route("/<code>", endpoint="invite", parameters=[CODE_PARAMETER])
class InviteResource(MethodView):
    @blp.doc(operationId="getInvite", security=API_KEY_ONLY)
    @blp.arguments(WaitQuerySchema(), location="query")
    @blp.response(200, InviteAnswerSchema)
    @documents_problems(blp, {401: ["unauthorized"], 404: ["invite_not_found"], 422: ["invalid_request"],
                              429: ["rate_limited"], 503: ["store_unavailable", "long_poll_capacity"]})
    def get(self, query, code):
        """Read an invite (the host's side)

        Its status and, once accepted, the match, the host's seat and the host's token. With
        `wait`, the answer is held while the invite is open, until it changes or the time is up.
        """
        invite, token = current().invites.read(players_owner(request), code, query["wait"])
        return private(invite_body(invite, token))

    @blp.doc(operationId="withdrawInvite", security=API_KEY_ONLY)
    @blp.response(204)
    @documents_problems(blp, {401: ["unauthorized"], 404: ["invite_not_found"], 409: ["invite_accepted"],
                              429: ["rate_limited"], 503: ["store_unavailable", "store_full"]})
    def delete(self, code):
        """Withdraw an invite

        An open invite stops working (withdrawing one withdrawn or expired changes nothing). An
        accepted one cannot be withdrawn: its match is under way.
        """
        current().invites.withdraw(players_owner(request), code)
        return Response(status=204)


@blp.route("/<code>/accept", endpoint="accept_invite", parameters=[CODE_PARAMETER])
class AcceptInvite(MethodView):
    @blp.doc(operationId="acceptInvite", security=API_KEY_ONLY)
    @blp.arguments(AcceptRequestSchema(), example={"player": {"external_id": "user-99", "name": "Bob"}})
    @blp.response(201, CreatedGameSchema, description="This player took the last seat, or had taken a seat of "
                  "the match: the match, with this player's token")
    @blp.alt_response(202, schema=InviteAnswerSchema, description="A seat of a box invite is this player's; the "
                      "match begins when the last friend accepts (read the invite with `wait` to learn when, "
                      "then accept again for the token)")
    @documents_problems(blp, {400: ["invalid_request"], 401: ["unauthorized"], 404: ["invite_not_found"],
                              409: ["own_invite"], 413: ["payload_too_large"], 415: ["unsupported_media_type"],
                              422: ["invalid_request"], 429: ["rate_limited"],
                              503: ["store_unavailable", "store_full"]})
    def post(self, body, code):
        """Accept an invite

        Takes the next seat (the host sits in seat 0, the friends from seat 1 in the order they
        accept). The acceptance that takes the last seat (a classic invite's only one, a box
        invite's second) creates the match and answers like a creation, with this player's token
        only; a box invite's first acceptance answers 202 with the invite, which stays open. Asked
        again by the same player (the same id, name and metadata) it answers the same. Unknown,
        used, withdrawn or expired codes: 404 `invite_not_found`. Accepting is rate limited per
        API key.
        """
        guest = body["player"]
        invite, seat, token = current().invites.accept(players_owner(request), code, guest)
        if invite.game_id is None:
            return private(invite_body(invite, None), 202)
        view = current().games.view(invite.game_id, None).body
        players = [{"seat": number, "name": name, "token": token if number == seat else None}
                   for number, name in enumerate(player["name"] for player in view["players"])]
        response = private({"game": view, "players": players}, 201)
        response.headers["Location"] = f"/v1/games/{invite.game_id}"
        return response
