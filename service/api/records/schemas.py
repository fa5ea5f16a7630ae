"""The bodies of a finished match's record, replay and analysis (documentation: the use cases
build them, the OpenAPI document describes them, the API tests check every answer against it).
The record's own JSON Schema, for whoever stores records, is docs/record.schema.json."""
from __future__ import annotations

import marshmallow as ma

from service.api.fields import ResponseSchema, card_field, card_list, doc, melds_field, nested, nested_list
from service.api.games.view_schema import (EXAMPLE_COMMITMENT, EXAMPLE_GAME_ID, EXAMPLE_MELDS, GameViewSchema,
                                           LastHandSchema, LayoffItemSchema, MatchResultSchema, RulesSchema,
                                           SuggestedActionSchema, YouSchema)
from service.api.vocabulary import BOT_LEVEL, DRAW_SOURCE, MISSED_CHANCE, PHASE, ROLE, VARIANT, enum_field
from service.records.analysis import FORMAT as ANALYSIS_FORMAT
from service.records.analysis import KNOCK, MAX_DECISIONS
from service.records.record import ACTIONS, FORMAT
from service.rules import Rules

F = ma.fields
EXAMPLE_TIME = "2026-12-01T10:00:07.250Z"
EXAMPLE_SERVER_SEED = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"
# A replay's step: no match has nearly this many (its events are bounded far lower).
STEP_MAX = 10**6
FORMATS = ("json", "text")


def _time(description: str, **kwargs) -> F.String:
    """A time to the millisecond (ISO 8601 UTC), documented as ``date-time``."""
    return F.String(metadata={**doc(description, EXAMPLE_TIME), "format": "date-time"}, **kwargs)


class RecordQuerySchema(ma.Schema):
    format = F.String(load_default="json", validate=ma.validate.OneOf(FORMATS),
                      metadata=doc("`json` (the default) or `text`: the compact notation of docs/records.md, "
                                   "one line per action", "json"))


class ReplayQuerySchema(ma.Schema):
    step = F.Integer(load_default=0, validate=ma.validate.Range(0, STEP_MAX),
                     metadata=doc("Show the match after this many actions (0: as dealt; at most the record's "
                                  "`steps`)", 12))


class RecordPlayerSchema(ResponseSchema):
    seat = F.Integer(required=True, metadata=doc("Seat number, from 0", 0))
    name = F.String(required=True, metadata=doc("The player's name", "Ann"))
    bot = F.Boolean(required=True, metadata=doc("Whether the computer played this seat", False))
    level = enum_field(BOT_LEVEL, "A bot's level (null for a person)", "strong", required=True, allow_none=True)


class RevealedFairnessSchema(ResponseSchema):
    server_seed = F.String(required=True, metadata={**doc("The match's server seed, secret until the match ended: "
                                                          "64 lowercase hex characters, used as text",
                                                          EXAMPLE_SERVER_SEED), "pattern": "^[0-9a-f]{64}$"})
    commitment = F.String(required=True, metadata={**doc("SHA-256 of the server seed, as every view showed it",
                                                         EXAMPLE_COMMITMENT), "pattern": "^[0-9a-f]{64}$"})
    client_seed = F.String(required=True, metadata=doc("The creator's client seed (empty when none was given)",
                                                       "my lucky seed"))


class CutSchema(ResponseSchema):
    cards = card_list("The card each seat cut, by seat", ["Kd", "4c"], required=True)
    decided = F.Boolean(required=True, metadata=doc("Whether this cut decided the seats (false: equal ranks)", True))


class RecordActionSchema(ResponseSchema):
    """One step of a match: a seat's action (or the service's, for a timeout or an abort)."""

    step = F.Integer(required=True, metadata=doc("Its number in the match, from 1", 12))
    seat = F.Integer(required=True, allow_none=True, metadata=doc("Who acted (null: an abort by the integrator)", 1))
    type = F.String(required=True, validate=ma.validate.OneOf([kind.value for kind in ACTIONS]),
                    metadata=doc("draw, pass, discard, knock, layoff, advice, timeout (the seat's deadline passed; "
                                 "the service plays its turn next), resign or abort", "discard"))
    source = enum_field(DRAW_SOURCE, "draw: where from", "stock")
    card = card_field("draw: the card drawn; discard: the card discarded", "Kd")
    discard = card_field("knock: the discard", "Kd")
    melds = melds_field("knock: the melds laid down; layoff: the defender's melds", EXAMPLE_MELDS)
    layoffs = nested_list(LayoffItemSchema, "layoff: the cards laid off on the knocker's melds")
    message = F.String(metadata=doc("advice: the sitter's message", "take the 9c"))
    action = nested(SuggestedActionSchema, "advice: the suggested action, or null", allow_none=True)
    deadline = F.String(metadata={**doc("timeout: the deadline that passed", "2026-12-01T10:01:00Z"),
                                  "format": "date-time"})
    time = _time("When the service applied it (null for matches stored before times were kept)", required=True,
                 allow_none=True)
    bot = F.Boolean(required=True, metadata=doc("Whether a computer chose it", False))
    timeout = F.Boolean(required=True, metadata=doc("Whether it belongs to a turn the service played after the "
                                                    "seat's deadline passed (the timeout itself included)", False))


