"""A rolling deploy: a process of a version before turn deadlines were timers still writes a
game's deadline into its shard's ``P{s<k>}:due`` set (member: the game id). The timers of
this version claim those too, as ``deadline`` timers, on one Redis and on a cluster."""
from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from service import ids
from service.store import store_from_url
from service.store.areas import areas_of
from service.store.keys import timers_key
from service.store.timers import DEADLINE_TIMER
from service.store.timers_redis import legacy_deadlines_key
from tests.store.test_timers import LEASE, claimed, pairs

NOW = time.time()


@pytest.fixture(params=["redis", "redis-cluster"])
def redis_areas(request: pytest.FixtureRequest, key_prefix: str) -> Iterator[tuple]:
    url = request.getfixturevalue("redis_url" if request.param == "redis" else "redis_cluster_url")
    prefix = f"{key_prefix}legacy-{request.param}:"
    store = store_from_url(url, prefix=prefix)
    yield areas_of(store, prefix), store.client, prefix
    store.close()


def legacy_write(client, prefix: str, game_id: str, at: float) -> None:
    """What the save script of the older version does."""
    client.zadd(legacy_deadlines_key(prefix, ids.shard_of(game_id)), {game_id: at})


def test_a_deadline_an_older_version_wrote_fires_as_a_deadline_timer_when_due(redis_areas):
    areas, client, prefix = redis_areas
    due, later = ids.new_game_id(), ids.new_game_id()
    legacy_write(client, prefix, due, NOW - 1)
    legacy_write(client, prefix, later, NOW + LEASE / 2)
    assert ids.key_slot(legacy_deadlines_key(prefix, ids.shard_of(due))) == ids.key_slot(
        timers_key(prefix, ids.shard_of(due)))

    assert pairs(claimed(areas.timers, NOW)) == {(DEADLINE_TIMER, due)}
    assert client.zscore(legacy_deadlines_key(prefix, ids.shard_of(due)), due) is None  # moved, not copied
    assert client.zscore(legacy_deadlines_key(prefix, ids.shard_of(later)), later) == NOW + LEASE / 2  # not due: left
    assert claimed(areas.timers, NOW) == []  # under its lease, as any timer

    [fired] = claimed(areas.timers, NOW + LEASE / 2)
    assert (fired.kind, fired.subject) == (DEADLINE_TIMER, later)
    areas.timers.release(fired)
    # The first one's lease ran out (it was never released); the released one is gone.
    assert pairs(claimed(areas.timers, NOW + 10 * LEASE)) == {(DEADLINE_TIMER, due)}


def test_of_a_game_s_two_deadlines_the_earlier_fires(redis_areas):
    """A game saved by both versions during the deploy has a timer and a legacy entry: it fires
    at the earlier (settling a turn that is not over only sets its deadline again)."""
    areas, client, prefix = redis_areas
    game = ids.new_game_id()
    areas.timers.set(DEADLINE_TIMER, game, NOW + 100)
    legacy_write(client, prefix, game, NOW - 1)
    assert pairs(claimed(areas.timers, NOW)) == {(DEADLINE_TIMER, game)}
    assert claimed(areas.timers, NOW + LEASE / 2) == []  # one timer, under its lease

    other = ids.new_game_id()
    areas.timers.set(DEADLINE_TIMER, other, NOW - 5)
    legacy_write(client, prefix, other, NOW - 1)
    [fired] = claimed(areas.timers, NOW)
    assert fired.subject == other
    areas.timers.release(fired)
    assert pairs(claimed(areas.timers, NOW + 10 * LEASE)) == {(DEADLINE_TIMER, game)}
