"""How good a 10-card hand is for the seat holding it, as deadwood points (lower is better).

Deadwood alone undervalues a hand whose loose cards are one card away from melds. The
potential of a loose card is its value times the chance that it ends up in a meld, which grows
with its live outs: the cards that would meld it with another loose card and may still be
drawn (not in the pile, not known to be in the opponent's hand).
"""
from __future__ import annotations

from service.rules.cards import CARDS, DECK_SIZE
from service.rules.melds import best_discard_mask, melded_mask

from .knowledge import COMPLETIONS, NEIGHBOURS, Knowledge

VALUE: tuple[int, ...] = tuple(card.value for card in CARDS)
NEIGHBOUR_MASK: tuple[int, ...] = tuple(sum(1 << other for other in NEIGHBOURS[i]) for i in range(DECK_SIZE))

# The chance, per live out, that a loose card gets melded, at a full stock; it shrinks with the
# stock because fewer draws remain. A loose card never counts as more than half melded.
# Tuned with standard against the reference bot (see standard.py): 0.1 gave +1.37 net points
# per hand where 0.25 gave +1.21 (high pairs kept too long), and 0 (deadwood alone) -1.64.
OUT_WEIGHT = 0.1
FULL_STOCK = 31
MAX_MELD_ODDS = 0.5


def indices(mask: int):
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def draws_left(stock_count: int, dead_hand_stock: int) -> int:
    """Stock cards that may still be drawn before the hand is dead."""
    return max(0, stock_count - dead_hand_stock)


def out_weight(stock_count: int, dead_hand_stock: int) -> float:
    """Per live out, the chance of melding a loose card, for the draws left in this hand."""
    return OUT_WEIGHT * draws_left(stock_count, dead_hand_stock) / FULL_STOCK


def potential(loose: int, knowledge: Knowledge, weight: float) -> float:
    """The deadwood that the loose cards' partial melds are expected to save."""
    live, saved = knowledge.live, 0.0
    for index in indices(loose):
        outs = 0.0
        for a, b in COMPLETIONS[index]:
            if loose >> a & 1:
                outs += live[b]
            elif loose >> b & 1:
                outs += live[a]
        if outs:
            saved += VALUE[index] * min(MAX_MELD_ODDS, outs * weight)
    return saved


def hand_value(hand: int, knowledge: Knowledge, weight: float) -> float:
    """Deadwood minus potential of a hand between turns."""
    deadwood, melded = melded_mask(hand)
    return deadwood - potential(hand & ~melded, knowledge, weight)


def touching(hand: int) -> int:
    """The cards that could share a meld with some card of ``hand``."""
    near = 0
    for index in indices(hand):
        near |= NEIGHBOUR_MASK[index]
    return near


def outs_to(hand: int, knowledge: Knowledge, deadwood: int) -> float:
    """How many of the cards I may draw, counted by the chance that the stock holds them, would
    bring a 10-card hand down to ``deadwood`` or less after the best discard."""
    # For gin only a card that melds can help; for a knock a loose low card can still take the
    # place of a higher one.
    candidates = knowledge.unseen & touching(hand) if deadwood == 0 else knowledge.unseen
    live = knowledge.live
    return sum(live[index] for index in indices(candidates) if best_discard_mask(hand | 1 << index)[0] <= deadwood)


def next_draw(hand: int, knowledge: Knowledge, knock_limit: int) -> tuple[float, float, float]:
    """What the next stock draw may do for a 10-card hand, in one solver call per unseen card:
    ``outs_to(hand, knowledge, knock_limit)`` and ``outs_to(hand, knowledge, 0)`` (the same
    sums, in the same order), and the least deadwood after that draw and the best discard,
    summed over the unseen cards weighted by the chance that the stock holds them (divide by
    the sum of those chances for the mean)."""
    live, near = knowledge.live, touching(hand)
    knock = gin = after = 0.0
    for index in indices(knowledge.unseen):
        # The best discard may be the card drawn: never more than the hand's deadwood now.
        deadwood = best_discard_mask(hand | 1 << index)[0]
        if deadwood <= knock_limit:
            knock += live[index]
        if deadwood == 0 and near >> index & 1:
            gin += live[index]
        after += live[index] * deadwood
    return knock, gin, after
