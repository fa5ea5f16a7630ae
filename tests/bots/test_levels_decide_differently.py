"""The three levels are three policies: over positions of 40 seeded matches, each pair of levels
chooses differently somewhere (a stub answering every level with one policy fails here)."""
from __future__ import annotations

import itertools

import pytest

from service import bots

from .positions import LEVELS, VARIANTS, positions

MATCHES_PER_VARIANT = 20


@pytest.fixture(scope="module")
def choices() -> list[dict]:
    """Each level's choice at every sampled position of 40 seeded matches (20 of each variant)."""
    return [{level: bots.choose(level, position.obs) for level in LEVELS}
            for variant in VARIANTS
            for position in positions(variant, range(200, 200 + MATCHES_PER_VARIANT), keep=0.02)]


@pytest.mark.parametrize("weaker,stronger", list(itertools.combinations(LEVELS, 2)), ids=lambda level: level.value)
def test_two_levels_do_not_decide_alike_everywhere(choices, weaker, stronger):
    assert len(choices) >= 500
    differ = sum(1 for chosen in choices if chosen[weaker] != chosen[stronger])
    assert differ > 0, f"{weaker.value} and {stronger.value} chose alike at all {len(choices)} positions"
