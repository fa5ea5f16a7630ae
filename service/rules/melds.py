"""Melds, the exact minimum-deadwood solver, the lay-off solver and arrangement checks (docs/rules.md, "Melds and deadwood", "The lay-off step").

How the solver stays exact and fast: runs never cross suits, so for every 13-bit suit mask a
table built once at import holds the least deadwood that runs alone leave in that suit
(``_SUIT_DEAD``) and the runs that achieve it. Sets are what couple the suits, and a hand of
at most 11 cards has at most three ranks with three or more cards; the solver enumerates every
way of taking sets from those ranks (none, the four, or each three of four) and reads the rest
from the tables. For 11 cards the best discard needs no 11-fold repetition: a discard touches
one suit, so a second table holds, per suit mask, the best deadwood after removing one card.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import product
from typing import NamedTuple

from .cards import CARDS, RANK_COUNT, SUIT_BITS, Card, as_card, cards_of, mask_of, parse_cards, rank_value
from .errors import IllegalMove, InvalidInput

MIN_MELD = 3
MAX_SET = 4
SUIT_COUNT = 4
NO_DISCARD = 1 << 30  # larger than any deadwood: "this suit has no card to discard"
DEFAULT_KNOCK_LIMIT = 10


def _build_suit_tables():
    size = 1 << RANK_COUNT
    dead = [0] * size
    runs: list[tuple[int, ...]] = [()] * size
    for mask in range(1, size):
        low = mask & -mask
        rank = low.bit_length() - 1
        best, best_runs = dead[mask ^ low] + rank_value(rank), runs[mask ^ low]
        # The lowest card is either loose or starts a run, since nothing in the mask lies below it.
        run, nxt = low, rank + 1
        while nxt < RANK_COUNT and mask >> nxt & 1:
            run |= 1 << nxt
            nxt += 1
            if nxt - rank >= MIN_MELD and dead[mask ^ run] < best:
                best, best_runs = dead[mask ^ run], (run,) + runs[mask ^ run]
        dead[mask], runs[mask] = best, best_runs
    # Best single removal per suit mask; ties go to the highest rank, the card worth most to shed.
    dead_after, discard_rank = [NO_DISCARD] * size, [-1] * size
    for mask in range(1, size):
        for rank in range(RANK_COUNT - 1, -1, -1):
            if mask >> rank & 1 and dead[mask ^ (1 << rank)] < dead_after[mask]:
                dead_after[mask], discard_rank[mask] = dead[mask ^ (1 << rank)], rank
    gain = [NO_DISCARD if m == 0 else dead_after[m] - dead[m] for m in range(size)]
    return dead, runs, gain, discard_rank


_SUIT_DEAD, _SUIT_RUNS, _DISCARD_GAIN, _DISCARD_RANK = _build_suit_tables()
# Runs of one suit's table are disjoint, so their sum is their union.
_SUIT_MELDED = [sum(runs) for runs in _SUIT_RUNS]


def _build_set_options():
    """Per 4-bit pattern of the suits holding a rank: that rank's set choices as removal masks.

    The full set comes first so that a gin hand stops the search early; "no set" comes last.
    """
    options: list[tuple[int, ...]] = [()] * 16
    for pattern in range(16):
        holders = [suit for suit in range(SUIT_COUNT) if pattern >> suit & 1]
        if len(holders) < MIN_MELD:
            continue
        full = sum(1 << RANK_COUNT * suit for suit in holders)
        three_of_four = tuple(full ^ 1 << RANK_COUNT * suit for suit in holders) if len(holders) == MAX_SET else ()
        options[pattern] = (full, *three_of_four, 0)
    return options


def _build_run_capable():
    """Per suit mask: the ranks that lie in some three-card run inside it."""
    capable = [0] * (1 << RANK_COUNT)
    for mask in range(1 << RANK_COUNT):
        for rank in range(RANK_COUNT - 2):
            if mask >> rank & 0b111 == 0b111:
                capable[mask] |= 0b111 << rank
    return capable


_SET_OPTIONS = _build_set_options()
_RUN_CAPABLE = _build_run_capable()


def _build_suit_layouts():
    """Per suit and suit mask: the table's runs as cards, and the cards they leave loose."""
    def cards(suit: int, mask: int) -> tuple[Card, ...]:
        return tuple(CARDS[RANK_COUNT * suit + r] for r in range(RANK_COUNT) if mask >> r & 1)
    return [[(tuple(cards(suit, run) for run in _SUIT_RUNS[m]), cards(suit, m ^ _SUIT_MELDED[m]))
             for m in range(1 << RANK_COUNT)] for suit in range(SUIT_COUNT)]


