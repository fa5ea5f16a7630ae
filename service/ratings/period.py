"""One rated match as one Glicko-2 rating period for each of its people (docs/ratings.md).

Pure: the standings before and the match's result in, every person's change out. A person's
games in the period are their pairwise games of the match (``outcomes``), each against the
opponent's rating before the match: another person's standing (a new rating if they have
none yet), or a bot level's fixed rating (``bots``). Bots' ratings never change. ``games``,
``wins``, ``losses`` and ``draws`` count those pairwise games: one per match in classic, two
in box (one against each other player).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from service.ratings.glicko2 import Game, Rating, Settings, rate
from service.ratings.outcomes import DRAW, WIN, pairwise_games
from service.store.ratings import Change, HistoryEntry, Standing

# A player whose RD is above this is provisional: not ranked, not on the leaderboard.
PROVISIONAL_RD = 110.0


@dataclass(frozen=True)
class RatedSeat:
    """A seat of a rated match: a person (``external_id``) or a bot (``level``)."""

    seat: int
    name: str
    external_id: str | None = None
    level: str | None = None


def is_provisional(rd: float) -> bool:
    return rd > PROVISIONAL_RD


def rating_period(variant: str, seats: Sequence[RatedSeat], winner: int | None, forfeit: int | None,
                  totals: Sequence[int], before: Mapping[int, Standing | None], bot_ratings: Mapping[str, Rating],
                  settings: Settings, game_id: str, at: str) -> dict[int, Change]:
    """Each person's change (keyed by seat); empty for a match with no winner (aborted).

    ``before`` holds each person's standing before the match (None: never rated)."""
    games = pairwise_games(variant, winner, forfeit, totals)
    ratings = {seat.seat: _rating_of(seat, before, bot_ratings, settings) for seat in seats}
    changes = {}
    for seat in seats:
        if seat.external_id is None or seat.seat not in games:
            continue
        played = games[seat.seat]
        new = rate(ratings[seat.seat], [Game(ratings[game.opponent], game.score) for game in played], settings)
        old = before.get(seat.seat)
        wins = sum(game.score == WIN for game in played)
        draws = sum(game.score == DRAW for game in played)
        after = Standing(seat.external_id, seat.name, new.rating, new.rd, new.volatility,
                         (old.games if old else 0) + len(played), (old.wins if old else 0) + wins,
                         (old.losses if old else 0) + len(played) - wins - draws, (old.draws if old else 0) + draws)
        delta = new.rating - ratings[seat.seat].rating
        changes[seat.seat] = Change(old, after, HistoryEntry(game_id, at, new.rating, new.rd, delta),
                                    not is_provisional(new.rd))
    return changes


def _rating_of(seat: RatedSeat, before: Mapping[int, Standing | None], bot_ratings: Mapping[str, Rating],
               settings: Settings) -> Rating:
    if seat.external_id is None:
        return bot_ratings[seat.level or "standard"]
    standing = before.get(seat.seat)
    if standing is None:
        return settings.new_rating()
    return Rating(standing.rating, standing.rd, standing.volatility)
