"""One hand: an explicit phase, the legal actions of each phase and one apply per action
(docs/rules.md, "A hand, turn by turn" and "Scoring a hand").

A hand is immutable: ``apply`` returns the next hand (or the finished hand's result) and the
events it produced, as drafts that the match numbers. It never sees more than two seats.
``legal_actions`` and ``apply`` are a pair: every action the first lists, the second accepts.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from .actions import ActionType, Discard, Draw, DrawSource, Knock, LayOff, Melds, Pass, TurnAction
from .cards import CARD_BY_TEXT, Card, cards_of, mask_of, notation
from .errors import IllegalMove
from .evolve import evolve
from .melds import (Arrangement, arrange, arrange_with_discard, best_layoff, check_arrangement, check_layoffs, deadwood_of, fits,
                    min_deadwood_mask)
from .options import Rules

HAND_SIZE = 10


class Phase(str, Enum):
    UPCARD_OFFER = "upcard_offer"
    DRAW = "draw"
    DISCARD = "discard"
    LAYOFF = "layoff"


# What the seat to move may do in each phase (before per-state restrictions such as a knock's limit).
PHASE_ACTIONS: dict[Phase, tuple[ActionType, ...]] = {
    Phase.UPCARD_OFFER: (ActionType.DRAW, ActionType.PASS),
    Phase.DRAW: (ActionType.DRAW,),
    Phase.DISCARD: (ActionType.DISCARD, ActionType.KNOCK),
    Phase.LAYOFF: (ActionType.LAYOFF,),
}


class Outcome(str, Enum):
    GIN = "gin"
    KNOCK = "knock"
    UNDERCUT = "undercut"
    DEAD = "dead"


@dataclass(frozen=True)
class KnockInfo:
    """What the knocker put on the table."""

    knocker: int
    discard: Card
    melds: Melds
    deadwood_cards: tuple[Card, ...]
    deadwood: int

    @property
    def gin(self) -> bool:
        return self.deadwood == 0

    def as_dict(self) -> dict:
        return {"knocker": self.knocker, "melds": [notation(m) for m in self.melds],
                "deadwood_cards": notation(self.deadwood_cards), "deadwood": self.deadwood, "gin": self.gin}


@dataclass(frozen=True)
class HandResult:
    """How a hand ended. A dead hand has no knocker, defender or melds."""

    number: int
    outcome: Outcome
    winner: int | None
    points: int
    hands: tuple[tuple[int, tuple[Card, ...]], ...]  # (seat, cards as the hand ended)
    knocker: int | None = None
    defender: int | None = None
    discard: Card | None = None
    knocker_melds: Melds = ()
    knocker_deadwood_cards: tuple[Card, ...] = ()
    knocker_deadwood: int | None = None
    defender_melds: Melds = ()
    layoffs: tuple[tuple[Card, int], ...] = ()
    defender_deadwood_cards: tuple[Card, ...] = ()
    defender_deadwood: int | None = None

    def as_dict(self) -> dict:
        """The JSON form: the view's ``last_hand`` and the ``hand_scored`` event."""
        return {
            "number": self.number, "outcome": self.outcome.value, "winner": self.winner, "points": self.points,
            "knocker": self.knocker, "defender": self.defender,
            "discard": None if self.discard is None else str(self.discard),
            "knocker_melds": [notation(m) for m in self.knocker_melds],
            "knocker_deadwood_cards": notation(self.knocker_deadwood_cards), "knocker_deadwood": self.knocker_deadwood,
            "defender_melds": [notation(m) for m in self.defender_melds],
            "layoffs": [{"card": str(c), "meld": i} for c, i in self.layoffs],
            "defender_deadwood_cards": notation(self.defender_deadwood_cards),
            "defender_deadwood": self.defender_deadwood,
            "hands": {str(seat): notation(cards) for seat, cards in self.hands},
        }


# (type, seat, public, secret): the match turns drafts into numbered events.
Draft = tuple[str, int | None, dict, dict]


