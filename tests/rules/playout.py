"""Seeded random playouts: a policy that plays legal moves (and tries illegal ones), and the
invariants of docs/rules.md checked after every step."""
from __future__ import annotations

import random

from service.rules import (CARDS, Discard, Draw, IllegalMove, Forbidden, Knock, LayOff, Pass, Phase, apply,
                           encode, new_match, rules_for)
from service.rules.cards import cards_of
from service.rules.melds import arrange_with_discard

ILLEGAL_CODES = {"not_your_turn", "wrong_phase", "card_not_in_hand", "cannot_discard_drawn_card",
                 "deadwood_too_high", "invalid_melds", "invalid_layoff", "game_finished", "forbidden"}


def check_invariants(match) -> None:
    """52 cards partitioned; hand sizes right for the phase; scores and roles consistent."""
    hand = match.hand
    if hand is None:
        assert match.is_finished
        return
    stock, pile = set(hand.stock), set(hand.pile)
    holdings = [set(cards_of(hand.holding(s))) for s in hand.seats]
    assert len(stock) == len(hand.stock) and len(pile) == len(hand.pile)
    assert len(stock) + len(pile) + sum(map(len, holdings)) == 52
    assert stock | pile | holdings[0] | holdings[1] == set(CARDS)
    for seat, held in zip(hand.seats, holdings):
        expected = 11 if hand.phase is Phase.DISCARD and hand.turn == seat else 10
        assert len(held) == expected, (hand.phase, seat, len(held))
    assert hand.turn in hand.seats
    assert len(hand.stock) > match.rules.dead_hand_stock or hand.phase in (Phase.DISCARD, Phase.LAYOFF)
    if match.variant == "box":
        assert sorted((match.dealer, match.captain, match.sitter)) == [0, 1, 2]
        assert set(hand.seats) == {match.dealer, match.captain}
        assert match.scores[match.sitter] >= 0


def random_action(match, rng: random.Random):
    """A legal action for the seat to move, greedy enough that matches end."""
    hand = match.hand
    seat = hand.turn
    mask = hand.holding(seat)
    if hand.phase is Phase.UPCARD_OFFER:
        return seat, Draw("discard") if rng.random() < 0.3 else Pass()
    if hand.phase is Phase.DRAW:
        sources = hand.draw_sources()
        return seat, Draw(rng.choice(sources) if rng.random() < 0.3 else sources[0])
    if hand.phase is Phase.DISCARD:
        best = arrange_with_discard(mask, hand.forbidden_discard())
        if best.deadwood <= match.rules.knock_limit and rng.random() < 0.8:
            return seat, Knock(best.best_discard)
        choices = [c for c in cards_of(mask) if c != hand.taken]
        return seat, Discard(best.best_discard if rng.random() < 0.7 else rng.choice(choices))
    return seat, LayOff()


def illegal_actions(match, rng: random.Random):
    """Actions that must be refused now."""
    if match.is_finished:
        return [(0, Pass()), (1, Draw("stock"))]
    hand = match.hand
    seat = hand.turn
    other = hand.other(seat)
    tries = [(other, Draw("stock")), (other, Pass()), (seat, Discard(_card_not_held(hand.holding(seat), rng)))]
    if match.sitter is not None:
        tries.append((match.sitter, Draw("stock")))
    if hand.phase is not Phase.DISCARD:
        tries.append((seat, Knock(rng.choice(cards_of(hand.holding(seat))))))
    if hand.phase is not Phase.LAYOFF:
        tries.append((seat, LayOff()))
    if hand.phase is Phase.DISCARD and hand.taken is not None:
        tries.append((seat, Discard(hand.taken)))
    if hand.phase is Phase.DRAW and hand.stock_only:
        tries.append((seat, Draw("discard")))
    return tries


def _card_not_held(holding: int, rng: random.Random):
    while True:
        card = rng.choice(CARDS)
        if not holding & card.bit:
            return card


def play_match(variant: str, seed: int, check=check_invariants):
    """Play one seeded match to its end; returns (match, events, hand results, illegal tries)."""
    rng = random.Random(seed)
    match, events = new_match(variant, ["p0", "p1", "p2"][: 2 if variant == "classic" else 3],
                              rules_for(variant, None), seed=seed)
    results, refused = [], 0
    check(match)
    for _ in range(20000):
        if match.is_finished:
            break
        before = encode(match)
        for seat, action in illegal_actions(match, rng):
            try:
                apply(match, seat, action)
            except (IllegalMove, Forbidden) as error:
                assert error.code in ILLEGAL_CODES
                refused += 1
            else:
                raise AssertionError(f"illegal action accepted: seat {seat} {action} in {match.hand.phase}")
        assert encode(match) == before
        seat, action = random_action(match, rng)
        match, new = apply(match, seat, action)
        events += new
        results += [e.public for e in new if e.type == "hand_scored"]
        check(match)
    assert match.is_finished, "match did not end"
    return match, events, results, refused
