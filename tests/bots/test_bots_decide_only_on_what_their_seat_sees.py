"""The issue's information property: a bot sees only what its seat may see. For positions of
seeded classic and box matches, in every phase where a seat must act, the cards that seat cannot
see (the other hand, but for what it took from the pile or laid down, and the stock order) are
re-dealt; the seat's Observation, every level's choice and the hint must not change."""
from __future__ import annotations

import random
from collections import Counter

import pytest

from service import bots
from service.rules import Phase, observe
from tests.rules.playout import check_invariants

from .positions import LEVELS, VARIANTS, positions, public_cards, redeal_hidden

MATCHES_PER_CHUNK = 3
CHUNKS = 4  # per variant: 2 variants x 4 chunks x at least MIN_POSITIONS positions
MIN_POSITIONS = 125  # per chunk, so at least 1,000 positions in all
KEEP = 0.08  # share of the draw and discard positions checked


def decisions(match, seat):
    obs = observe(match, seat)
    return obs, {level: bots.choose(level, obs) for level in LEVELS}, bots.hint(obs)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_redealing_the_cards_a_seat_cannot_see_changes_nothing_it_decides(variant, chunk):
    seeds = range(chunk * MATCHES_PER_CHUNK, (chunk + 1) * MATCHES_PER_CHUNK)
    rng = random.Random(f"redeal:{variant}:{chunk}")
    phases, hidden_hand_moved, stock_moved = Counter(), 0, 0
    for position in positions(variant, seeds, KEEP):
        match, seat = position.match, position.seat
        other = match.hand.other(seat)
        redealt = redeal_hidden(match, seat, rng)
        check_invariants(redealt)
        assert redealt.hand.holding(seat) == match.hand.holding(seat) and redealt.hand.pile == match.hand.pile
        assert public_cards(redealt, other) == public_cards(match, other)
        obs, chosen, hint = decisions(match, seat)
        assert obs == position.obs
        assert decisions(redealt, seat) == (obs, chosen, hint), position.label
        phases[obs.phase] += 1
        hidden_hand_moved += redealt.hand.holding(other) != match.hand.holding(other)
        stock_moved += redealt.hand.stock != match.hand.stock
    total = sum(phases.values())
    assert total >= MIN_POSITIONS
    assert set(phases) == set(Phase), phases
    # A re-deal that left the hidden cards where they were would prove nothing.
    assert hidden_hand_moved >= 0.8 * (total - phases[Phase.LAYOFF]), (hidden_hand_moved, phases)
    assert stock_moved >= 0.95 * total


def test_a_policy_that_peeked_at_hidden_cards_would_be_caught():
    """The re-deal changes what a cheating policy would act on: the other hand and the top of the stock."""
    rng = random.Random("peek")
    checked = caught = 0
    for position in positions("classic", range(2), KEEP):
        redealt = redeal_hidden(position.match, position.seat, rng)
        peek = lambda match: (match.hand.holding(match.hand.other(position.seat)), match.hand.stock[-1])  # noqa: E731
        checked += 1
        caught += peek(redealt) != peek(position.match)
    assert checked and caught >= 0.9 * checked
