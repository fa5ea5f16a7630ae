"""The reference opponent of bench/bots.py: the policy of OpenSpiel's SimpleGinRummyBot
(open_spiel/bots/gin_rummy/simple_gin_rummy_bot.cc), on an Observation like the bots.

- Draw: take the pile's top card only if, with it, a knock becomes possible or the card is in
  a best (minimum-deadwood) meld group of the 11 cards; otherwise draw from the stock (pass the
  upcard offer).
- Discard: knock as soon as the deadwood allows; otherwise throw the highest-ranked card of the
  best deadwood, never the card just taken.
- Defend: the engine's best lay-down (OpenSpiel's bot never lays off; laying off here keeps the
  reference from losing points to a weakness the bots do not share).
"""
from __future__ import annotations

from service import rules
from service.rules.melds import best_discard_mask, melded_mask


def choose(obs: rules.Observation) -> rules.TurnAction:
    if obs.phase is rules.Phase.LAYOFF:
        return rules.LayOff()
    if obs.phase is rules.Phase.DISCARD:
        return _discard(obs)
    if rules.Draw("discard") in obs.legal:
        top = obs.pile[-1]
        hand = obs.cards | top.bit
        knocks = best_discard_mask(hand, top.index)[0] <= obs.rules.knock_limit
        if knocks or melded_mask(hand)[1] & top.bit:
            return rules.Draw("discard")
    return rules.Pass() if obs.phase is rules.Phase.UPCARD_OFFER else rules.Draw("stock")


def _discard(obs: rules.Observation) -> rules.TurnAction:
    forbidden = obs.taken.index if obs.taken else -1
    deadwood, best, _ = best_discard_mask(obs.cards, forbidden)
    if deadwood <= obs.rules.knock_limit:
        return rules.Knock(rules.CARDS[best])
    loose = [card for card in rules.cards_of(obs.cards & ~melded_mask(obs.cards)[1]) if card.index != forbidden]
    if not loose:
        return rules.Discard(rules.CARDS[best])
    return rules.Discard(max(loose, key=lambda card: (card.rank, card.index)))
