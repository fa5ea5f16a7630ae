"""Every level, in every seat of both variants, alone or mixed with the others: each action a bot
chooses is legal now, the matches end, and the invariants of docs/rules.md hold after every step
(tests/rules/playout.py's checker). The target is lowered so that 36 matches stay quick; each
still takes several hands."""
from __future__ import annotations

import itertools

import pytest

from .positions import LEVELS, bot_match, is_legal

TARGET = {"target_score": 50}
SEATINGS = [("classic", levels) for levels in itertools.product(LEVELS, repeat=2)] + \
           [("box", levels) for levels in itertools.product(LEVELS, repeat=3)]


@pytest.mark.parametrize("variant,levels", SEATINGS, ids=lambda v: v if isinstance(v, str) else "-".join(l.value for l in v))
def test_bots_of_every_level_choose_only_legal_actions_and_finish_the_match(variant, levels):
    seed = SEATINGS.index((variant, levels)) + 300
    played = []

    def check(obs, action):
        assert obs.to_act and is_legal(obs, action), (obs.phase, action, obs.legal)
        played.append(obs.seat)

    match, _ = bot_match(variant, levels, seed, TARGET, on_decision=check)
    assert match.is_finished and match.result.winner is not None
    assert max(match.scores) >= match.rules.target_score
    assert len(set(played)) >= 2  # both seats of a hand act in it (the defender lays down)
