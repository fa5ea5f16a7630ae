"""What a seat can infer about the cards it cannot see, from its Observation alone.

Every card is in one of four places as far as the seat knows: its own hand, the discard pile,
the opponent's hand for sure (taken from the pile and not shed since), or unseen (the stock or
the rest of the opponent's hand). The opponent's pile play shifts the odds of the unseen cards:
a card taken from the pile was wanted for a meld, so its neighbours are likely held; a card shed
or declined was not, so its neighbours are less likely.
"""
from __future__ import annotations

from dataclasses import dataclass

from service import rules
from service.rules.cards import DECK_SIZE, RANK_COUNT

ALL_CARDS = (1 << DECK_SIZE) - 1

# How much a pick or a shed moves the odds that the opponent holds a neighbouring card (same
# rank, or same suit one or two ranks away). Set by judgement (a pick doubles the odds, a shed
# halves them), not tuned: bench/bots.py time went to the constants of standard.py first.
WANTED_FACTOR = 2.0
UNWANTED_FACTOR = 0.5
MAX_HOLD_ODDS = 0.95


def neighbours(index: int) -> list[int]:
    """The cards that can share a meld with card ``index`` directly: same rank, or same suit ±1, ±2."""
    rank, base = index % RANK_COUNT, index - index % RANK_COUNT
    near = [other * RANK_COUNT + rank for other in range(4) if other * RANK_COUNT + rank != index]
    return near + [base + r for r in (rank - 2, rank - 1, rank + 1, rank + 2) if 0 <= r < RANK_COUNT]


NEIGHBOURS: tuple[tuple[int, ...], ...] = tuple(tuple(neighbours(i)) for i in range(DECK_SIZE))


def _completions(index: int) -> tuple[tuple[int, int], ...]:
    """The pairs of other cards that make a three-card meld with card ``index``."""
    rank, base = index % RANK_COUNT, index - index % RANK_COUNT
    same = [s * RANK_COUNT + rank for s in range(4) if s * RANK_COUNT + rank != index]
    pairs = [(same[0], same[1]), (same[0], same[2]), (same[1], same[2])]
    for low in (rank - 2, rank - 1, rank):
        if low >= 0 and low + 2 < RANK_COUNT:
            pairs.append(tuple(base + r for r in range(low, low + 3) if r != rank))
    return tuple(pairs)


COMPLETIONS: tuple[tuple[tuple[int, int], ...], ...] = tuple(_completions(i) for i in range(DECK_SIZE))


@dataclass(frozen=True)
class Knowledge:
    mine: int
    pile: int
    theirs: int  # cards the opponent surely holds
    unseen: int
    hidden: int  # how many of the opponent's cards are unseen
    holds: tuple[float, ...]  # per card: the chance that the opponent holds it
    live: tuple[float, ...]  # per card: the chance that it is in the stock, so I may still draw it
    unwanted: int  # cards the opponent shed or declined

    def danger(self, index: int) -> float:
        """Roughly, the chance that card ``index`` completes a meld for the opponent if discarded."""
        holds = self.holds
        return min(1.0, sum(holds[a] * holds[b] for a, b in COMPLETIONS[index]))


def know(obs: rules.Observation) -> Knowledge:
    pile = sum(card.bit for card in obs.pile)
    theirs = obs.theirs.picked & ~obs.theirs.shed & ~pile & ~obs.cards
    unseen = ALL_CARDS & ~obs.cards & ~pile & ~theirs
    hidden = max(0, obs.opponent_card_count - theirs.bit_count())
    unwanted = obs.theirs.shed | obs.theirs.declined
    base = hidden / max(1, unseen.bit_count())
    holds, live = [0.0] * DECK_SIZE, [0.0] * DECK_SIZE
    for index in range(DECK_SIZE):
        if theirs >> index & 1:
            holds[index] = 1.0
        elif unseen >> index & 1:
            odds = base
            for other in NEIGHBOURS[index]:
                if theirs >> other & 1:
                    odds *= WANTED_FACTOR
                elif unwanted >> other & 1:
                    odds *= UNWANTED_FACTOR
            holds[index] = min(MAX_HOLD_ODDS, odds)
            live[index] = 1.0 - holds[index]
    return Knowledge(obs.cards, pile, theirs, unseen, hidden, tuple(holds), tuple(live), unwanted)
