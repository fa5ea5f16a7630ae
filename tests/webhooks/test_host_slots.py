"""The share of the worker's deliveries one receiver may hold (service/webhooks/host_slots.py)."""
from __future__ import annotations

import threading
import time

import pytest

from service.webhooks.host_slots import HostSlots, receiver_of
from service.webhooks.worker import WorkerSettings


def test_a_receiver_is_its_scheme_and_authority_in_lower_case() -> None:
    assert receiver_of("https://Hooks.Example.com/gin?x=1") == "https://hooks.example.com"
    assert receiver_of("https://hooks.example.com:8443/a") != receiver_of("https://hooks.example.com/a")
    assert receiver_of("http://hooks.example.com/a") != receiver_of("https://hooks.example.com/a")
    assert receiver_of("http://[::1/broken") == "http://[::1/broken"  # unsplittable: itself


def test_each_receiver_holds_at_most_the_limit_and_gets_slots_back() -> None:
    slots = HostSlots(2)
    assert slots.take("a") and slots.take("a") and not slots.take("a")
    assert slots.take("b")
    slots.give_back("a")
    assert slots.taken("a") == 1 and slots.take("a")
    for _ in range(2):
        slots.give_back("a")
    assert slots.taken("a") == 0


def test_a_taker_may_wait_for_a_slot_of_its_receiver_to_come_back() -> None:
    slots = HostSlots(1)
    assert slots.take("a")
    started = time.monotonic()
    assert not slots.take("a", wait=0.05)
    assert time.monotonic() - started >= 0.05
    threading.Timer(0.1, slots.give_back, ("a",)).start()
    assert slots.take("a", wait=5)
    assert slots.taken("a") == 1


def test_by_default_a_quarter_of_the_deliveries_stays_free_for_other_receivers() -> None:
    assert WorkerSettings(concurrency=32).receiver_limit == 24
    assert WorkerSettings(concurrency=4).receiver_limit == 3
    assert WorkerSettings(concurrency=2).receiver_limit == 2  # too few to keep any back
    assert WorkerSettings(concurrency=32, per_receiver=5).receiver_limit == 5


@pytest.mark.parametrize("settings", [{"per_receiver": -1}, {"concurrency": 4, "per_receiver": 5},
                                      {"postpone_seconds": 0}, {"share_wait_seconds": -1}])
def test_unusable_share_settings_are_refused(settings: dict) -> None:
    with pytest.raises(ValueError):
        WorkerSettings(**settings)


def test_the_limit_must_allow_one_delivery() -> None:
    with pytest.raises(ValueError):
        HostSlots(0)
