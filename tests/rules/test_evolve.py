"""evolve: the same copy as dataclasses.replace, for the classes the engine and the service copy."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import pytest

from service import rules
from service.games.record import Record, Seat
from service.rules.evolve import evolve


def _match() -> rules.Match:
    match, _ = rules.new_match("classic", ["Ann", "Bob"], rules.rules_for("classic", None), seed="evolve")
    return match


def test_a_match_evolved_equals_the_match_replaced_and_the_original_is_unchanged():
    match = _match()
    evolved = evolve(match, version=match.version + 1, advice=())
    assert evolved == replace(match, version=match.version + 1, advice=())
    assert evolved is not match and match.version == evolved.version - 1
    assert vars(evolved) == vars(replace(match, version=match.version + 1, advice=()))


def test_a_hand_evolved_starts_with_an_empty_cache_as_a_replaced_one_does():
    hand = _match().hand
    hand.arrangement(hand.non_dealer)  # fills the cache of this very hand
    assert hand._arrangements
    evolved = evolve(hand, passes=1)
    assert evolved == replace(hand, passes=1)
    assert evolved._arrangements == {} and hand._arrangements


def test_events_and_records_evolve_as_they_replace():
    match, events = rules.new_match("classic", ["Ann", "Bob"], rules.rules_for("classic", None), seed="evolve")
    assert evolve(events[0], elapsed_ms=12) == replace(events[0], elapsed_ms=12)
    record = Record(match, (Seat("a" * 64), Seat("b" * 64)))
    assert evolve(record, match=match, acted_at=(1, 2)) == replace(record, match=match, acted_at=(1, 2))


def test_a_name_that_is_no_init_field_is_refused():
    hand = _match().hand
    with pytest.raises(TypeError, match="named"):
        evolve(hand, no_such_field=1)
    with pytest.raises(TypeError, match="_arrangements"):
        evolve(hand, _arrangements={})


def test_classes_it_cannot_copy_like_replace_are_refused():
    @dataclass(frozen=True, slots=True)
    class Slotted:
        value: int

    @dataclass(frozen=True)
    class Defaulted:
        value: int
        derived: list = field(init=False, default_factory=list)

    with pytest.raises(TypeError, match="slots"):
        evolve(Slotted(1), value=2)
    with pytest.raises(TypeError, match="default"):
        evolve(Defaulted(1), value=2)
