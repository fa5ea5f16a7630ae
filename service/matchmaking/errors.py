"""Quick play's and invites' refusals (declared with their titles: see service/rules/errors.py)."""
from __future__ import annotations

from service.rules.errors import GameError


class Missing(GameError):
    """No such ticket or invite for this API key: unknown, another key's, or expired and gone,
    or (invites) already used (HTTP 404)."""

    status = 404
    code = "ticket_not_found"
    titles = {"ticket_not_found": "No such ticket", "invite_not_found": "No such invite"}


class StateConflict(GameError):
    """The ticket or invite is past what was asked (HTTP 409)."""

    status = 409
    code = "ticket_matched"
    titles = {"already_queued": "The player has a waiting ticket", "ticket_matched": "The ticket is matched",
              "invite_accepted": "The invite was accepted", "own_invite": "A host cannot accept their own invite"}


class LimitReached(GameError):
    """The API key holds its maximum of open tickets or invites (HTTP 429; retry once some are
    matched, cancelled or expired)."""

    status = 429
    code = "ticket_limit_reached"
    titles = {"ticket_limit_reached": "Too many open tickets", "invite_limit_reached": "Too many open invites"}

    def __init__(self, detail: str, *, code: str | None = None, params: dict | None = None) -> None:
        super().__init__(detail, code=code, params=params)

    @property
    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(RETRY_AFTER_SECONDS)}


RETRY_AFTER_SECONDS = 5
