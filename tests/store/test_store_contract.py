"""The store contract, run against every store (memory, Redis, Redis Cluster)."""
from __future__ import annotations

import json
import threading
import time
import uuid

import pytest

from service.store import (
    GameMissing,
    GameStore,
    IdempotentResponse,
    Loaded,
    VersionConflict,
)

TTL = 60


def new_id() -> str:
    return f"g_{uuid.uuid4().hex}"


def state_text(label: str) -> str:
    """A state blob like the service's: JSON text, non-ASCII included."""
    return json.dumps({"label": label, "players": ["Ann", "Zoë"], "discard": ["9c", "Kd"]})


@pytest.fixture
def game(store: GameStore) -> str:
    """A game at version 1 with events e1..e3."""
    game_id = new_id()
    store.create(game_id, state_text("v1"), 1, ["e1", "e2", "e3"], TTL)
    return game_id


def test_create_then_load_round_trips(store: GameStore) -> None:
    game_id = new_id()
    store.create(game_id, state_text("start"), 7, ["dealt"], TTL)
    assert store.load(game_id) == Loaded(state_text("start"), 7, None)
    assert store.events(game_id, 0) == ["dealt"]


def test_create_refuses_a_taken_id_and_keeps_the_game(store: GameStore, game: str) -> None:
    with pytest.raises(ValueError):
        store.create(game, state_text("intruder"), 1, ["x"], TTL)
    assert store.load(game) == Loaded(state_text("v1"), 1, None)
    assert store.events(game, 0) == ["e1", "e2", "e3"]


def test_a_game_may_start_without_events(store: GameStore) -> None:
    game_id = new_id()
    store.create(game_id, state_text("quiet"), 1, [], TTL)
    assert store.events(game_id, 0) == []
    store.save(game_id, 1, state_text("v2"), 2, ["first"], TTL)
    assert store.events(game_id, 0) == ["first"]


def test_every_read_and_write_of_an_unknown_game_is_game_missing(store: GameStore) -> None:
    unknown = new_id()
    with pytest.raises(GameMissing):
        store.load(unknown)
    with pytest.raises(GameMissing):
        store.load(unknown, idempotency_key="k")
    with pytest.raises(GameMissing):
        store.save(unknown, 1, state_text("v2"), 2, ["e"], TTL)
    with pytest.raises(GameMissing):
        store.events(unknown, 0)
    with pytest.raises(GameMissing):
        store.wait_for_events(unknown, 0, timeout=0.5)


def test_save_at_the_expected_version_replaces_state_and_appends_events(
    store: GameStore, game: str
) -> None:
    store.save(game, 1, state_text("v2"), 2, ["e4", "e5"], TTL)
    assert store.load(game) == Loaded(state_text("v2"), 2, None)
    assert store.events(game, 0) == ["e1", "e2", "e3", "e4", "e5"]
    store.save(game, 2, state_text("v3"), 3, [], TTL)
    assert store.load(game) == Loaded(state_text("v3"), 3, None)
    assert store.events(game, 0) == ["e1", "e2", "e3", "e4", "e5"]


def test_a_stale_save_conflicts_and_changes_nothing(store: GameStore, game: str) -> None:
    store.save(game, 1, state_text("v2"), 2, ["e4"], TTL)
    stale_reply = IdempotentResponse("stale-key", "stale response", TTL)
    with pytest.raises(VersionConflict):
        store.save(game, 1, state_text("stale"), 2, ["stale event"], TTL, stale_reply)
    assert store.load(game, idempotency_key="stale-key") == Loaded(state_text("v2"), 2, None)
    assert store.events(game, 0) == ["e1", "e2", "e3", "e4"]


@pytest.mark.parametrize(
    ("after", "expected"),
    [
        (-5, ["e1", "e2", "e3", "e4"]),
        (0, ["e1", "e2", "e3", "e4"]),
        (1, ["e2", "e3", "e4"]),
        (3, ["e4"]),
        (4, []),
        (99, []),
    ],
)
def test_events_after_a_sequence_number(
    store: GameStore, game: str, after: int, expected: list[str]
) -> None:
    store.save(game, 1, state_text("v2"), 2, ["e4"], TTL)
    assert store.events(game, after) == expected


