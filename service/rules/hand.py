"""One hand: an explicit phase, the legal actions of each phase and one apply per action
(RULES.md "A hand, turn by turn", "Scoring a hand").

A hand is immutable: ``apply`` returns the next hand (or the finished hand's result) and the
events it produced, as drafts that the match numbers. It never sees more than two seats.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum

from .actions import Discard, Draw, Knock, LayOff, Pass
from .cards import Card, cards_of, mask_of, notation
from .errors import IllegalMove
from .melds import arrange, best_layoff, check_arrangement, check_layoffs, deadwood_of
from .options import Rules

HAND_SIZE = 10
STOCK = "stock"
DISCARD_PILE = "discard"


class Phase(str, Enum):
    UPCARD_OFFER = "upcard_offer"
    DRAW = "draw"
    DISCARD = "discard"
    LAYOFF = "layoff"


# What the seat to move may do in each phase (before per-state restrictions such as can_knock).
PHASE_ACTIONS = {
    Phase.UPCARD_OFFER: ("draw", "pass"),
    Phase.DRAW: ("draw",),
    Phase.DISCARD: ("discard", "knock"),
    Phase.LAYOFF: ("layoff",),
}
ACTION_NAMES = {Draw: "draw", Pass: "pass", Discard: "discard", Knock: "knock", LayOff: "layoff"}


@dataclass(frozen=True)
class KnockInfo:
    """What the knocker put on the table."""

    knocker: int
    discard: Card
    melds: tuple[tuple[Card, ...], ...]
    deadwood_cards: tuple[Card, ...]
    deadwood: int

    @property
    def gin(self) -> bool:
        return self.deadwood == 0

    def as_dict(self) -> dict:
        return {"knocker": self.knocker, "melds": [notation(m) for m in self.melds],
                "deadwood_cards": notation(self.deadwood_cards), "deadwood": self.deadwood, "gin": self.gin}


# (type, seat, public, secret): the match turns drafts into numbered events.
Draft = tuple[str, int | None, dict, dict]


@dataclass(frozen=True)
class Hand:
    number: int
    dealer: int
    non_dealer: int
    holdings: tuple[int, int]  # card masks of (non_dealer, dealer)
    stock: tuple[Card, ...]  # top card last
    pile: tuple[Card, ...]  # discard pile, top card last
    phase: Phase
    turn: int
    passes: int = 0
    stock_only: bool = False  # both passed the upcard: the first draw must come from the stock
    taken: Card | None = None  # the card taken from the pile this turn, which may not be discarded
    knock: KnockInfo | None = None

    # --- reading --------------------------------------------------------------------------
    @property
    def seats(self) -> tuple[int, int]:
        return self.non_dealer, self.dealer

    def holding(self, seat: int) -> int:
        return self.holdings[self.seats.index(seat)]

    def other(self, seat: int) -> int:
        return self.dealer if seat == self.non_dealer else self.non_dealer

    def draw_sources(self) -> tuple[str, ...]:
        if self.phase is Phase.UPCARD_OFFER:
            return (DISCARD_PILE,)
        if self.phase is Phase.DRAW:
            return (STOCK,) if self.stock_only or not self.pile else (STOCK, DISCARD_PILE)
        return ()

    def forbidden_discard(self) -> int:
        return self.taken.index if self.taken else -1

    # --- changing -------------------------------------------------------------------------
    def _with_holding(self, seat: int, mask: int, **changes) -> Hand:
        holdings = (mask, self.holdings[1]) if seat == self.non_dealer else (self.holdings[0], mask)
        return replace(self, holdings=holdings, **changes)

    def apply(self, seat: int, action, rules: Rules) -> tuple[Hand | None, list[Draft], dict | None]:
        """Apply ``action`` by ``seat`` (whose turn the caller has checked).

        Returns (next hand or None when it ended, drafts, the hand's result when it ended).
        Raises IllegalMove (wrong_phase, card_not_in_hand, cannot_discard_drawn_card,
        deadwood_too_high, invalid_melds, invalid_layoff) and then changes nothing.
        """
        name = ACTION_NAMES.get(type(action))
        if name not in PHASE_ACTIONS[self.phase]:
            raise IllegalMove("wrong_phase", f"{name} is not allowed in the {self.phase.value} phase; allowed: {', '.join(PHASE_ACTIONS[self.phase])}")
        if isinstance(action, Draw):
            hand, drafts = self._draw(seat, action.source)
            return hand, drafts, None
        if isinstance(action, Pass):
            return self._pass(seat)
        if isinstance(action, Discard):
            return self._discard(seat, action.card, rules)
        if isinstance(action, Knock):
            return self._knock(seat, action, rules)
        return self._lay_off(seat, action, rules)

    def _draw(self, seat: int, source: str) -> Hand:
        if source not in self.draw_sources():
            allowed = " or ".join(self.draw_sources())
            raise IllegalMove("wrong_phase", f"cannot draw from the {source} now; draw from the {allowed}")
        if source == STOCK:
            card, rest = self.stock[-1], self.stock[:-1]
            hand = self._with_holding(seat, self.holding(seat) | card.bit, stock=rest, phase=Phase.DISCARD,
                                      taken=None, stock_only=False)
            return hand, [("draw", seat, {"source": STOCK}, {"card": str(card)})]
        card = self.pile[-1]
        hand = self._with_holding(seat, self.holding(seat) | card.bit, pile=self.pile[:-1], phase=Phase.DISCARD,
                                  taken=card, stock_only=False)
        return hand, [("draw", seat, {"source": DISCARD_PILE, "card": str(card)}, {})]

    def _pass(self, seat: int):
        drafts: list[Draft] = [("pass", seat, {}, {})]
        if self.passes == 0:
            return replace(self, passes=1, turn=self.dealer), drafts, None
        # Both declined: the non-dealer opens with a forced draw from the stock.
        return replace(self, passes=2, phase=Phase.DRAW, turn=self.non_dealer, stock_only=True), drafts, None

    def _check_discard(self, seat: int, card: Card) -> int:
        holding = self.holding(seat)
        if not holding & card.bit:
            raise IllegalMove("card_not_in_hand", f"{card} is not in your hand")
        if card == self.taken:
            raise IllegalMove("cannot_discard_drawn_card", f"{card} was just taken from the discard pile and may not be discarded this turn")
        return holding & ~card.bit

    def _discard(self, seat: int, card: Card, rules: Rules):
        rest = self._check_discard(seat, card)
        hand = self._with_holding(seat, rest, pile=self.pile + (card,), phase=Phase.DRAW,
                                  turn=self.other(seat), taken=None)
        drafts: list[Draft] = [("discard", seat, {"card": str(card)}, {})]
        if len(hand.stock) <= rules.dead_hand_stock:
            return None, drafts, hand.dead_result()
        return hand, drafts, None

    def _knock(self, seat: int, action: Knock, rules: Rules):
        rest = self._check_discard(seat, action.discard)
        if action.melds is None:
            best = arrange(rest)
            melds, deadwood_cards, deadwood = best.melds, best.deadwood_cards, best.deadwood
        else:
            if any(action.discard in meld for meld in action.melds):
                raise IllegalMove("invalid_melds", f"{action.discard} is your discard and cannot be in a meld")
            melds, used = check_arrangement(action.melds, rest)
            deadwood_cards = tuple(cards_of(rest & ~used))
            deadwood = deadwood_of(rest & ~used)
        if deadwood > rules.knock_limit:
            raise IllegalMove("deadwood_too_high", f"deadwood after discarding {action.discard} would be {deadwood}; the knock limit is {rules.knock_limit}")
        info = KnockInfo(seat, action.discard, tuple(melds), tuple(deadwood_cards), deadwood)
        hand = self._with_holding(seat, rest, pile=self.pile + (action.discard,), phase=Phase.LAYOFF,
                                  turn=self.other(seat), taken=None, knock=info)
        return hand, [("knock", seat, {"discard": str(action.discard), **info.as_dict()}, {})], None

    def _lay_off(self, seat: int, action: LayOff, rules: Rules):
        holding = self.holding(seat)
        if action.is_automatic:
            melds, layoffs, _ = self.automatic_layoff(seat, rules)
        else:
            melds, used = check_arrangement(action.melds or (), holding)
            layoffs = action.layoffs or ()
            if layoffs and not self.may_lay_off(rules):
                raise IllegalMove("invalid_layoff", "no lay-offs are allowed against gin")
            check_layoffs(self.knock.melds, holding & ~used, holding, layoffs)
        remaining = holding & ~mask_of(c for meld in melds for c in meld) & ~mask_of(c for c, _ in layoffs)
        public = {"melds": [notation(m) for m in melds], "layoffs": [{"card": str(c), "meld": i} for c, i in layoffs],
                  "deadwood_cards": notation(cards_of(remaining)), "deadwood": deadwood_of(remaining)}
        return None, [("layoff", seat, public, {})], self._knock_result(seat, public, rules)

    def may_lay_off(self, rules: Rules) -> bool:
        """Whether the defender may lay off: not against gin, unless ``layoff_on_gin``."""
        return not self.knock.gin or rules.layoff_on_gin

    def automatic_layoff(self, seat: int, rules: Rules):
        """The defender's melds and lay-offs leaving the least deadwood, and that deadwood."""
        holding = self.holding(seat)
        if self.may_lay_off(rules):
            plan = best_layoff(self.knock.melds, cards_of(holding))
            return plan.melds, plan.layoffs, plan.deadwood
        best = arrange(holding)
        return best.melds, (), best.deadwood

    # --- results --------------------------------------------------------------------------
    def _revealed(self) -> dict:
        return {str(seat): notation(cards_of(self.holding(seat))) for seat in self.seats}

    def dead_result(self) -> dict:
        return {"number": self.number, "outcome": "dead", "winner": None, "points": 0, "knocker": None,
                "knocker_melds": [], "knocker_deadwood": None, "defender_melds": [], "layoffs": [],
                "defender_deadwood": None, "hands": self._revealed()}

    def _knock_result(self, defender: int, layoff: dict, rules: Rules) -> dict:
        knock = self.knock
        outcome, winner, points = score_hand(knock.deadwood, layoff["deadwood"], knock.knocker, defender, rules)
        return {"number": self.number, "outcome": outcome, "winner": winner, "points": points,
                "knocker": knock.knocker, "knocker_melds": [notation(m) for m in knock.melds],
                "knocker_deadwood": knock.deadwood, "knocker_deadwood_cards": notation(knock.deadwood_cards),
                "discard": str(knock.discard), "defender": defender, "defender_melds": layoff["melds"],
                "layoffs": layoff["layoffs"], "defender_deadwood": layoff["deadwood"],
                "defender_deadwood_cards": layoff["deadwood_cards"], "hands": self._revealed()}


def score_hand(knocker_deadwood: int, defender_deadwood: int, knocker: int, defender: int,
               rules: Rules) -> tuple[str, int, int]:
    """(outcome, winning seat, points) of a knocked hand (RULES.md "Scoring a hand")."""
    if knocker_deadwood == 0:
        return "gin", knocker, rules.gin_bonus + defender_deadwood
    if knocker_deadwood < defender_deadwood:
        return "knock", knocker, defender_deadwood - knocker_deadwood
    return "undercut", defender, rules.undercut_bonus + knocker_deadwood - defender_deadwood


def deal(number: int, dealer: int, non_dealer: int, deck: list[Card]) -> Hand:
    """Ten cards each, one at a time from the non-dealer; the next card is the upcard, the rest the stock."""
    dealt = deck[: 2 * HAND_SIZE]
    holdings = (sum(c.bit for c in dealt[0::2]), sum(c.bit for c in dealt[1::2]))
    upcard = deck[2 * HAND_SIZE]
    stock = tuple(reversed(deck[2 * HAND_SIZE + 1:]))
    return Hand(number, dealer, non_dealer, holdings, stock, (upcard,), Phase.UPCARD_OFFER, non_dealer)
