"""What one viewer may see (RULES.md "Invariants": no view reveals the stock order or a hand
to anyone who may not see it). Hidden information is decided here and nowhere else.
"""
from __future__ import annotations

from .cards import cards_of, notation
from .hand import PHASE_ACTIONS, Hand, Phase
from .match import Match
from .melds import arrange, arrange_with_discard
from .options import Rules


def view_for(match: Match, viewer: int | None) -> dict:
    """API.md's view for ``viewer`` (a seat, or None for the public), without the game id."""
    view = {
        "version": match.version,
        "variant": match.variant,
        "status": "finished" if match.is_finished else "active",
        "rules": match.rules.as_dict(),
        "players": [{"seat": s, "name": match.names[s], "score": match.scores[s], "hands_won": match.hands_won[s],
                     "role": match.role(s), "bot": False} for s in range(match.seat_count)],
        "hand": _public_hand(match.hand),
        "last_hand": match.last_hand,
        "result": match.result,
    }
    if viewer is not None:
        view["you"] = _you(match, viewer)
    return view


def _public_hand(hand: Hand | None) -> dict | None:
    if hand is None:
        return None
    public = {
        "number": hand.number, "dealer": hand.dealer, "non_dealer": hand.non_dealer,
        "phase": hand.phase.value, "turn": hand.turn, "stock_count": len(hand.stock),
        "discard_top": str(hand.pile[-1]) if hand.pile else None, "discard_pile": notation(hand.pile),
        "hand_sizes": {str(s): hand.holding(s).bit_count() for s in hand.seats},
    }
    if hand.knock is not None:
        public["knock"] = hand.knock.as_dict()
    return public


def _you(match: Match, viewer: int) -> dict:
    you = {"seat": viewer, "role": match.role(viewer)}
    hand = match.hand
    if hand is None or viewer not in hand.seats:
        you.update(_no_cards())
    else:
        you.update(player_view(hand, viewer, match.rules))
    if match.variant == "box" and viewer in (match.captain, match.sitter):
        you["advice"] = list(match.advice)
        if viewer == match.sitter and hand is not None:
            you["partner"] = {"seat": match.captain, **player_view(hand, match.captain, match.rules)}
    else:
        you["advice"] = []
    return you


def _no_cards() -> dict:
    return {"hand": [], "deadwood": None, "melds": [], "deadwood_cards": [], "can_knock": False,
            "legal_actions": [], "draw_sources": []}


def player_view(hand: Hand, seat: int, rules: Rules) -> dict:
    """One active seat's cards, their best arrangement and what the seat may do now."""
    mask = hand.holding(seat)
    to_move = hand.turn == seat
    if to_move and hand.phase is Phase.DISCARD:
        best = arrange_with_discard(mask, hand.forbidden_discard())
    else:
        best = arrange(mask)
    can_knock = to_move and hand.phase is Phase.DISCARD and best.deadwood <= rules.knock_limit
    actions = [a for a in PHASE_ACTIONS[hand.phase] if a != "knock" or can_knock] if to_move else []
    view = {"hand": notation(cards_of(mask)), "deadwood": best.deadwood, "melds": [notation(m) for m in best.melds],
            "deadwood_cards": notation(best.deadwood_cards), "can_knock": can_knock, "legal_actions": actions,
            "draw_sources": list(hand.draw_sources()) if to_move else []}
    if best.best_discard is not None:
        view["best_discard"] = str(best.best_discard)
    if to_move and hand.phase is Phase.LAYOFF:
        melds, layoffs, deadwood = hand.automatic_layoff(seat, rules)
        view["best_layoff"] = {"melds": [notation(m) for m in melds],
                               "layoffs": [{"card": str(c), "meld": i} for c, i in layoffs], "deadwood": deadwood}
    return view
