"""What one viewer may see (docs/rules.md, "What stays hidden": no view reveals the stock order
or a hand to anyone who may not see it). Hidden information is decided here and nowhere else.
"""
from __future__ import annotations

from .cards import cards_of, notation
from .deals import commitment
from .hand import Hand, Phase
from .match import Match, Role, iso_time
from .options import BOX, Rules


def view_for(match: Match, viewer: int | None) -> dict:
    """The view of ``match`` for ``viewer`` (a seat, or None for the public), without the game id."""
    view = {
        "version": match.version,
        "variant": match.variant,
        "status": match.status.value,
        "seeded": match.seed is not None,
        "rules": match.rules.as_dict(),
        "players": [{"seat": s, "name": match.names[s], "score": match.scores[s], "hands_won": match.hands_won[s],
                     "role": match.role(s).value, "bot": match.is_bot(s), "level": match.bots[s],
                     "timeouts": match.timeouts[s]} for s in range(match.seat_count)],
        "hand": _public_hand(match.hand),
        "last_hand": match.last_hand.as_dict() if match.last_hand else None,
        "result": match.result.as_dict() if match.result else None,
        "last_seq": match.event_count,
        "fairness": _fairness(match),
    }
    if viewer is not None:
        view["you"] = _you(match, viewer)
    return view


def _fairness(match: Match) -> dict | None:
    """The commitment to the match's server seed (never the seed) and the client seed; None for
    a match dealt before fair shuffles."""
    if match.server_seed is None:
        return None
    return {"commitment": commitment(match.server_seed), "client_seed": match.client_seed}


def _public_hand(hand: Hand | None) -> dict | None:
    if hand is None:
        return None
    public = {
        "number": hand.number, "dealer": hand.dealer, "non_dealer": hand.non_dealer,
        "phase": hand.phase.value, "turn": hand.turn, "stock_count": len(hand.stock),
        "discard_top": str(hand.pile[-1]) if hand.pile else None, "discard_pile": notation(hand.pile),
        "hand_sizes": {str(s): hand.holding(s).bit_count() for s in hand.seats},
        "deadline": None if hand.deadline is None else iso_time(hand.deadline),
    }
    if hand.knock is not None:
        public["knock"] = hand.knock.as_dict()
    return public


def _you(match: Match, viewer: int) -> dict:
    role = match.role(viewer)
    you = {"seat": viewer, "role": role.value}
    hand = match.hand
    if hand is None or viewer not in hand.seats:
        you.update(_no_cards())
    else:
        you.update(player_view(hand, viewer, match.rules))
    teammates = match.variant == BOX and role in (Role.CAPTAIN, Role.SITTER)
    you["advice"] = list(match.advice) if teammates else []
    if role is Role.SITTER and hand is not None:
        you["partner"] = {"seat": match.captain, **player_view(hand, match.captain, match.rules)}
    return you


def _no_cards() -> dict:
    return {"hand": [], "deadwood": None, "melds": [], "deadwood_cards": [], "can_knock": False,
            "legal_actions": [], "draw_sources": []}


def player_view(hand: Hand, seat: int, rules: Rules) -> dict:
    """One active seat's cards, their best arrangement and what the seat may do now."""
    to_move = hand.turn == seat
    best = hand.arrangement(seat)
    view = {"hand": notation(cards_of(hand.holding(seat))), "deadwood": best.deadwood,
            "melds": [notation(m) for m in best.melds], "deadwood_cards": notation(best.deadwood_cards),
            "can_knock": to_move and hand.can_knock(rules),
            "legal_actions": [kind.value for kind in hand.legal_types(rules)] if to_move else [],
            "draw_sources": [source.value for source in hand.draw_sources()] if to_move else []}
    if best.best_discard is not None:
        view["best_discard"] = str(best.best_discard)
    if to_move and hand.phase is Phase.LAYOFF:
        melds, layoffs, deadwood = hand.automatic_layoff(seat, rules)
        view["best_layoff"] = {"melds": [notation(m) for m in melds],
                               "layoffs": [{"card": str(c), "meld": i} for c, i in layoffs], "deadwood": deadwood}
        view["layoff_targets"] = hand.layoff_targets(seat, rules)
    return view