def _pair(values: tuple[int, int], index: int, value: int) -> tuple[int, int]:
    return (value, values[1]) if index == 0 else (values[0], value)


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
    # What everyone has seen each seat do with the pile this hand, as card masks of
    # (non_dealer, dealer): cards taken from it, cards discarded onto it, the upcard declined.
    picked: tuple[int, int] = (0, 0)
    shed: tuple[int, int] = (0, 0)
    declined: tuple[int, int] = (0, 0)
    deadline: float | None = None  # epoch seconds by which ``turn`` must act (turn_seconds)
    # Arrangements computed for this very hand; a changed copy (``evolve``) starts with an empty cache.
    _arrangements: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_arrangements", {})

    # --- reading --------------------------------------------------------------------------
    @property
    def seats(self) -> tuple[int, int]:
        return self.non_dealer, self.dealer

    def index_of(self, seat: int) -> int:
        return 0 if seat == self.non_dealer else 1

    def holding(self, seat: int) -> int:
        return self.holdings[self.index_of(seat)]

    def other(self, seat: int) -> int:
        return self.dealer if seat == self.non_dealer else self.non_dealer

    def draw_sources(self) -> tuple[DrawSource, ...]:
        if self.phase is Phase.UPCARD_OFFER:
            return (DrawSource.DISCARD,)
        if self.phase is Phase.DRAW:
            return (DrawSource.STOCK,) if self.stock_only or not self.pile else (DrawSource.STOCK, DrawSource.DISCARD)
        return ()

    def forbidden_discard(self) -> int:
        return self.taken.index if self.taken else -1

    def arrangement(self, seat: int) -> Arrangement:
        """A minimum-deadwood arrangement of ``seat``'s cards; for the seat holding 11 cards,
        after its best discard (never the card just taken from the pile)."""
        found = self._arrangements.get(seat)
        if found is None:
            mask = self.holding(seat)
            if seat == self.turn and self.phase is Phase.DISCARD:
                found = arrange_with_discard(mask, self.forbidden_discard())
            else:
                found = arrange(mask)
            self._arrangements[seat] = found
        return found

    def can_knock(self, rules: Rules) -> bool:
        """Whether the seat to move may knock now (some discard leaves deadwood within the limit)."""
        return self.phase is Phase.DISCARD and self.arrangement(self.turn).deadwood <= rules.knock_limit

    def legal_types(self, rules: Rules) -> tuple[ActionType, ...]:
        """The kinds of action the seat to move may take now."""
        return tuple(kind for kind in PHASE_ACTIONS[self.phase] if kind is not ActionType.KNOCK or self.can_knock(rules))

    def legal_actions(self, rules: Rules) -> list[TurnAction]:
        """Every action the seat to move may take now; a lay-off is listed as the engine's choice
        (the explicit lay-downs a defender may send are too many to list)."""
        if self.phase is Phase.UPCARD_OFFER:
            return [Draw(DrawSource.DISCARD), Pass()]
        if self.phase is Phase.DRAW:
            return [Draw(source) for source in self.draw_sources()]
        if self.phase is Phase.LAYOFF:
            return [LayOff()]
        mask = self.holding(self.turn)
        cards = [card for card in cards_of(mask) if card != self.taken]
        knocks = [Knock(card) for card in cards if min_deadwood_mask(mask ^ card.bit)[0] <= rules.knock_limit]
        return [Discard(card) for card in cards] + knocks

    def check_phase(self, action: TurnAction) -> None:
        """Raise IllegalMove(wrong_phase) unless the phase allows this kind of action."""
        allowed = PHASE_ACTIONS[self.phase]
        if action.kind not in allowed:
            names = ", ".join(kind.value for kind in allowed)
            raise IllegalMove(f"{action.kind.value} is not allowed in the {self.phase.value} phase; allowed: {names}",
                              code="wrong_phase", params={"phase": self.phase.value, "allowed": [k.value for k in allowed]})

    # --- changing -------------------------------------------------------------------------
    def _with_holding(self, seat: int, mask: int, **changes) -> Hand:
        return evolve(self, holdings=_pair(self.holdings, self.index_of(seat), mask), **changes)

    def apply(self, seat: int, action: TurnAction, rules: Rules) -> tuple[Hand | None, list[Draft], HandResult | None]:
        """Apply ``action`` by ``seat`` (whose turn the caller has checked).

        Returns (next hand or None when it ended, drafts, the hand's result when it ended).
        Raises IllegalMove (wrong_phase, card_not_in_hand, cannot_discard_drawn_card,
        deadwood_too_high, invalid_melds, invalid_layoff) and then changes nothing.
        """
        self.check_phase(action)
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

    def _draw(self, seat: int, source: DrawSource) -> tuple[Hand, list[Draft]]:
        sources = self.draw_sources()
        if source not in sources:
            allowed = " or the ".join(s.value for s in sources)
            raise IllegalMove(f"cannot draw from the {source.value} now; draw from the {allowed}", code="wrong_phase",
                              params={"phase": self.phase.value, "allowed": [s.value for s in sources]})
        index = self.index_of(seat)
        if source is DrawSource.STOCK:
            card, rest = self.stock[-1], self.stock[:-1]
            hand = self._with_holding(seat, self.holding(seat) | card.bit, stock=rest, phase=Phase.DISCARD,
                                      taken=None, stock_only=False)
            return hand, [("draw", seat, {"source": source.value, "card": None}, {"card": str(card)})]
        card = self.pile[-1]
        hand = self._with_holding(seat, self.holding(seat) | card.bit, pile=self.pile[:-1], phase=Phase.DISCARD,
                                  taken=card, stock_only=False,
                                  picked=_pair(self.picked, index, self.picked[index] | card.bit))
        return hand, [("draw", seat, {"source": source.value, "card": str(card)}, {})]

    def _pass(self, seat: int):
        index = self.index_of(seat)
        declined = _pair(self.declined, index, self.declined[index] | self.pile[-1].bit)
        drafts: list[Draft] = [("pass", seat, {"card": str(self.pile[-1])}, {})]
        if self.passes == 0:
            return evolve(self, passes=1, turn=self.dealer, declined=declined), drafts, None
        # Both declined: the non-dealer opens with a forced draw from the stock.
        return evolve(self, passes=2, phase=Phase.DRAW, turn=self.non_dealer, stock_only=True,
                       declined=declined), drafts, None

    def _check_discard(self, seat: int, card: Card) -> int:
        holding = self.holding(seat)
        if not holding & card.bit:
            raise IllegalMove(f"{card} is not in your hand", code="card_not_in_hand", params={"card": str(card)})
        if card == self.taken:
            raise IllegalMove(f"{card} was just taken from the discard pile and may not be discarded this turn",
                              code="cannot_discard_drawn_card", params={"card": str(card)})
        return holding & ~card.bit

    def _shed(self, seat: int, card: Card) -> tuple[int, int]:
        index = self.index_of(seat)
        return _pair(self.shed, index, self.shed[index] | card.bit)

    def _discard(self, seat: int, card: Card, rules: Rules):
        rest = self._check_discard(seat, card)
        hand = self._with_holding(seat, rest, pile=self.pile + (card,), phase=Phase.DRAW,
                                  turn=self.other(seat), taken=None, shed=self._shed(seat, card))
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
                raise IllegalMove(f"{action.discard} is your discard and cannot be in a meld", code="invalid_melds",
                                  params={"card": str(action.discard), "reason": "discard_in_meld"})
            melds, used = check_arrangement(action.melds, rest)
            deadwood_cards = tuple(cards_of(rest & ~used))
            deadwood = deadwood_of(rest & ~used)
        if deadwood > rules.knock_limit:
            raise IllegalMove(f"deadwood after discarding {action.discard} would be {deadwood}; the knock limit is {rules.knock_limit}",
                              code="deadwood_too_high", params={"deadwood": deadwood, "knock_limit": rules.knock_limit})
        info = KnockInfo(seat, action.discard, tuple(melds), tuple(deadwood_cards), deadwood)
        hand = self._with_holding(seat, rest, pile=self.pile + (action.discard,), phase=Phase.LAYOFF,
                                  turn=self.other(seat), taken=None, knock=info, shed=self._shed(seat, action.discard))
        return hand, [("knock", seat, {"discard": str(action.discard), **info.as_dict()}, {})], None

    def _lay_off(self, seat: int, action: LayOff, rules: Rules):
        melds, layoffs, remaining = self.check_lay_off(seat, action, rules)
        public = {"melds": [notation(m) for m in melds], "layoffs": [{"card": str(c), "meld": i} for c, i in layoffs],
                  "deadwood_cards": notation(cards_of(remaining)), "deadwood": deadwood_of(remaining)}
        return None, [("layoff", seat, public, {})], self._knock_result(seat, melds, layoffs, remaining, rules)

    def check_lay_off(self, seat: int, action: LayOff, rules: Rules) -> tuple[Melds, tuple[tuple[Card, int], ...], int]:
        """The defender's lay-down as it would be applied: (melds, lay-offs, mask of what remains).

        Raises IllegalMove (card_not_in_hand, invalid_melds, invalid_layoff) for an invalid one."""
        holding = self.holding(seat)
        if action.is_automatic:
            melds, layoffs, _ = self.automatic_layoff(seat, rules)
        else:
            melds, used = check_arrangement(action.melds or (), holding)
            layoffs = action.layoffs or ()
            if layoffs and not self.may_lay_off(rules):
                raise IllegalMove("no lay-offs are allowed against gin", code="invalid_layoff", params={"reason": "gin"})
            check_layoffs(self.knock.melds, holding & ~used, holding, layoffs)
        remaining = holding & ~mask_of(c for meld in melds for c in meld) & ~mask_of(c for c, _ in layoffs)
        return tuple(melds), tuple(layoffs), remaining

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

    def layoff_targets(self, seat: int, rules: Rules) -> dict[str, list[int]]:
        """For each of the defender's cards, the knocker's melds it could extend now (none against
        gin, unless the rules allow laying off on gin); empty outside the lay-off step."""
        if self.phase is not Phase.LAYOFF:
            return {}
        melds = self.knock.melds if self.may_lay_off(rules) else ()
        return {str(card): [i for i, meld in enumerate(melds) if fits(meld, card)] for card in cards_of(self.holding(seat))}

    # --- results --------------------------------------------------------------------------
    def _revealed(self) -> tuple[tuple[int, tuple[Card, ...]], ...]:
        return tuple((seat, tuple(cards_of(self.holding(seat)))) for seat in self.seats)

    def dead_result(self) -> HandResult:
        return HandResult(self.number, Outcome.DEAD, None, 0, self._revealed())

    def _knock_result(self, defender: int, melds: Melds, layoffs, remaining: int, rules: Rules) -> HandResult:
        knock = self.knock
        defender_deadwood = deadwood_of(remaining)
        outcome, winner, points = score_hand(knock.deadwood, defender_deadwood, knock.knocker, defender, rules)
        return HandResult(self.number, outcome, winner, points, self._revealed(), knock.knocker, defender, knock.discard,
                          knock.melds, knock.deadwood_cards, knock.deadwood, melds, layoffs,
                          tuple(cards_of(remaining)), defender_deadwood)