_SUIT_LAYOUTS = _build_suit_layouts()


def set_removals(mask: int, prune: bool = True) -> list[int]:
    """Every combination of sets to take from the hand, each as the mask of the cards it takes.

    With ``prune``, a rank none of whose cards can be in a run takes only its full set, which
    then dominates; a discard search may not prune, as its best discard can come from a set.
    """
    s0, s1, s2, s3 = mask & SUIT_BITS, mask >> 13 & SUIT_BITS, mask >> 26 & SUIT_BITS, mask >> 39
    triples = (s0 & s1 & (s2 | s3)) | (s2 & s3 & (s0 | s1))
    if not triples:
        return [0]
    capable = (_RUN_CAPABLE[s0] | _RUN_CAPABLE[s1] | _RUN_CAPABLE[s2] | _RUN_CAPABLE[s3]) if prune else SUIT_BITS
    combos = [0]
    while triples:
        bit = triples & -triples
        rank = bit.bit_length() - 1
        pattern = (s0 >> rank & 1) | (s1 >> rank & 1) << 1 | (s2 >> rank & 1) << 2 | (s3 >> rank & 1) << 3
        options = _SET_OPTIONS[pattern] if capable & bit else _SET_OPTIONS[pattern][:1]
        combos = [combo | option << rank for combo in combos for option in options]
        triples ^= bit
    return combos


def min_deadwood_mask(mask: int) -> tuple[int, int]:
    """Minimum deadwood of any number of cards, and the mask of the set cards that achieve it."""
    dead, bits = _SUIT_DEAD, SUIT_BITS
    best, best_sets = NO_DISCARD, 0
    for sets in set_removals(mask):
        left = mask ^ sets
        deadwood = dead[left & bits] + dead[left >> 13 & bits] + dead[left >> 26 & bits] + dead[left >> 39]
        if deadwood < best:
            best, best_sets = deadwood, sets
            if not deadwood:
                break
    return best, best_sets


def melded_mask(mask: int) -> tuple[int, int]:
    """Minimum deadwood of the cards in ``mask`` and the mask of the cards in melds that achieve it."""
    deadwood, sets = min_deadwood_mask(mask)
    left, melded = mask ^ sets, _SUIT_MELDED
    runs = (melded[left & SUIT_BITS] | melded[left >> 13 & SUIT_BITS] << 13 | melded[left >> 26 & SUIT_BITS] << 26
            | melded[left >> 39] << 39)
    return deadwood, sets | runs


def _gain_without(suit_mask: int, forbidden_rank: int) -> tuple[int, int]:
    """Best (deadwood change, rank) for removing one card of a suit other than ``forbidden_rank``."""
    base, best, best_rank = _SUIT_DEAD[suit_mask], NO_DISCARD, -1
    for rank in range(RANK_COUNT - 1, -1, -1):
        if rank != forbidden_rank and suit_mask >> rank & 1:
            change = _SUIT_DEAD[suit_mask ^ (1 << rank)] - base
            if change < best:
                best, best_rank = change, rank
    return best, best_rank


def _discard_gain(left: int, suit: int, forbidden: int) -> tuple[int, int]:
    """(deadwood change, card index) of the best discard from one suit of the loose cards."""
    suit_mask = left >> RANK_COUNT * suit & SUIT_BITS
    if forbidden >= 0 and forbidden // RANK_COUNT == suit and suit_mask >> forbidden % RANK_COUNT & 1:
        change, rank = _gain_without(suit_mask, forbidden % RANK_COUNT)
    else:
        change, rank = _DISCARD_GAIN[suit_mask], _DISCARD_RANK[suit_mask]
    return change, RANK_COUNT * suit + rank


