"""A seeded match played by the bots replays exactly (their random choices come from the
Observation's entropy, fixed for a seeded match), and an unseeded one still plays to its end."""
from __future__ import annotations

import pytest

from service import bots

from .positions import VARIANTS, bot_match, is_legal, positions

MIXED = {"classic": (bots.Level.EASY, bots.Level.STRONG),
         "box": (bots.Level.STRONG, bots.Level.EASY, bots.Level.STANDARD)}


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_same_seeded_match_played_twice_gives_the_same_events(variant):
    first_match, first = bot_match(variant, MIXED[variant], seed=77)
    second_match, second = bot_match(variant, MIXED[variant], seed=77)
    assert len(first) > 50 and first == second
    assert first_match == second_match


@pytest.mark.parametrize("variant", VARIANTS)
def test_each_level_decides_the_same_twice_on_the_same_observation(variant):
    for position in positions(variant, range(2), keep=0.05):
        for level in bots.Level:
            assert bots.choose(level, position.obs) == bots.choose(level, position.obs), position.label
        assert bots.hint(position.obs) == bots.hint(position.obs), position.label


@pytest.mark.parametrize("variant", VARIANTS)
def test_an_unseeded_match_is_played_legally_to_its_end(variant):
    def check(obs, action):
        assert is_legal(obs, action), (obs.phase, action)

    match, events = bot_match(variant, MIXED[variant], seed=None, on_decision=check)
    assert match.seed is None and match.is_finished and events[-1].type.value == "match_finished"
