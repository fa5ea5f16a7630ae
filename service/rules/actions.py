"""The game's vocabulary: what a seat can do, as small frozen values that round-trip to JSON.

Every action has a ``kind`` (an ``ActionType``) and ``to_json()``; ``parse_action(kind, body)``
is its inverse and the one place where a client's JSON becomes an action, so the error for a
bad card, source or meld index is decided here, with the field it concerns.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import ClassVar

from .cards import Card, notation, parse_card, shown_value
from .errors import InvalidInput

Melds = tuple[tuple[Card, ...], ...]


class ActionType(str, Enum):
    """What a request asks for; the turn actions are the first five."""

    DRAW = "draw"
    PASS = "pass"
    DISCARD = "discard"
    KNOCK = "knock"
    LAYOFF = "layoff"
    ADVICE = "advice"
    RESIGN = "resign"


TURN_ACTIONS = (ActionType.DRAW, ActionType.PASS, ActionType.DISCARD, ActionType.KNOCK, ActionType.LAYOFF)


class DrawSource(str, Enum):
    STOCK = "stock"
    DISCARD = "discard"  # the discard pile; during the upcard offer, the upcard


@dataclass(frozen=True)
class Draw:
    kind: ClassVar[ActionType] = ActionType.DRAW
    source: DrawSource

    def __post_init__(self) -> None:
        # Code and tests write Draw("stock"); a value outside DrawSource raises ValueError.
        object.__setattr__(self, "source", DrawSource(self.source))

    def to_json(self) -> dict:
        return {"type": self.kind.value, "source": self.source.value}


@dataclass(frozen=True)
class Pass:
    """Decline the upcard during the upcard offer."""

    kind: ClassVar[ActionType] = ActionType.PASS

    def to_json(self) -> dict:
        return {"type": self.kind.value}


@dataclass(frozen=True)
class Discard:
    kind: ClassVar[ActionType] = ActionType.DISCARD
    card: Card

    def to_json(self) -> dict:
        return {"type": self.kind.value, "card": str(self.card)}


@dataclass(frozen=True)
class Knock:
    kind: ClassVar[ActionType] = ActionType.KNOCK
    discard: Card
    melds: Melds | None = None  # None: the engine's minimum-deadwood arrangement

    def to_json(self) -> dict:
        body = {"type": self.kind.value, "discard": str(self.discard)}
        if self.melds is not None:
            body["melds"] = [notation(meld) for meld in self.melds]
        return body


@dataclass(frozen=True)
class LayOff:
    """The defender's answer to a knock; both None means the engine's best choice."""

    kind: ClassVar[ActionType] = ActionType.LAYOFF
    melds: Melds | None = None
    layoffs: tuple[tuple[Card, int], ...] | None = None

    @property
    def is_automatic(self) -> bool:
        return self.melds is None and self.layoffs is None

    def to_json(self) -> dict:
        body: dict = {"type": self.kind.value}
        if not self.is_automatic:
            body["melds"] = [notation(meld) for meld in self.melds or ()]
            body["layoffs"] = [{"card": str(card), "meld": meld} for card, meld in self.layoffs or ()]
        return body


@dataclass(frozen=True)
class Advise:
    """The box sitter's advice to the captain: a message and, optionally, a suggested action."""

    kind: ClassVar[ActionType] = ActionType.ADVICE
    message: str
    action: TurnAction | None = None

    def to_json(self) -> dict:
        return {"type": self.kind.value, "message": self.message,
                "action": None if self.action is None else self.action.to_json()}


@dataclass(frozen=True)
class Resign:
    """A player gives up the match."""

    kind: ClassVar[ActionType] = ActionType.RESIGN

    def to_json(self) -> dict:
        return {"type": self.kind.value}


TurnAction = Draw | Pass | Discard | Knock | LayOff
Action = TurnAction | Advise | Resign

# A knocker lays down at most three melds; the bound only keeps a hostile index small.
MELD_INDEX_MAX = 9


