from __future__ import annotations

from service.webhooks.speeds import MAX_RECEIVERS_KNOWN, ReceiverSpeeds


def test_a_receiver_is_quick_while_its_last_delivery_took_under_the_threshold() -> None:
    speeds = ReceiverSpeeds(quick_seconds=0.05)
    assert not speeds.is_quick("http://a")  # not seen yet
    speeds.note("http://a", 0.01)
    assert speeds.is_quick("http://a")
    speeds.note("http://a", 0.05)
    assert not speeds.is_quick("http://a")
    speeds.note("http://a", 0.049)
    speeds.mark_slow("http://a")
    assert not speeds.is_quick("http://a")


def test_a_quick_receiver_gets_as_many_deliveries_in_turn_as_its_last_time_fits_into_a_turn() -> None:
    speeds = ReceiverSpeeds(quick_seconds=0.05)
    assert speeds.in_turn("http://a", 0.01) == 1  # not seen yet: a thread per delivery
    speeds.note("http://a", 0.001)
    assert speeds.in_turn("http://a", 0.01) == 10
    speeds.note("http://a", 0.004)
    assert speeds.in_turn("http://a", 0.01) == 2
    speeds.note("http://a", 0.02)  # quick, but slower than a turn
    assert speeds.in_turn("http://a", 0.01) == 1
    speeds.note("http://a", 0.0)
    assert speeds.in_turn("http://a", 0.01) >= 1000
    speeds.mark_slow("http://a")
    assert speeds.in_turn("http://a", 60.0) == 1


def test_the_receivers_known_are_bounded_and_a_full_map_starts_again() -> None:
    speeds = ReceiverSpeeds(quick_seconds=0.05, most=3)
    for name in "abc":
        speeds.note(f"http://{name}", 0.01)
    speeds.note("http://a", 0.01)  # one already known: nothing forgotten
    assert len(speeds) == 3 and speeds.is_quick("http://c")
    speeds.note("http://d", 0.01)
    assert len(speeds) == 1 and speeds.is_quick("http://d") and not speeds.is_quick("http://a")


def test_the_deployed_bound_holds_under_many_receivers() -> None:
    speeds = ReceiverSpeeds(quick_seconds=0.05)
    for number in range(3 * MAX_RECEIVERS_KNOWN):
        speeds.note(f"https://receiver-{number}.example", 0.01)
        assert len(speeds) <= MAX_RECEIVERS_KNOWN
