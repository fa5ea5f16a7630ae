"""A brute-force Gin Rummy solver that checks the engine's fast one (service/rules/melds.py).

Written from docs/rules.md alone and on purpose slow and literal: it shares no code or card
representation with the engine. Cards are their wire notation ("Th"). Every meld contained
in a hand is listed, every collection of pairwise-disjoint melds is tried, every discard is
tried, and every sequence of legal lay-offs is simulated card by card on the knocker's melds
to find every group of the defender's cards that can be laid off.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import combinations

RANKS = "A23456789TJQK"
SUITS = "cdhs"
DECK = tuple(rank + suit for suit in SUITS for rank in RANKS)
Meld = frozenset[str]


def card_text(card: object) -> str:
    """The notation of a card given as text or as any object whose ``str`` is its notation."""
    text = str(card)
    if len(text) != 2 or text[0] not in RANKS or text[1] not in SUITS:
        raise ValueError(f"not a card: {card!r}")
    return text


def hand_of(cards: Iterable[object]) -> frozenset[str]:
    """The cards as a set of notations. Raises ValueError on a bad or repeated card."""
    texts = [card_text(c) for c in cards]
    if len(set(texts)) != len(texts):
        raise ValueError(f"repeated card in {texts}")
    return frozenset(texts)


def rank_index(card: str) -> int:
    """0 for the ace up to 12 for the king (ace is low and never follows the king)."""
    return RANKS.index(card[0])


def value(card: str) -> int:
    """Deadwood points: ace 1, 2-9 face value, T J Q K 10."""
    return min(rank_index(card) + 1, 10)


def points(cards: Iterable[str]) -> int:
    return sum(value(c) for c in cards)


def is_set(cards: Iterable[str]) -> bool:
    cards = set(cards)
    return 3 <= len(cards) <= 4 and len({c[0] for c in cards}) == 1


def is_run(cards: Iterable[str]) -> bool:
    cards = set(cards)
    if len(cards) < 3 or len({c[1] for c in cards}) != 1:
        return False
    ranks = sorted(rank_index(c) for c in cards)
    return ranks == list(range(ranks[0], ranks[0] + len(ranks)))


def is_meld(cards: Iterable[str]) -> bool:
    cards = set(cards)
    return is_set(cards) or is_run(cards)


def melds_in(hand: Iterable[str]) -> list[Meld]:
    """Every meld whose cards are all in the hand: each 3- and 4-card set, each run of 3 or more."""
    hand = frozenset(hand)
    melds: list[Meld] = []
    for rank in RANKS:
        same_rank = sorted(c for c in hand if c[0] == rank)
        for size in (3, 4):
            melds.extend(frozenset(group) for group in combinations(same_rank, size))
    for suit in SUITS:
        for low in range(len(RANKS)):
            for high in range(low + 3, len(RANKS) + 1):  # ranks low..high-1, no wrap past the king
                run = frozenset(RANKS[r] + suit for r in range(low, high))
                if run <= hand:
                    melds.append(run)
    return melds


def disjoint_collections(hand: Iterable[str]) -> Iterator[tuple[Meld, ...]]:
    """Every collection (the empty one included) of pairwise-disjoint melds within the hand."""
    melds = melds_in(hand)

    def extend(start: int, used: frozenset[str], chosen: tuple[Meld, ...]) -> Iterator[tuple[Meld, ...]]:
        yield chosen
        for i in range(start, len(melds)):
            if not melds[i] & used:
                yield from extend(i + 1, used | melds[i], chosen + (melds[i],))

    return extend(0, frozenset(), ())


def best_arrangement(cards: Iterable[object]) -> tuple[int, tuple[Meld, ...]]:
    """(minimum deadwood, one collection of melds achieving it) over every collection."""
    hand = hand_of(cards)
    best = None
    for melds in disjoint_collections(hand):
        deadwood = points(hand - frozenset().union(*melds))
        if best is None or deadwood < best[0]:
            best = (deadwood, melds)
    return best


def min_deadwood(cards: Iterable[object]) -> int:
    return best_arrangement(cards)[0]


def deadwood_after_discards(cards: Iterable[object]) -> dict[str, int]:
    """For each card of the hand: the minimum deadwood of the hand without it."""
    hand = hand_of(cards)
    return {card: min_deadwood(hand - {card}) for card in sorted(hand)}


def best_discard(cards: Iterable[object], forbidden: object | None = None) -> tuple[int, set[str]]:
    """(least deadwood after one discard, every discard that achieves it), never discarding ``forbidden``."""
    after = deadwood_after_discards(cards)
    if forbidden is not None:
        after.pop(card_text(forbidden), None)
    least = min(after.values())
    return least, {card for card, deadwood in after.items() if deadwood == least}


# --- Lay-offs ----------------------------------------------------------------------------------

def fits(meld: Meld, card: str) -> bool:
    """Whether ``card`` extends the meld as it stands: a set's 4th card or a run's next card at either end."""
    if card in meld:
        return False
    if is_set(meld):
        return len(meld) < 4 and card[0] == next(iter(meld))[0]
    ranks = [rank_index(c) for c in meld]
    return card[1] == next(iter(meld))[1] and rank_index(card) in (min(ranks) - 1, max(ranks) + 1)


def layable_groups(cards: frozenset[str], table: tuple[Meld, ...]) -> set[frozenset[str]]:
    """Every group of ``cards`` that can be laid off on the table's melds one card at a time, in some order.

    Explores every table reachable by legal lay-offs: from each one, every remaining card onto
    every meld it fits as that meld stands (so a card that fits two melds is tried on both, and
    chains grow card by card). A group is layable exactly when some such sequence lays it all.
    """
    on_table = frozenset().union(*table)
    seen, todo, groups = {table}, [table], set()
    while todo:
        melds = todo.pop()
        laid = frozenset().union(*melds) - on_table
        groups.add(laid)
        for card in cards - laid:
            for i, meld in enumerate(melds):
                if fits(meld, card):
                    grown = melds[:i] + (meld | {card},) + melds[i + 1:]
                    if grown not in seen:
                        seen.add(grown)
                        todo.append(grown)
    return groups


def best_layoff_deadwood(knocker_melds: Iterable[Iterable[object]], defender_cards: Iterable[object]) -> int:
    """The least deadwood the defender can keep: over every collection of their own disjoint melds,
    and every group of the cards left over that can all be laid off on the knocker's melds."""
    table = tuple(frozenset(card_text(c) for c in meld) for meld in knocker_melds)
    defender = hand_of(defender_cards)
    layable = layable_groups(defender, table)
    best = points(defender)
    for melds in disjoint_collections(defender):
        loose = defender - frozenset().union(*melds)
        for group in layable:
            if group <= loose:
                best = min(best, points(loose - group))
    return best