def parse_action(kind: ActionType | str, body: Mapping | None) -> Action:
    """The action of ``kind`` that ``body`` (the JSON object of a request) describes.

    Missing optional fields take their defaults; unknown fields are the caller's business
    (the HTTP layer refuses them). Raises InvalidInput: ``invalid_card`` for a card that is not
    one (naming its field, e.g. ``melds.1.2``), ``invalid_request`` for anything else malformed.
    """
    try:
        kind = ActionType(kind)
    except ValueError:
        raise InvalidInput(f"unknown action type {kind!r}", field="type",
                           params={"allowed": [t.value for t in ActionType]}) from None
    body = {} if body is None else body
    if not isinstance(body, Mapping):
        raise InvalidInput("the action must be a JSON object")
    return _PARSERS[kind](body)


def _draw(body: Mapping) -> Draw:
    source = body.get("source")
    try:
        return Draw(DrawSource(source))
    except ValueError:
        raise InvalidInput(f"source must be 'stock' or 'discard', not {shown_value(source)}", field="source",
                           params={"allowed": [s.value for s in DrawSource]}) from None


def _knock(body: Mapping) -> Knock:
    melds = body.get("melds")
    return Knock(_card(body.get("discard"), "discard"), None if melds is None else _melds(melds, "melds"))


def _lay_off(body: Mapping) -> LayOff:
    melds, layoffs = body.get("melds"), body.get("layoffs")
    if melds is None and layoffs is None:
        return LayOff()
    # Explicit means explicit: the part left out is empty, not the engine's choice.
    return LayOff(_melds(melds or [], "melds"), _layoffs(layoffs or [], "layoffs"))


def _advise(body: Mapping) -> Advise:
    message, suggested = body.get("message"), body.get("action")
    if not isinstance(message, str):
        raise InvalidInput("message must be a string", field="message")
    if suggested is None:
        return Advise(message)
    if not isinstance(suggested, Mapping) or suggested.get("type") not in {t.value for t in TURN_ACTIONS}:
        raise InvalidInput("action must be an action object with a turn action type", field="action.type",
                           params={"allowed": [t.value for t in TURN_ACTIONS]})
    try:
        return Advise(message, parse_action(suggested["type"], suggested))
    except InvalidInput as error:
        raise InvalidInput(error.detail, code=error.code, field=f"action.{error.field}" if error.field else "action",
                           params=error.params) from None


_PARSERS = {
    ActionType.DRAW: _draw,
    ActionType.PASS: lambda body: Pass(),
    ActionType.DISCARD: lambda body: Discard(_card(body.get("card"), "card")),
    ActionType.KNOCK: _knock,
    ActionType.LAYOFF: _lay_off,
    ActionType.ADVICE: _advise,
    ActionType.RESIGN: lambda body: Resign(),
}


def _card(value: object, field: str) -> Card:
    return parse_card(value, field)


def _melds(value: object, field: str) -> Melds:
    # A card named twice is well-formed input: the engine refuses it as invalid_melds (409).
    if not isinstance(value, list) or not all(isinstance(meld, list) for meld in value):
        raise InvalidInput("melds must be a list of card lists", field=field)
    return tuple(tuple(_card(card, f"{field}.{n}.{i}") for i, card in enumerate(meld)) for n, meld in enumerate(value))


def _layoffs(value: object, field: str) -> tuple[tuple[Card, int], ...]:
    if not isinstance(value, list):
        raise InvalidInput("layoffs must be a list of {card, meld} objects", field=field)
    parsed = []
    for n, item in enumerate(value):
        if not isinstance(item, Mapping):
            raise InvalidInput("a lay-off is an object {card, meld}", field=f"{field}.{n}")
        meld = item.get("meld")
        if isinstance(meld, bool) or not isinstance(meld, int) or not 0 <= meld <= MELD_INDEX_MAX:
            raise InvalidInput(f"meld must be the index of a knocker's meld (0-{MELD_INDEX_MAX})",
                               field=f"{field}.{n}.meld")
        parsed.append((_card(item.get("card"), f"{field}.{n}.card"), meld))
    return tuple(parsed)