def score_hand(knocker_deadwood: int, defender_deadwood: int, knocker: int, defender: int,
               rules: Rules) -> tuple[Outcome, int, int]:
    """(outcome, winning seat, points) of a knocked hand (docs/rules.md, "Scoring a hand")."""
    if knocker_deadwood == 0:
        return Outcome.GIN, knocker, rules.gin_bonus + defender_deadwood
    if knocker_deadwood < defender_deadwood:
        return Outcome.KNOCK, knocker, defender_deadwood - knocker_deadwood
    return Outcome.UNDERCUT, defender, rules.undercut_bonus + knocker_deadwood - defender_deadwood


def deal(number: int, dealer: int, non_dealer: int, deck: list[Card]) -> Hand:
    """Ten cards each, one at a time from the non-dealer; the next card is the upcard, the rest the stock."""
    dealt = deck[: 2 * HAND_SIZE]
    holdings = (sum(c.bit for c in dealt[0::2]), sum(c.bit for c in dealt[1::2]))
    upcard = deck[2 * HAND_SIZE]
    stock = tuple(reversed(deck[2 * HAND_SIZE + 1:]))
    return Hand(number, dealer, non_dealer, holdings, stock, (upcard,), Phase.UPCARD_OFFER, non_dealer)


def hand_result_from_dict(data: dict) -> HandResult:
    """The inverse of ``HandResult.as_dict`` (for the codec)."""
    def cards(texts) -> tuple[Card, ...]:
        return tuple(CARD_BY_TEXT[t] for t in texts)

    return HandResult(
        data["number"], Outcome(data["outcome"]), data["winner"], data["points"],
        tuple((int(seat), cards(held)) for seat, held in data["hands"].items()),
        data.get("knocker"), data.get("defender"), CARD_BY_TEXT[data["discard"]] if data.get("discard") else None,
        tuple(cards(m) for m in data.get("knocker_melds", ())), cards(data.get("knocker_deadwood_cards", ())),
        data.get("knocker_deadwood"), tuple(cards(m) for m in data.get("defender_melds", ())),
        tuple((CARD_BY_TEXT[l["card"]], l["meld"]) for l in data.get("layoffs", ())),
        cards(data.get("defender_deadwood_cards", ())), data.get("defender_deadwood"),
    )

