"""Scripted positions for the rules tests: hands drawn as diagrams and dealt from a deck stacked
to order, so that each test sets up exactly the position its rule talks about.

A diagram lists cards separated by spaces, with "|" between groups (melds, then deadwood):

    KNOCKER = "4s 5s 6s | 9c 9d 9h | Ac 2c 3c | Kd"

``start`` builds a match without randomness: ``new_match`` makes a real match, then its first
hand is replaced by ``hand.deal`` of a stacked deck and its seats by fixed ones (classic: seat 0
deals; box: seat 0 is in the box, seat 1 is the captain, seat 2 sits out).
"""
from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from service import bots
from service.rules import (CARDS, Card, Discard, Draw, Event, GameError, Knock, LayOff, Match, apply, new_match, observe,
                           parse_card, rules_for, view_for)
from service.rules.hand import deal

NAMES = {"classic": ["ann", "bob"], "box": ["ann", "bob", "cyd"]}
DEALER, NON_DEALER = 0, 1  # classic seats of a scripted match
BOX_PLAYER, CAPTAIN, SITTER = 0, 1, 2  # box seats: the box player deals, the captain is the non-dealer
HAND_SIZE = 10
CARD_TOKEN = re.compile(r'"([A2-9TJQK][cdhs])"')


def card(text: str) -> Card:
    return parse_card(text)


def cards(diagram: str) -> list[Card]:
    """Every card of a diagram, in order."""
    return [parse_card(text) for text in diagram.replace("|", " ").split()]


def groups(diagram: str) -> tuple[tuple[Card, ...], ...]:
    """The groups of a diagram (split at "|"): the melds a player declares."""
    return tuple(tuple(cards(part)) for part in diagram.split("|"))


def stacked_deck(non_dealer: str, dealer: str, upcard: str, stock: str = "") -> list[Card]:
    """A deck dealing these hands one card at a time from the non-dealer, then the upcard, then
    ``stock`` from the top of the stock down; the remaining cards, in index order, fill the stock's bottom."""
    first, second = cards(non_dealer), cards(dealer)
    assert len(first) == len(second) == HAND_SIZE, "each player is dealt 10 cards"
    chosen = [c for pair in zip(first, second) for c in pair] + [card(upcard)] + cards(stock)
    assert len(set(chosen)) == len(chosen), "a card appears twice in the script"
    return chosen + [c for c in CARDS if c not in chosen]


def start(variant: str = "classic", *, non_dealer: str, dealer: str, upcard: str, stock: str = "",
          rules: dict | None = None) -> Match:
    """A match in its first hand, dealing exactly these cards, before anyone has acted."""
    match, _ = new_match(variant, NAMES[variant], rules_for(variant, rules), seed=1)
    if variant == "box":
        match = replace(match, dealer=BOX_PLAYER, captain=CAPTAIN, sitter=SITTER)
    else:
        match = replace(match, dealer=DEALER)
    return redeal(match, non_dealer=non_dealer, dealer=dealer, upcard=upcard, stock=stock)


def redeal(match: Match, *, non_dealer: str, dealer: str, upcard: str, stock: str = "") -> Match:
    """The match with its current hand replaced by one dealing these cards (same number, same seats)."""
    deck = stacked_deck(non_dealer, dealer, upcard, stock)
    return replace(match, hand=deal(match.deals, match.dealer, match.opponent_of_dealer, deck))


def play(match: Match, *moves: tuple[int, object]) -> tuple[Match, list[Event]]:
    """Apply (seat, action) moves in order; returns the match and every event they produced."""
    events: list[Event] = []
    for seat, action in moves:
        match, produced = apply(match, seat, action)
        events += produced
    return match, events


def refusal(match: Match, seat: int, action) -> GameError:
    """The error ``apply`` raises for this move; fails the test if the move is accepted."""
    with pytest.raises(GameError) as caught:
        apply(match, seat, action)
    return caught.value


def knock_at_once(match: Match, discard: str, melds: str | None = None) -> Match:
    """The non-dealer takes the upcard and knocks discarding ``discard``, declaring ``melds`` (a
    diagram) or, without them, letting the engine arrange the hand."""
    seat = match.hand.non_dealer
    knock = Knock(card(discard), groups(melds) if melds else None)
    match, _ = play(match, (seat, Draw("discard")), (seat, knock))
    return match


def knocked_hand(variant: str = "classic", *, knocker: str, defender: str, upcard: str, discard: str,
                 rules: dict | None = None) -> Match:
    """The match after a first hand where the non-dealer (``knocker``) takes the upcard and knocks
    at once and the dealer (``defender``) answers with the engine's best lay-off: see ``last_hand``."""
    match = knock_at_once(start(variant, non_dealer=knocker, dealer=defender, upcard=upcard, rules=rules), discard)
    match, _ = play(match, (match.hand.dealer, LayOff()))
    return match


def stock_turns(match: Match, count: int) -> tuple[Match, list[Event]]:
    """``count`` turns in which the player to move draws from the stock and discards that very card."""
    events: list[Event] = []
    for _ in range(count):
        seat, top = match.hand.turn, match.hand.stock[-1]
        match, produced = play(match, (seat, Draw("stock")), (seat, Discard(top)))
        events += produced
    return match, events


def held(match: Match, seat: int) -> set[Card]:
    """The cards ``seat`` holds, as its own view shows them."""
    return set(cards(" ".join(view_for(match, seat)["you"]["hand"])))


def cards_shown(document) -> set[Card]:
    """Every card named anywhere in a JSON-able document (a view, a redacted event)."""
    return {parse_card(text) for text in CARD_TOKEN.findall(json.dumps(document))}


def hinted_move(match: Match) -> tuple[int, object]:
    """The standard bot's move for the seat to move (the one the hint suggests): legal, and
    good enough to end matches. In a box match the captain plays what the sitter would advise."""
    seat = match.hand.turn
    return seat, bots.choose(bots.Level.STANDARD, observe(match, seat))


def playout(variant: str, seed: int, rules: dict | None = None, on_step=None, max_moves: int = 5000):
    """A seeded match played to its end with hinted moves.

    Returns (match, moves, events); ``on_step(before, move, after, events)`` is called after each move."""
    match, events = new_match(variant, NAMES[variant], rules_for(variant, rules), seed=seed)
    moves = []
    for _ in range(max_moves):
        if match.is_finished:
            return match, moves, events
        move = hinted_move(match)
        after, produced = apply(match, *move)
        if on_step is not None:
            on_step(match, move, after, produced)
        match, events = after, events + produced
        moves.append(move)
    raise AssertionError(f"seed {seed}: the match did not end within {max_moves} moves")
