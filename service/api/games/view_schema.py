"""The game view (docs/api.md, "The view"), as documentation: the engine builds views, the
OpenAPI document describes them, and the API tests check every view against it."""
from __future__ import annotations

import marshmallow as ma

from service.api.fields import (ResponseSchema, StrictBoolean, card_field, card_list, doc, melds_field, nested,
                                nested_list, utc_time)
from service.api.vocabulary import (BOT_LEVEL, DRAW_SOURCE, MATCH_STATUS, METADATA, OUTCOME, PHASE, ROLE,
                                    TURN_ACTION, VARIANT, enum_field)
from service.rules import RULE_OPTIONS, Rules, Status
from service.rules.actions import MELD_INDEX_MAX

F = ma.fields
EXAMPLE_MELDS = [["As", "2s", "3s"], ["7d", "7c", "7h"]]
EXAMPLE_GAME_ID = "g_3q5Jt0-8bJpYc2mXkq1WZA"


def _rule_field(name: str) -> ma.fields.Field:
    option = RULE_OPTIONS[name]
    example = getattr(Rules(), name)
    if option.is_boolean:
        return StrictBoolean(required=True, metadata=doc(option.description, example))
    return F.Integer(strict=True, validate=ma.validate.Range(option.low, option.high), allow_none=option.nullable,
                     required=True, metadata=doc(option.description, 60 if example is None else example))


class RuleValue(F.Raw):
    """A rule option's value in a request: documented with its type and range, checked by the
    engine (``rules_for``), whose refusal names the option and its range in ``params``."""


def _rule_request_field(name: str) -> ma.fields.Field:
    option = RULE_OPTIONS[name]
    documented = _rule_field(name)
    schema = {"type": "boolean"} if option.is_boolean else {"type": "integer", "minimum": option.low,
                                                              "maximum": option.high}
    return RuleValue(allow_none=option.nullable, metadata={**documented.metadata, **schema})


# One field per rule option of the engine, so the schemas cannot drift from the rules' table:
# strict in a creation request (an unknown option is refused), open (to options added later) in views.
RulesRequestSchema = ma.Schema.from_dict({name: _rule_request_field(name) for name in RULE_OPTIONS},
                                         name="RulesRequestSchema")
RulesSchema = ResponseSchema.from_dict({name: _rule_field(name) for name in RULE_OPTIONS}, name="RulesSchema")


def metadata_doc(description: str, example: dict, **kwargs) -> ma.fields.Dict:
    """The integrator's free-form object (null when none was given), as the shared component."""
    return F.Dict(allow_none=True, metadata={**doc(description, example), "component": METADATA}, **kwargs)


class PlayerSchema(ResponseSchema):
    seat = F.Integer(required=True, metadata=doc("Seat number, from 0", 0))
    name = F.String(required=True, metadata=doc("The player's name", "Ann"))
    score = F.Integer(required=True, metadata=doc("Hand points won so far in this match", 34))
    hands_won = F.Integer(required=True, metadata=doc("Hands won so far in this match", 2))
    role = enum_field(ROLE, "`dealer`/`player` in classic; `box`/`captain`/`sitter` in box", "dealer", required=True)
    bot = F.Boolean(required=True, metadata=doc("Whether the computer plays this seat", False))
    level = enum_field(BOT_LEVEL, "A bot's level (null for a person)", "standard", required=True, allow_none=True)
    timeouts = F.Integer(required=True, metadata=doc("Turns the service played for this seat after its deadline", 0))
    external_id = F.String(required=True, allow_none=True, metadata=doc("Your id for this player, if you gave one",
                                                                       "user-4711"))
    metadata = metadata_doc("Your data about this seat, if you gave any", {"avatar": "fox"}, required=True)
    rating = F.Float(required=True, allow_none=True,
                     metadata=doc("A bot's fixed rating on the players' Glicko-2 scale (docs/ratings.md); null for "
                                  "a person", 1500.0))
    online = F.Boolean(required=True, metadata=doc(
        "Whether the player is at the table: a stream or long-poll of this seat is open, or it acted in the last "
        "30 s (a bot always is). Not part of the version: a 304 does not tell that it changed", True))