def best_discard_mask(mask: int, forbidden: int = -1) -> tuple[int, int, int]:
    """For a hand to discard from: (deadwood after the best discard, that card's index, set cards).

    ``forbidden`` is a card index that may not be discarded (the card just taken from the pile).
    Returns deadwood NO_DISCARD and index -1 when there is nothing to discard.
    """
    dead, gain, bits = _SUIT_DEAD, _DISCARD_GAIN, SUIT_BITS
    forbidden_bit = 1 << forbidden if forbidden >= 0 else 0
    best, best_sets = NO_DISCARD, 0
    for sets in set_removals(mask, prune=False):
        left = mask ^ sets
        l0, l1, l2, l3 = left & bits, left >> 13 & bits, left >> 26 & bits, left >> 39
        total = dead[l0] + dead[l1] + dead[l2] + dead[l3]
        if left & forbidden_bit:
            total += min(_discard_gain(left, suit, forbidden)[0] for suit in range(SUIT_COUNT))
        else:
            total += min(gain[l0], gain[l1], gain[l2], gain[l3])
        if total < best:
            best, best_sets = total, sets
            if not total:
                break
    if best >= NO_DISCARD:
        return NO_DISCARD, -1, 0
    left = mask ^ best_sets
    # The card: the suit whose best removal gives the least deadwood (ties: the highest rank).
    change, card = min((_discard_gain(left, suit, forbidden) for suit in range(SUIT_COUNT)),
                       key=lambda pair: (pair[0], -(pair[1] % RANK_COUNT)))
    return best, card, best_sets


def _arrangement(mask: int, sets: int, deadwood: int, discard: Card | None) -> Arrangement:
    """The melds of an optimal arrangement: the chosen sets, then each suit's table runs."""
    melds = []
    ranks = (sets | sets >> 13 | sets >> 26 | sets >> 39) & SUIT_BITS
    while ranks:
        low = ranks & -ranks
        rank = low.bit_length() - 1
        melds.append(tuple(CARDS[RANK_COUNT * suit + rank] for suit in range(SUIT_COUNT) if sets >> (RANK_COUNT * suit + rank) & 1))
        ranks ^= low
    left = mask ^ sets
    runs0, loose0 = _SUIT_LAYOUTS[0][left & SUIT_BITS]
    runs1, loose1 = _SUIT_LAYOUTS[1][left >> 13 & SUIT_BITS]
    runs2, loose2 = _SUIT_LAYOUTS[2][left >> 26 & SUIT_BITS]
    runs3, loose3 = _SUIT_LAYOUTS[3][left >> 39]
    return Arrangement((*melds, *runs0, *runs1, *runs2, *runs3), loose0 + loose1 + loose2 + loose3, deadwood, discard)


class Arrangement(NamedTuple):
    """Melds and deadwood of a hand; for an 11-card hand, after ``best_discard``."""

    melds: tuple[tuple[Card, ...], ...]
    deadwood_cards: tuple[Card, ...]
    deadwood: int
    best_discard: Card | None = None

    @property
    def gin(self) -> bool:
        return self.deadwood == 0


class HandAnalysis(NamedTuple):
    """``analyze_hand``'s answer: an Arrangement plus whether it is low enough to knock."""

    melds: tuple[tuple[Card, ...], ...]
    deadwood_cards: tuple[Card, ...]
    deadwood: int
    best_discard: Card | None
    can_knock: bool

    @property
    def gin(self) -> bool:
        return self.deadwood == 0


def arrange(mask: int) -> Arrangement:
    """A minimum-deadwood arrangement of the cards in ``mask`` (any count, no discard)."""
    deadwood, sets = min_deadwood_mask(mask)
    return _arrangement(mask, sets, deadwood, None)


def arrange_with_discard(mask: int, forbidden: int = -1) -> Arrangement:
    """The best discard from ``mask`` (not ``forbidden``) and an optimal arrangement of the rest."""
    deadwood, card, sets = best_discard_mask(mask, forbidden)
    if card < 0:
        raise InvalidInput("there is no card that may be discarded", code="invalid_request")
    return _arrangement(mask & ~(1 << card), sets, deadwood, CARDS[card])


_BIT_BY_NOTATION = {str(card): card.bit for card in CARDS}


def _mask_of_hand(cards: Iterable[Card | str]) -> int:
    """The mask of distinct cards; parse_cards names the culprit when the fast path cannot."""
    if isinstance(cards, Iterator):
        cards = list(cards)  # the slow path reads it a second time
    try:
        bits = list(map(_BIT_BY_NOTATION.__getitem__, cards))
    except (KeyError, TypeError):
        return mask_of(parse_cards(cards, "cards"))
    mask = sum(bits)
    if mask.bit_count() != len(bits):
        parse_cards(cards, "cards")  # raises, naming the repeated card
    return mask


