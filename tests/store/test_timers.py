"""The timers' contract (service/store/timers.py) on the embedded store, one Redis and a Redis
Cluster: set, move, cancel, claim under a lease, release."""
from __future__ import annotations

import time

from service import ids
from service.store.areas import Areas
from service.store.timers import Timer

NOW = time.time()
LEASE = 30.0


def subjects(count: int) -> list[str]:
    """Subjects of every sort: game ids (placed in a shard) and other text (hashed to one)."""
    return [ids.new_game_id() if n % 2 else f"invite-{n}" for n in range(count)]


def claimed(timers, at: float, count: int = 100) -> list[Timer]:
    return timers.claim_due(at, at + LEASE, count)


def pairs(found: list[Timer]) -> set[tuple[str, str]]:
    return {(timer.kind, timer.subject) for timer in found}


def test_a_timer_is_claimed_once_due_and_not_before(areas: Areas):
    timers = areas.timers
    timers.set("ticket", "t-1", NOW + 10)
    assert claimed(timers, NOW + 9.9) == []
    [timer] = claimed(timers, NOW + 10)
    assert (timer.kind, timer.subject, timer.lease) == ("ticket", "t-1", NOW + 10 + LEASE)


def test_a_claimed_timer_waits_for_its_lease_then_comes_due_again(areas: Areas):
    timers = areas.timers
    timers.set("ticket", "t-1", NOW)
    assert len(claimed(timers, NOW)) == 1
    assert claimed(timers, NOW + LEASE - 1) == []  # its claimer holds it
    [again] = claimed(timers, NOW + LEASE)  # its claimer died: it fires again
    assert again.subject == "t-1"


def test_releasing_removes_the_fired_timer(areas: Areas):
    timers = areas.timers
    timers.set("ticket", "t-1", NOW)
    [timer] = claimed(timers, NOW)
    timers.release(timer)
    assert claimed(timers, NOW + 10 * LEASE) == []


def test_a_timer_set_again_during_its_claim_survives_the_release(areas: Areas):
    timers = areas.timers
    timers.set("ticket", "t-1", NOW)
    [timer] = claimed(timers, NOW)
    timers.set("ticket", "t-1", NOW + 5)  # e.g. the ticket's next gap widening
    timers.release(timer)
    assert claimed(timers, NOW + 4) == []
    assert pairs(claimed(timers, NOW + 5)) == {("ticket", "t-1")}


def test_a_stale_claim_releases_nothing(areas: Areas):
    timers = areas.timers
    timers.set("ticket", "t-1", NOW)
    [first] = claimed(timers, NOW)
    [second] = claimed(timers, NOW + LEASE)  # the first claimer was taken for dead
    timers.release(first)  # ... and finishes late
    assert claimed(timers, NOW + LEASE + 1) == []  # the second claim still holds it
    timers.release(second)
    assert claimed(timers, NOW + 10 * LEASE) == []


def test_setting_again_moves_the_timer_and_cancel_forgets_it(areas: Areas):
    timers = areas.timers
    timers.set("ticket", "t-1", NOW)
    timers.set("ticket", "t-1", NOW + 20)
    timers.set("ticket", "t-2", NOW)
    timers.cancel("ticket", "t-2")
    timers.cancel("ticket", "never-set")
    assert claimed(timers, NOW + 19) == []
    assert pairs(claimed(timers, NOW + 20)) == {("ticket", "t-1")}


def test_kinds_of_one_subject_are_timers_of_their_own(areas: Areas):
    timers = areas.timers
    timers.set("ticket", "t-1", NOW)
    timers.set("expiry", "t-1", NOW + 1)
    timers.cancel("expiry", "t-1")
    timers.set("widen", "t-1", NOW)
    assert pairs(claimed(timers, NOW + 5)) == {("ticket", "t-1"), ("widen", "t-1")}


def test_claims_take_at_most_count_timers_over_every_shard(areas: Areas):
    timers = areas.timers
    every = subjects(40)
    for n, subject in enumerate(every):
        timers.set("ticket", subject, NOW + n / 100)
    timers.set("ticket", "later", NOW + 60)
    got: list[Timer] = []
    while batch := claimed(timers, NOW + 1, count=7):
        assert len(batch) <= 7
        got += batch
    assert sorted(timer.subject for timer in got) == sorted(every)
    assert len(got) == len(every)  # none twice
