"""The strong bot counts a hand's knock and gin outs in one pass (evaluation.outs_to_knock_and_gin):
the same numbers, to the last bit, as the standard bot's two separate counts (outs_to)."""
from __future__ import annotations

import pytest

from service.bots.evaluation import indices, outs_to, outs_to_knock_and_gin
from service.bots.knowledge import know
from service.rules import Phase
from tests.bots.positions import positions


@pytest.mark.parametrize("knock_limit", [0, 5, 10])
def test_one_pass_counts_the_outs_of_two(knock_limit):
    checked = 0
    for position in positions("classic", range(4), keep=0.3):
        obs = position.obs
        if obs.phase is not Phase.DISCARD:
            continue
        knowledge = know(obs)
        for discard in indices(obs.cards):
            ten = obs.cards ^ 1 << discard
            assert outs_to_knock_and_gin(ten, knowledge, knock_limit) == (
                outs_to(ten, knowledge, knock_limit), outs_to(ten, knowledge, 0)), position.label
            checked += 1
    assert checked > 100