class KnockOnTableSchema(ResponseSchema):
    knocker = F.Integer(required=True, metadata=doc("Seat that knocked", 0))
    melds = melds_field("The knocker's melds as declared; `layoffs[].meld` indexes this list", EXAMPLE_MELDS, required=True)
    deadwood_cards = card_list("The knocker's unmatched cards", ["4c", "2d"], required=True)
    deadwood = F.Integer(required=True, metadata=doc("The knocker's deadwood count", 6))
    gin = F.Boolean(required=True, metadata=doc("Whether the knock is gin (deadwood 0)", False))


class HandSchema(ResponseSchema):
    number = F.Integer(required=True, metadata=doc("Deals so far in this match, redeals included", 4))
    dealer = F.Integer(required=True, metadata=doc("Seat that dealt this hand", 0))
    non_dealer = F.Integer(required=True, metadata=doc("The dealer's opponent in this hand", 1))
    phase = enum_field(PHASE, "What happens next in this hand", "draw", required=True)
    turn = F.Integer(required=True, metadata=doc("Seat that must act now", 1))
    stock_count = F.Integer(required=True, metadata=doc("Cards left in the stock", 27))
    discard_top = card_field("Top card of the discard pile (null when empty)", "9c", required=True, allow_none=True)
    discard_pile = card_list("The discard pile, bottom first", ["Kd", "9c"], required=True)
    hand_sizes = F.Dict(
        keys=F.String(),
        values=F.Integer(),
        required=True,
        metadata=doc("Cards held by each active seat, keyed by seat", {"0": 10, "1": 10}),
    )
    deadline = utc_time("When `turn_seconds` is set: the time (UTC) by which the seat to act must act",
                        required=True, allow_none=True)
    knock = nested(KnockOnTableSchema, "The knock on the table (only in the layoff phase)")


class LayoffItemRequestSchema(ma.Schema):
    card = card_field("A card of the defender laid off", "7s", required=True)
    meld = F.Integer(
        strict=True,
        required=True,
        validate=ma.validate.Range(0, MELD_INDEX_MAX),
        metadata=doc("Index of the knocker's meld (`hand.knock.melds`) it extends", 0),
    )


class LayoffItemSchema(ResponseSchema):
    card = card_field("A card of the defender laid off", "7s", required=True)
    meld = F.Integer(required=True, metadata=doc("Index of the knocker's meld (`hand.knock.melds`) it extends", 0))


class BestLayoffSchema(ResponseSchema):
    melds = melds_field("Melds to lay down", EXAMPLE_MELDS, required=True)
    layoffs = nested_list(LayoffItemSchema, "Cards to lay off", required=True)
    deadwood = F.Integer(required=True, metadata=doc("Deadwood left afterwards", 9))


class CardsSchema(ResponseSchema):
    """A seat's cards and what it may do, as its owner (or the box sitter) sees them."""

    hand = card_list("The cards held, sorted", ["As", "2s", "3s", "7d", "7c", "7h", "Td", "Jd", "Qd", "4c"], required=True)
    deadwood = F.Integer(
        required=True, allow_none=True, metadata=doc("Minimum deadwood (after the best discard with 11 cards)", 14)
    )
    melds = melds_field("A minimum-deadwood arrangement", EXAMPLE_MELDS, required=True)
    deadwood_cards = card_list("The cards outside those melds", ["Td", "4c"], required=True)
    can_knock = F.Boolean(required=True, metadata=doc("Whether a knock is legal now", False))
    legal_actions = F.List(
        enum_field(TURN_ACTION, "An action", "draw"),
        required=True,
        metadata=doc("Actions this seat may call now (empty when it is not its turn)", ["draw"]),
    )
    draw_sources = F.List(
        enum_field(DRAW_SOURCE, "A source", "stock"),
        required=True,
        metadata=doc("Where this seat may draw from now", ["stock", "discard"]),
    )
    best_discard = card_field("With 11 cards: the discard leaving the least deadwood", "Kd")
    best_layoff = nested(BestLayoffSchema, "For the defender: the engine's best melds and lay-offs")
    layoff_targets = F.Dict(
        keys=F.String(), values=F.List(F.Integer()),
        metadata=doc("For the defender: for each of your cards, the knocker's melds (`hand.knock.melds` indexes) "
                     "it could extend now", {"7s": [0], "Kc": []}),
    )


