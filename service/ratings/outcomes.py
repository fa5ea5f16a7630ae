"""What a finished match counts as for ratings: the games of one rating period, per seat
(docs/ratings.md, "What a match counts as").

Classic: the match's winner scores 1 against the loser. Box: each pair of the three players is
one game decided by the final totals (the higher total scores 1, equal totals 0.5 each). A
resignation is a loss for the resigning seat against every other seat (in box the other pair
is still decided by totals). An aborted match (no winner) counts for nothing.

Pure: plain values in, plain values out. From an engine result (service.rules.MatchResult, or
its stored dict): ``pairwise_games(match.variant, result.winner, result.forfeit,
[line.total for line in result.players])``.
"""
from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from typing import NamedTuple

from service.rules.options import CLASSIC, SEATS

WIN, DRAW, LOSS = 1.0, 0.5, 0.0


class SeatGame(NamedTuple):
    """One game of a seat's rating period: the opponent's seat and the seat's score."""

    opponent: int
    score: float


def pairwise_games(variant: str, winner: int | None, forfeit: int | None,
                   totals: Sequence[int]) -> dict[int, list[SeatGame]]:
    """Per seat, the games that seat played in the match; empty (no seat has a rating period)
    when ``winner`` is None, i.e. the match was aborted.

    ``totals`` are the seats' final totals (hand points and bonuses), in seat order.
    Raises ValueError for an unknown variant, the wrong number of totals, or a winner or
    forfeit that is not a seat (or a forfeit that is the winner)."""
    if variant not in SEATS:
        raise ValueError(f"unknown variant {variant!r}")
    seats = range(SEATS[variant])
    if len(totals) != len(seats):
        raise ValueError(f"a {variant} match has {len(seats)} totals, not {len(totals)}")
    for name, seat in (("winner", winner), ("forfeit", forfeit)):
        if seat is not None and seat not in seats:
            raise ValueError(f"{name} {seat!r} is not a seat of a {variant} match")
    if winner is None:
        return {}
    if forfeit == winner:
        raise ValueError(f"seat {forfeit} cannot both resign and win")
    games: dict[int, list[SeatGame]] = {seat: [] for seat in seats}
    for first, second in combinations(seats, 2):
        score = _score(variant, first, second, winner, forfeit, totals)
        games[first].append(SeatGame(second, score))
        games[second].append(SeatGame(first, 1 - score))
    return games


def _score(variant: str, first: int, second: int, winner: int, forfeit: int | None, totals: Sequence[int]) -> float:
    """``first``'s score against ``second``."""
    if forfeit in (first, second):
        return LOSS if forfeit == first else WIN
    if variant == CLASSIC:
        return WIN if winner == first else LOSS
    # box: by the final totals
    if totals[first] == totals[second]:
        return DRAW
    return WIN if totals[first] > totals[second] else LOSS
