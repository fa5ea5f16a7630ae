"""Glicko-2, a match's games and the bots' ratings are pure: importing them loads nothing but
the standard library, the engine (service.rules) and service.ratings itself."""
from __future__ import annotations

import pytest

from tests.ratings.purity import loaded_outside


@pytest.mark.parametrize("module", ["service.ratings.glicko2", "service.ratings.outcomes", "service.ratings.bots"])
def test_importing_loads_only_the_standard_library_the_engine_and_ratings(module):
    assert loaded_outside(module, ("service.rules", "service.ratings")) == []


def test_the_check_sees_what_is_not_pure():
    assert "flask" in loaded_outside("service.app", ("service",))
