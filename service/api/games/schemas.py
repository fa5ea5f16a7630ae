"""Request and response bodies, headers and query parameters of /v1/games and /v1/players.

Action bodies are checked for shape here and become the engine's actions through
``rules.parse_action`` (``post_load``), which names a bad card or meld with ``invalid_card``;
so a route only hands the loaded action to the use case.
"""
from __future__ import annotations

import json
import unicodedata

import marshmallow as ma

from service import rules
from service.api.fields import (ResponseSchema, StrictBoolean, card_field, card_list, doc, header_text, melds_field,
                                nested, nested_list, shown_text, utc_time)
from service.api.games.event_schemas import EVENT
from service.api.games.view_schema import (
    EXAMPLE_GAME_ID,
    EXAMPLE_MELDS,
    LAYOFFS_OF_ACTION,
    GameViewSchema,
    LayoffItemRequestSchema,
    LayoffItemSchema,
    RulesRequestSchema,
    SuggestedActionSchema,
    TurnActionFields,
    metadata_doc,
)
from service.api.vocabulary import (BOT_LEVEL, DRAW_SOURCE, MATCH_STATUS, METADATA, METADATA_INTEGERS,
                                    METADATA_MAX_BYTES, METADATA_MAX_DEPTH, OUTCOME, VARIANT, enum_field)
from service.bots import Level
from service.config import LONGEST_WAIT_SECONDS
from service.games import NewGame, NewSeat
from service.callback_urls import MAX_URL_LENGTH
from service.games.seeds import CLIENT_SEED_MAX

F = ma.fields
NAME_MAX = 40
ADVICE_MAX = 280
EXTERNAL_ID_MAX = 128
IDEMPOTENCY_KEY_MAX = 200
MAX_SEED = 2**63 - 1
AFTER_MAX = 10**9
PAGE_MAX = 100


