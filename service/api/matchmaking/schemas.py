"""Bodies and parameters of quick play (/v1/matchmaking) and invites (/v1/invites)."""
from __future__ import annotations

import marshmallow as ma

from service.api.fields import ResponseSchema, StrictBoolean, doc, nested, nested_list, shown_text, utc_time
from service.api.games.schemas import EXTERNAL_ID_MAX, NAME_MAX, metadata_field
from service.api.games.view_schema import RulesRequestSchema, RulesSchema, metadata_doc
from service.api.vocabulary import VARIANT, enum_field
from service.config import LONGEST_WAIT_SECONDS
from service.matchmaking.invites import NewInvite
from service.matchmaking.service import NewTicket
from service.store.matchmaking import Player
from service.callback_urls import MAX_URL_LENGTH

F = ma.fields
BOT_AFTER_MAX = 600
EXAMPLE_TICKET_ID = "t_Zk3vPq9mWb2xLr7Ns4Yt0aQ"
EXAMPLE_CODE = "7KQ9M2XR"
EXAMPLE_TOKEN = "Q9v2m3kq8bYz4N5VYhQ0mG7xk2u9aVJm3Lw0pQvS1E"


class PlayerRequestSchema(ma.Schema):
    external_id = shown_text(f"Your own id for this player (1–{EXTERNAL_ID_MAX} characters)", "user-4711",
                             EXTERNAL_ID_MAX, required=True)
    name = shown_text(f"Display name, 1–{NAME_MAX} characters", "Ann", NAME_MAX, required=True)
    metadata = metadata_field("Your own data about this player, given to their seat", {"avatar": "fox"})

    @ma.post_load
    def _player(self, data, **kwargs):
        return Player(data["external_id"], data["name"], data.get("metadata"))


def _variant() -> ma.fields.String:
    return enum_field(VARIANT, "`classic` (2 players) or `box` (3 players)", "classic", required=True)


def _rules() -> ma.fields.Nested:
    return F.Nested(RulesRequestSchema, metadata=doc("Rule options (docs/rules.md); only tickets with the same "
                                                     "options are paired", {"knock_limit": 10}))


class TicketRequestSchema(ma.Schema):
    player = F.Nested(PlayerRequestSchema, required=True, metadata=doc("Who wants to play",
                                                                      {"external_id": "user-4711", "name": "Ann"}))
    variant = _variant()
    rules = _rules()
    rated = StrictBoolean(load_default=True, metadata=doc("Pair by rating and rate the match (the default)", True))
    bot_after_seconds = F.Integer(
        allow_none=True, load_default=None, strict=True, validate=ma.validate.Range(0, BOT_AFTER_MAX),
        metadata=doc(f"Seconds after which, if no person was found, the match is made with computer players at the "
                     f"level nearest the player's rating (0–{BOT_AFTER_MAX}; null: never)", 30))
    callback_url = F.String(
        validate=ma.validate.Length(min=1),
        metadata={**doc("Where to send the `ticket_matched` webhook (and the match's webhooks); its host must be "
                        "allowed by the server's configuration", "https://hooks.example.com/ginrummy"),
                  "maxLength": MAX_URL_LENGTH})

    @ma.post_load
    def _ticket(self, data, **kwargs):
        return NewTicket(data["player"], data["variant"], data.get("rules"), data["rated"], data["bot_after_seconds"],
                         data.get("callback_url"))


class PlayerRefSchema(ResponseSchema):
    external_id = F.String(required=True, metadata=doc("Your id for this player", "user-4711"))
    name = F.String(required=True, metadata=doc("Display name", "Ann"))
    metadata = metadata_doc("Your data about this player", {"avatar": "fox"}, required=True)


