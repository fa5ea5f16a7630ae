"""The store's failures, which every area of the store port raises, and the refusal of a
long-poll beyond the process's maximum of waiters (service/store/notify.py)."""
from __future__ import annotations

from service.rules.errors import GameError

# A store that failed answers with this many seconds of Retry-After.
STORE_RETRY_AFTER_SECONDS = 1


class StoreError(GameError):
    """The backend could not be reached or answered with an error (HTTP 503)."""

    status = 503
    code = "store_unavailable"
    titles = {"store_unavailable": "Game store unavailable"}

    def __init__(self, detail: str = "the game store cannot be reached; retry shortly", *, code: str | None = None):
        super().__init__(detail, code=code, params={"retry_after": STORE_RETRY_AFTER_SECONDS})

    @property
    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(STORE_RETRY_AFTER_SECONDS)}


class StoreFull(StoreError):
    """The backend is out of memory: nothing was written (HTTP 503 ``store_full``)."""

    code = "store_full"
    titles = {"store_full": "Game store full"}

    def __init__(self) -> None:
        super().__init__("the game store is full; existing games can still be read")


# A client turned away because the process holds its maximum of waiters retries after this.
CAPACITY_RETRY_AFTER_SECONDS = 2


class LongPollCapacity(GameError):
    """This process already holds its maximum of waiting long-polls (503, Retry-After)."""

    status = 503
    code = "long_poll_capacity"
    titles = {"long_poll_capacity": "Too many waiting requests"}

    def __init__(self, max_waiters: int) -> None:
        super().__init__(
            f"this server already holds {max_waiters} waiting requests; retry shortly",
            params={"max_waiters": max_waiters, "retry_after": CAPACITY_RETRY_AFTER_SECONDS},
        )

    @property
    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(CAPACITY_RETRY_AFTER_SECONDS)}
