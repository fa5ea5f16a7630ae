"""Computer players: three policies (easy, standard, strong) that choose a seat's move from its
Observation alone, and the hint, which is the standard policy's choice with its reason.

Pure: the standard library and service.rules only; every random choice comes from
``random.Random(obs.entropy)``, so a seeded match replays identically.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from service import rules

from . import easy, reasons, standard, strong


class Level(str, Enum):
    EASY = "easy"
    STANDARD = "standard"
    STRONG = "strong"


@dataclass(frozen=True)
class Hint:
    action: rules.TurnAction
    reason: str
    reason_code: str
    params: dict = field(default_factory=dict)


def _policy(level: Level):
    return {Level.EASY: easy.choose, Level.STANDARD: standard.choose, Level.STRONG: strong.choose}[level]


def choose(level: Level | str, obs: rules.Observation) -> rules.TurnAction:
    """A legal action (one of ``obs.legal``) for the seat to act, chosen by the policy ``level``.

    Raises ValueError for an unknown level or a seat that is not to act."""
    if not obs.to_act:
        raise ValueError(f"seat {obs.seat} is not to act")
    return _policy(Level(level))(obs).action


def hint(obs: rules.Observation) -> Hint:
    """The standard policy's action for the seat to act, with its reason in English, as a code
    and as params. Raises ValueError for a seat that is not to act."""
    if not obs.to_act:
        raise ValueError(f"seat {obs.seat} is not to act")
    choice = standard.choose(obs)
    return Hint(choice.action, reasons.explain(choice), choice.code, choice.params)
