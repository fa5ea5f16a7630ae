"""The store contract, run against every store (memory, Redis, Redis Cluster)."""
from __future__ import annotations

import json
import threading
import time

import pytest

from service import ids
from service.store import (
    GameExpired,
    GameMissing,
    GameStore,
    IdempotentResponse,
    IndexList,
    Loaded,
    MemoryStore,
    VersionConflict,
)
from service.store.base import Wake
from service.store.feed import FeedEntry
from service.store.timers import DEADLINE_TIMER, Timer
from tests.store.support import TTL, effects, new_id


def state_text(label: str) -> str:
    """A state blob like the service's: JSON text, non-ASCII included."""
    return json.dumps({"label": label, "players": ["Ann", "Zoë"], "discard": ["9c", "Kd"]})


@pytest.fixture
def game(store: GameStore) -> str:
    """A game at version 1 with events e1..e3."""
    game_id = new_id()
    assert store.create(game_id, state_text("v1"), 1, effects("e1", "e2", "e3")) is None
    return game_id


def test_create_then_load_round_trips(store: GameStore) -> None:
    game_id = new_id()
    store.create(game_id, state_text("start"), 7, effects("dealt"), fingerprint="fp")
    assert store.load(game_id) == Loaded(state_text("start"), 7, None, "fp")
    assert store.events(game_id, 0) == ["dealt"]


def test_create_on_a_taken_id_returns_that_game_and_writes_nothing(store: GameStore, game: str) -> None:
    found = store.create(game, state_text("intruder"), 1, effects("x"), fingerprint="other")
    assert found == Loaded(state_text("v1"), 1, None, "")
    assert store.load(game) == Loaded(state_text("v1"), 1, None, "")
    assert store.events(game, 0) == ["e1", "e2", "e3"]


def test_a_game_may_start_without_events(store: GameStore) -> None:
    game_id = new_id()
    store.create(game_id, state_text("quiet"), 1, effects())
    assert store.events(game_id, 0) == []
    store.save(game_id, 1, state_text("v2"), 2, effects("first"))
    assert store.events(game_id, 0) == ["first"]


def test_every_read_and_write_of_an_unknown_game_is_game_missing(store: GameStore) -> None:
    unknown = new_id()
    for call in (lambda: store.load(unknown), lambda: store.load(unknown, idempotency_key="k"),
                 lambda: store.save(unknown, 1, state_text("v2"), 2, effects("e")),
                 lambda: store.events(unknown, 0), lambda: store.wait_for_events(unknown, 0, timeout=0.5)):
        with pytest.raises(GameMissing) as missing:
            call()
        assert type(missing.value) is GameMissing


def test_an_id_of_no_shard_is_game_missing(store: GameStore) -> None:
    outside = "g_" + "A" * 22
    assert ids.shard_of(outside) is None
    with pytest.raises(GameMissing):
        store.load(outside)


def test_save_at_the_expected_version_replaces_state_and_appends_events(store: GameStore, game: str) -> None:
    store.save(game, 1, state_text("v2"), 2, effects("e4", "e5"))
    assert store.load(game) == Loaded(state_text("v2"), 2, None)
    assert store.events(game, 0) == ["e1", "e2", "e3", "e4", "e5"]
    store.save(game, 2, state_text("v3"), 3, effects())
    assert store.load(game) == Loaded(state_text("v3"), 3, None)
    assert store.events(game, 0) == ["e1", "e2", "e3", "e4", "e5"]


def test_a_stale_save_conflicts_and_changes_nothing(store: GameStore, game: str) -> None:
    store.save(game, 1, state_text("v2"), 2, effects("e4"))
    stale_reply = IdempotentResponse("stale-key", "stale response", TTL)
    with pytest.raises(VersionConflict):
        store.save(game, 1, state_text("stale"), 2, effects("stale event", reply=stale_reply))
    assert store.load(game, idempotency_key="stale-key") == Loaded(state_text("v2"), 2, None)
    assert store.events(game, 0) == ["e1", "e2", "e3", "e4"]


@pytest.mark.parametrize(
    ("after", "expected"),
    [(-5, ["e1", "e2", "e3", "e4"]), (0, ["e1", "e2", "e3", "e4"]), (1, ["e2", "e3", "e4"]), (3, ["e4"]),
     (4, []), (99, [])],
)
def test_events_after_a_sequence_number(store: GameStore, game: str, after: int, expected: list[str]) -> None:
    store.save(game, 1, state_text("v2"), 2, effects("e4"))
    assert store.events(game, after) == expected


def test_only_the_newest_events_are_kept_and_numbers_still_count_from_the_first() -> None:
    for store in (MemoryStore(max_events=5),):
        game_id = new_id()
        store.create(game_id, "s", 1, effects("e1", "e2", "e3"))
        store.save(game_id, 1, "s", 2, effects("e4", "e5", "e6", "e7"))
        assert store.events(game_id, 0) == ["e3", "e4", "e5", "e6", "e7"]
        assert store.events(game_id, 5) == ["e6", "e7"]
        assert store.events(game_id, 7) == []


