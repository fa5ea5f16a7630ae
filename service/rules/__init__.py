"""The Gin Rummy rules engine: every rule of ../shared/RULES.md, pure (standard library only).

Entry points: ``new_match`` and ``apply`` change matches; ``view_for`` and ``hint_for`` read
them for one viewer; ``encode``/``decode`` store them; ``analyze_hand`` and ``best_layoff``
are the solver. Errors: InvalidInput (bad input), IllegalMove (forbidden now), Forbidden.
"""
from .actions import Advise, Discard, Draw, Knock, LayOff, Pass
from .cards import CARDS, Card, parse_card, parse_cards
from .codec import decode, encode
from .errors import Forbidden, IllegalMove, InvalidInput, RulesError
from .events import Event, decode_event, encode_event, redact_event
from .hand import Phase
from .hints import hint_for
from .match import Match, apply, new_match
from .melds import HandAnalysis, LayoffPlan, analyze_hand, best_layoff
from .options import BOX, CLASSIC, RULE_OPTIONS, Rules, rules_for
from .views import view_for

__all__ = [
    "Advise", "Discard", "Draw", "Knock", "LayOff", "Pass", "CARDS", "Card", "parse_card", "parse_cards",
    "decode", "encode", "Forbidden", "IllegalMove", "InvalidInput", "RulesError", "Event", "decode_event",
    "encode_event", "redact_event", "Phase", "hint_for", "Match", "apply", "new_match", "HandAnalysis",
    "LayoffPlan", "analyze_hand", "best_layoff", "BOX", "CLASSIC", "RULE_OPTIONS", "Rules", "rules_for", "view_for",
]
