"""Rule options of RULES.md ("Rule options"): defaults per variant, validation at match creation."""
from __future__ import annotations

from dataclasses import dataclass, fields

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

    def as_dict(self) -> dict:
        return {name: getattr(self, name) for name in _OPTION_NAMES}


_OPTION_NAMES = tuple(f.name for f in fields(Rules))
BOX_DEFAULTS = {"gin_bonus": 25, "game_bonus": 0, "line_bonus": 0, "shutout_bonus": 0}

# name -> (description, minimum, maximum); booleans have no range.
RULE_OPTIONS: dict[str, tuple[str, int | None, int | None]] = {
    "knock_limit": ("Highest deadwood count with which a player may knock (0: gin only).", 0, 10),
    "gin_bonus": ("Bonus for going gin, added to the defender's deadwood.", 0, 1000),
    "undercut_bonus": ("Bonus for the defender when the knocker is undercut (ties included).", 0, 1000),
    "target_score": ("Cumulative hand points that end the match.", 1, 10000),
    "game_bonus": ("End bonus for the match winner.", 0, 1000),
    "line_bonus": ("End bonus per hand won, to each player.", 0, 1000),
    "shutout_bonus": ("End bonus for a winner whose opponents won no hand.", 0, 1000),
    "layoff_on_gin": ("Whether the defender may lay off against gin.", None, None),
    # The stock starts at 31 cards; a threshold near that would void hands before anyone plays.
    "dead_hand_stock": ("Stock size at which a non-knocking discard ends the hand as dead.", 0, 20),
}


def rules_for(variant: object, options: dict | None = None) -> Rules:
    """The rules of a new match: the variant's defaults overridden by ``options``.

    Raises InvalidInput: ``invalid_request`` for an unknown variant, ``invalid_rules`` for an
    unknown option or a value of the wrong type or out of range (field ``rules.<name>``).
    """
    if variant not in VARIANTS:
        raise InvalidInput("invalid_request", f"variant must be one of {', '.join(VARIANTS)}, not {variant!r}", "variant")
    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise InvalidInput("invalid_rules", "rules must be an object of rule options", "rules")
    values = Rules().as_dict() | (BOX_DEFAULTS if variant == BOX else {})
    for name, value in options.items():
        values[name] = _checked(name, value)
    return Rules(**values)


def _checked(name: object, value: object):
    if name not in RULE_OPTIONS:
        known = ", ".join(_OPTION_NAMES)
        raise InvalidInput("invalid_rules", f"unknown rule option {name!r}; known options: {known}", f"rules.{name}")
    _, low, high = RULE_OPTIONS[name]
    if low is None:
        if not isinstance(value, bool):
            raise InvalidInput("invalid_rules", f"rule option {name} must be true or false", f"rules.{name}")
        return value
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInput("invalid_rules", f"rule option {name} must be an integer from {low} to {high}, not {value!r}", f"rules.{name}")
    return value