def test_an_idempotent_response_is_replayed_for_its_key_only(store: GameStore, game: str) -> None:
    reply = IdempotentResponse("client-key-1", '{"version": 2}', TTL)
    store.save(game, 1, state_text("v2"), 2, ["e4"], TTL, reply)
    assert store.load(game, idempotency_key="client-key-1").replay == '{"version": 2}'
    assert store.load(game, idempotency_key="another-key").replay is None
    assert store.load(game).replay is None


def test_idempotency_keys_belong_to_one_game(store: GameStore, game: str) -> None:
    other = new_id()
    store.create(other, state_text("other"), 1, [], TTL)
    store.save(game, 1, state_text("v2"), 2, [], TTL, IdempotentResponse("shared", "mine", TTL))
    assert store.load(other, idempotency_key="shared").replay is None


def test_an_idempotent_response_expires_with_its_ttl(store: GameStore, game: str) -> None:
    store.save(game, 1, state_text("v2"), 2, [], TTL, IdempotentResponse("short", "reply", 1))
    assert store.load(game, idempotency_key="short").replay == "reply"
    time.sleep(1.3)
    assert store.load(game, idempotency_key="short") == Loaded(state_text("v2"), 2, None)


def test_a_save_refreshes_the_ttl_of_state_and_events(store: GameStore) -> None:
    game_id = new_id()
    store.create(game_id, state_text("v1"), 1, ["e1"], ttl=1)
    store.save(game_id, 1, state_text("v2"), 2, ["e2"], ttl=2)
    time.sleep(1.3)  # past the ttl of create, within the ttl of save
    assert store.load(game_id).version == 2
    assert store.events(game_id, 0) == ["e1", "e2"]
    time.sleep(1.0)  # past the ttl of save
    with pytest.raises(GameMissing):
        store.load(game_id)
    with pytest.raises(GameMissing):
        store.events(game_id, 0)


def test_wait_for_events_returns_those_already_there_at_once(store: GameStore, game: str) -> None:
    started = time.monotonic()
    assert store.wait_for_events(game, 2, timeout=5) == ["e3"]
    assert time.monotonic() - started < 0.5


def test_wait_for_events_returns_early_on_a_concurrent_save(store: GameStore, game: str) -> None:
    def save_later() -> None:
        time.sleep(0.3)
        store.save(game, 1, state_text("v2"), 2, ["e4", "e5"], TTL)

    saver = threading.Thread(target=save_later)
    started = time.monotonic()
    saver.start()
    try:
        found = store.wait_for_events(game, 3, timeout=10)
    finally:
        saver.join()
    assert found == ["e4", "e5"]
    assert 0.3 <= time.monotonic() - started < 1.0


def test_wait_for_events_times_out_with_nothing(store: GameStore, game: str) -> None:
    started = time.monotonic()
    assert store.wait_for_events(game, 3, timeout=0.5) == []
    assert 0.5 <= time.monotonic() - started < 1.0


def test_of_racing_saves_on_one_version_exactly_one_wins(store: GameStore, game: str) -> None:
    racers = 20
    start_together = threading.Barrier(racers)
    winners: list[int] = []
    losers: list[int] = []

    def race(number: int) -> None:
        start_together.wait()
        try:
            store.save(game, 1, state_text(f"racer {number}"), 2, [f"move {number}"], TTL)
        except VersionConflict:
            losers.append(number)
        else:
            winners.append(number)

    threads = [threading.Thread(target=race, args=(number,)) for number in range(racers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(winners) == 1 and len(losers) == racers - 1
    assert store.load(game) == Loaded(state_text(f"racer {winners[0]}"), 2, None)
    assert store.events(game, 3) == [f"move {winners[0]}"]


def test_check_passes_when_the_backend_answers(store: GameStore) -> None:
    store.check()
