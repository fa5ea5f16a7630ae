"""The record of a finished match (``ginrummy-record/1``, docs/records.md and
docs/record.schema.json): everything needed to replay it exactly, built from the stored match
and its whole event log.

The events hold every deck (the deal's hidden ``deck``), every action with its seat and its
bot flag, every timeout and every result; the service stamps each with when it was applied.
A record is only built from the complete log: when events were trimmed (a match longer than
``MAX_EVENTS_PER_GAME``), ``RecordIncomplete`` says so rather than answer part of a match.
"""
from __future__ import annotations

from datetime import datetime, timezone

from service import rules
from service.records.fairness import revealed_fairness

FORMAT = "ginrummy-record/1"
HAND_SIZE = 10
DEALT = 2 * HAND_SIZE
EventType = rules.EventType

# The events that are steps of the record, in the order they happened.
ACTIONS = (EventType.DRAW, EventType.PASS, EventType.DISCARD, EventType.KNOCK, EventType.LAYOFF, EventType.ADVICE,
           EventType.TIMEOUT, EventType.RESIGN, EventType.ABORT)


class RecordIncomplete(Exception):
    """The stored events do not hold the whole match (the oldest were trimmed)."""

    def __init__(self, first_kept: int) -> None:
        super().__init__(f"the events of this match are kept from number {first_kept} on")
        self.first_kept = first_kept


def build_record(game_id: str, match: rules.Match, created_at_ms: int, events: list[rules.Event]) -> dict:
    """The record of ``match`` (finished or aborted) from its stored ``events``, oldest first.

    ``created_at_ms`` is the creation time (0 when the match was stored before it was kept: its
    events' times are then already absolute). Raises RecordIncomplete."""
    first = events[0].seq if events else 0
    if first != 1 or any(event.seq != n for n, event in enumerate(events, start=1)):
        raise RecordIncomplete(first)
    record: dict = {
        "format": FORMAT, "id": game_id, "variant": match.variant, "rules": match.rules.as_dict(),
        "created_at": iso_ms(created_at_ms) if created_at_ms else None, "seeded": match.seed is not None,
        "players": [{"seat": seat, "name": match.names[seat], "bot": match.is_bot(seat), "level": match.bots[seat]}
                    for seat in range(match.seat_count)],
        "fairness": revealed_fairness(match), "cuts": [], "hands": [], "result": None, "steps": 0,
    }
    hands = record["hands"]
    for event in events:
        kind = event.type
        if kind is EventType.CUT:
            record["cuts"].append({"cards": event.public["cards"], "decided": event.public["decided"]})
        elif kind is EventType.DEAL:
            hands.append(_dealt_hand(event))
        elif kind in ACTIONS:
            record["steps"] += 1
            hands[-1]["actions"].append(_action(event, record["steps"], created_at_ms))
        elif kind is EventType.HAND_SCORED:
            hands[-1]["result"] = event.public
        elif kind is EventType.MATCH_FINISHED:
            record["result"] = event.public
    if record["result"] is None:
        raise RecordIncomplete(first)  # a finished match's log ends with its result
    for hand in hands:
        for action, timeout in zip(hand["actions"], timeout_flags(hand["actions"])):
            action["timeout"] = timeout
    return record


def timeout_flags(actions: list[dict]) -> list[bool]:
    """For each action of a hand, whether it belongs to a turn the service played after the
    seat's deadline: the timeout itself, and the moves the service then made for that seat
    (marked ``bot``) until another seat acts or the seat acts itself."""
    flags, timed_out = [], None
    for action in actions:
        if action["type"] == EventType.TIMEOUT:
            timed_out = action["seat"]
        elif timed_out is not None and (action["seat"] != timed_out or not action["bot"]):
            timed_out = None
        flags.append(timed_out is not None)
    return flags


def _dealt_hand(event: rules.Event) -> dict:
    deck = event.secret.get("deck")
    if not deck:
        raise RecordIncomplete(event.seq)  # stored before decks were kept with the deal
    roles = event.public["roles"]
    dealer = event.public["dealer"]
    non_dealer = next(seat for seat, role in enumerate(roles) if role in (rules.Role.PLAYER, rules.Role.CAPTAIN))
    return {"number": event.public["number"], "dealer": dealer, "non_dealer": non_dealer, "roles": roles,
            "dealt": {str(non_dealer): deck[0:DEALT:2], str(dealer): deck[1:DEALT:2]},
            "upcard": deck[DEALT], "stock": deck[DEALT + 1:], "actions": [], "result": None}


def _action(event: rules.Event, step: int, created_at_ms: int) -> dict:
    public, secret = event.public, event.secret
    fields = {
        EventType.DRAW: lambda: {"source": public["source"], "card": public["card"] or secret["card"]},
        EventType.DISCARD: lambda: {"card": public["card"]},
        EventType.KNOCK: lambda: {"discard": public["discard"], "melds": public["melds"]},
        EventType.LAYOFF: lambda: {"melds": public["melds"], "layoffs": public["layoffs"]},
        EventType.ADVICE: lambda: {"message": secret["message"], "action": secret["action"]},
        EventType.TIMEOUT: lambda: {"deadline": public["deadline"]},
    }.get(event.type, dict)()
    time = None if event.elapsed_ms is None else iso_ms(created_at_ms + event.elapsed_ms)
    return {"step": step, "seat": event.seat, "type": event.type.value, **fields, "time": time, "bot": event.bot,
            "timeout": False}


def iso_ms(epoch_ms: int) -> str:
    """An epoch time in milliseconds as ISO 8601 UTC with milliseconds (``2026-12-01T10:00:07.250Z``)."""
    return datetime.fromtimestamp(epoch_ms // 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") + f".{epoch_ms % 1000:03d}Z"


def epoch_ms(iso: str) -> int:
    """The inverse of ``iso_ms``. Raises ValueError for another text."""
    if not (len(iso) == 24 and iso.endswith("Z") and iso[19] == "."):
        raise ValueError(f"not a time of a record: {iso[:30]!r}")
    seconds = datetime.strptime(iso[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc).timestamp()
    return int(seconds) * 1000 + int(iso[20:23])


def actions_of(record: dict) -> list[dict]:
    """Every action of ``record``, in order (step 1 first)."""
    return [action for hand in record["hands"] for action in hand["actions"]]
