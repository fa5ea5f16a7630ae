"""service/matchmaking/pairing.py: worked examples with the default gap (100 points either side
when queued, 10 more a second, at most 600), then properties over generated queues."""
from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings as hypothesis_settings, strategies as st

from service.matchmaking.pairing import GapSettings, Waiting, bot_level_for, groups_to_match, next_change
from service.ratings.glicko2 import Rating

DEFAULT = GapSettings()


def unrated(*ids_and_times: tuple[str, float]) -> list[Waiting]:
    return [Waiting(ticket_id, queued_at, None) for ticket_id, queued_at in ids_and_times]


def test_the_defaults():
    assert (DEFAULT.initial, DEFAULT.widen_per_second, DEFAULT.maximum) == (100, 10, 600)


def test_unrated_tickets_pair_oldest_first_whatever_the_order_given():
    tickets = unrated(("c", 7), ("a", 0), ("d", 9), ("b", 5))
    assert groups_to_match(tickets, 2, now=10) == [("a", "b"), ("c", "d")]


def test_a_box_queue_takes_three_and_leaves_the_youngest_waiting():
    tickets = unrated(("a", 0), ("b", 5), ("c", 7), ("d", 9))
    assert groups_to_match(tickets, 3, now=10) == [("a", "b", "c")]


def test_equal_queue_times_go_by_id():
    assert groups_to_match(unrated(("b", 1), ("c", 1), ("a", 1)), 2, now=1) == [("a", "b")]


def test_each_gap_widens_with_its_own_wait_and_the_narrower_one_decides():
    """a 1500 since 0 s, b 1650 since 10 s, c 1550 since 12 s.
    At 12 s: gaps a 100 + 120 = 220, b 100 + 20 = 120, c 100. a-b: 150 > min(220, 120); a-c: 50
    <= 100. So a meets c; b waits, alone, with nothing to wait for."""
    tickets = [Waiting("a", 0, 1500), Waiting("b", 10, 1650), Waiting("c", 12, 1550)]
    assert groups_to_match(tickets, 2, now=12) == [("a", "c")]
    assert next_change([tickets[1]], now=12) is None
    # Before pairing at 12 s, the next change is a-b: b's gap reaches 150 at 10 + 50 / 10 = 15 s.
    assert next_change(tickets, now=12) == 15


def test_the_longest_waiting_ticket_takes_its_oldest_compatible_partner():
    """At 15 s a-b is possible (b's gap 150 = their distance): a takes b, older than c."""
    tickets = [Waiting("a", 0, 1500), Waiting("b", 10, 1650), Waiting("c", 12, 1550)]
    assert groups_to_match(tickets, 2, now=15) == [("a", "b")]
    assert groups_to_match(tickets, 2, now=14.9) == [("a", "c")]


def test_an_oldest_ticket_with_no_partner_does_not_hold_up_the_others():
    tickets = [Waiting("a", 0, 1000), Waiting("b", 1, 1500), Waiting("c", 2, 1520)]
    assert groups_to_match(tickets, 2, now=3) == [("b", "c")]
    # a's gap is 130 and b's 120 at 3 s; a and b are 500 apart: b's gap reaches 500 at 1 + 40 = 41 s.
    assert next_change(tickets, now=3) == 41


def test_beyond_the_maximum_gap_two_tickets_never_pair():
    tickets = [Waiting("a", 0, 1000), Waiting("b", 0, 1700)]
    assert groups_to_match(tickets, 2, now=10_000) == []
    assert next_change(tickets, now=0) is None
    unbounded = GapSettings(maximum=math.inf)
    assert next_change(tickets, now=0, settings=unbounded) == 60  # (700 - 100) / 10
    assert groups_to_match(tickets, 2, now=60, settings=unbounded) == [("a", "b")]