class TicketSchema(ResponseSchema):
    id = F.String(required=True, metadata=doc("Ticket id", EXAMPLE_TICKET_ID))
    status = F.String(required=True, validate=ma.validate.OneOf(["waiting", "matched", "cancelled", "expired"]),
                      metadata=doc("`waiting`, `matched`, `cancelled` or `expired`", "matched"))
    player = nested(PlayerRefSchema, "Who is queued", required=True)
    variant = enum_field(VARIANT, "Variant", "classic", required=True)
    rules = F.Nested(RulesSchema, required=True, metadata=doc("The rule options", {"knock_limit": 10}))
    rated = F.Boolean(required=True, metadata=doc("Whether the match is rated", True))
    rating = F.Float(required=True,
                     metadata=doc("The player's rating in this variant when queued (a new player's initial rating)",
                                  1500.0))
    bot_after_seconds = F.Integer(required=True, allow_none=True, metadata=doc("As asked", 30))
    created_at = utc_time("When it was queued", required=True)
    expires_at = utc_time("When it expires if nobody is matched", required=True)
    game_id = F.String(required=True, allow_none=True, metadata=doc("Once matched: the match", "g_Q3xv0Jb8mPq1WZAkq5t2Rw"))
    seat = F.Integer(required=True, allow_none=True, metadata=doc("Once matched: the player's seat", 0))
    token = F.String(required=True, allow_none=True,
                     metadata=doc("Once matched: the seat's secret player token (null once re-issued; then "
                                  "`POST /v1/games/{id}/players/{seat}/token` is the way)", EXAMPLE_TOKEN))


class TicketAnswerSchema(ResponseSchema):
    ticket = nested(TicketSchema, "The ticket", required=True)


class WaitQuerySchema(ma.Schema):
    wait = F.Float(load_default=0, validate=ma.validate.Range(0, LONGEST_WAIT_SECONDS),
                   metadata=doc(f"Seconds (0–{LONGEST_WAIT_SECONDS}) to hold the answer while nothing changes", 25))


class InviteRequestSchema(ma.Schema):
    host = F.Nested(PlayerRequestSchema, required=True,
                    metadata=doc("Who invites", {"external_id": "user-4711", "name": "Ann"}))
    variant = enum_field(VARIANT, "`classic` (the host and one friend) or `box` (the host and two friends)",
                         "classic", required=True)
    rules = _rules()
    rated = StrictBoolean(load_default=False, metadata=doc("Rate the match (default false)", False))
    expires_in = F.Integer(load_default=86400, strict=True, validate=ma.validate.Range(60, 7 * 86400),
                           metadata=doc("Seconds the code stays valid (60–604800)", 86400))

    @ma.post_load
    def _invite(self, data, **kwargs):
        return NewInvite(data["host"], data["variant"], data.get("rules"), data["rated"], data["expires_in"])


class AcceptRequestSchema(ma.Schema):
    player = F.Nested(PlayerRequestSchema, required=True, metadata=doc("Who accepts",
                                                                      {"external_id": "user-99", "name": "Bob"}))


class InviteSchema(ResponseSchema):
    code = F.String(required=True, metadata=doc("The code to share: 8 characters, no look-alikes", EXAMPLE_CODE))
    status = F.String(required=True, validate=ma.validate.OneOf(["open", "accepted", "withdrawn", "expired"]),
                      metadata=doc("`open`, `accepted`, `withdrawn` or `expired`", "open"))
    host = nested(PlayerRefSchema, "Who invites", required=True)
    guest = nested(PlayerRefSchema, "Who accepted first (seat 1; null until then)", required=True, allow_none=True)
    guests = nested_list(PlayerRefSchema, "Who accepted, in seat order from seat 1 (a box invite stays open "
                         "with one guest until the second accepts)", required=True)
    variant = enum_field(VARIANT, "Variant", "classic", required=True)
    rules = F.Nested(RulesSchema, required=True, metadata=doc("The rule options", {"knock_limit": 10}))
    rated = F.Boolean(required=True, metadata=doc("Whether the match is rated", False))
    created_at = utc_time("When it was made", required=True)
    expires_at = utc_time("When the code stops working", required=True)
    game_id = F.String(required=True, allow_none=True, metadata=doc("Once accepted: the match",
                                                                     "g_Q3xv0Jb8mPq1WZAkq5t2Rw"))
    seat = F.Integer(required=True, allow_none=True, metadata=doc("Once accepted: the host's seat (0)", 0))
    token = F.String(required=True, allow_none=True,
                     metadata=doc("Once accepted: the host's secret player token (null once re-issued)", EXAMPLE_TOKEN))


class InviteAnswerSchema(ResponseSchema):
    invite = nested(InviteSchema, "The invite", required=True)