def analyze_hand(cards: Iterable[Card | str], knock_limit: int = DEFAULT_KNOCK_LIMIT) -> HandAnalysis:
    """Exact minimum deadwood of a hand; with 11 cards, of the best discard (``best_discard``).

    Raises InvalidInput for bad or repeated cards.
    """
    mask = _mask_of_hand(cards)
    best = arrange_with_discard(mask) if mask.bit_count() == 11 else arrange(mask)
    return HandAnalysis(*best, can_knock=best.deadwood <= knock_limit)


# --- Checking what a client declares ---------------------------------------------------------

def is_set(cards: Sequence[Card]) -> bool:
    return MIN_MELD <= len(cards) <= MAX_SET and len({c.rank for c in cards}) == 1 and len(set(cards)) == len(cards)


def is_run(cards: Sequence[Card]) -> bool:
    """Three or more consecutive ranks of one suit, ace low (so Q-K-A and K-A-2 are not runs)."""
    if len(cards) < MIN_MELD or len({c.suit for c in cards}) != 1:
        return False
    ranks = sorted(c.rank for c in cards)
    return ranks == list(range(ranks[0], ranks[0] + len(ranks)))


def is_meld(cards: Sequence[Card]) -> bool:
    return is_set(cards) or is_run(cards)


def sort_meld(cards: Iterable[Card]) -> tuple[Card, ...]:
    return tuple(sorted(cards, key=lambda c: (c.rank, c.suit)))


def check_arrangement(melds: Iterable[Sequence[Card]], hand_mask: int) -> tuple[tuple[tuple[Card, ...], ...], int]:
    """Validate melds a player declares from the cards in ``hand_mask``.

    Returns the melds (sorted) and the mask of the cards they use. Raises IllegalMove:
    ``card_not_in_hand`` for a card the player does not hold, ``invalid_melds`` for a group
    that is no set or run or for a card used twice.
    """
    used, checked = 0, []
    for number, meld in enumerate(melds):
        for card in meld:
            if not hand_mask >> card.index & 1:
                raise IllegalMove(f"meld {number}: {card} is not in the hand", code="card_not_in_hand",
                                  params={"card": str(card), "meld": number})
            if used >> card.index & 1:
                raise IllegalMove(f"meld {number}: {card} is named more than once in the melds", code="invalid_melds",
                                  params={"card": str(card), "meld": number, "reason": "card_used_twice"})
            used |= card.bit
        if not is_meld(meld):
            shown = " ".join(str(c) for c in meld)
            raise IllegalMove(f"meld {number} ({shown}) is neither a set of 3-4 of a rank nor a run of 3+ consecutive cards of a suit (ace low)",
                              code="invalid_melds", params={"meld": number, "cards": [str(c) for c in meld], "reason": "not_a_meld"})
        checked.append(sort_meld(meld))
    return tuple(checked), used


def deadwood_of(mask: int) -> int:
    return sum(c.value for c in cards_of(mask))


# --- Lay-offs --------------------------------------------------------------------------------

def fits(meld: Sequence[Card], card: Card) -> bool:
    """Whether ``card`` extends ``meld`` as it stands: a 4th card on a set, or a run's next card at either end."""
    if is_set(meld):
        return len(meld) < MAX_SET and card.rank == meld[0].rank and card not in meld
    suit, ranks = meld[0].suit, [c.rank for c in meld]
    return card.suit == suit and (card.rank == min(ranks) - 1 or card.rank == max(ranks) + 1)


