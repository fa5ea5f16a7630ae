"""The moves a seat can make, as small frozen value objects."""
from __future__ import annotations

from dataclasses import dataclass

from .cards import Card

Melds = tuple[tuple[Card, ...], ...]


@dataclass(frozen=True)
class Draw:
    source: str  # "stock" or "discard" (during the upcard offer, "discard" takes the upcard)


@dataclass(frozen=True)
class Pass:
    """Decline the upcard during the upcard offer."""


@dataclass(frozen=True)
class Discard:
    card: Card


@dataclass(frozen=True)
class Knock:
    discard: Card
    melds: Melds | None = None  # None: the engine's minimum-deadwood arrangement


@dataclass(frozen=True)
class LayOff:
    """The defender's answer to a knock; both None means the engine's best choice."""

    melds: Melds | None = None
    layoffs: tuple[tuple[Card, int], ...] | None = None

    @property
    def is_automatic(self) -> bool:
        return self.melds is None and self.layoffs is None


@dataclass(frozen=True)
class Advise:
    """The box sitter's advice to the captain."""

    message: str
    action: dict | None = None


Action = Draw | Pass | Discard | Knock | LayOff | Advise
