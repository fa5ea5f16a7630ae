"""The strong bot reads what the next stock draw may do in one pass (evaluation.next_draw): its
knock and gin outs are the same numbers, to the last bit, as the standard bot's two separate
counts (outs_to), and its deadwood after the draw is that of a search over every discard."""
from __future__ import annotations

import pytest

from service.bots.evaluation import indices, next_draw, outs_to
from service.bots.knowledge import know
from service.rules import Phase
from service.rules.melds import melded_mask
from tests.bots.positions import positions


def deadwood_after_drawing(ten: int, card: int) -> int:
    """The least deadwood of the 10 cards kept of ``ten`` and ``card``, by trying each discard."""
    eleven = ten | 1 << card
    return min(melded_mask(eleven ^ 1 << discard)[0] for discard in indices(eleven))


@pytest.mark.parametrize("knock_limit", [0, 5, 10])
def test_one_pass_counts_the_outs_of_two_and_the_deadwood_after_the_draw(knock_limit):
    checked = 0
    for position in positions("classic", range(4), keep=0.3):
        obs = position.obs
        if obs.phase is not Phase.DISCARD:
            continue
        knowledge = know(obs)
        for discard in indices(obs.cards):
            ten = obs.cards ^ 1 << discard
            knock, gin, after = next_draw(ten, knowledge, knock_limit)
            assert (knock, gin) == (outs_to(ten, knowledge, knock_limit), outs_to(ten, knowledge, 0)), position.label
            expected = sum(knowledge.live[card] * deadwood_after_drawing(ten, card) for card in indices(knowledge.unseen))
            assert after == pytest.approx(expected), position.label
            checked += 1
    assert checked > 100
