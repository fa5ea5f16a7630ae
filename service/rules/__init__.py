"""The Gin Rummy rules engine: every rule of docs/rules.md, pure (standard library only).

Entry points: ``new_match`` and ``apply`` change matches (``time_out``, ``resign``, ``abort``
end turns and matches); ``view_for`` and ``observe`` read them for one seat; ``encode``/``decode``
store them; ``parse_action`` turns a client's JSON into an action; ``analyze_hand`` and
``best_layoff`` are the solver. Every refusal is a ``GameError``: InvalidInput (bad input),
IllegalMove (forbidden now), Forbidden (never for this seat).
"""
from .actions import (TURN_ACTIONS, Action, ActionType, Advise, Discard, Draw, DrawSource, Knock, LayOff, Pass, Resign,
                      TurnAction, parse_action)
from .cards import CARDS, Card, cards_of, parse_card, parse_cards
from .codec import UnknownFormat, decode, encode
from .errors import Forbidden, GameError, IllegalMove, InvalidInput
from .events import EVENT_TYPES, Event, EventType, decode_event, encode_event, redact_event, shown_event
from .hand import Hand, HandResult, Outcome, Phase, score_hand
from .match import (ADVICE_PER_HAND, Match, MatchResult, Role, Status, abort, apply, check_turn, is_due, iso_time, new_match,
                    note_rematch, resign, time_out)
from .melds import HandAnalysis, LayoffPlan, analyze_hand, best_layoff, deadwood_of
from .observation import Observation, observe
from .options import BOX, CLASSIC, RULE_OPTIONS, SEATS, VARIANTS, Rules, rules_for
from .views import view_for

__all__ = [
    "TURN_ACTIONS", "Action", "ActionType", "Advise", "Discard", "Draw", "DrawSource", "Knock", "LayOff", "Pass",
    "Resign", "TurnAction", "parse_action", "CARDS", "Card", "cards_of", "parse_card", "parse_cards", "UnknownFormat", "decode",
    "encode", "Forbidden", "GameError", "IllegalMove", "InvalidInput", "EVENT_TYPES", "Event", "EventType",
    "decode_event", "encode_event", "redact_event", "shown_event", "Hand", "HandResult", "Outcome", "Phase", "score_hand",
    "ADVICE_PER_HAND", "Match", "MatchResult", "Role", "Status", "abort", "apply", "check_turn", "is_due", "iso_time",
    "new_match", "note_rematch", "resign", "time_out", "HandAnalysis", "LayoffPlan", "analyze_hand",
    "best_layoff", "deadwood_of", "Observation", "observe",
    "BOX", "CLASSIC", "RULE_OPTIONS", "SEATS", "VARIANTS", "Rules", "rules_for", "view_for",
]
