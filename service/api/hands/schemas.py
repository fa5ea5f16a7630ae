"""Bodies of /v1/hands/analyze."""
from __future__ import annotations

import marshmallow as ma

from service.api.fields import EXAMPLE_HAND, ResponseSchema, card_field, card_list, doc, melds_field
from service.rules import RULE_OPTIONS, Rules

F = ma.fields
KNOCK_LIMIT = RULE_OPTIONS["knock_limit"]


class AnalyzeRequestSchema(ma.Schema):
    cards = card_list(
        "10 cards, or 11 (the hand in the middle of a turn: every figure is then after the best discard)",
        EXAMPLE_HAND + ["Kd"],
        unique=True,
        required=True,
        validate=ma.validate.Length(10, 11),
    )
    knock_limit = F.Integer(
        strict=True,
        load_default=Rules().knock_limit,
        validate=ma.validate.Range(KNOCK_LIMIT.low, KNOCK_LIMIT.high),
        metadata=doc("The knock limit to judge `can_knock` by", Rules().knock_limit),
    )


class AnalysisSchema(ResponseSchema):
    deadwood = F.Integer(required=True, metadata=doc("Minimum deadwood count", 4))
    melds = melds_field("A minimum-deadwood arrangement", [["As", "2s", "3s"], ["7d", "7c", "7h"], ["Td", "Jd", "Qd"]], required=True)
    deadwood_cards = card_list("The cards outside those melds", ["4c"], required=True)
    gin = F.Boolean(required=True, metadata=doc("Whether the deadwood is 0", False))
    can_knock = F.Boolean(required=True, metadata=doc("Whether the deadwood is within the knock limit", True))
    best_discard = card_field("With 11 cards: the discard that leaves this arrangement", "Kd")