def test_without_widening_only_the_initial_gap_counts():
    fixed = GapSettings(initial=50, widen_per_second=0, maximum=50)
    tickets = [Waiting("a", 0, 1500), Waiting("b", 0, 1560), Waiting("c", 0, 1540)]
    assert groups_to_match(tickets, 2, now=1000, settings=fixed) == [("a", "c")]
    assert next_change(tickets[:2], now=0, settings=fixed) is None


def test_a_box_group_must_be_compatible_in_every_pair():
    """At 10 s the gaps are a 200, b 190, c 180, d 170. a's oldest compatible partner is b (150
    apart), but b is 250 and 270 from c and d: the group is a, c, d (100, 120 and 20 apart), and
    b waits."""
    tickets = [Waiting("a", 0, 1500), Waiting("b", 1, 1350), Waiting("c", 2, 1600), Waiting("d", 3, 1620)]
    assert groups_to_match(tickets, 3, now=10) == [("a", "c", "d")]


def test_a_ticket_whose_oldest_partner_leads_nowhere_tries_the_next():
    """Gap fixed at 100. p 1300 (oldest) fits only a 1200; a fits p, x and y (1125 both); q
    1025 fits x and y. p finds no third; a's oldest partner p has no third either, so a goes on
    to x and y, before the younger q can take them."""
    fixed = GapSettings(initial=100, widen_per_second=0, maximum=100)
    tickets = [Waiting("p", 0, 1300), Waiting("a", 1, 1200), Waiting("q", 2, 1025), Waiting("x", 3, 1125),
               Waiting("y", 4, 1125)]
    assert groups_to_match(tickets, 3, now=10, settings=fixed) == [("a", "x", "y")]


def test_a_box_group_that_waits_for_its_last_pair():
    """a 1500 since 0, b 1700 since 1, c 1400 since 2, d 1550 since 3. At 5 s (gaps 150, 140,
    130, 120) a is compatible with c and d, but c and d are 150 apart: no group. d's gap reaches
    150 at 3 + 5 = 8 s, when a, c, d form one (a-b only at 1 + 10 = 11 s)."""
    tickets = [Waiting("a", 0, 1500), Waiting("b", 1, 1700), Waiting("c", 2, 1400), Waiting("d", 3, 1550)]
    assert groups_to_match(tickets, 3, now=5) == []
    assert next_change(tickets, now=5) == 8
    assert groups_to_match(tickets, 3, now=8) == [("a", "c", "d")]


def test_a_ticket_stamped_after_now_has_the_initial_gap():
    """Hosts' clocks differ a little: a ticket queued 'in the future' waits 0 s, not less."""
    tickets = [Waiting("a", 10, 1500), Waiting("b", 0, 1600)]
    assert groups_to_match(tickets, 2, now=5) == [("b", "a")]
    tickets = [Waiting("a", 10, 1500), Waiting("b", 0, 1601)]
    assert groups_to_match(tickets, 2, now=5) == []
    assert next_change(tickets, now=5) == pytest.approx(10.1)


@pytest.mark.parametrize("tickets, size", [([Waiting("a", 0, None), Waiting("a", 1, None)], 2),
                                           ([Waiting("a", 0, None)], 1)])
def test_refused(tickets, size):
    with pytest.raises(ValueError):
        groups_to_match(tickets, size, now=0)


@pytest.mark.parametrize("values", [{"initial": -1}, {"widen_per_second": -1}, {"initial": 200, "maximum": 100},
                                    {"initial": math.nan}, {"widen_per_second": math.inf}])
def test_gap_settings_refuse_what_cannot_widen(values):
    with pytest.raises(ValueError):
        GapSettings(**values)


LEVELS = {"easy": Rating(1300, 20, 0.06), "standard": Rating(1500, 20, 0.06), "strong": Rating(1560, 20, 0.06)}


@pytest.mark.parametrize("rating, level", [(0, "easy"), (1399, "easy"), (1400, "easy"), (1401, "standard"),
                                           (1530, "standard"), (1531, "strong"), (3000, "strong"), (None, "standard")])
