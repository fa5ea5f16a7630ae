"""Request and response bodies, headers and query parameters of /v1/games.

Action bodies load straight into the engine's action objects (``post_load``), so a route
only hands the loaded action to the use case.
"""
from __future__ import annotations

import marshmallow as ma

from service import rules
from service.games import NewPlayer
from service.api.fields import (
    HEADER_TEXT_PATTERN,
    StrictBoolean,
    card_field,
    doc,
    melds_field,
    nested,
    nested_list,
    text_field,
)
from service.api.games.view_schema import (
    EXAMPLE_GAME_ID,
    EXAMPLE_MELDS,
    GameViewSchema,
    LayoffItemSchema,
    RulesSchema,
    SuggestedActionSchema,
)

F = ma.fields
NAME_MAX = 40
ADVICE_MAX = 280
IDEMPOTENCY_KEY_MAX = 200
MAX_SEED = 2**63 - 1
# The events long-poll contract (API.md): wait at most this long; the server may cap it lower.
WAIT_MAX_SECONDS = 30
AFTER_MAX = 10**9


class NewPlayerRequestSchema(ma.Schema):
    name = text_field(f"Display name, 1–{NAME_MAX} printable characters", "Ann", NAME_MAX, required=True)
    bot = StrictBoolean(
        load_default=False,
        # Documented as false only; true is answered with bots_not_supported.
        metadata={**doc("Whether a bot should play this seat (not supported yet: false only)", False), "enum": [False]},
    )

    @ma.post_load
    def _player(self, data, **kwargs):
        return NewPlayer(data["name"], data["bot"])


class CreateGameRequestSchema(ma.Schema):
    variant = F.String(
        required=True,
        validate=ma.validate.OneOf([rules.CLASSIC, rules.BOX]),
        metadata=doc("`classic` (2 players) or `box` (3 players, \"in the box\")", "classic"),
    )
    players = F.List(
        F.Nested(NewPlayerRequestSchema),
        required=True,
        validate=ma.validate.Length(2, 3),
        metadata=doc("One entry per seat: 2 for classic, 3 for box", [{"name": "Ann"}, {"name": "Bob"}]),
    )
    rules = F.Nested(
        RulesSchema,
        metadata=doc("Rule options (RULES.md); each omitted option takes the variant's default", {"knock_limit": 10}),
    )
    seed = F.Integer(
        strict=True,
        validate=ma.validate.Range(0, MAX_SEED),
        metadata=doc("Makes the shuffles reproducible (tests, replays); omit for an unpredictable deal", 42),
    )


def _variant_request(variant: str, seats: int) -> type[ma.Schema]:
    """The creation body of one variant, for the documentation: it ties the number of players
    to the variant (the server checks the same, through the engine)."""
    return type(
        f"{variant.capitalize()}GameRequestSchema",
        (CreateGameRequestSchema,),
        {
            "variant": F.String(required=True, validate=ma.validate.OneOf([variant]), metadata=doc("The variant", variant)),
            "players": F.List(
                F.Nested(NewPlayerRequestSchema),
                required=True,
                validate=ma.validate.Length(seats, seats),
                metadata=doc(f"One entry per seat: {seats}", [{"name": f"P{n}"} for n in range(seats)]),
            ),
        },
    )


# Documented as oneOf these two; parsed with CreateGameRequestSchema.
CREATE_GAME_REQUEST_DOC = {"oneOf": [_variant_request(rules.CLASSIC, 2), _variant_request(rules.BOX, 3)]}


class SeatTokenSchema(ma.Schema):
    seat = F.Integer(required=True, metadata=doc("Seat number", 0))
    name = F.String(required=True, metadata=doc("The player's name", "Ann"))
    token = F.String(
        required=True,
        metadata=doc(
            "Secret player token, shown only now: send it as `Authorization: Bearer <token>`",
            "q7Zb2m3kq8bYz4N5VYhQ0mG7xk2u9aVJm3Lw0pQvS1E",
        ),
    )


class CreatedGameSchema(ma.Schema):
    game = nested(GameViewSchema, "The new match as the public sees it", required=True)
    players = nested_list(SeatTokenSchema, "Each seat's token", required=True)


class DrawRequestSchema(ma.Schema):
    source = F.String(
        required=True,
        validate=ma.validate.OneOf(["stock", "discard"]),
        metadata=doc("`stock` or `discard` (during the upcard offer, `discard` takes the upcard)", "stock"),
    )

    @ma.post_load
    def _action(self, data, **kwargs):
        return rules.Draw(data["source"])


class PassRequestSchema(ma.Schema):
    """No fields: the body may be absent or ``{}``."""

    @ma.post_load
    def _action(self, data, **kwargs):
        return rules.Pass()


class DiscardRequestSchema(ma.Schema):
    card = card_field("The card to discard", "Kd", required=True)

    @ma.post_load
    def _action(self, data, **kwargs):
        return rules.Discard(data["card"])


