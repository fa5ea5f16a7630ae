"""The notices a change of a game produces, as entries of the feed of its save (the internal
event stream, read by the webhook deliveries, the ratings and the API keys' streams).

Four types: ``turn`` (a person is to act), ``hand_over`` (a hand's result), ``match_over`` (the
match's result: played out, resigned or aborted) and ``timeout`` (a person's deadline passed).
Bodies hold what every seat may see anyway (a hand's cards only once it is over), never a
token; they echo the integrator's ids and metadata. Each notice's id is fixed by the event
that caused it, so it stays the same across the worker's retries and consumers' re-reads.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

import orjson

from service import rules
from service.games.record import Record
from service.store.feed import NO_OWNER, FeedEntry


class Notice(str, Enum):
    TURN = "turn"
    HAND_OVER = "hand_over"
    MATCH_OVER = "match_over"
    TIMEOUT = "timeout"
    RATING_CHANGED = "rating_changed"


# (hand number, seat to act) before a change: a turn notice goes out when it changes.
TurnMark = tuple[int, int] | None


def turn_mark(match: rules.Match) -> TurnMark:
    return None if match.hand is None else (match.hand.number, match.hand.turn)


def feed(scope: str | None, callback_url: str | None, announced: Callable[[], list[Notified]]) -> tuple[FeedEntry, ...]:
    """The feed entries of the notices that ``announced`` makes, for the API key ``scope`` and
    delivered to ``callback_url``; none when neither is set, and then the notices are not even
    made (nobody would read them: the match has no key to stream to, is not rated and has no
    webhook)."""
    if scope is None and callback_url is None:
        return ()
    owner = NO_OWNER if scope is None else scope
    return tuple(FeedEntry(notice.id, "game", notice.subject, notice.type, owner, notice.body, callback_url or "")
                 for notice in announced())


@dataclass(frozen=True)
class Notified:
    """A notice with its stable id, ready to be delivered or fed."""

    id: str
    subject: str
    type: str
    body: str


def notices(game_id: str, record: Record, before: TurnMark, events: list[rules.Event], now: float) -> list[Notified]:
    """What a change that left the game as ``record`` announces."""
    match = record.match
    found: list[tuple[Notice, int, dict]] = []
    for event in events:
        if event.type is rules.EventType.TIMEOUT:
            found.append((Notice.TIMEOUT, event.seq, {"seat": event.seat, **event.public}))
        elif event.type is rules.EventType.HAND_SCORED:
            found.append((Notice.HAND_OVER, event.seq, {"hand": event.public}))
        elif event.type is rules.EventType.MATCH_FINISHED:
            found.append((Notice.MATCH_OVER, event.seq, {"result": event.public}))
    if _turn_begins(match, before, events):
        found.append((Notice.TURN, match.event_count, _turn(match)))
    return [_notified(game_id, record, notice, seq, data, now) for notice, seq, data in found]


def rating_changed(game_id: str, record: Record, changes: list[dict], now: float) -> list[Notified]:
    """The announcement of a rated match's applied rating changes."""
    return [_notified(game_id, record, Notice.RATING_CHANGED, record.match.event_count, {"rating_changes": changes},
                      now)]


def _turn_begins(match: rules.Match, before: TurnMark, events: list[rules.Event]) -> bool:
    """Whether this change hands a person a new turn: the seat or hand to act changed, or the
    turn went to others within the change (a bot's reply, a timeout) and came back."""
    mark = turn_mark(match)
    if mark is None or match.is_bot(match.turn):
        return False
    return mark != before or any(event.turn != match.turn for event in events)


def _turn(match: rules.Match) -> dict:
    hand = match.hand
    return {"seat": hand.turn, "hand_number": hand.number, "phase": hand.phase.value,
            "deadline": None if hand.deadline is None else rules.iso_time(hand.deadline)}


def _notified(game_id: str, record: Record, notice: Notice, seq: int, data: dict, now: float) -> Notified:
    match = record.match
    body = {
        "type": notice.value,
        "timestamp": rules.iso_time(now),
        "data": {
            "game_id": game_id, "version": match.version, "status": match.status.value,
            "variant": match.variant, "rated": record.rated,
            "metadata": record.metadata,
            "players": [{"seat": seat, "name": match.names[seat], "bot": match.is_bot(seat),
                         "level": match.bots[seat], "external_id": info.external_id, "metadata": info.metadata}
                        for seat, info in enumerate(record.seats)],
            **data,
        },
    }
    text = orjson.dumps(body).decode()
    return Notified(f"wh_{game_id}_{seq}_{notice.value}", game_id, notice.value, text)
