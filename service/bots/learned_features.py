"""What the strong bot's learned discard value looks at: features of the 10-card hand a discard
leaves, computed from the seat's Observation alone (through Knowledge).

The same function serves the bot and the offline fit of its weights (bench/learn_discards.py),
so both see exactly the same numbers. Several features appear twice, once as they are and once
scaled by the share of the stock left to draw (``_sf``), so the fit can weigh them differently
early and late in a hand.
"""
from __future__ import annotations

from dataclasses import dataclass

from service import rules
from service.rules.melds import melded_mask

from .evaluation import FULL_STOCK, OUT_WEIGHT, VALUE, draws_left, indices, next_draw, potential
from .knowledge import COMPLETIONS, Knowledge

DISCARD_NAMES = (
    "deadwood",        # the hand's least deadwood, in tens of points
    "pot", "pot_sf",   # the partial melds' potential (evaluation.potential)
    "knock1", "knock1_sf",  # the chance that the next stock draw lets the hand knock
    "gin1",            # ... that it makes gin
    "danger", "danger_sf", "danger_theirs",  # the chance that the discard melds for the opponent
    "loose_n",         # cards in no meld
    "loose_max",       # the highest of them, in tens of points
    "dead_sf",         # deadwood scaled by the stock left
    "frag_n",          # loose cards with a live card that would meld them with another loose card
    "card_value",      # the discard's own value, in tens of points
    "dead_le_limit",   # 1 when the hand could knock now
    "dead_theirs",     # deadwood (in tens) times the cards the opponent surely holds
    "after1", "after1_sf",  # the mean least deadwood after the next stock draw, in tens
    "loose_danger_max", "loose_danger_min", "loose_danger_sum",  # the danger of the loose cards kept
)
# Above this deadwood the chance of gin after one draw counts as 0 (it takes two or more loose
# cards fixed by one draw and one discard: rare). The weights were fitted with this cut.
GIN_REACH = 25


@dataclass(frozen=True)
class DiscardContext:
    """What every candidate of one discard decision shares."""

    stock_fraction: float  # the share of the draws left before a dead hand, of a full stock's
    stock_odds: float  # the unseen cards weighted by the chance that the stock holds them
    knock_limit: int
    theirs: int  # how many cards the opponent surely holds (taken from the pile, not shed)


def discard_context(obs: rules.Observation, knowledge: Knowledge) -> DiscardContext:
    return DiscardContext(draws_left(obs.stock_count, obs.rules.dead_hand_stock) / FULL_STOCK,
                          sum(knowledge.live) or 1.0, obs.rules.knock_limit, knowledge.theirs.bit_count())


def hand_features(hand: int, discarded: int, knowledge: Knowledge, context: DiscardContext) -> list[float]:
    """The features (in the order of DISCARD_NAMES) of the 10-card ``hand`` left after
    discarding card ``discarded``."""
    sf = context.stock_fraction
    deadwood, melded = melded_mask(hand)
    loose = hand & ~melded
    pot = potential(loose, knowledge, OUT_WEIGHT)
    knock_outs, gin_outs, after = next_draw(hand, knowledge, context.knock_limit)
    after1 = after / context.stock_odds / 10.0
    knock1 = knock_outs / context.stock_odds
    gin1 = gin_outs / context.stock_odds if deadwood <= GIN_REACH else 0.0
    danger = knowledge.danger(discarded)
    live = knowledge.live
    loose_max = frag_n = 0
    dangers = []
    for index in indices(loose):
        dangers.append(knowledge.danger(index))
        loose_max = max(loose_max, VALUE[index])
        if any((loose >> a & 1 and live[b] > 0) or (loose >> b & 1 and live[a] > 0) for a, b in COMPLETIONS[index]):
            frag_n += 1
    return [deadwood / 10.0, pot, pot * sf, knock1, knock1 * sf, gin1, danger, danger * sf, danger * context.theirs,
            len(dangers), loose_max / 10.0, deadwood * sf / 10.0, frag_n, VALUE[discarded] / 10.0,
            1.0 if deadwood <= context.knock_limit else 0.0, deadwood / 10.0 * context.theirs, after1, after1 * sf,
            max(dangers, default=0.0), min(dangers, default=0.0), sum(dangers)]
