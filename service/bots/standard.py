"""The standard policy (also the hint and the timeout player).

It tracks what it cannot see (knowledge.py), values a hand as deadwood minus the potential of
its partial melds (evaluation.py), keeps away from discards that the opponent's pile play says
they could use, takes from the pile only what improves that value, and knocks early but asks
for less deadwood as the stock runs down, since the defender's deadwood falls with every draw
and an undercut costs the knocker the bonus.
"""
from __future__ import annotations

from collections.abc import Callable

from service import rules
from service.rules.melds import best_discard_mask, min_deadwood_mask

from .choices import Choice, decline, knock, lay_off, may_take
from .evaluation import VALUE, hand_value, indices, out_weight, outs_to
from .knowledge import Knowledge, know

# The constants below were tuned against the reference bot (bench/reference_bot.py) with
# bench/bots.py's match loop, 200-400 matches per setting on the same seeds, judged by net
# points per hand (95 % interval about ±0.6 at 400 matches, so only large steps tell).
# Deadwood points a discard costs per unit of danger (the rough chance that it melds for the
# opponent): 6 gave +1.37 points per hand, 3 gave +1.25; 0 gave -0.66 (earlier settings).
DANGER_WEIGHT = 6.0
# Taking from the pile shows the card to the opponent and gives up a stock draw's chances, so
# the hand's value must improve by this much: 3 gave +0.95 where 1 gave +0.09 and 0 gave -0.35.
TAKE_MARGIN = 3.0
# (stock size at least, knock when deadwood is at most the knock limit minus this). The first
# schedule, ((22, 0), (14, 3), (0, 5)), waited too long (+0.95); knocking at once and this one
# both gave +1.21: it gives up only the late 9s and 10s, the knocks most often undercut.
KNOCK_SCHEDULE = ((10, 0), (0, 2))
# Waiting for gin (20 bonus, no lay-offs) instead of knocking: with up to 3 deadwood it gave
# +1.17, with up to 5 +0.99, against +1.21 to +1.37 without, since the opponent often knocks
# first; so only the nearest-gin hands wait (2, not measured on its own), early, with outs.
GIN_WAIT_DEADWOOD = 2
GIN_WAIT_STOCK = 12
GIN_WAIT_OUTS = 2.0
# A danger gap beyond this makes "your opponent could use it" the reason for a discard.
FEEDING_GAP = 0.1


def choose(obs: rules.Observation) -> Choice:
    return play(obs, best_ranked)


# (observation, knowledge, the card index that may not be discarded) -> the card index to discard
PickDiscard = Callable[[rules.Observation, Knowledge, int], int]


def play(obs: rules.Observation, pick_discard: PickDiscard, waits_for_gin: bool = True,
         take_margin: float = TAKE_MARGIN) -> Choice:
    """The standard policy's move, with ``pick_discard`` choosing the card of a plain discard;
    ``waits_for_gin`` False knocks whenever the schedule allows; ``take_margin`` is what taking
    from the pile must gain (the strong policy changes only these three)."""
    if obs.phase is rules.Phase.LAYOFF:
        return lay_off(obs)
    knowledge = know(obs)
    if obs.phase is rules.Phase.DISCARD:
        forbidden = obs.taken.index if obs.taken else -1
        deadwood, best, _ = best_discard_mask(obs.cards, forbidden)
        if deadwood <= obs.rules.knock_limit and wants_knock(obs, deadwood):
            if waits_for_gin:
                return knock_or_wait(obs, knowledge, best, deadwood)
            return knock(rules.CARDS[best], deadwood)
        return discard(obs, knowledge, pick_discard(obs, knowledge, forbidden))
    return draw(obs, knowledge, take_margin)


def best_ranked(obs: rules.Observation, knowledge: Knowledge, forbidden: int) -> int:
    return rank_discards(obs.cards, forbidden, obs, knowledge)[0][1]


