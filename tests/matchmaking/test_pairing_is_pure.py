"""The pairing rule is pure: importing it loads nothing but the standard library and the
ratings' values (service.ratings, itself pure: tests/ratings)."""
from __future__ import annotations

from tests.ratings.purity import loaded_outside


def test_importing_the_pairing_rule_loads_only_the_standard_library_and_ratings():
    assert loaded_outside("service.matchmaking.pairing", ("service.matchmaking", "service.ratings", "service.rules")) == []