def test_archived_events_read_as_before_and_later_ones_follow(store: GameStore, game: str) -> None:
    store.save(game, 1, state_text("v2"), 2, effects("e4", "e5"))
    before = {after: store.events(game, after) for after in range(-1, 7)}
    store.archive_events(game)
    assert {after: store.events(game, after) for after in range(-1, 7)} == before
    store.archive_events(game)  # a second time changes nothing
    store.save(game, 2, state_text("v3"), 3, effects("e6", count=6))  # a rematch notice
    assert store.events(game, 0) == ["e1", "e2", "e3", "e4", "e5", "e6"]
    assert store.events(game, 4) == ["e5", "e6"] and store.events(game, 5) == ["e6"]
    assert store.wait_for_events(game, 3, timeout=1) == ["e4", "e5", "e6"]


def test_an_idempotent_response_is_replayed_for_its_key_only(store: GameStore, game: str) -> None:
    reply = IdempotentResponse("client-key-1", '{"version": 2}', TTL)
    store.save(game, 1, state_text("v2"), 2, effects("e4", reply=reply))
    assert store.load(game, idempotency_key="client-key-1").replay == '{"version": 2}'
    assert store.load(game, idempotency_key="another-key").replay is None
    assert store.load(game).replay is None


def test_idempotency_keys_belong_to_one_game(store: GameStore, game: str) -> None:
    other = new_id()
    store.create(other, state_text("other"), 1, effects())
    store.save(game, 1, state_text("v2"), 2, effects(reply=IdempotentResponse("shared", "mine", TTL)))
    assert store.load(other, idempotency_key="shared").replay is None


def test_an_idempotent_response_expires_with_its_ttl(store: GameStore, game: str) -> None:
    store.save(game, 1, state_text("v2"), 2, effects(reply=IdempotentResponse("short", "reply", 1)))
    assert store.load(game, idempotency_key="short").replay == "reply"
    time.sleep(1.3)
    assert store.load(game, idempotency_key="short") == Loaded(state_text("v2"), 2, None)


def test_a_save_refreshes_the_ttl_and_an_expired_game_leaves_a_tombstone(store: GameStore) -> None:
    game_id = new_id()
    store.create(game_id, state_text("v1"), 1, effects("e1", ttl=1))
    store.save(game_id, 1, state_text("v2"), 2, effects("e2", ttl=2))
    time.sleep(1.3)  # past the ttl of create, within the ttl of save
    assert store.load(game_id).version == 2
    assert store.events(game_id, 0) == ["e1", "e2"]
    time.sleep(1.0)  # past the ttl of save, within the tombstone's
    for call in (lambda: store.load(game_id), lambda: store.events(game_id, 0),
                 lambda: store.save(game_id, 2, "x", 3, effects("e3"))):
        with pytest.raises(GameExpired) as expired:
            call()
        assert expired.value.status == 410 and expired.value.params["expired_at"].endswith("Z")


def test_wait_for_events_returns_those_already_there_at_once(store: GameStore, game: str) -> None:
    started = time.monotonic()
    assert store.wait_for_events(game, 2, timeout=5) == ["e3"]
    assert time.monotonic() - started < 0.5


def test_wait_for_events_returns_early_on_a_concurrent_save(store: GameStore, game: str) -> None:
    def save_later() -> None:
        time.sleep(0.3)
        store.save(game, 1, state_text("v2"), 2, effects("e4", "e5", count=5))

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
            store.save(game, 1, state_text(f"racer {number}"), 2, effects(f"move {number}"))
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


def test_the_player_index_lists_games_newest_first_by_page_and_moves_finished_ones(store: GameStore) -> None:
    player = f"p{new_id()[2:]}"
    games = [new_id() for _ in range(5)]
    for created, game_id in enumerate(games):
        store.create(game_id, state_text(game_id), 1, effects(index_add=(player,)), created_at_ms=1000 + created)
    first = store.index_page(player, IndexList.ACTIVE, None, 2)
    assert [game for _, game, _ in first] == [games[4], games[3]]
    assert first[0][2] == state_text(games[4])
    rest = store.index_page(player, IndexList.ACTIVE, first[-1][:2], 10)
    assert [game for _, game, _ in rest] == [games[2], games[1], games[0]]
    store.save(games[2], 1, state_text("over"), 2, effects(index_finish=(player,)))
    assert [g for _, g, _ in store.index_page(player, IndexList.ACTIVE, None, 10)] == [games[4], games[3], games[1], games[0]]
    assert store.index_page(player, IndexList.FINISHED, None, 10) == [(1002, games[2], state_text("over"))]
    assert store.index_page(f"x{player}", IndexList.ACTIVE, None, 10) == []