def wants_knock(obs: rules.Observation, deadwood: int) -> bool:
    """Whether to knock with ``deadwood`` now (the knock limit allowing it)."""
    if deadwood == 0 or obs.stock_count <= obs.rules.dead_hand_stock:
        return True  # gin, or the last chance: a plain discard now would void the hand
    margin = next(margin for stock, margin in KNOCK_SCHEDULE if obs.stock_count >= stock)
    return deadwood <= obs.rules.knock_limit - margin


def knock_or_wait(obs: rules.Observation, knowledge: Knowledge, index: int, deadwood: int) -> Choice:
    """Knock discarding card ``index``, or discard it and wait for gin with a near-gin hand."""
    card = rules.CARDS[index]
    if 0 < deadwood <= GIN_WAIT_DEADWOOD and obs.stock_count >= GIN_WAIT_STOCK:
        outs = outs_to(obs.cards ^ card.bit, knowledge, 0)
        if outs >= GIN_WAIT_OUTS:
            return Choice(rules.Discard(card), "waits_for_gin", {"card": str(card), "deadwood": deadwood, "outs": round(outs)})
    return knock(card, deadwood)


def rank_discards(hand: int, forbidden: int, obs: rules.Observation, knowledge: Knowledge) -> list[tuple[float, int]]:
    """(score, card index) of every allowed discard from an 11-card hand, best (lowest) first;
    ties go to the higher card."""
    weight = out_weight(obs.stock_count, obs.rules.dead_hand_stock)
    scored = [(hand_value(hand ^ 1 << index, knowledge, weight) + DANGER_WEIGHT * knowledge.danger(index), -VALUE[index], index)
              for index in indices(hand) if index != forbidden]
    scored.sort()
    return [(score, index) for score, _, index in scored]


def discard(obs: rules.Observation, knowledge: Knowledge, index: int) -> Choice:
    """The plain discard of card ``index``, with the reason that decided it."""
    forbidden = obs.taken.index if obs.taken else -1
    least, greedy, _ = best_discard_mask(obs.cards, forbidden)
    card = rules.CARDS[index]
    deadwood = min_deadwood_mask(obs.cards ^ card.bit)[0]
    if least <= obs.rules.knock_limit:
        return Choice(rules.Discard(card), "avoids_undercut", {"card": str(card), "deadwood": least})
    if index != greedy:
        kept = str(rules.CARDS[greedy])
        code = ("avoids_feeding_opponent" if knowledge.danger(greedy) > knowledge.danger(index) + FEEDING_GAP
                else "keeps_partial_melds")
        return Choice(rules.Discard(card), code, {"card": str(card), "deadwood": deadwood, "kept": kept})
    shed_alike = [i for i in indices(knowledge.unwanted) if rules.CARDS[i].rank == card.rank]
    if shed_alike:
        return Choice(rules.Discard(card), "safe_discard",
                      {"card": str(card), "deadwood": deadwood, "their_card": str(rules.CARDS[shed_alike[-1]])})
    return Choice(rules.Discard(card), "least_deadwood", {"card": str(card), "deadwood": deadwood})


def draw(obs: rules.Observation, knowledge: Knowledge, take_margin: float) -> Choice:
    """Take the pile's top card when it lets me knock or leaves the hand a better value than it
    has now, by ``take_margin``."""
    before = min_deadwood_mask(obs.cards)[0]
    if may_take(obs):
        top = obs.pile[-1]
        after = best_discard_mask(obs.cards | top.bit, top.index)[0]
        stock_value = hand_value(obs.cards, knowledge, out_weight(obs.stock_count, obs.rules.dead_hand_stock)) - take_margin
        taken = rank_discards(obs.cards | top.bit, top.index, obs, knowledge)[0][0]
        knocks = after <= obs.rules.knock_limit and wants_knock(obs, after)
        if knocks or taken < stock_value:
            code = "take_lowers_deadwood" if after < before else "take_builds_meld"
            return Choice(rules.Draw("discard"), code, {"card": str(top), "before": before, "after": after})
    return decline(obs, before)
