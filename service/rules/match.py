"""A match of hands: seats and roles, who deals, cumulative scores, the end and its bonuses
(RULES.md "Seats and the deal", "The match").

``apply(match, seat, action)`` is the one way a match changes: it returns a new match with
its version one higher and the numbered events of the change, or raises and changes nothing.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from .actions import Advise
from .cards import cards_of, new_deck, notation
from .errors import Forbidden, IllegalMove, InvalidInput
from .events import Event
from .hand import Draft, Hand, deal
from .options import BOX, CLASSIC, SEATS, Rules

MAX_SEED = 2**63 - 1


@dataclass(frozen=True)
class Match:
    variant: str
    rules: Rules
    names: tuple[str, ...]
    seed: int | None
    scores: tuple[int, ...]
    hands_won: tuple[int, ...]
    dealer: int  # classic: this hand's dealer; box: the box player, who always deals
    captain: int | None = None  # box only: the box player's opponent
    sitter: int | None = None  # box only: sees the captain's hand and may advise
    deals: int = 0  # deals so far, redeals after dead hands included: the number of the current hand
    hand: Hand | None = None
    last_hand: dict | None = None
    result: dict | None = None
    advice: tuple[dict, ...] = ()
    version: int = 1
    event_count: int = 0

    @property
    def seat_count(self) -> int:
        return len(self.names)

    @property
    def is_finished(self) -> bool:
        return self.result is not None

    @property
    def opponent_of_dealer(self) -> int:
        return self.captain if self.variant == BOX else 1 - self.dealer

    def role(self, seat: int) -> str:
        if self.variant == CLASSIC:
            return "dealer" if seat == self.dealer else "player"
        return "box" if seat == self.dealer else "captain" if seat == self.captain else "sitter"

    def watchers(self, seat: int) -> tuple[int, ...]:
        """Who may see ``seat``'s secrets: the seat itself and, in a box match, its teammate
        (the sitter sees the captain's cards, the captain the sitter's advice)."""
        team = (self.captain, self.sitter)
        if self.sitter is not None and seat in team:
            return (seat, team[1 - team.index(seat)])
        return (seat,)

    def _stamp(self, drafts: list[Draft]) -> tuple[Match, list[Event]]:
        events = []
        for n, (kind, seat, public, secret) in enumerate(drafts, start=self.event_count + 1):
            seen_by = self.watchers(seat) if secret and seat is not None else ()
            events.append(Event(n, kind, seat, self.deals or None, public, secret, seen_by))
        return replace(self, event_count=self.event_count + len(drafts)), events


def new_match(variant: str, names: list[str], rules: Rules, seed: int | None = None) -> tuple[Match, list[Event]]:
    """Cut for the deal and deal the first hand. Raises InvalidInput for a wrong player count or seed."""
    if len(names) != SEATS[variant]:
        raise InvalidInput("invalid_request", f"a {variant} match has {SEATS[variant]} players, not {len(names)}", "players")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED):
        raise InvalidInput("invalid_request", f"seed must be an integer from 0 to {MAX_SEED}", "seed")
    order, drafts = _cut(len(names), seed)
    seats = len(names)
    match = Match(variant, rules, tuple(names), seed, (0,) * seats, (0,) * seats, dealer=order[0],
                  captain=order[1] if variant == BOX else None, sitter=order[2] if variant == BOX else None)
    match, events = match._stamp(drafts)
    match, dealt = _deal_next(match)
    return match, events + dealt


def _cut(seats: int, seed: int | None) -> tuple[list[int], list[Draft]]:
    """Seats from the highest cut card down; equal ranks cut again (every cut is recorded)."""
    drafts: list[Draft] = []
    attempt = 0
    while True:
        attempt += 1
        cut = new_deck(seed, f"cut:{attempt}")[:seats]
        ranks = [c.rank for c in cut]
        decided = len(set(ranks)) == seats
        drafts.append(("cut", None, {"cards": {str(s): str(c) for s, c in enumerate(cut)}, "decided": decided}, {}))
        if decided:
            return sorted(range(seats), key=lambda s: -ranks[s]), drafts


def _deal_next(match: Match) -> tuple[Match, list[Event]]:
    number = match.deals + 1
    deck = new_deck(match.seed, f"deal:{number}")
    non_dealer = match.opponent_of_dealer
    hand = deal(number, match.dealer, non_dealer, deck)
    match = replace(match, deals=number, hand=hand, advice=())
    roles = {str(s): match.role(s) for s in range(match.seat_count)}
    drafts: list[Draft] = [("deal", None, {"number": number, "dealer": match.dealer, "roles": roles,
                                           "upcard": str(hand.pile[-1]), "stock_count": len(hand.stock)},
                            {"deck": notation(deck)})]
    # The deck is stored for audit and replay but shown to nobody: a draft without a seat.
    drafts += [("dealt", seat, {}, {"cards": notation(cards_of(hand.holding(seat)))}) for seat in hand.seats]
    return match._stamp(drafts)




def apply(match: Match, seat: int, action) -> tuple[Match, list[Event]]:
    """Apply one seat's action. Raises IllegalMove (game_finished, not_your_turn, ...),
    Forbidden (the sitter playing, anyone else advising) or InvalidInput; changes nothing then."""
    if match.is_finished:
        raise IllegalMove("game_finished", "the match is over")
    if not (isinstance(seat, int) and 0 <= seat < match.seat_count):
        raise Forbidden(f"seat {seat!r} is not in this match")
    if isinstance(action, Advise):
        return _advise(match, seat, action)
    if seat == match.sitter:
        raise Forbidden("the sitter may see the captain's hand and advise, but only the captain plays")
    hand = match.hand
    if seat != hand.turn:
        raise IllegalMove("not_your_turn", f"it is seat {hand.turn}'s turn")
    next_hand, drafts, outcome = hand.apply(seat, action, match.rules)
    match, events = replace(match, hand=next_hand, version=match.version + 1)._stamp(drafts)
    if outcome is not None:
        match, more = _finish_hand(match, outcome)
        events += more
    return match, events


def _advise(match: Match, seat: int, action: Advise) -> tuple[Match, list[Event]]:
    if match.variant != BOX or seat != match.sitter:
        raise Forbidden("only the sitter of a box match may advise")
    advice = {"seat": seat, "message": action.message, "action": action.action}
    match = replace(match, advice=match.advice + (advice,), version=match.version + 1)
    return match._stamp([("advice", seat, {}, {"message": action.message, "action": action.action})])


def _finish_hand(match: Match, outcome: dict) -> tuple[Match, list[Event]]:
    winner, points = outcome["winner"], outcome["points"]
    scores, won = list(match.scores), list(match.hands_won)
    if winner is not None:
        scores[winner] += points
        won[winner] += 1
    match = replace(match, scores=tuple(scores), hands_won=tuple(won), last_hand=outcome, hand=None, advice=())
    match, events = match._stamp([("hand_scored", None, outcome, {})])
    if winner is not None and scores[winner] >= match.rules.target_score:
        result = _final_result(match, winner)
        match, finished = replace(match, result=result)._stamp([("match_finished", None, result, {})])
        return match, events + finished
    match = _rotate(match, winner)
    match, dealt = _deal_next(match)
    return match, events + dealt


def _rotate(match: Match, winner: int | None) -> Match:
    """Who deals next: classic, the winner (dead hand: the same dealer); box, per RULES.md."""
    if winner is None:
        return match
    if match.variant == CLASSIC:
        return replace(match, dealer=winner)
    if winner == match.dealer:
        return replace(match, captain=match.sitter, sitter=match.captain)
    return replace(match, dealer=match.captain, captain=match.sitter, sitter=match.dealer)


def _final_result(match: Match, winner: int) -> dict:
    rules = match.rules
    shutout = all(won == 0 for seat, won in enumerate(match.hands_won) if seat != winner)
    players = []
    for seat in range(match.seat_count):
        bonuses = {"game_bonus": rules.game_bonus if seat == winner else 0,
                   "line_bonus": rules.line_bonus * match.hands_won[seat],
                   "shutout_bonus": rules.shutout_bonus if seat == winner and shutout else 0}
        players.append({"seat": seat, "hand_points": match.scores[seat], **bonuses,
                        "total": match.scores[seat] + sum(bonuses.values())})
    return {"winner": winner, "players": players}
