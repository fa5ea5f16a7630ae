"""Cards, their wire notation and values, bitmask helpers and the shuffled deck (docs/rules.md, "Cards").

A card's index is ``suit * 13 + rank`` (rank 0 = ace … 12 = king), so one suit of a hand's
52-bit mask is 13 contiguous bits: the solver works on those per-suit masks.
"""
from __future__ import annotations

import json
import random
import secrets
from collections.abc import Iterable
from dataclasses import dataclass

from .errors import InvalidInput

RANKS = "A23456789TJQK"
SUITS = "cdhs"
RANK_COUNT = len(RANKS)
DECK_SIZE = RANK_COUNT * len(SUITS)
SUIT_BITS = (1 << RANK_COUNT) - 1
FACE_VALUE = 10


def rank_value(rank: int) -> int:
    """Deadwood points of a rank: ace 1, two to nine face value, ten and court cards 10."""
    return min(rank + 1, FACE_VALUE)


@dataclass(frozen=True, slots=True)
class Card:
    """One of the 52 cards; use ``Card.parse("Th")`` or ``CARDS[index]``, never build duplicates."""

    index: int

    @property
    def rank(self) -> int:
        return self.index % RANK_COUNT

    @property
    def suit(self) -> int:
        return self.index // RANK_COUNT

    @property
    def value(self) -> int:
        return rank_value(self.rank)

    @property
    def bit(self) -> int:
        return 1 << self.index

    def __str__(self) -> str:
        return NOTATION[self.index]

    def __hash__(self) -> int:
        # Cards key sets and dicts on hot paths; the index is already a perfect hash.
        return self.index

    def __repr__(self) -> str:
        return f"Card({self})"

    @staticmethod
    def parse(text: object, field: str | None = None) -> Card:
        """The card written as ``text`` (e.g. "Th"). Raises InvalidInput(invalid_card) naming it."""
        card = CARD_BY_TEXT.get(text) if isinstance(text, str) else None
        if card is None:
            shown = shown_value(text)
            raise InvalidInput(f"{shown} is not a card: write rank (A23456789TJQK) then suit (cdhs), e.g. 'Th'",
                               code="invalid_card", field=field, params={"value": shown_param(text)})
        return card


NOTATION: tuple[str, ...] = tuple(RANKS[i % RANK_COUNT] + SUITS[i // RANK_COUNT] for i in range(DECK_SIZE))
CARDS: tuple[Card, ...] = tuple(Card(i) for i in range(DECK_SIZE))
CARD_BY_TEXT: dict[str, Card] = {str(c): c for c in CARDS}


def parse_card(text: object, field: str | None = None) -> Card:
    """``Card.parse`` as a function."""
    return Card.parse(text, field)


def parse_cards(texts: Iterable[object], field: str | None = None) -> tuple[Card, ...]:
    """Parse a list of distinct cards (notation or Card). Raises InvalidInput(invalid_card) on bad or repeated values."""
    if isinstance(texts, (str, bytes)) or not isinstance(texts, Iterable):
        raise InvalidInput("expected a list of cards", code="invalid_request", field=field)
    texts = list(texts)
    try:
        cards = tuple(map(CARD_BY_TEXT.__getitem__, texts))
    except (KeyError, TypeError):
        # Not all plain notation: Card objects, or a bad value that the error must name.
        cards = tuple(t if isinstance(t, Card) else Card.parse(t, _item(field, n)) for n, t in enumerate(texts))
    if len(set(cards)) != len(cards):
        seen: set[Card] = set()
        repeated = next(c for c in cards if c in seen or seen.add(c))
        raise InvalidInput(f"card {repeated} appears more than once", code="invalid_card",
                           field=_item(field, cards.index(repeated, cards.index(repeated) + 1)),
                           params={"value": str(repeated)})
    return cards


def _item(field: str | None, index: int) -> str | None:
    return None if field is None else f"{field}.{index}"


# A value named in an error is cut to this many characters: a client's text is not echoed whole.
SHOWN_VALUE_MAX = 20


def shown_value(value: object) -> str:
    """``repr(value)``, cut short, for error messages."""
    return _cut(repr(value))


def shown_param(value: object) -> str:
    """``value`` as the client wrote it, cut short, for a problem's ``params``: text as it is
    (no quotes for a client to strip), any other JSON value as JSON."""
    if isinstance(value, str):
        return _cut(value)
    try:
        return _cut(json.dumps(value))
    except (TypeError, ValueError):  # not a JSON value: a caller of the engine's own API
        return shown_value(value)


def _cut(shown: str) -> str:
    return shown if len(shown) <= SHOWN_VALUE_MAX else shown[:SHOWN_VALUE_MAX] + "…"


def as_card(card: Card | str) -> Card:
    """Accept a Card or its notation (the public entry points take both)."""
    return card if isinstance(card, Card) else Card.parse(card)


def mask_of(cards: Iterable[Card]) -> int:
    mask = 0
    for card in cards:
        mask |= 1 << card.index
    return mask


def cards_of(mask: int) -> list[Card]:
    """The cards of a mask, in suit-then-rank order."""
    out = []
    while mask:
        low = mask & -mask
        out.append(CARDS[low.bit_length() - 1])
        mask ^= low
    return out


def notation(cards: Iterable[Card]) -> list[str]:
    return [NOTATION[c.index] for c in cards]


def new_deck(seed: int | None, label: str) -> list[Card]:
    """A shuffled deck: from the OS's unpredictable source, or reproducibly from ``seed``.

    ``label`` separates the independent shuffles of one seeded match (each cut, each deal),
    so replaying a match from its seed gives the same cards everywhere.
    """
    deck = list(CARDS)
    rng = secrets.SystemRandom() if seed is None else random.Random(f"ginrummy:{seed}:{label}")
    rng.shuffle(deck)
    return deck
