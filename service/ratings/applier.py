"""The exactly-once applier of rated results: a consumer of the feed (group ``ratings``).

The save that ends a rated match appends its ``match_over`` entry to the feed atomically
(service/games/notices.py). This consumer reads it, computes the rating period of the match
(``period``) from the players' standings, and applies every player's change, their history,
the leaderboard and the mark "this match is applied" in one atomic step of the ratings store,
which refuses a second application of the same match (it returns the first one's record) and
a change computed from standings that moved meanwhile (then it reads and computes again). Then
it shows the changes on the match (``result.rating_changes``) and announces them
(``rating_changed``) through ``announce``, itself once only. A crash anywhere leaves the entry
unacknowledged; whoever reads it again finds the match applied and only finishes what is left.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping

from service.ratings.glicko2 import Rating, Settings
from service.ratings.period import RatedSeat, rating_period
from service.store.feed import FeedEntry
from service.store.ratings import Change, RatingStore, StaleStandings

logger = logging.getLogger(__name__)

GROUP = "ratings"
# Two matches of the same player applied at once: one of them computes again (a few times at most).
ATTEMPTS = 20

# (game id, the changes as shown in the match's result) -> None; once per match is enough,
# and calling it again must change nothing.
Announce = Callable[[str, list[dict]], None]


class RatingsApplier:
    group = GROUP

    def __init__(self, ratings: RatingStore, announce: Announce, bot_ratings: Mapping[str, Rating],
                 settings: Settings) -> None:
        self._ratings = ratings
        self._announce = announce
        self._bot_ratings = bot_ratings
        self._settings = settings

    def apply(self, entry: FeedEntry) -> None:
        if entry.type != "match_over" or not entry.owned:
            return  # a rated match always has its players' scope
        payload = entry.payload()
        data = payload["data"]
        if not data.get("rated") or data.get("status") != "finished":
            return  # unrated, or aborted: an aborted match is not rated
        shown = self._apply_once(entry.owner, data, payload["timestamp"])
        self._announce(data["game_id"], shown)

    def _apply_once(self, scope: str, data: dict, at: str) -> list[dict]:
        game_id, variant, result = data["game_id"], data["variant"], data["result"]
        seats = [RatedSeat(p["seat"], p["name"], None if p["bot"] else p["external_id"], p.get("level"))
                 for p in data["players"]]
        people = [seat for seat in seats if seat.external_id is not None]
        totals = [line["total"] for line in sorted(result["players"], key=lambda line: line["seat"])]
        for _ in range(ATTEMPTS):
            kept = self._ratings.applied(scope, variant, game_id)
            if kept is not None:
                return json.loads(kept)
            standings = self._ratings.standings(scope, variant, [seat.external_id for seat in people])
            before = {seat.seat: standing for seat, standing in zip(people, standings)}
            changes = rating_period(variant, seats, result["winner"], result.get("forfeit"), totals, before,
                                    self._bot_ratings, self._settings, game_id, at)
            shown = [_shown(seat, change) for seat, change in sorted(changes.items())]
            try:
                kept = self._ratings.apply(scope, variant, game_id, list(changes.values()),
                                           json.dumps(shown, separators=(",", ":")))
            except StaleStandings:
                continue
            return json.loads(kept)
        raise RuntimeError(f"the ratings of game {game_id} kept changing under {ATTEMPTS} attempts")


def _shown(seat: int, change: Change) -> dict:
    """How a person's change shows in the match's ``result.rating_changes``: ``before`` is the
    rating the period started from (a new player's initial rating)."""
    after, delta = change.after, change.history.delta
    return {"seat": seat, "external_id": after.external_id, "before": after.rating - delta, "after": after.rating,
            "delta": delta, "rd": after.rd, "volatility": after.volatility}
