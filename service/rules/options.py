"""Rule options (docs/rules.md, "Rule options"): defaults per variant, validation at match creation."""
from __future__ import annotations

from dataclasses import dataclass, fields

from .cards import SHOWN_VALUE_MAX, shown_param, shown_value
from .errors import InvalidInput

CLASSIC = "classic"
BOX = "box"
VARIANTS = (CLASSIC, BOX)
SEATS = {CLASSIC: 2, BOX: 3}


@dataclass(frozen=True)
class Rules:
    """Every rule option, with the classic defaults (the box defaults differ, see ``rules_for``)."""

    knock_limit: int = 10
    gin_bonus: int = 20
    undercut_bonus: int = 10
    target_score: int = 100
    game_bonus: int = 100
    line_bonus: int = 20
    shutout_bonus: int = 100
    layoff_on_gin: bool = False
    dead_hand_stock: int = 2
    turn_seconds: int | None = None  # None: turns are not timed

    def as_dict(self) -> dict:
        return {name: getattr(self, name) for name in _OPTION_NAMES}


_OPTION_NAMES = tuple(f.name for f in fields(Rules))
BOX_DEFAULTS = {"gin_bonus": 25, "game_bonus": 0, "line_bonus": 0, "shutout_bonus": 0}


@dataclass(frozen=True)
class RuleOption:
    """How an option is documented and checked: booleans have no range; ``nullable`` options
    may be null, which turns them off."""

    description: str
    low: int | None = None
    high: int | None = None
    nullable: bool = False

    @property
    def is_boolean(self) -> bool:
        return self.low is None


RULE_OPTIONS: dict[str, RuleOption] = {
    "knock_limit": RuleOption("Highest deadwood count with which a player may knock (0: gin only).", 0, 10),
    "gin_bonus": RuleOption("Bonus for going gin, added to the defender's deadwood.", 0, 1000),
    "undercut_bonus": RuleOption("Bonus for the defender when the knocker is undercut (ties included).", 0, 1000),
    "target_score": RuleOption("Cumulative hand points that end the match.", 1, 10000),
    "game_bonus": RuleOption("End bonus for the match winner.", 0, 1000),
    "line_bonus": RuleOption("End bonus per hand won, to each player.", 0, 1000),
    "shutout_bonus": RuleOption("End bonus for a winner whose opponents won no hand.", 0, 1000),
    "layoff_on_gin": RuleOption("Whether the defender may lay off against gin."),
    # The stock starts at 31 cards; a threshold near that would void hands before anyone plays.
    "dead_hand_stock": RuleOption("Stock size at which a non-knocking discard ends the hand as dead.", 0, 20),
    "turn_seconds": RuleOption("Seconds a person has for each turn; past it the service plays the move with its "
                               "standard policy and records a timeout. null (the default): no time limit.",
                               10, 86400, nullable=True),
}


def rules_for(variant: object, options: dict | None = None) -> Rules:
    """The rules of a new match: the variant's defaults overridden by ``options``.

    Raises InvalidInput: ``invalid_request`` for an unknown variant, ``invalid_rules`` for an
    unknown option or a value of the wrong type or out of range (field ``rules.<name>``).
    """
    if variant not in VARIANTS:
        raise InvalidInput(f"variant must be one of {', '.join(VARIANTS)}, not {shown_value(variant)}", field="variant",
                           params={"allowed": list(VARIANTS)})
    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise InvalidInput("rules must be an object of rule options", code="invalid_rules", field="rules")
    values = Rules().as_dict() | (BOX_DEFAULTS if variant == BOX else {})
    for name, value in options.items():
        values[name] = _checked(name, value)
    return Rules(**values)


def _checked(name: object, value: object):
    if name not in RULE_OPTIONS:
        known = ", ".join(_OPTION_NAMES)
        shown = shown_value(name)
        raise InvalidInput(f"unknown rule option {shown}; known options: {known}", code="invalid_rules",
                           field=f"rules.{str(name)[:SHOWN_VALUE_MAX]}",
                           params={"option": shown_param(name), "known": list(_OPTION_NAMES)})
    option = RULE_OPTIONS[name]
    if value is None and option.nullable:
        return value
    if option.is_boolean:
        if not isinstance(value, bool):
            raise InvalidInput(f"rule option {name} must be true or false", code="invalid_rules", field=f"rules.{name}",
                               params={"option": name})
        return value
    low, high = option.low, option.high
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInput(f"rule option {name} must be an integer from {low} to {high}, not {shown_value(value)}",
                           code="invalid_rules", field=f"rules.{name}", params={"option": name, "min": low, "max": high})
    return value
