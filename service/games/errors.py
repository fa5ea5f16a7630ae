"""The service's own refusals, in the engine's error model (``GameError``: status, code, params)."""
from __future__ import annotations

from service.rules.errors import GameError


class Unauthorized(GameError):
    """No valid credential where one is needed (HTTP 401)."""

    status = 401
    code = "unauthorized"
    titles = {"unauthorized": "Missing or unknown credentials"}

    def __init__(self, detail: str, challenge: str = "Bearer"):
        super().__init__(detail)
        self.challenge = challenge

    @property
    def headers(self) -> dict[str, str]:
        return {"WWW-Authenticate": self.challenge}


class NotAllowed(GameError):
    """A valid credential that may not do this (HTTP 403)."""

    status = 403
    code = "forbidden"
    titles = {"seed_not_allowed": "Seeding needs an API key"}


class PreconditionFailed(GameError):
    """The client's If-Match names another version (HTTP 412)."""

    status = 412
    code = "version_mismatch"
    titles = {"version_mismatch": "The game is not at the expected version"}


class ConcurrentChange(GameError):
    """Another request changed the game while this one was being applied (HTTP 409)."""

    status = 409
    code = "conflict"
    titles = {"conflict": "The game changed meanwhile"}


class Unprocessable(GameError):
    """A well-formed request this service will not process (HTTP 422)."""

    titles = {"no_human_seat": "A match needs a person",
              "idempotency_key_reused": "Idempotency key reused for a different request",
              "external_id_required": "A rated match needs every person's external id",
              "duplicate_external_id": "The same external id on two seats of a rated match"}


class TooMany(GameError):
    """A client went over a rate or a quota (HTTP 429, with Retry-After)."""

    status = 429
    code = "rate_limited"
    titles = {"creation_quota_exceeded": "Too many games created"}

    def __init__(self, detail: str, retry_after: int, *, code: str | None = None, params: dict | None = None):
        super().__init__(detail, code=code, params={"retry_after": retry_after, **(params or {})})
        self.retry_after = retry_after

    @property
    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}