def test_the_bot_level_nearest_the_player(rating, level):
    """Ties go to the lower level: 1400 is 100 from easy and from standard; 1530 is 30 from standard and strong."""
    assert bot_level_for(rating, LEVELS) == level


# Properties. The gap below is computed from its definition, independently of the module.

def gap(ticket: Waiting, at: float, settings: GapSettings) -> float:
    return min(settings.maximum, settings.initial + settings.widen_per_second * max(0.0, at - ticket.queued_at))


def compatible(group, at: float, settings: GapSettings) -> bool:
    return all(a.rating is None or b.rating is None
               or abs(a.rating - b.rating) <= min(gap(a, at, settings), gap(b, at, settings))
               for a, b in itertools.combinations(group, 2))


gap_settings = st.builds(GapSettings, st.sampled_from([0, 50, 100]), st.sampled_from([0, 2.5, 10]),
                         st.sampled_from([300, 600, math.inf]))


@st.composite
def queues(draw):
    """A queue of up to 12 tickets, all rated or all unrated, on a coarse grid (so that ties
    of distance and gap happen) dense enough for most tickets to have partners and rivals."""
    count = draw(st.integers(0, 12))
    rated = draw(st.booleans())
    return [Waiting(f"t{n}", draw(st.integers(0, 20)) * 1.0,
                    draw(st.integers(0, 16)) * 25.0 + 1000 if rated else None) for n in range(count)]


@hypothesis_settings(max_examples=300, deadline=None)
@given(queues(), st.sampled_from([2, 3]), st.integers(0, 40).map(float), gap_settings)
def test_groups_are_disjoint_compatible_and_leave_no_compatible_group_behind(tickets, size, now, settings):
    groups = groups_to_match(tickets, size, now, settings)
    by_id = {ticket.id: ticket for ticket in tickets}
    matched = [ticket_id for group in groups for ticket_id in group]
    assert len(matched) == len(set(matched))
    for group in groups:
        assert len(group) == size
        assert compatible([by_id[ticket_id] for ticket_id in group], now, settings)
    left = [ticket for ticket in tickets if ticket.id not in matched]
    assert not any(compatible(group, now, settings) for group in itertools.combinations(left, size))


def age(ticket: Waiting) -> tuple[float, str]:
    return ticket.queued_at, ticket.id


@hypothesis_settings(max_examples=300, deadline=None)
@given(queues(), st.sampled_from([2, 3]), st.integers(0, 40).map(float), gap_settings)
def test_each_group_is_the_longest_waiting_tickets_with_its_oldest_partners(tickets, size, now, settings):
    """By brute force: among the tickets no earlier group took, the next group is the oldest
    ticket that has any compatible group, with the oldest partners (the first compatible
    choice in age order: the oldest first partner, then the oldest second)."""
    left = sorted(tickets, key=age)
    for group in groups_to_match(tickets, size, now, settings):
        expected = next(tuple(sorted((ticket, *partners), key=age))
                        for ticket in left
                        for partners in itertools.combinations([other for other in left if other is not ticket], size - 1)
                        if compatible((ticket, *partners), now, settings))
        assert group == tuple(ticket.id for ticket in expected)
        left = [ticket for ticket in left if ticket.id not in group]


@hypothesis_settings(max_examples=300, deadline=None)
@given(queues(), st.integers(0, 40).map(float), gap_settings, st.floats(0, 1))
def test_next_change_is_the_first_moment_a_new_pair_may_meet(tickets, now, settings, fraction):
    """Before the time it gives, no pair that may not meet now may meet; just after it, one may.
    With None, none ever may."""
    apart = [pair for pair in itertools.combinations(tickets, 2) if not compatible(pair, now, settings)]
    change = next_change(tickets, now, settings)
    if change is None:
        assert not any(compatible(pair, now + 1e9, settings) for pair in apart)
        return
    assert change > now
    before = now + fraction * (change - now) * (1 - 1e-9)
    assert not any(compatible(pair, before, settings) for pair in apart)
    assert any(compatible(pair, change + 1e-6, settings) for pair in apart)
