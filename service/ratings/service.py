"""Reading ratings: a player's standings, their history, and the leaderboard (docs/ratings.md).

Everything is scoped per API key (its key id; ``-`` for the unscoped players of an embedded
store without keys): one key never sees another's players.
"""
from __future__ import annotations

import base64
import binascii
from collections.abc import Callable

from service.ratings.errors import RatedPlayerMissing
from service.ratings.period import is_provisional
from service.rules.errors import InvalidInput
from service.rules.options import SEATS
from service.store.ratings import BoardRow, RatingStore, Standing

VARIANTS = tuple(SEATS)


class RatingService:
    def __init__(self, ratings: Callable[[], RatingStore], scope_of: Callable[[str | None], str | None]) -> None:
        self._ratings_of = ratings  # built at first use (a Redis that is away at start-up)
        self._scope_of = scope_of

    @property
    def _ratings(self) -> RatingStore:
        return self._ratings_of()

    def player(self, owner: str | None, external_id: str) -> dict:
        """Every variant the player is rated in. Raises RatedPlayerMissing (never rated)."""
        scope = self._scope(owner)
        rows = []
        for variant in VARIANTS:
            (standing,) = self._ratings.standings(scope, variant, [external_id])
            if standing is not None:
                rank = self._ratings.rank(scope, variant, external_id)
                rows.append({"variant": variant, **_figures(standing), "provisional": is_provisional(standing.rd),
                             "rank": rank})
        if not rows:
            raise RatedPlayerMissing("no rated match of this player under this API key", field="external_id")
        return {"external_id": external_id, "ratings": rows}

    def history(self, owner: str | None, external_id: str, variant: str, cursor: str | None, limit: int) -> dict:
        """The player's rated matches in ``variant``, newest first. Raises RatedPlayerMissing,
        InvalidInput (a cursor this service did not give)."""
        scope = self._scope(owner)
        (standing,) = self._ratings.standings(scope, variant, [external_id])
        if standing is None:
            raise RatedPlayerMissing(f"no rated {variant} match of this player under this API key",
                                     field="external_id")
        start = _decoded(cursor)
        found = self._ratings.history(scope, variant, external_id, start, limit + 1)
        return {"history": [entry.__dict__ for entry in found[:limit]],
                "next_cursor": _encoded(start + limit) if len(found) > limit else None}

    def leaderboard(self, owner: str | None, variant: str, cursor: str | None, limit: int,
                    around: str | None) -> dict:
        """Ranked players, best first, a page at a time; or ``around`` a player: their row with up
        to ``limit`` rows in all, theirs in the middle. Raises RatedPlayerMissing
        (player_not_ranked), InvalidInput (bad cursor, or both a cursor and ``around``)."""
        scope = self._scope(owner)
        size = self._ratings.board_size(scope, variant)
        if around is not None:
            if cursor is not None:
                raise InvalidInput("give either cursor or around, not both", field="cursor")
            rank = self._ratings.rank(scope, variant, around)
            if rank is None:
                raise RatedPlayerMissing("this player is not on the leaderboard: unknown, or still provisional "
                                         "(RD above the limit)", code="player_not_ranked", field="around")
            start = max(0, min(rank - 1 - (limit - 1) // 2, size - limit))
        else:
            start = _decoded(cursor)
        rows = self._ratings.board(scope, variant, start, limit)
        following = start + len(rows)
        return {"variant": variant, "size": size, "players": [_row(row) for row in rows],
                "next_cursor": _encoded(following) if around is None and following < size else None}

    def _scope(self, owner: str | None) -> str:
        scope = self._scope_of(owner)
        assert scope is not None, "the route asks for an API key where players are scoped"
        return scope


def _figures(standing: Standing) -> dict:
    return {"rating": standing.rating, "rd": standing.rd, "volatility": standing.volatility, "games": standing.games,
            "wins": standing.wins, "losses": standing.losses, "draws": standing.draws}


def _row(row: BoardRow) -> dict:
    standing = row.standing
    return {"rank": row.rank, "external_id": standing.external_id, "name": standing.name, "rating": standing.rating,
            "rd": standing.rd, "games": standing.games}


def _encoded(position: int) -> str:
    return base64.urlsafe_b64encode(f"at:{position}".encode()).decode().rstrip("=")


def _decoded(cursor: str | None) -> int:
    if cursor is None:
        return 0
    try:
        label, _, position = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode().partition(":")
        if label != "at" or not position.isdigit() or len(position) > 9:
            raise ValueError
        return int(position)
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise InvalidInput("this cursor is not one this service gave", field="cursor") from None
