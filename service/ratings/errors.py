"""The ratings' refusals (declared with their titles: see service/rules/errors.py)."""
from __future__ import annotations

from service.rules.errors import GameError


class RatedPlayerMissing(GameError):
    """No rated player by this external id under this API key, or one not on the leaderboard
    (HTTP 404)."""

    status = 404
    code = "player_not_found"
    titles = {"player_not_found": "No such rated player",
              "player_not_ranked": "Player not on the leaderboard (still provisional)"}
