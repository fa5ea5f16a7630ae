"""A suggested next action with a short reason: a simple greedy policy on top of the solver."""
from __future__ import annotations

from .errors import Forbidden, IllegalMove
from .hand import DISCARD_PILE, STOCK, Phase
from .match import Match
from .melds import arrange, arrange_with_discard, best_discard_mask


def hint_for(match: Match, viewer: int) -> dict:
    """The hint for ``viewer``'s cards (the sitter gets the captain's).

    Raises IllegalMove(game_finished) after the match, Forbidden for a seat with no cards to play.
    """
    if match.is_finished:
        raise IllegalMove("game_finished", "the match is over")
    seat = match.captain if viewer == match.sitter else viewer
    hand = match.hand
    if seat not in hand.seats:
        raise Forbidden(f"seat {viewer} has no cards in this hand")
    if hand.turn != seat:
        return {"seat": seat, "action": None, "reason": f"waiting for seat {hand.turn} to play"}
    return {"seat": seat, **_suggest(match, seat)}


def _suggest(match: Match, seat: int) -> dict:
    hand = match.hand
    mask = hand.holding(seat)
    if hand.phase in (Phase.UPCARD_OFFER, Phase.DRAW):
        now = arrange(mask).deadwood
        if DISCARD_PILE in hand.draw_sources():
            top = hand.pile[-1]
            after, _, _ = best_discard_mask(mask | top.bit, top.index)
            if after < now:
                return {"action": {"type": "draw", "source": DISCARD_PILE},
                        "reason": f"taking {top} brings your deadwood from {now} to {after}"}
        if hand.phase is Phase.UPCARD_OFFER:
            return {"action": {"type": "pass"}, "reason": f"{hand.pile[-1]} does not lower your deadwood of {now}"}
        return {"action": {"type": "draw", "source": STOCK}, "reason": "the discard pile does not help you"}
    if hand.phase is Phase.DISCARD:
        best = arrange_with_discard(mask, hand.forbidden_discard())
        if best.deadwood <= match.rules.knock_limit:
            kind = "gin" if best.gin else f"knock with {best.deadwood} deadwood"
            return {"action": {"type": "knock", "discard": str(best.best_discard)},
                    "reason": f"discarding {best.best_discard} lets you {kind}"}
        return {"action": {"type": "discard", "card": str(best.best_discard)},
                "reason": f"discarding {best.best_discard} leaves the least deadwood ({best.deadwood})"}
    melds, layoffs, deadwood = hand.automatic_layoff(seat, match.rules)
    laid = ", ".join(str(c) for c, _ in layoffs) or "nothing"
    return {"action": {"type": "layoff"}, "reason": f"meld {len(melds)} group(s) and lay off {laid}, leaving {deadwood} deadwood"}