def test_the_index_leaves_out_games_that_expired(store: GameStore) -> None:
    player = f"p{new_id()[2:]}"
    short, long = new_id(), new_id()
    store.create(short, "s", 1, effects(ttl=1, index_add=(player,)), created_at_ms=2)
    store.create(long, "s", 1, effects(index_add=(player,)), created_at_ms=1)
    time.sleep(1.3)
    assert [game for _, game, _ in store.index_page(player, IndexList.ACTIVE, None, 10)] == [long]


def test_what_is_kept_with_a_game_reads_back_and_goes_with_the_game(store: GameStore) -> None:
    game_id = new_id()
    store.create(game_id, state_text("v1"), 1, effects("e1", ttl=1))
    assert store.kept(game_id, "analysis") is None
    store.keep(game_id, "analysis", "Zoë's analysis")
    store.keep(game_id, "other", "x")
    assert store.kept(game_id, "analysis") == "Zoë's analysis" and store.kept(game_id, "other") == "x"
    assert store.load(game_id) == Loaded(state_text("v1"), 1, None)  # the game itself is unchanged
    time.sleep(1.3)
    assert store.kept(game_id, "analysis") is None
    store.keep(game_id, "analysis", "too late")  # a game that is gone keeps nothing...
    assert store.kept(game_id, "analysis") is None
    with pytest.raises(GameExpired):  # ...and is not brought back
        store.load(game_id)


def test_one_claim_holds_until_it_lapses(store: GameStore, game: str) -> None:
    assert store.claim(game, "analysis", 1) is True
    assert store.claim(game, "analysis", 1) is False
    assert store.claim(game, "other", 1) is True
    time.sleep(1.1)
    assert store.claim(game, "analysis", 1) is True
    assert store.claim(new_id(), "analysis", 1) is False  # no game, no claim


def test_of_racing_claims_exactly_one_wins(store: GameStore, game: str) -> None:
    won: list[bool] = []
    barrier = threading.Barrier(8)

    def race() -> None:
        barrier.wait()
        won.append(store.claim(game, "analysis", 30))

    threads = [threading.Thread(target=race) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(won) == [False] * 7 + [True]


def test_counters_count_per_window(store: GameStore) -> None:
    key = f"k{new_id()}"
    assert [store.count(key, 60) for _ in range(3)] == [1, 2, 3]
    assert store.count(f"other{key}", 60) == 1


def test_the_shared_secret_is_the_first_one_proposed(store: GameStore) -> None:
    first = store.shared_secret("first-proposal-" + new_id())
    assert store.shared_secret("second-proposal") == first


def test_check_passes_when_the_backend_answers(store: GameStore) -> None:
    store.check()


def test_memory_feeds_the_entries_and_keeps_the_deadline_as_a_timer() -> None:
    store = MemoryStore()
    game_id = new_id()
    entry = FeedEntry("wh_1", "game", game_id, "turn", "", "{}", "https://hooks.example/x")
    store.create(game_id, "s", 1, effects(timed=True, deadline=100.0, feed=(entry,)))
    assert [read.entry for read in store.feed.read("test", "reader", 10, 0)] == [entry]
    assert store.timers.claim_due(99.0, 130.0, 10) == []
    assert store.timers.claim_due(100.0, 130.0, 10) == [Timer(DEADLINE_TIMER, game_id, 130.0)]
    store.save(game_id, 1, "s", 2, effects(timed=True, deadline=None))
    assert store.timers.claim_due(1e12, 1e12 + 30, 10) == []


def test_presence_marks_are_read_back_alone_and_with_the_game(store: GameStore, game: str) -> None:
    assert store.present_seats(game) == frozenset() and store.load(game, present=True).present == frozenset()
    store.mark_present(game, 1, True)
    store.mark_present(game, 0, True)
    assert store.present_seats(game) == {0, 1}
    assert store.load(game, present=True).present == {0, 1}
    assert store.load(game).present is None  # not asked for: not read
    store.mark_present(game, 1, False)
    assert store.present_seats(game) == {0}
    store.mark_present(game, 0, False)


def test_a_follower_wakes_for_new_events_and_for_presence_only(store: GameStore, game: str) -> None:
    with store.following(game, 3) as follow:
        assert follow.wait(time.monotonic() + 0.3) is None  # nothing happened
        timer = threading.Timer(0.1, lambda: store.mark_present(game, 0, True))
        timer.start()
        assert follow.wait(time.monotonic() + 5) is Wake.PRESENCE
        assert follow.woken_at <= time.monotonic()
        timer = threading.Timer(0.1, lambda: store.save(game, 1, state_text("v2"), 2, effects("e4", count=4)))
        timer.start()
        assert follow.wait(time.monotonic() + 5) is Wake.EVENTS
        follow.after = 4  # read up to there
        assert follow.wait(time.monotonic() + 0.3) is None
    store.mark_present(game, 0, False)
