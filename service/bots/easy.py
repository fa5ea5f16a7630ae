"""The easy policy: sensible but beatable by a beginner.

It looks at its own deadwood only: it takes a card from the pile whenever that lowers its
deadwood (even a low loose card that builds nothing), ignores what the opponent picks up,
knocks at the first chance and now and then throws a loose card other than the best one.
"""
from __future__ import annotations

import random

from service import rules
from service.rules.melds import best_discard_mask, melded_mask, min_deadwood_mask

from .choices import Choice, decline, knock, lay_off, may_take
from .evaluation import indices

# How often it keeps the wrong card: often enough to lose to the reference bot (25 % of 40
# matches in the first bench/bots.py run; see bench/README.md for the latest), rarely enough
# that most of its moves still make sense. Not tuned further.
SLIP_ODDS = 0.3


def choose(obs: rules.Observation) -> Choice:
    if obs.phase is rules.Phase.LAYOFF:
        return lay_off(obs)
    if obs.phase is rules.Phase.DISCARD:
        return _discard(obs)
    return _draw(obs)


def _draw(obs: rules.Observation) -> Choice:
    before = min_deadwood_mask(obs.cards)[0]
    if may_take(obs):
        top = obs.pile[-1]
        after = best_discard_mask(obs.cards | top.bit, top.index)[0]
        if after < before:
            return Choice(rules.Draw("discard"), "take_lowers_deadwood",
                          {"card": str(top), "before": before, "after": after})
    return decline(obs, before)


def _discard(obs: rules.Observation) -> Choice:
    forbidden = obs.taken.index if obs.taken else -1
    deadwood, index, _ = best_discard_mask(obs.cards, forbidden)
    card = rules.CARDS[index]
    if deadwood <= obs.rules.knock_limit:
        return knock(card, deadwood)
    rng = random.Random(obs.entropy)
    if rng.random() < SLIP_ODDS:
        rest = obs.cards ^ card.bit
        loose = [i for i in indices(rest & ~melded_mask(rest)[1]) if i != forbidden]
        if loose:
            card = rules.CARDS[rng.choice(loose)]
            return Choice(rules.Discard(card), "loose_card",
                          {"card": str(card), "deadwood": min_deadwood_mask(obs.cards ^ card.bit)[0]})
    return Choice(rules.Discard(card), "least_deadwood", {"card": str(card), "deadwood": deadwood})
