"""The game view (API.md "The view"), as documentation: the engine builds views, the
OpenAPI document describes them, and the API tests check every view against it."""
from __future__ import annotations

import marshmallow as ma

from service.api.fields import StrictBoolean, card_field, card_list, doc, melds_field, nested, nested_list
from service.rules import RULE_OPTIONS, Rules

F = ma.fields
ACTION_NAMES = ("draw", "pass", "discard", "knock", "layoff")
EXAMPLE_MELDS = [["As", "2s", "3s"], ["7d", "7c", "7h"]]
EXAMPLE_GAME_ID = "g_3q5Jt0-8bJpYc2mXkq1WZA"
# A knocker holds at most 10 cards, so at most 3 melds; the bound only keeps values sane.
MELD_INDEX_MAX = 9


def _rule_field(name: str) -> ma.fields.Field:
    description, low, high = RULE_OPTIONS[name]
    example = getattr(Rules(), name)
    if low is None:
        return StrictBoolean(metadata=doc(description, example))
    return F.Integer(strict=True, validate=ma.validate.Range(low, high), metadata=doc(description, example))


# One field per rule option of the engine, so the schema cannot drift from RULES.md's table.
RulesSchema = ma.Schema.from_dict({name: _rule_field(name) for name in RULE_OPTIONS}, name="RulesSchema")


class PlayerSchema(ma.Schema):
    seat = F.Integer(required=True, metadata=doc("Seat number, from 0", 0))
    name = F.String(required=True, metadata=doc("The player's name", "Ann"))
    score = F.Integer(required=True, metadata=doc("Hand points won so far in this match", 34))
    hands_won = F.Integer(required=True, metadata=doc("Hands won so far in this match", 2))
    role = F.String(
        required=True,
        validate=ma.validate.OneOf(["dealer", "player", "box", "captain", "sitter"]),
        metadata=doc("`dealer`/`player` in classic; `box`/`captain`/`sitter` in box", "dealer"),
    )
    bot = F.Boolean(required=True, metadata=doc("Whether a bot plays this seat (always false)", False))


class KnockOnTableSchema(ma.Schema):
    knocker = F.Integer(required=True, metadata=doc("Seat that knocked", 0))
    melds = melds_field("The knocker's melds as declared; `layoffs[].meld` indexes this list", EXAMPLE_MELDS, required=True)
    deadwood_cards = card_list("The knocker's unmatched cards", ["4c", "2d"], required=True)
    deadwood = F.Integer(required=True, metadata=doc("The knocker's deadwood count", 6))
    gin = F.Boolean(required=True, metadata=doc("Whether the knock is gin (deadwood 0)", False))


class HandSchema(ma.Schema):
    number = F.Integer(required=True, metadata=doc("Deals so far in this match, redeals included", 4))
    dealer = F.Integer(required=True, metadata=doc("Seat that dealt this hand", 0))
    non_dealer = F.Integer(required=True, metadata=doc("The dealer's opponent in this hand", 1))
    phase = F.String(
        required=True,
        validate=ma.validate.OneOf(["upcard_offer", "draw", "discard", "layoff"]),
        metadata=doc("What happens next in this hand", "draw"),
    )
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
    knock = nested(KnockOnTableSchema, "The knock on the table (only in the layoff phase)")


class LayoffItemSchema(ma.Schema):
    card = card_field("A card of the defender laid off", "7s", required=True)
    meld = F.Integer(
        strict=True,
        required=True,
        validate=ma.validate.Range(0, MELD_INDEX_MAX),
        metadata=doc("Index of the knocker's meld (`hand.knock.melds`) it extends", 0),
    )


class BestLayoffSchema(ma.Schema):
    melds = melds_field("Melds to lay down", EXAMPLE_MELDS, required=True)
    layoffs = nested_list(LayoffItemSchema, "Cards to lay off", required=True)
    deadwood = F.Integer(required=True, metadata=doc("Deadwood left afterwards", 9))


class CardsSchema(ma.Schema):
    """A seat's cards and what it may do, as its owner (or the box sitter) sees them."""

    hand = card_list("The cards held, sorted", ["As", "2s", "3s", "7d", "7c", "7h", "Td", "Jd", "Qd", "4c"], required=True)
    deadwood = F.Integer(
        required=True, allow_none=True, metadata=doc("Minimum deadwood (after the best discard with 11 cards)", 14)
    )
    melds = melds_field("A minimum-deadwood arrangement", EXAMPLE_MELDS, required=True)
    deadwood_cards = card_list("The cards outside those melds", ["Td", "4c"], required=True)
    can_knock = F.Boolean(required=True, metadata=doc("Whether a knock is legal now", False))
    legal_actions = F.List(
        F.String(validate=ma.validate.OneOf(ACTION_NAMES)),
        required=True,
        metadata=doc("Actions this seat may call now (empty when it is not its turn)", ["draw"]),
    )
    draw_sources = F.List(
        F.String(validate=ma.validate.OneOf(["stock", "discard"])),
        required=True,
        metadata=doc("Where this seat may draw from now", ["stock", "discard"]),
    )
    best_discard = card_field("With 11 cards: the discard leaving the least deadwood", "Kd")
    best_layoff = nested(BestLayoffSchema, "For the defender: the engine's best melds and lay-offs")