class PartnerSchema(CardsSchema):
    seat = F.Integer(required=True, metadata=doc("The captain's seat", 2))


class TurnActionFields(ma.Schema):
    """The fields of a turn action as JSON: what ``POST /v1/games/{game_id}/{type}`` takes,
    with its type. The view's suggestion and the advice request add ``layoffs`` with their
    own item schema (open in a response, strict in a request)."""

    type = enum_field(TURN_ACTION, "Suggested action", "draw", required=True)
    source = enum_field(DRAW_SOURCE, "For draw: where from", "discard")
    card = card_field("For discard: the card", "Kd")
    discard = card_field("For knock: the discard", "Kd")
    melds = melds_field("For knock and layoff: the melds, when not the engine's choice", EXAMPLE_MELDS)


LAYOFFS_OF_ACTION = "For layoff: the lay-offs, when not the engine's choice"


class SuggestedActionSchema(ResponseSchema, TurnActionFields):
    """A turn action as JSON, as the view suggests it."""

    layoffs = nested_list(LayoffItemSchema, LAYOFFS_OF_ACTION)


class AdviceSchema(ResponseSchema):
    seat = F.Integer(required=True, metadata=doc("The advising sitter's seat", 2))
    message = F.String(required=True, metadata=doc("The advice", "take the 9c, it completes your run"))
    action = nested(SuggestedActionSchema, "A suggested action", required=True, allow_none=True)


class YouSchema(CardsSchema):
    seat = F.Integer(required=True, metadata=doc("Your seat", 1))
    role = enum_field(ROLE, "Your role in this hand", "player", required=True)
    advice = nested_list(
        AdviceSchema, "Box variant: the sitter's advice this hand, shown to captain and sitter", required=True
    )
    partner = nested(PartnerSchema, "For the box sitter: the captain's cards")


class LastHandSchema(ResponseSchema):
    number = F.Integer(required=True, metadata=doc("Number of that hand", 3))
    outcome = enum_field(OUTCOME, "How the hand ended", "knock", required=True)
    winner = F.Integer(required=True, allow_none=True, metadata=doc("Seat that scored (null for a dead hand)", 0))
    points = F.Integer(required=True, metadata=doc("Points scored", 11))
    knocker = F.Integer(required=True, allow_none=True, metadata=doc("Seat that knocked (null for a dead hand)", 0))
    knocker_melds = melds_field("The knocker's melds as declared, without lay-offs", EXAMPLE_MELDS, required=True)
    knocker_deadwood = F.Integer(required=True, allow_none=True, metadata=doc("The knocker's deadwood", 4))
    knocker_deadwood_cards = card_list("The knocker's unmatched cards", ["4c"], required=True)
    discard = card_field("The knocker's discard (null for a dead hand)", "Kd", required=True, allow_none=True)
    defender = F.Integer(required=True, allow_none=True, metadata=doc("The defending seat (null for a dead hand)", 1))
    defender_melds = melds_field("The defender's melds", [["9h", "9s", "9d"]], required=True)
    layoffs = nested_list(LayoffItemSchema, "Cards the defender laid off", required=True)
    defender_deadwood = F.Integer(required=True, allow_none=True, metadata=doc("The defender's deadwood after lay-offs", 15))
    defender_deadwood_cards = card_list("The defender's remaining unmatched cards", ["Kc", "5d"], required=True)
    hands = F.Dict(
        keys=F.String(),
        values=card_list("A hand", ["As", "2s"]),
        required=True,
        metadata=doc("Both hands as they ended, keyed by seat", {"0": ["As", "2s", "3s"], "1": ["9h", "9s", "9d"]}),
    )


class ResultPlayerSchema(ResponseSchema):
    seat = F.Integer(required=True, metadata=doc("Seat", 0))
    hand_points = F.Integer(required=True, metadata=doc("Points won in hands", 104))
    game_bonus = F.Integer(required=True, metadata=doc("Bonus for winning the match", 100))
    line_bonus = F.Integer(required=True, metadata=doc("Line bonus for the hands won", 60))
    shutout_bonus = F.Integer(required=True, metadata=doc("Bonus for a shutout", 0))
    total = F.Integer(required=True, metadata=doc("Sum of the above", 264))


