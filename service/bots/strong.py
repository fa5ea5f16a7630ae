"""The strong policy: the standard policy, with its discards looked at one draw ahead, and
knocking at once rather than ever waiting for gin.

Almost every hand ends with a knock (bench/bots.py: over 95 % of them), most often by whoever
gets down to the knock limit first, so a discard is worth more when the hand it leaves is
likely to knock after my next draw. The standard ranking (hand value plus danger) shortlists
the discards; each is then scored by that ranking less the worth of a knock times the chance
that the next stock draw, over the unseen cards weighted by the chance that the stock holds
them, lets the hand knock.
"""
from __future__ import annotations

from service import rules

from .choices import Choice
from .evaluation import outs_to
from .knowledge import Knowledge
from .standard import play, rank_discards

# The standard ranking's best few discards get the look ahead; each costs one solver call per
# unseen card, and five keep decisions at 0.14 ms median, 1.1 ms p99 (bench/bots.py, 18:24);
# eight gave no measurable gain.
CANDIDATES = 5
# Deadwood points that a sure knock after the next draw is worth in the ranking. Measured with
# duplicate hands against the reference bot (each deal's first hand played twice, seats
# swapped; 3,000 deals, 95 % interval about ±0.35 net points per hand): 12 gave +1.28, 20
# +1.29 (all discards looked at), 30 +1.38, 45 +1.33, against +1.13 for the standard policy on
# the same deals; bench/README.md has the rest.
KNOCK_WORTH = 30.0


# Standard holds back a knock with 1-2 deadwood to wait for gin (its 20 bonus); strong knocks.
# On duplicate first hands (each seeded deal's first hand played twice, seats swapped; three
# sets of 3,000 deals, paired against strong with the wait) knocking at once gave +0.25 ±0.07,
# +0.19 ±0.08 and +0.16 ±0.08 net points per hand against standard and +0.17 ±0.08, +0.16 ±0.07
# and +0.17 ±0.08 against the reference bot: the knocks it wins (+0.53 points per hand against
# standard) outweigh what waiting brought, gins (0.12) and undercuts of the opponent (0.21).
WAITS_FOR_GIN = False


def choose(obs: rules.Observation) -> Choice:
    return play(obs, nearest_knock, WAITS_FOR_GIN)


def nearest_knock(obs: rules.Observation, knowledge: Knowledge, forbidden: int) -> int:
    """Of the standard ranking's best discards, the one that best keeps a knock within a draw."""
    hand = obs.cards
    stock_odds = sum(knowledge.live) or 1.0
    limit = obs.rules.knock_limit
    shortlist = rank_discards(hand, forbidden, obs, knowledge)[:CANDIDATES]
    return min((score - KNOCK_WORTH * outs_to(hand ^ 1 << i, knowledge, limit) / stock_odds, i) for score, i in shortlist)[1]
