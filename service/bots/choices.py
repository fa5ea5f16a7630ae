"""A policy's decision: the action and the facts behind it (a reason code and its params),
from which reasons.py writes the hint's English line."""
from __future__ import annotations

from dataclasses import dataclass, field

from service import rules
from service.rules.melds import arrange, best_layoff


@dataclass(frozen=True)
class Choice:
    action: rules.TurnAction
    code: str
    params: dict = field(default_factory=dict)


def lay_off(obs: rules.Observation) -> Choice:
    """The engine's best lay-down: it already minimises the defender's deadwood exactly."""
    knock = obs.knock
    hand = rules.cards_of(obs.cards)
    if knock.gin and not obs.rules.layoff_on_gin:
        best = arrange(obs.cards)
        melds, layoffs, deadwood = best.melds, (), best.deadwood
    else:
        plan = best_layoff(knock.melds, hand)
        melds, layoffs, deadwood = plan.melds, plan.layoffs, plan.deadwood
    return Choice(rules.LayOff(), "best_layoff",
                  {"melds": len(melds), "layoffs": [str(card) for card, _ in layoffs], "deadwood": deadwood})


def decline(obs: rules.Observation, deadwood: int) -> Choice:
    """Leave the pile's top card: pass on the upcard, or draw from the stock."""
    if obs.phase is rules.Phase.UPCARD_OFFER:
        return Choice(rules.Pass(), "upcard_does_not_help", {"card": str(obs.pile[-1]), "deadwood": deadwood})
    if rules.Draw("discard") in obs.legal:
        return Choice(rules.Draw("stock"), "draw_stock", {"card": str(obs.pile[-1]), "deadwood": deadwood})
    return Choice(rules.Draw("stock"), "draw_stock_required", {})


def knock(card: rules.Card, deadwood: int) -> Choice:
    if deadwood == 0:
        return Choice(rules.Knock(card), "gin", {"card": str(card)})
    return Choice(rules.Knock(card), "knock", {"card": str(card), "deadwood": deadwood})


def may_take(obs: rules.Observation) -> bool:
    """Whether to consider the pile's top card at all. Never a card I discarded this hand: two
    bots that took each other's discards back could pass cards to and fro for ever without
    drawing from the stock, so the hand would never end (it happened in bench/bots.py)."""
    return rules.Draw("discard") in obs.legal and not obs.mine.shed & obs.pile[-1].bit