class RatingChangeSchema(ResponseSchema):
    seat = F.Integer(required=True, metadata=doc("Seat of a person", 0))
    external_id = F.String(required=True, metadata=doc("The person's external id", "user-4711"))
    before = F.Float(required=True, metadata=doc("Rating before the match (a new player's initial rating)", 1500.0))
    after = F.Float(required=True, metadata=doc("Rating after the match", 1662.31))
    delta = F.Float(required=True, metadata=doc("`after` minus `before`", 162.31))
    rd = F.Float(required=True, metadata=doc("Rating deviation after the match", 290.32))
    volatility = F.Float(required=True, metadata=doc("Volatility after the match", 0.059999))


class MatchResultSchema(ResponseSchema):
    """How a match ended, as the engine tells it (a record's result)."""

    status = F.String(required=True, validate=ma.validate.OneOf([Status.FINISHED.value, Status.ABORTED.value]),
                      metadata=doc("`finished` (played out or resigned) or `aborted`", "finished"))
    winner = F.Integer(required=True, allow_none=True, metadata=doc("Seat that won the match (null when aborted)", 0))
    forfeit = F.Integer(required=True, allow_none=True, metadata=doc("The seat that resigned, if one did", 1))
    players = nested_list(ResultPlayerSchema, "Final figures per seat", required=True)


class ResultSchema(MatchResultSchema):
    """How a match ended, with what the service adds: a rated match's rating changes."""

    rating_changes = nested_list(RatingChangeSchema, "A rated match's changes to its people's ratings, once "
                                 "applied (within about a second of the end); null before, and for an unrated or "
                                 "aborted match", required=True, allow_none=True)


EXAMPLE_COMMITMENT = "331ab04caa328927f706627b812f4139f9ec42a6d61f17e468a70c41a48d8f67"


class FairnessSchema(ResponseSchema):
    commitment = F.String(required=True, metadata={
        **doc("Lowercase hex SHA-256 of the UTF-8 text of the match's secret server seed, shown from "
              "creation; the record of the finished match reveals the seed (docs/fairness.md)", EXAMPLE_COMMITMENT),
        "pattern": "^[0-9a-f]{64}$"})
    client_seed = F.String(required=True, metadata=doc("The creator's client seed (empty when none was given)",
                                                       "my lucky seed"))


class GameViewSchema(ResponseSchema):
    """A match as one viewer may see it."""

    id = F.String(required=True, metadata=doc("Game id", EXAMPLE_GAME_ID))
    version = F.Integer(required=True, metadata=doc("Version, +1 per applied action; also the ETag", 17))
    variant = enum_field(VARIANT, "Variant", "classic", required=True)
    status = enum_field(MATCH_STATUS, "`active`, `finished` or `aborted`", "active", required=True)
    seeded = F.Boolean(required=True, metadata=doc("Whether the match was created with a seed", False))
    rated = F.Boolean(required=True, metadata=doc("Whether the result updates the players' ratings", False))
    rules = F.Nested(RulesSchema, required=True, metadata=doc("The rule options of this match", Rules().as_dict()))
    players = nested_list(PlayerSchema, "Every seat", required=True)
    hand = nested(HandSchema, "The hand in play (null once the match is over)", required=True, allow_none=True)
    you = nested(YouSchema, "Your cards and options (absent without a token)")
    last_hand = nested(LastHandSchema, "The most recent finished hand", required=True, allow_none=True)
    result = nested(ResultSchema, "The final result (null until the match ends)", required=True, allow_none=True)
    metadata = metadata_doc("Your data about this match, if you gave any", {"tournament": "spring"}, required=True)
    rematch_id = F.String(required=True, allow_none=True,
                          metadata=doc("Once a player asked for a rematch: the id of the next match", "g_Q3xv0Jb8mPq1WZAkq5t2Rw"))
    last_seq = F.Integer(required=True, metadata=doc(
        "The number of the last event this view includes: follow on with `/events?after=` it", 57))
    fairness = nested(FairnessSchema, "The fair shuffle's commitment (null for a match dealt before fair shuffles "
                                      "existed)", required=True, allow_none=True)