class Metadata(F.Dict):
    """A JSON object of the integrator's own, at most 1 KB as compact JSON in UTF-8; never interpreted."""

    def _deserialize(self, value, attr, data, **kwargs):
        loaded = super()._deserialize(value, attr, data, **kwargs)
        # Stored as it was sent, so only what the record's serialiser writes: integers within
        # 64 bits and a bounded nesting (beyond either, the save would fail after the checks).
        _check_storable(loaded)
        # Returned as it was sent, so only what JSON in UTF-8 can carry: no number beyond a
        # float's range (1e999 parses as infinity) and no lone half of a surrogate pair.
        try:
            encoded = json.dumps(loaded, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
        except UnicodeEncodeError:  # a ValueError too, so caught first
            raise ma.ValidationError("Text must be Unicode characters (no lone surrogate).") from None
        except ValueError:
            raise ma.ValidationError("Numbers must be within a double's range.") from None
        # Counted as UTF-8, not with the \uXXXX escapes of json's ASCII default, which would
        # let text in other scripts use a sixth of the bytes that English may.
        if len(encoded) > METADATA_MAX_BYTES:
            raise ma.ValidationError(f"At most {METADATA_MAX_BYTES} bytes as compact JSON in UTF-8.")
        return loaded


def _check_storable(metadata: dict) -> None:
    """Raise ValidationError for an integer outside METADATA_INTEGERS or objects and arrays
    nested deeper than METADATA_MAX_DEPTH (the metadata object itself is level 1)."""
    lowest, highest = METADATA_INTEGERS
    pending: list[tuple[object, int]] = [(metadata, 1)]
    while pending:
        value, depth = pending.pop()
        if isinstance(value, (dict, list)):
            if depth > METADATA_MAX_DEPTH:
                raise ma.ValidationError(f"Objects and arrays may be nested at most {METADATA_MAX_DEPTH} deep.")
            pending.extend((inner, depth + 1) for inner in (value.values() if isinstance(value, dict) else value))
        elif isinstance(value, int) and not isinstance(value, bool) and not lowest <= value <= highest:
            raise ma.ValidationError(f"Integers must be within 64 bits ({lowest} to {highest}).")


class ClientSeed(F.String):
    """A client seed: 1 to ``CLIENT_SEED_MAX`` characters, none of them a control character or a
    lone surrogate (its UTF-8 text is what the shuffle hashes), kept exactly as sent."""

    def _deserialize(self, value, attr, data, **kwargs) -> str:
        text = super()._deserialize(value, attr, data, **kwargs)
        if not 1 <= len(text) <= CLIENT_SEED_MAX:
            raise ma.ValidationError(f"Length must be between 1 and {CLIENT_SEED_MAX}.")
        if any(unicodedata.category(char) in ("Cc", "Cs") for char in text):
            raise ma.ValidationError("Not allowed: control characters and lone surrogates.")
        return text


def metadata_field(description: str, example: dict) -> Metadata:
    return Metadata(allow_none=True, metadata={**doc(f"{description}; a JSON object of at most {METADATA_MAX_BYTES} "
                                                      "bytes, returned as it was sent", example), "component": METADATA})


class NewPlayerRequestSchema(ma.Schema):
    name = shown_text(f"Display name, 1–{NAME_MAX} characters", "Ann", NAME_MAX, required=True)
    bot = StrictBoolean(load_default=False, metadata=doc("Whether the computer plays this seat", False))
    level = enum_field(BOT_LEVEL, "For a bot: how well it plays, `easy`, `standard` (the default) or `strong`",
                       "standard")
    external_id = shown_text(f"Your own id for this player (1–{EXTERNAL_ID_MAX} characters): "
                             "list a player's matches with `GET /v1/players/{external_id}/games`",
                             "user-4711", EXTERNAL_ID_MAX)
    metadata = metadata_field("Your own data about this seat", {"avatar": "fox"})

    @ma.post_load
    def _seat(self, data, **kwargs):
        if "level" in data and not data["bot"]:
            raise ma.ValidationError("Only a bot seat has a level.", "level")
        level = data.get("level", Level.STANDARD.value) if data["bot"] else None
        return NewSeat(data["name"], level, data.get("external_id"), data.get("metadata"))


class CreateGameRequestSchema(ma.Schema):
    variant = enum_field(VARIANT, "`classic` (2 players) or `box` (3 players, \"in the box\")", "classic",
                         required=True)
    players = F.List(
        F.Nested(NewPlayerRequestSchema),
        required=True,
        validate=ma.validate.Length(2, 3),
        metadata=doc("One entry per seat: 2 for classic, 3 for box; at least one a person",
                     [{"name": "Ann"}, {"name": "Robo", "bot": True, "level": "standard"}]),
    )
    rules = F.Nested(
        RulesRequestSchema,
        metadata=doc("Rule options (docs/rules.md); each omitted option takes the variant's default",
                     {"knock_limit": 10}),
    )
    seed = F.Integer(
        strict=True,
        validate=ma.validate.Range(0, MAX_SEED),
        metadata=doc("Makes the shuffles reproducible (tests, replays; needs an API key on a shared "
                     "deployment); omit it for an unpredictable deal", 42),
    )
    metadata = metadata_field("Your own data about this match", {"tournament": "spring"})
    client_seed = ClientSeed(metadata={
        **doc(f"Your part of the fair shuffle, 1–{CLIENT_SEED_MAX} characters (no control characters): every "
              "deal follows from it and the server's secret seed, whose SHA-256 every view shows as "
              "`fairness.commitment` and which the record reveals once the match is over (docs/fairness.md)",
              "my lucky seed"),
        "minLength": 1, "maxLength": CLIENT_SEED_MAX})
    # The length is checked with the rest of the URL (callback_not_allowed, reason too_long).
    callback_url = F.String(
        validate=ma.validate.Length(min=1),
        metadata={**doc("Where to send this match's webhooks (turn, hand_over, match_over, timeout); its host "
                        "must be allowed by the server's configuration", "https://hooks.example.com/ginrummy"),
                  "maxLength": MAX_URL_LENGTH},
    )

    rated = StrictBoolean(
        load_default=False,
        metadata=doc("Whether the result updates the players' ratings (Glicko-2, per API key and variant; "
                     "docs/ratings.md): every person's seat then needs an `external_id`", False))

    @ma.post_load
    def _new_game(self, data, **kwargs):
        return NewGame(data["variant"], tuple(data["players"]), data.get("rules"), data.get("seed"),
                       data.get("metadata"), data.get("callback_url"), data["rated"], data.get("client_seed", ""))


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


class SeatTokenSchema(ResponseSchema):
    seat = F.Integer(required=True, metadata=doc("Seat number", 0))
    name = F.String(required=True, metadata=doc("The player's name", "Ann"))
    token = F.String(
        required=True,
        allow_none=True,
        metadata=doc(
            "Secret player token, shown only to whoever created the match (or asked for the rematch): send it "
            "as `Authorization: Bearer <token>`. null for a bot seat, and for the other players in a rematch",
            "q7Zb2m3kq8bYz4N5VYhQ0mG7xk2u9aVJm3Lw0pQvS1E",
        ),
    )


class CreatedGameSchema(ResponseSchema):
    game = nested(GameViewSchema, "The match as the public sees it", required=True)
    players = nested_list(SeatTokenSchema, "Each seat's token", required=True)


def _action_schema(kind: rules.ActionType, fields: dict) -> type[ma.Schema]:
    """The request body of one action: its fields, loaded into the engine's action."""

    def load(self, data, **kwargs):
        return rules.parse_action(kind, data)

    return type(f"{kind.value.capitalize()}RequestSchema", (ma.Schema,), {**fields, "_action": ma.post_load(load)})


DrawRequestSchema = _action_schema(rules.ActionType.DRAW, {"source": enum_field(
    DRAW_SOURCE, "`stock` or `discard` (during the upcard offer, `discard` takes the upcard)", "stock", required=True)})
PassRequestSchema = _action_schema(rules.ActionType.PASS, {})
ResignRequestSchema = _action_schema(rules.ActionType.RESIGN, {})
DiscardRequestSchema = _action_schema(rules.ActionType.DISCARD, {
    "card": card_field("The card to discard", "Kd", required=True)})
KnockRequestSchema = _action_schema(rules.ActionType.KNOCK, {
    "discard": card_field("The card to discard face up", "Kd", required=True),
    "melds": melds_field("Your melds after the discard (optional; omitted: a minimum-deadwood arrangement)",
                         EXAMPLE_MELDS),
})
LayoffRequestSchema = _action_schema(rules.ActionType.LAYOFF, {
    "melds": melds_field("Your melds", [["9h", "9s", "9d"]]),
    "layoffs": F.List(
        F.Nested(LayoffItemRequestSchema),
        validate=ma.validate.Length(max=len(rules.CARDS)),
        metadata=doc("Cards laid off on the knocker's melds, in order (chains allowed)", [{"card": "7s", "meld": 0}]),
    ),
})


class AdviceRequestActionSchema(TurnActionFields):
    """A suggested turn action in an advice request (the view's ``SuggestedAction``, strict)."""

    layoffs = nested_list(LayoffItemRequestSchema, LAYOFFS_OF_ACTION)


AdviceRequestSchema = _action_schema(rules.ActionType.ADVICE, {
    "message": shown_text(f"Advice for the captain, 1–{ADVICE_MAX} characters", "take the 9c", ADVICE_MAX,
                          required=True),
    "action": F.Nested(AdviceRequestActionSchema,
                       metadata=doc("A suggested action (optional)", {"type": "draw", "source": "discard"})),
})


class LayoffQuerySchema(ma.Schema):
    """``POST .../layoff?dry_run=true``: the deprecated spelling of ``dryRunLayoff``, kept for
    the clients that use it and left out of the document (docs/api.md)."""

    dry_run = F.Boolean(load_default=False, truthy={"true"}, falsy={"false"})


class ActionHeadersSchema(ma.Schema):
    if_match = F.String(
        data_key="If-Match",
        validate=ma.validate.Length(1, IDEMPOTENCY_KEY_MAX),
        metadata={"description": 'Act only if the game is at this version: the ETag as received (`"17"`) or the '
                                 "bare number; 412 `version_mismatch` otherwise. Leave it out to act on any version"},
    )
    idempotency_key = header_text(
        "Any unique string of visible ASCII (e.g. a UUID); a retry with the same key and body returns the first "
        "answer without acting twice (kept 24 h, per game and seat). Use a new key for every new request",
        None, IDEMPOTENCY_KEY_MAX, data_key="Idempotency-Key",
    )


class CreateHeadersSchema(ma.Schema):
    idempotency_key = header_text(
        "Any unique string of visible ASCII (e.g. a UUID); a retry with the same key and body returns the same "
        "match, as it is then, with the same tokens (kept 24 h, per API key)",
        None, IDEMPOTENCY_KEY_MAX, data_key="Idempotency-Key",
    )


class ViewHeadersSchema(ma.Schema):
    if_none_match = F.String(
        data_key="If-None-Match",
        validate=ma.validate.Length(1, IDEMPOTENCY_KEY_MAX),
        metadata={"description": "The ETag of the view you hold: 304 Not Modified while the game is unchanged"},
    )


class EventsQuerySchema(ma.Schema):
    after = F.Integer(
        load_default=0,
        validate=ma.validate.Range(0, AFTER_MAX),
        metadata=doc("Return the events with a sequence number above this one", 12),
    )
    wait = F.Float(
        load_default=0,
        validate=ma.validate.Range(0, LONGEST_WAIT_SECONDS),
        metadata=doc(f"Seconds (0–{LONGEST_WAIT_SECONDS}) to wait for a new event when there is none yet", 25),
    )


class EventPageSchema(ResponseSchema):
    events = F.List(F.Raw(metadata={"component": EVENT}), required=True,
                    metadata=doc("Events, oldest first", [{"seq": 13, "type": "discard", "seat": 1, "hand": 4,
                                                           "turn": 0, "bot": False, "card": "Kd"}]))
    last_seq = F.Integer(
        required=True,
        metadata=doc("Pass this as `after` next time: the last event's number, or `after` when none came", 13),
    )


class HintSchema(ResponseSchema):
    seat = F.Integer(required=True, metadata=doc("The seat the hint is for (the captain, for the sitter)", 1))
    action = nested(SuggestedActionSchema, "The suggested action (null: not your turn)", required=True, allow_none=True)
    reason = F.String(required=True, metadata=doc("Why, in English", "discard Kd: highest loose card"))
    reason_code = F.String(required=True, metadata=doc("The reason as a stable code, for your own translation",
                                                       "highest_loose_card"))
    params = F.Dict(keys=F.String(), required=True, metadata=doc("The values the reason names", {"card": "Kd"}))


class DryRunLayoffSchema(ResponseSchema):
    melds = melds_field("The defender's melds", [["9h", "9s", "9d"]], required=True)
    layoffs = nested_list(LayoffItemSchema, "The lay-offs, as they would apply", required=True)
    deadwood_cards = card_list("What would remain unmatched", ["Kc", "5d"], required=True)
    deadwood = F.Integer(required=True, metadata=doc("The defender's deadwood it would leave", 15))
    outcome = enum_field(OUTCOME, "How the hand would end", "knock", required=True)
    winner = F.Integer(required=True, metadata=doc("Who would score", 0))
    points = F.Integer(required=True, metadata=doc("How many points", 11))


class NewTokenSchema(ResponseSchema):
    seat = F.Integer(required=True, metadata=doc("The seat", 1))
    token = F.String(required=True, metadata=doc("The seat's new token; the old one no longer works",
                                                 "Q9v2m3kq8bYz4N5VYhQ0mG7xk2u9aVJm3Lw0pQvS1E"))
    version = F.Integer(required=True, metadata=doc("The game's version now", 18))


class PlayerGamesQuerySchema(ma.Schema):
    status = F.String(load_default="active", validate=ma.validate.OneOf(["active", "finished"]),
                      metadata=doc("`active` (being played) or `finished` (played out, resigned or aborted)", "active"))
    cursor = F.String(validate=ma.validate.Length(1, 200),
                      metadata=doc("`next_cursor` of the previous page", "MTc2NDU4MzIwMDAwMDpnX1EzeHYw"))
    limit = F.Integer(load_default=20, validate=ma.validate.Range(1, PAGE_MAX),
                      metadata=doc(f"Matches per page (1–{PAGE_MAX})", 20))


class SummaryPlayerSchema(ResponseSchema):
    seat = F.Integer(required=True, metadata=doc("Seat", 0))
    name = F.String(required=True, metadata=doc("Name", "Ann"))
    bot = F.Boolean(required=True, metadata=doc("Whether a bot plays it", False))
    score = F.Integer(required=True, metadata=doc("Hand points so far", 34))
    external_id = F.String(required=True, allow_none=True, metadata=doc("Your id for this player", "user-4711"))


class GameSummarySchema(ResponseSchema):
    id = F.String(required=True, metadata=doc("Game id", EXAMPLE_GAME_ID))
    created_at = utc_time("When it was created (UTC)", required=True)
    variant = enum_field(VARIANT, "Variant", "classic", required=True)
    status = enum_field(MATCH_STATUS, "`active`, `finished` or `aborted`", "active", required=True)
    version = F.Integer(required=True, metadata=doc("Version", 17))
    seat = F.Integer(required=True, metadata=doc("This player's seat", 0))
    turn = F.Integer(required=True, allow_none=True, metadata=doc("The seat to act (null: over)", 0))
    your_turn = F.Boolean(required=True, metadata=doc("Whether this player must act", True))
    players = nested_list(SummaryPlayerSchema, "Every seat", required=True)
    metadata = metadata_doc("The match's metadata", {"tournament": "spring"}, required=True)


class PlayerGamesSchema(ResponseSchema):
    games = nested_list(GameSummarySchema, "Matches, newest first", required=True)
    next_cursor = F.String(required=True, allow_none=True,
                           metadata=doc("Pass as `cursor` for the next page (null: this is the last)", "MTc2NDU4MzIwMDAwMDpnX1EzeHYw"))


GAME_ID_PARAMETER = {
    "in": "path",
    "name": "game_id",
    "description": "Game id, as returned by `POST /v1/games`",
    "example": EXAMPLE_GAME_ID,
    "schema": {"type": "string", "pattern": "^g_[A-Za-z0-9_-]{22}$"},
}
