"""Positions for the bot tests, built on service.rules only: seeded matches played with random
legal moves (tests/rules/playout.py's policy) and sampled where a seat must act; the hidden
cards of a position re-dealt; matches played to the end by bots.

The bots are reached only through their public interface (``choose``, ``hint``, ``Level``),
so these helpers hold for any policy behind it.
"""
from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from service import bots
from service.rules import Knock, LayOff, Match, Observation, Phase, apply, new_match, observe, rules_for
from service.rules.cards import cards_of, mask_of
from tests.rules.playout import check_invariants, random_action
from tests.rules.scripted import NAMES

VARIANTS = ("classic", "box")
LEVELS = tuple(bots.Level)
MAX_MOVES = 5000


@dataclass(frozen=True)
class Position:
    """A match where ``seat`` must act, and what that seat observes."""

    match: Match
    seat: int
    obs: Observation
    label: str  # which match and move, for failure messages


# Phases that come once or twice a hand: every position in them is kept.
RARE_PHASES = (Phase.UPCARD_OFFER, Phase.LAYOFF)


def positions(variant: str, seeds: range, keep: float, sample_seed: int = 0) -> Iterator[Position]:
    """Each seeded match played to its end with random legal moves; of the positions where a seat
    must act, those of the upcard offer and the lay-off are all yielded, those of the draw and the
    discard each with probability ``keep``."""
    sampler = random.Random(f"{variant}:{sample_seed}")
    for seed in seeds:
        rng = random.Random(seed)
        match, _ = new_match(variant, NAMES[variant], rules_for(variant, None), seed=seed)
        for move in range(MAX_MOVES):
            if match.is_finished:
                break
            seat, action = random_action(match, rng)
            if match.hand.phase in RARE_PHASES or sampler.random() < keep:
                yield Position(match, seat, observe(match, seat), f"{variant} seed {seed} move {move}")
            match, _ = apply(match, seat, action)
        assert match.is_finished, f"{variant} seed {seed} did not end"


def public_cards(match: Match, holder: int) -> int:
    """The cards of ``holder`` that everyone has seen: those taken from the pile this hand and
    still held, and, once ``holder`` has knocked, everything laid down."""
    hand = match.hand
    held = hand.holding(holder)
    known = held & hand.picked[hand.index_of(holder)]
    if hand.knock is not None and hand.knock.knocker == holder:
        laid = [card for meld in hand.knock.melds for card in meld] + list(hand.knock.deadwood_cards)
        known |= held & mask_of(laid)
    return known


def redeal_hidden(match: Match, seat: int, rng: random.Random) -> Match:
    """``match`` with the cards ``seat`` cannot see shuffled between the other hand and the stock:
    the other hand's public cards stay, sizes stay, the pile and ``seat``'s own cards are untouched."""
    hand = match.hand
    them = hand.other(seat)
    known = public_cards(match, them)
    unseen = hand.holding(them) & ~known
    pool = cards_of(unseen) + list(hand.stock)
    rng.shuffle(pool)
    count = unseen.bit_count()
    holdings = list(hand.holdings)
    holdings[hand.index_of(them)] = known | mask_of(pool[:count])
    return replace(match, hand=replace(hand, holdings=tuple(holdings), stock=tuple(pool[count:])))


def is_legal(obs: Observation, action) -> bool:
    """Listed in ``obs.legal``, or an explicit lay-down of a kind listed there (a lay-off with
    its own melds, a knock with its own arrangement), which ``apply`` must then accept."""
    if action in obs.legal:
        return True
    if isinstance(action, LayOff):
        return LayOff() in obs.legal
    if isinstance(action, Knock) and action.melds is not None:
        return Knock(action.discard) in obs.legal
    return False


def bot_match(variant: str, levels: tuple[bots.Level, ...], seed: int | None, rules: dict | None = None,
              on_decision: Callable[[Observation, object], None] | None = None):
    """A match played to its end with every seat's moves chosen by its level; the docs/rules.md
    invariants are checked after every step. Returns (match, events)."""
    match, events = new_match(variant, NAMES[variant], rules_for(variant, rules), seed=seed,
                              bots=[level.value for level in levels])
    check_invariants(match)
    for _ in range(MAX_MOVES):
        if match.is_finished:
            return match, events
        seat = match.turn
        obs = observe(match, seat)
        action = bots.choose(levels[seat], obs)
        if on_decision is not None:
            on_decision(obs, action)
        match, produced = apply(match, seat, action, bot=True)
        events += produced
        check_invariants(match)
    raise AssertionError(f"{variant} {levels} seed {seed}: no end within {MAX_MOVES} moves")