class RecordHandSchema(ResponseSchema):
    number = F.Integer(required=True, metadata=doc("The hand's number, redeals included", 1))
    dealer = F.Integer(required=True, metadata=doc("Seat that dealt", 0))
    non_dealer = F.Integer(required=True, metadata=doc("The dealer's opponent in this hand", 1))
    roles = F.List(enum_field(ROLE, "A role", "dealer"), required=True,
                   metadata=doc("Each seat's role in this hand, by seat", ["dealer", "player"]))
    dealt = F.Dict(keys=F.String(), values=card_list("Ten cards", ["As", "2s"]), required=True,
                   metadata=doc("The ten cards dealt to each of the two seats playing, keyed by seat",
                                {"1": ["As", "2s", "3s", "7d", "7c", "7h", "Td", "Jd", "Qd", "4c"],
                                 "0": ["Kd", "Kc", "9h", "9s", "5d", "6d", "8c", "2h", "3h", "Jc"]}))
    upcard = card_field("The card turned face up", "9c", required=True)
    stock = card_list("The stock, the first card drawn first", ["4d", "Qs"], required=True)
    actions = nested_list(RecordActionSchema, "The hand's steps, in order", required=True)
    result = nested(LastHandSchema, "How the hand ended (null: the match ended during it)", required=True,
                    allow_none=True)


class RecordSchema(ResponseSchema):
    """A finished match, whole (docs/records.md; JSON Schema: docs/record.schema.json)."""

    format = F.String(required=True, validate=ma.validate.OneOf([FORMAT]), metadata=doc("The record format", FORMAT))
    id = F.String(required=True, metadata=doc("Game id", EXAMPLE_GAME_ID))
    variant = enum_field(VARIANT, "Variant", "classic", required=True)
    rules = F.Nested(RulesSchema, required=True, metadata=doc("The rule options of the match", Rules().as_dict()))
    created_at = _time("When the match was created (null for matches stored before it was kept)", required=True,
                       allow_none=True)
    seeded = F.Boolean(required=True, metadata=doc("Whether the match was created with a (test) seed", False))
    players = nested_list(RecordPlayerSchema, "Every seat", required=True)
    fairness = nested(RevealedFairnessSchema, "The seeds every deck follows from (docs/fairness.md); null for a "
                                              "match dealt before fair shuffles", required=True, allow_none=True)
    cuts = nested_list(CutSchema, "The cuts for the seats, in order", required=True)
    hands = nested_list(RecordHandSchema, "Every hand, in order", required=True)
    result = nested(MatchResultSchema, "The match's result", required=True)
    steps = F.Integer(required=True, metadata=doc("How many steps (actions) the match had", 187))


class ReplaySchema(ResponseSchema):
    step = F.Integer(required=True, metadata=doc("The step shown: the match after this many actions", 12))
    steps = F.Integer(required=True, metadata=doc("How many steps the match had", 187))
    action = nested(RecordActionSchema, "The action of this step (null at step 0)", required=True, allow_none=True)
    game = nested(GameViewSchema, "The match as the public saw it then", required=True)
    seats = nested_list(YouSchema, "Each seat's own view then, by seat: its cards and options", required=True)
    stock = card_list("The stock then, the next card first", ["4d", "Qs"], required=True)


class DecisionSchema(ResponseSchema):
    step = F.Integer(required=True, metadata=doc("The step of the decision", 12))
    hand = F.Integer(required=True, metadata=doc("The hand it was in", 1))
    seat = F.Integer(required=True, metadata=doc("The person's seat", 0))
    phase = enum_field(PHASE, "The phase it was taken in", "discard", required=True)
    played = nested(SuggestedActionSchema, "What the person did", required=True)
    strong = nested(SuggestedActionSchema, "What the `strong` policy would have done there", required=True)
    agreed = F.Boolean(required=True, metadata=doc("Whether they agree (docs/records.md says how that is judged)",
                                                   False))
    missed = enum_field(MISSED_CHANCE, "`gin` or `knock` when one was open at this discard and not taken, else null",
                        KNOCK, required=True, allow_none=True)


class SeatSummarySchema(ResponseSchema):
    seat = F.Integer(required=True, metadata=doc("Seat", 0))
    name = F.String(required=True, metadata=doc("Name", "Ann"))
    bot = F.Boolean(required=True, metadata=doc("Whether a bot played it (it then has no decisions)", False))
    decisions = F.Integer(required=True, metadata=doc("The person's decisions", 84))
    agreed = F.Integer(required=True, metadata=doc("Those where the strong policy agreed", 67))
    agreement = F.Float(required=True, allow_none=True,
                        metadata=doc("agreed / decisions, to 4 decimals (null without decisions)", 0.7976))
    knocks_against = F.Integer(required=True, metadata=doc("Hands in which the other player knocked", 5))
    deadwood_caught = F.Integer(required=True, metadata=doc("Deadwood this seat was left with in those hands, "
                                                            "after lay-offs, in all", 61))
    undercuts_suffered = F.Integer(required=True, metadata=doc("Knocks of this seat that were undercut", 1))
    knocks_missed = F.Integer(required=True, metadata=doc("Discards where a knock was open and not taken", 2))
    gins_missed = F.Integer(required=True, metadata=doc("Discards (or knocks) where gin was open and not taken", 0))


class MatchAnalysisSchema(ResponseSchema):
    format = F.String(required=True, validate=ma.validate.OneOf([ANALYSIS_FORMAT]),
                      metadata=doc("The analysis format", ANALYSIS_FORMAT))
    id = F.String(required=True, metadata=doc("Game id", EXAMPLE_GAME_ID))
    policy = F.String(required=True, metadata=doc("The policy the decisions are compared with", "strong"))
    complete = F.Boolean(required=True, metadata=doc(
        f"Whether every decision is analysed: false only past {MAX_DECISIONS} decisions (a match far longer than "
        "usual), where the analysis stops; the seats' hand figures still count every hand", True))
    decisions = nested_list(DecisionSchema, "Every decision of a person, in order", required=True)
    seats = nested_list(SeatSummarySchema, "A summary per seat", required=True)