class KnockRequestSchema(ma.Schema):
    discard = card_field("The card to discard face up", "Kd", required=True)
    melds = melds_field(
        "Your melds after the discard (optional; omitted: a minimum-deadwood arrangement)", EXAMPLE_MELDS
    )

    @ma.post_load
    def _action(self, data, **kwargs):
        melds = data.get("melds")
        return rules.Knock(data["discard"], None if melds is None else _melds(melds))


class LayoffRequestSchema(ma.Schema):
    melds = melds_field("Your melds", [["9h", "9s", "9d"]])
    layoffs = F.List(
        F.Nested(LayoffItemSchema),
        validate=ma.validate.Length(max=len(rules.CARDS)),
        metadata=doc("Cards laid off on the knocker's melds, in order (chains allowed)", [{"card": "7s", "meld": 0}]),
    )

    @ma.post_load
    def _action(self, data, **kwargs):
        melds, layoffs = data.get("melds"), data.get("layoffs")
        if melds is None and layoffs is None:
            return rules.LayOff()
        return rules.LayOff(
            _melds(melds or []), tuple((item["card"], item["meld"]) for item in layoffs or [])
        )


class AdviceRequestActionSchema(SuggestedActionSchema):
    @ma.post_load
    def _notation(self, data, **kwargs):
        # Stored in the game and its events as JSON: cards go back to their notation.
        return {key: str(value) for key, value in data.items()}


class AdviceRequestSchema(ma.Schema):
    message = text_field(
        f"Advice for the captain, 1–{ADVICE_MAX} printable characters", "take the 9c", ADVICE_MAX, required=True
    )
    action = F.Nested(AdviceRequestActionSchema, metadata=doc("A suggested action (optional)", {"type": "draw", "source": "discard"}))

    @ma.post_load
    def _action(self, data, **kwargs):
        return rules.Advise(data["message"], data.get("action"))


def _melds(melds: list[list[rules.Card]]) -> tuple[tuple[rules.Card, ...], ...]:
    return tuple(tuple(meld) for meld in melds)


class ActionHeadersSchema(ma.Schema):
    if_match = F.String(
        data_key="If-Match",
        validate=ma.validate.Length(1, IDEMPOTENCY_KEY_MAX),
        metadata=doc('Act only if the game is at this version: the ETag (`"17"`) or the bare number', '"17"'),
    )
    idempotency_key = text_field(
        "Any unique string of visible ASCII; a retry with the same key and body returns the first "
        "answer without acting twice (kept 24 h, per game and seat)",
        "5f0c2a9e-move-12",
        IDEMPOTENCY_KEY_MAX,
        HEADER_TEXT_PATTERN,
        data_key="Idempotency-Key",
    )


class ViewHeadersSchema(ma.Schema):
    if_none_match = F.String(
        data_key="If-None-Match",
        validate=ma.validate.Length(1, IDEMPOTENCY_KEY_MAX),
        metadata=doc("The ETag of the view you hold: 304 Not Modified while the game is unchanged", '"17"'),
    )


class EventsQuerySchema(ma.Schema):
    after = F.Integer(
        load_default=0,
        validate=ma.validate.Range(0, AFTER_MAX),
        metadata=doc("Return the events with a sequence number above this one", 12),
    )
    wait = F.Float(
        load_default=0,
        validate=ma.validate.Range(0, WAIT_MAX_SECONDS),
        metadata=doc(f"Seconds (0–{WAIT_MAX_SECONDS}) to wait for a new event when there is none yet", 25),
    )


class EventSchema(ma.Schema):
    """One thing that happened, with the fields of its ``type`` (redacted for the viewer)."""

    class Meta:
        unknown = ma.INCLUDE

    seq = F.Integer(required=True, metadata=doc("Sequence number, from 1", 13))
    type = F.String(
        required=True,
        metadata=doc(
            "cut, deal, dealt, draw, pass, discard, knock, layoff, advice, hand_scored or match_finished",
            "discard",
        ),
    )
    seat = F.Integer(required=True, allow_none=True, metadata=doc("The seat concerned, if any", 1))
    hand = F.Integer(required=True, allow_none=True, metadata=doc("Number of the hand, if any", 4))


class EventsSchema(ma.Schema):
    events = nested_list(EventSchema, "Events, oldest first", required=True)
    last_seq = F.Integer(
        required=True,
        metadata=doc("Pass this as `after` next time: the last event's number, or `after` when none came", 13),
    )


class HintSchema(ma.Schema):
    seat = F.Integer(required=True, metadata=doc("The seat the hint is for (the captain, for the sitter)", 1))
    action = nested(SuggestedActionSchema, "The suggested action (null: not your turn)", required=True, allow_none=True)
    reason = F.String(required=True, metadata=doc("Why", "discarding Kd leaves the least deadwood (14)"))


GAME_ID_PARAMETER = {
    "in": "path",
    "name": "game_id",
    "description": "Game id, as returned by `POST /v1/games`",
    "example": EXAMPLE_GAME_ID,
    "schema": {"type": "string", "pattern": "^g_[A-Za-z0-9_-]{22}$"},
}
