"""/v1/matchmaking/tickets: quick play (docs/api.md, "Quick play")."""
from __future__ import annotations

from flask import Response, current_app, request
from flask.views import MethodView

from service.api.context import current
from service.api.credentials import players_owner
from service.api.games.schemas import CreateHeadersSchema
from service.api.idempotency import fingerprint_of
from service.api.matchmaking.schemas import TicketAnswerSchema, TicketRequestSchema, WaitQuerySchema
from service.api.openapi import API_KEY_ONLY
from service.api.parser import ApiBlueprint
from service.api.problems import documents_problems
from service.rules.match import iso_time
from service.store.matchmaking import Ticket

blp = ApiBlueprint("matchmaking", __name__, url_prefix="/v1/matchmaking",
                   description="Quick play: queue a player, and the service pairs them with another player (by "
                               "rating when rated) or, after a while, with computer players.")

TICKET_ID_PARAMETER = {"in": "path", "name": "ticket_id", "description": "The ticket's id",
                       "example": "t_Zk3vPq9mWb2xLr7Ns4Yt0aQ", "schema": {"type": "string"}}
LOCATION = {"Location": {"description": "URL of the ticket", "schema": {"type": "string"}}}


def private(body: dict, status: int = 200) -> Response:
    """An answer that may hold a player token: no cache may keep it."""
    response = current_app.json.response(body)
    response.status_code = status
    response.headers["Cache-Control"] = "private, no-store"
    return response


def ticket_body(ticket: Ticket, token: str | None) -> dict:
    return {"ticket": {
        "id": ticket.id, "status": ticket.status,
        "player": {"external_id": ticket.player.external_id, "name": ticket.player.name,
                   "metadata": ticket.player.metadata},
        "variant": ticket.variant, "rules": ticket.rules, "rated": ticket.rated, "rating": ticket.rating,
        "bot_after_seconds": ticket.bot_after, "created_at": iso_time(ticket.created_at),
        "expires_at": iso_time(ticket.expires_at), "game_id": ticket.game_id, "seat": ticket.seat, "token": token,
    }}


@blp.route("/tickets", endpoint="tickets")
class Tickets(MethodView):
    @blp.doc(operationId="createTicket", security=API_KEY_ONLY)
    @blp.arguments(CreateHeadersSchema(), location="headers")
    @blp.arguments(TicketRequestSchema(), example={"player": {"external_id": "user-4711", "name": "Ann"},
                                                   "variant": "classic", "bot_after_seconds": 30})
    @blp.response(201, TicketAnswerSchema, headers=LOCATION)
    @documents_problems(blp, {400: ["invalid_request"], 401: ["unauthorized"], 409: ["already_queued"],
                              413: ["payload_too_large"], 415: ["unsupported_media_type"],
                              422: ["invalid_request", "invalid_rules", "callback_not_allowed",
                                    "idempotency_key_reused"],
                              429: ["rate_limited", "ticket_limit_reached"],
                              503: ["store_unavailable", "store_full"]})
    def post(self, headers, new_ticket):
        """Queue a player for quick play

        The ticket waits for compatible tickets of your API key (same variant, rules and
        `rated`; rated ones by rating, within a gap that widens with waiting) and is matched
        with the longest-waiting of them, at once when one waits already. With
        `bot_after_seconds`, a ticket still waiting then is matched with computer players. One
        waiting ticket per player. The ticket's read (`GET`, with `wait` to long-poll), the
        `ticket_matched` webhook and your key's stream announce the match.
        """
        owner = players_owner(request)
        key = headers.get("idempotency_key")
        ticket, _ = current().quick_play.open(owner, new_ticket, key, fingerprint_of(key))
        _, token = current().quick_play.read(owner, ticket.id, 0)
        response = private(ticket_body(ticket, token), 201)
        response.headers["Location"] = f"{blp.url_prefix}/tickets/{ticket.id}"
        return response


@blp.route("/tickets/<ticket_id>", endpoint="ticket", parameters=[TICKET_ID_PARAMETER])
class TicketResource(MethodView):
    @blp.doc(operationId="getTicket", security=API_KEY_ONLY)
    @blp.arguments(WaitQuerySchema(), location="query")
    @blp.response(200, TicketAnswerSchema)
    @documents_problems(blp, {401: ["unauthorized"], 404: ["ticket_not_found"], 422: ["invalid_request"],
                              429: ["rate_limited"], 503: ["store_unavailable", "long_poll_capacity"]})
    def get(self, query, ticket_id):
        """Read a ticket

        Its status (`waiting`, `matched`, `cancelled`, `expired`) and, once matched, the match,
        the seat and the seat's token. With `wait`, the answer is held while the ticket waits,
        until it changes or the time is up.
        """
        owner = players_owner(request)
        ticket, token = current().quick_play.read(owner, ticket_id, query["wait"])
        return private(ticket_body(ticket, token))

    @blp.doc(operationId="cancelTicket", security=API_KEY_ONLY)
    @blp.response(204)
    @documents_problems(blp, {401: ["unauthorized"], 404: ["ticket_not_found"], 409: ["ticket_matched"],
                              429: ["rate_limited"], 503: ["store_unavailable", "store_full"]})
    def delete(self, ticket_id):
        """Cancel a ticket

        A waiting ticket leaves its queue (cancelling one cancelled or expired changes nothing).
        A matched ticket cannot be cancelled: its match is under way.
        """
        current().quick_play.cancel(players_owner(request), ticket_id)
        return Response(status=204)