class PartnerSchema(CardsSchema):
    seat = F.Integer(required=True, metadata=doc("The captain's seat", 2))


class SuggestedActionSchema(ma.Schema):
    type = F.String(required=True, validate=ma.validate.OneOf(ACTION_NAMES), metadata=doc("Suggested action", "draw"))
    source = F.String(validate=ma.validate.OneOf(["stock", "discard"]), metadata=doc("For draw: where from", "discard"))
    card = card_field("For discard: the card", "Kd")
    discard = card_field("For knock: the discard", "Kd")


class AdviceSchema(ma.Schema):
    seat = F.Integer(required=True, metadata=doc("The advising sitter's seat", 2))
    message = F.String(required=True, metadata=doc("The advice", "take the 9c, it completes your run"))
    action = nested(SuggestedActionSchema, "A suggested action", required=True, allow_none=True)


class YouSchema(CardsSchema):
    seat = F.Integer(required=True, metadata=doc("Your seat", 1))
    role = F.String(required=True, metadata=doc("Your role in this hand", "player"))
    advice = nested_list(
        AdviceSchema, "Box variant: the sitter's advice this hand, shown to captain and sitter", required=True
    )
    partner = nested(PartnerSchema, "For the box sitter: the captain's cards")


class LastHandSchema(ma.Schema):
    number = F.Integer(required=True, metadata=doc("Number of that hand", 3))
    outcome = F.String(
        required=True,
        validate=ma.validate.OneOf(["gin", "knock", "undercut", "dead"]),
        metadata=doc("How the hand ended", "knock"),
    )
    winner = F.Integer(required=True, allow_none=True, metadata=doc("Seat that scored (null for a dead hand)", 0))
    points = F.Integer(required=True, metadata=doc("Points scored", 11))
    knocker = F.Integer(required=True, allow_none=True, metadata=doc("Seat that knocked (null for a dead hand)", 0))
    knocker_melds = melds_field("The knocker's melds as declared, without lay-offs", EXAMPLE_MELDS, required=True)
    knocker_deadwood = F.Integer(required=True, allow_none=True, metadata=doc("The knocker's deadwood", 4))
    knocker_deadwood_cards = card_list("The knocker's unmatched cards", ["4c"])
    discard = card_field("The knocker's discard", "Kd")
    defender = F.Integer(metadata=doc("The defending seat", 1))
    defender_melds = melds_field("The defender's melds", [["9h", "9s", "9d"]], required=True)
    layoffs = nested_list(LayoffItemSchema, "Cards the defender laid off", required=True)
    defender_deadwood = F.Integer(required=True, allow_none=True, metadata=doc("The defender's deadwood after lay-offs", 15))
    defender_deadwood_cards = card_list("The defender's remaining unmatched cards", ["Kc", "5d"])
    hands = F.Dict(
        keys=F.String(),
        values=card_list("A hand", ["As", "2s"]),
        required=True,
        metadata=doc("Both hands as they ended, keyed by seat", {"0": ["As", "2s", "3s"], "1": ["9h", "9s", "9d"]}),
    )


class ResultPlayerSchema(ma.Schema):
    seat = F.Integer(required=True, metadata=doc("Seat", 0))
    hand_points = F.Integer(required=True, metadata=doc("Points won in hands", 104))
    game_bonus = F.Integer(required=True, metadata=doc("Bonus for winning the match", 100))
    line_bonus = F.Integer(required=True, metadata=doc("Line bonus for the hands won", 60))
    shutout_bonus = F.Integer(required=True, metadata=doc("Bonus for a shutout", 0))
    total = F.Integer(required=True, metadata=doc("Sum of the above", 264))


class ResultSchema(ma.Schema):
    winner = F.Integer(required=True, metadata=doc("Seat that won the match", 0))
    players = nested_list(ResultPlayerSchema, "Final figures per seat", required=True)


class GameViewSchema(ma.Schema):
    """A match as one viewer may see it."""

    id = F.String(required=True, metadata=doc("Game id", EXAMPLE_GAME_ID))
    version = F.Integer(required=True, metadata=doc("Version, +1 per applied action; also the ETag", 17))
    variant = F.String(required=True, validate=ma.validate.OneOf(["classic", "box"]), metadata=doc("Variant", "classic"))
    status = F.String(required=True, validate=ma.validate.OneOf(["active", "finished"]), metadata=doc("Match status", "active"))
    rules = F.Nested(RulesSchema, required=True, metadata=doc("The rule options of this match", Rules().as_dict()))
    players = nested_list(PlayerSchema, "Every seat", required=True)
    hand = nested(HandSchema, "The hand in play (null once the match is over)", required=True, allow_none=True)
    you = nested(YouSchema, "Your cards and options (absent without a token)")
    last_hand = nested(LastHandSchema, "The most recent finished hand", required=True, allow_none=True)
    result = nested(ResultSchema, "The final result (null until the match ends)", required=True, allow_none=True)
