"""The store's failures, which every area of the store port raises (base.py re-exports them
with the games' port)."""
from __future__ import annotations

from service.rules.errors import GameError

# A store that failed answers with this many seconds of Retry-After.
STORE_RETRY_AFTER_SECONDS = 1


class StoreError(GameError):
    """The backend could not be reached or answered with an error (HTTP 503)."""

    status = 503
    code = "store_unavailable"

    def __init__(self, detail: str = "the game store cannot be reached; retry shortly", *, code: str | None = None):
        super().__init__(detail, code=code, params={"retry_after": STORE_RETRY_AFTER_SECONDS})

    @property
    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(STORE_RETRY_AFTER_SECONDS)}


class StoreFull(StoreError):
    """The backend is out of memory: nothing was written (HTTP 503 ``store_full``)."""

    code = "store_full"

    def __init__(self) -> None:
        super().__init__("the game store is full; existing games can still be read")
