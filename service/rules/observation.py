"""What one seat knows: the input of every computer policy (bots, hints, timeouts).

An ``Observation`` is built from the match but holds only what that seat may see: its own
cards, the discard pile, the size of the stock and of the other hand, the knock on the table,
what each player did in the open this hand (cards taken from the pile, discards, the upcard
declined), the scores and the rules. Never the stock order or another hand, so a policy
cannot act on them even by mistake.
"""
from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from .actions import TurnAction
from .cards import Card
from .hand import Hand, KnockInfo, Phase
from .match import Match
from .options import Rules


@dataclass(frozen=True)
class SeatRecord:
    """What everyone saw one seat do with the pile this hand, as card masks."""

    picked: int  # taken from the discard pile (the upcard included)
    shed: int  # discarded (a knocker's discard included)
    declined: int  # the upcard passed on


@dataclass(frozen=True)
class Observation:
    seat: int  # whose cards these are (for the box sitter's advice: the captain)
    opponent: int
    variant: str
    rules: Rules
    hand_number: int
    dealer: int
    phase: Phase
    to_act: bool  # whether ``seat`` must act now
    cards: int  # mask of the seat's cards
    pile: tuple[Card, ...]  # discard pile, top card last
    stock_count: int
    opponent_card_count: int
    taken: Card | None  # the card the seat took from the pile this turn (it may not discard it)
    knock: KnockInfo | None  # during the lay-off phase
    mine: SeatRecord
    theirs: SeatRecord
    scores: tuple[int, ...]  # by seat
    legal: tuple[TurnAction, ...]  # the seat's legal actions now (empty when it is not to act)
    # Where a policy draws its random choices from: fixed for a seeded match and a given moment
    # (so its games replay), unpredictable otherwise; derived so that it reveals nothing of the deck.
    entropy: int


def observe(match: Match, seat: int) -> Observation:
    """What ``seat``, one of the two seats playing the current hand, knows now.

    Raises ValueError when the match has no hand in play or ``seat`` holds no cards in it."""
    hand: Hand | None = match.hand
    if hand is None or seat not in hand.seats:
        raise ValueError(f"seat {seat} holds no cards now")
    me, them = hand.index_of(seat), 1 - hand.index_of(seat)
    to_act = hand.turn == seat
    return Observation(
        seat=seat, opponent=hand.other(seat), variant=match.variant, rules=match.rules, hand_number=hand.number,
        dealer=hand.dealer, phase=hand.phase, to_act=to_act, cards=hand.holdings[me], pile=hand.pile,
        stock_count=len(hand.stock), opponent_card_count=hand.holdings[them].bit_count(),
        taken=hand.taken if to_act else None, knock=hand.knock,
        mine=SeatRecord(hand.picked[me], hand.shed[me], hand.declined[me]),
        theirs=SeatRecord(hand.picked[them], hand.shed[them], hand.declined[them]),
        scores=match.scores, legal=tuple(hand.legal_actions(match.rules)) if to_act else (),
        entropy=_entropy(match, seat),
    )


def _entropy(match: Match, seat: int) -> int:
    if match.seed is None:
        return secrets.randbits(64)
    digest = hashlib.sha256(f"policy:{match.seed}:{match.event_count}:{seat}".encode()).digest()
    return int.from_bytes(digest[:8], "big")
