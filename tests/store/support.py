"""Building store calls in tests: fresh game ids and the effects of a write."""
from __future__ import annotations

from service import ids
from service.store import Effects, IdempotentResponse

TTL = 60
TOMBSTONE = 120


def new_id() -> str:
    return ids.new_game_id()


def effects(*events: str, count: int | None = None, ttl: int = TTL, reply: IdempotentResponse | None = None,
            **more) -> Effects:
    """The effects of a write appending ``events`` (``count``: the log's length after it)."""
    return Effects(tuple(events), len(events) if count is None else count, ttl, TOMBSTONE, reply=reply, **more)
