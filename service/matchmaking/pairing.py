"""The pairing rule of one quick-play queue: which waiting tickets to match now, when to look
again, and which bot level fits a player (docs/ratings.md, "Quick play").

A queue holds the tickets of one API key, variant, rules and ``rated``. Tickets are taken
oldest first; each one not yet grouped is matched with the oldest other tickets that are
compatible with it and with each other (2 in all for classic, 3 for box). Unrated tickets
(rating None) are compatible with any ticket. Rated tickets a and b are compatible at ``now``
when |r_a - r_b| <= min(gap_a, gap_b), each ticket's gap widening with its own wait:
gap = min(maximum, initial + widen_per_second * seconds waited).

Pure: no clock (``now`` is an argument), no store.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from service.ratings.glicko2 import Rating

# A player with no rating meets the middle level, the one a bot seat has by default.
UNRATED_BOT_LEVEL = "standard"


@dataclass(frozen=True)
class Waiting:
    """A waiting ticket: its id, when it was queued (epoch seconds) and the player's rating in
    this queue's variant (None in an unrated queue)."""

    id: str
    queued_at: float
    rating: float | None


@dataclass(frozen=True)
class GapSettings:
    """The accepted rating gap of a rated ticket: ``initial`` points either side when queued,
    ``widen_per_second`` more for each second waited, never more than ``maximum`` (``math.inf``:
    no bound). The defaults start at a 64 % favourite (100 points), reach 300 points (85 %)
    after 20 s and stop at 600 (97 %) after 50 s: beyond that a match is no contest, and the
    ticket's bot fallback is the better answer.

    Raises ValueError for a negative value or a maximum below the initial gap."""

    initial: float = 100.0
    widen_per_second: float = 10.0
    maximum: float = 600.0

    def __post_init__(self) -> None:
        if not (self.initial >= 0 and self.widen_per_second >= 0 and self.maximum >= self.initial):
            raise ValueError(f"gap settings need 0 <= initial <= maximum and widen_per_second >= 0: {self}")
        if not (math.isfinite(self.initial) and math.isfinite(self.widen_per_second)):
            raise ValueError(f"the initial gap and its widening must be finite: {self}")


def groups_to_match(tickets: Iterable[Waiting], size: int, now: float,
                    settings: GapSettings = GapSettings()) -> list[tuple[str, ...]]:
    """The groups of ``size`` tickets to match at ``now``, each a tuple of ids oldest first, in
    the order they were formed (the group of the oldest ticket first). Equal queue times are
    ordered by id. Tickets in no group keep waiting.

    Raises ValueError for a size below 2 or two tickets with the same id."""
    if size < 2:
        raise ValueError(f"a group has at least 2 tickets, not {size}")
    free = _oldest_first(tickets)  # the tickets in no group yet, oldest first
    groups = []
    position = 0  # free[position] is the next ticket to find a group for; those before it keep waiting
    while position < len(free):
        partners = _oldest_partners([position], free, 0, size - 1, now, settings)
        if partners is None:
            position += 1
            continue
        members = sorted([position, *partners])
        groups.append(tuple(free[index].id for index in members))
        for index in reversed(members):
            del free[index]
        position -= sum(index < position for index in members)
    return groups


def next_change(tickets: Iterable[Waiting], now: float, settings: GapSettings = GapSettings()) -> float | None:
    """The earliest time after ``now`` at which two of ``tickets`` that may not pair now may
    pair because their gaps have widened (when a pairing could become possible: a timer set for
    it misses nothing), or None when no such time comes."""
    if settings.widen_per_second == 0:
        return None
    rated = sorted((ticket for ticket in tickets if ticket.rating is not None), key=lambda ticket: ticket.rating)
    earliest = math.inf
    for index, lower in enumerate(rated):
        for upper in rated[index + 1:]:
            distance = upper.rating - lower.rating
            # Further up the distances only grow: no later pair comes sooner than this bound.
            if distance > settings.maximum or lower.queued_at + (distance - settings.initial) / settings.widen_per_second >= earliest:
                break
            pairs_from = compatible_from(lower, upper, settings)
            if now < pairs_from < earliest:
                earliest = pairs_from
    return None if earliest == math.inf else earliest


def compatible_from(a: Waiting, b: Waiting, settings: GapSettings) -> float:
    """The time from which ``a`` and ``b`` may pair: -inf if always (an unrated ticket, or
    ratings within the initial gap), inf if never (further apart than the maximum gap), else
    when the younger ticket's gap (the narrower one) reaches their distance."""
    if a.rating is None or b.rating is None:
        return -math.inf
    distance = abs(a.rating - b.rating)
    if distance <= settings.initial:
        return -math.inf
    if distance > settings.maximum or settings.widen_per_second == 0:
        return math.inf
    return max(a.queued_at, b.queued_at) + (distance - settings.initial) / settings.widen_per_second


def bot_level_for(rating: float | None, bot_ratings: Mapping[str, Rating]) -> str:
    """The bot level whose rating is nearest ``rating`` (on a tie the lower-rated level);
    ``standard`` for a player without a rating."""
    if rating is None:
        return UNRATED_BOT_LEVEL
    return min(bot_ratings, key=lambda level: (abs(bot_ratings[level].rating - rating), bot_ratings[level].rating))


def _oldest_first(tickets: Iterable[Waiting]) -> list[Waiting]:
    queue = sorted(tickets, key=_age_order)
    if len({ticket.id for ticket in queue}) != len(queue):
        raise ValueError("two tickets share an id")
    return queue


def _age_order(ticket: Waiting) -> tuple[float, str]:
    return ticket.queued_at, ticket.id


def _oldest_partners(group: list[int], free: Sequence[Waiting], start: int, wanted: int, now: float,
                     settings: GapSettings) -> list[int] | None:
    """The positions in ``free`` (oldest first) of the oldest ``wanted`` tickets from ``start``
    on that are compatible with the tickets at positions ``group`` and with each other, first by
    the oldest partner, then the next; None when there are none."""
    if wanted == 0:
        return []
    for index in range(start, len(free)):
        if index not in group and all(now >= compatible_from(free[index], free[member], settings) for member in group):
            rest = _oldest_partners([*group, index], free, index + 1, wanted - 1, now, settings)
            if rest is not None:
                return [index, *rest]
    return None
