"""The player index on Redis: each player's games, newest first, a page at a time.

A player's ``active`` and ``finished`` lists are a sorted set per shard,
``P{s<k>}:p:<player>:active|finished`` (``keys.index_key``), scored by when the game was
created (ms). The game scripts (service/store/redis.py) write them in the same round trip as
the game: a new game joins ``active``, a match that ends moves to ``finished``, and each list
lives as long as the tombstone of its latest game. An entry outlives its game, so reading drops
the entries of games that expired.
"""
from __future__ import annotations

from redis import Redis
from redis.cluster import RedisCluster

from service import ids
from service.store.base import IndexList
from service.store.keys import game_keys, index_key
from service.store.redis_errors import store_errors

Entry = tuple[int, str, str]


def index_page(client: Redis | RedisCluster, prefix: str, player: str, which: IndexList,
               before: tuple[int, str] | None, limit: int) -> list[Entry]:
    """Up to ``limit`` live games of a player's list as (created at in ms, game id, state),
    newest first, after the cursor ``before``.

    Reads the list in every shard (one round trip per node), then the candidates' states
    (one more), dropping the entries of expired games (one more, when there are some); when some had expired it reads on
    past them, so a page is short only at the end of the list. Raises StoreError."""
    keys = [index_key(prefix, shard, player, which.value) for shard in range(ids.SHARDS)]
    page: list[Entry] = []
    while len(page) < limit:
        wanted = limit - len(page)
        candidates, live = _candidates(client, prefix, keys, before, wanted)
        page += live
        if len(candidates) < wanted:
            break  # the end of the list
        before = candidates[-1][:2]
    return page


def _candidates(client: Redis | RedisCluster, prefix: str, keys: list[str], before: tuple[int, str] | None,
                limit: int) -> tuple[list[Entry], list[Entry]]:
    """The next ``limit`` entries of the index after ``before`` as (score, game, key), and
    those of them whose game still lives as (score, game, state)."""
    top = "+inf" if before is None else before[0]
    with store_errors():
        pipe = client.pipeline(transaction=False)
        for key in keys:
            # Inclusive of the cursor's score: games created in the same millisecond.
            pipe.zrevrangebyscore(key, top, "-inf", start=0, num=limit + 1, withscores=True)
        candidates = sorted(((int(score), game, key) for key, found in zip(keys, pipe.execute())
                             for game, score in found if before is None or (int(score), game) < before),
                            reverse=True)[:limit]
        pipe = client.pipeline(transaction=False)
        for _, game, _ in candidates:
            pipe.hget(game_keys(prefix, game).state, "s")
        states = pipe.execute() if candidates else []
        expired = [(key, game) for (_, game, key), state in zip(candidates, states) if state is None]
        if expired:
            pipe = client.pipeline(transaction=False)
            for key, game in expired:
                pipe.zrem(key, game)
            pipe.execute()
    return candidates, [(score, game, state) for (score, game, _), state in zip(candidates, states)
                        if state is not None]
