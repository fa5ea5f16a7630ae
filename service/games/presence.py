"""Who is at the table: a seat is online while a stream or long-poll of it is open anywhere
(``GameStore.present_seats``), or for ACTED_WINDOW_SECONDS after it last acted; a bot seat
always is. Pure: the store's marks and the clock come in as arguments."""
from __future__ import annotations

from collections.abc import Set

from service.games.record import Record

ACTED_WINDOW_SECONDS = 30


def online_seats(record: Record, present: Set[int], now: float) -> tuple[bool, ...]:
    """Each seat's presence at ``now``, given the seats marked ``present``."""
    match = record.match
    return tuple(match.is_bot(seat) or seat in present or now - record.last_acted(seat) < ACTED_WINDOW_SECONDS
                 for seat in range(match.seat_count))


def next_change(record: Record, present: Set[int], now: float) -> float | None:
    """When a seat online only because it acted recently goes offline (epoch seconds), if any
    does: the earliest end of such a window after ``now``."""
    match = record.match
    ends = [record.last_acted(seat) + ACTED_WINDOW_SECONDS for seat in range(match.seat_count)
            if not match.is_bot(seat) and seat not in present]
    later = [end for end in ends if end > now]
    return min(later) if later else None