def _extension_options(meld: Sequence[Card], index: int, defender_mask: int) -> list[tuple[int, tuple[tuple[Card, int], ...]]]:
    """Every way the defender can extend one knocker meld: (cards mask, lay-offs in a legal order)."""
    options: list[tuple[int, tuple[tuple[Card, int], ...]]] = [(0, ())]
    if is_set(meld):
        if len(meld) < MAX_SET:
            fourth = next(CARDS[meld[0].rank + s * RANK_COUNT] for s in range(SUIT_COUNT)
                          if CARDS[meld[0].rank + s * RANK_COUNT] not in meld)
            if defender_mask & fourth.bit:
                options.append((fourth.bit, ((fourth, index),)))
        return options
    base = meld[0].suit * RANK_COUNT
    low = [CARDS[base + r] for r in range(min(c.rank for c in meld) - 1, -1, -1)]
    high = [CARDS[base + r] for r in range(max(c.rank for c in meld) + 1, RANK_COUNT)]
    low = _held_prefix(low, defender_mask)
    high = _held_prefix(high, defender_mask)
    for down in range(len(low) + 1):
        for up in range(len(high) + 1):
            if down or up:
                chain = low[:down] + high[:up]
                options.append((mask_of(chain), tuple((c, index) for c in chain)))
    return options


def _held_prefix(chain: list[Card], mask: int) -> list[Card]:
    held = []
    for card in chain:
        if not mask & card.bit:
            break
        held.append(card)
    return held


@dataclass(frozen=True)
class LayoffPlan:
    """The defender's own melds, lay-offs (card, knocker meld index) in a legal order, and what remains."""

    melds: tuple[tuple[Card, ...], ...]
    layoffs: tuple[tuple[Card, int], ...]
    deadwood_cards: tuple[Card, ...]
    deadwood: int


def best_layoff(knocker_melds: Sequence[Sequence[Card | str]], defender_cards: Iterable[Card | str]) -> LayoffPlan:
    """The defender's melds and lay-offs that leave the least deadwood (exact).

    Every lay-off is a prefix of a chain growing from one end of a knocker run, or a set's
    4th card; the solver tries each combination of such prefixes that uses no card twice and
    arranges the rest optimally, since laying a card off can break one of the defender's own melds.
    """
    melds = [tuple(as_card(c) for c in meld) for meld in knocker_melds]
    defender = mask_of(as_card(c) for c in defender_cards)
    per_meld = [_extension_options(meld, i, defender) for i, meld in enumerate(melds)]
    best = None
    for combo in product(*per_meld):
        laid, overlap = 0, False
        for cards, _ in combo:
            overlap |= bool(laid & cards)
            laid |= cards
        if overlap:
            continue
        deadwood, sets = min_deadwood_mask(defender ^ laid)
        if best is None or deadwood < best[0]:
            best = (deadwood, sets, laid, combo)
    deadwood, sets, laid, combo = best
    own = _arrangement(defender ^ laid, sets, deadwood, None)
    layoffs = tuple(pair for _, pairs in combo for pair in pairs)
    return LayoffPlan(own.melds, layoffs, own.deadwood_cards, deadwood)


def check_layoffs(knocker_melds: Sequence[Sequence[Card]], available_mask: int, holding_mask: int,
                  layoffs: Iterable[tuple[Card, int]]) -> int:
    """Apply a client's lay-offs in order; returns the mask of the cards laid off.

    ``available_mask`` is the defender's cards outside their own melds, ``holding_mask`` their
    whole hand. Raises IllegalMove: ``card_not_in_hand`` or ``invalid_layoff`` (a card in the
    defender's own melds, a meld index out of range, or a card that does not fit the meld as it
    stands after the earlier lay-offs).
    """
    extended = [list(meld) for meld in knocker_melds]
    laid = 0
    for number, (card, index) in enumerate(layoffs):
        if not holding_mask & card.bit:
            raise IllegalMove(f"layoffs[{number}]: {card} is not in your hand", code="card_not_in_hand",
                              params={"card": str(card), "layoff": number})
        if not available_mask & card.bit or laid & card.bit:
            raise IllegalMove(f"layoffs[{number}]: {card} is already in one of your melds or laid off", code="invalid_layoff",
                              params={"card": str(card), "layoff": number, "reason": "card_used"})
        if not 0 <= index < len(extended):
            raise IllegalMove(f"layoffs[{number}]: the knocker has no meld {index}", code="invalid_layoff",
                              params={"card": str(card), "layoff": number, "meld": index, "reason": "no_such_meld"})
        if not fits(extended[index], card):
            raise IllegalMove(f"layoffs[{number}]: {card} does not extend meld {index}", code="invalid_layoff",
                              params={"card": str(card), "layoff": number, "meld": index, "reason": "does_not_fit"})
        extended[index].append(card)
        laid |= card.bit
    return laid
