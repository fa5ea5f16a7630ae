"""Events: one record per thing that happened, with a public part and a secret part.

``EVENT_TYPES`` is the one registry of event types and their fields: the engine writes
events by it, storage encodes them by it (positionally, without field names), and the HTTP
layer documents them from it. The secret part is stored (so a match can be audited and
replayed) but shown only to the seats in ``seen_by``; the deck order of a deal is seen by nobody.

Every event, whatever its type, has ``seq`` (from 1), ``type``, ``seat`` (who acted, or None),
``hand`` (the deal number, or None before the first deal), ``turn`` (the seat to act once the
change that produced it is complete, or None) and ``bot`` (whether a computer chose it). The
service stores with each event when it applied it (``elapsed_ms``, kept for match records);
the engine leaves it unset, and no view of an event shows it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import Enum


class EventType(str, Enum):
    CUT = "cut"
    DEAL = "deal"
    DEALT = "dealt"
    DRAW = "draw"
    PASS = "pass"
    DISCARD = "discard"
    KNOCK = "knock"
    LAYOFF = "layoff"
    ADVICE = "advice"
    TIMEOUT = "timeout"
    HAND_SCORED = "hand_scored"
    RESIGN = "resign"
    ABORT = "abort"
    MATCH_FINISHED = "match_finished"
    REMATCH = "rematch"


class Kind(str, Enum):
    """The JSON type of an event field (the HTTP layer maps each to a documented schema)."""

    INT = "int"
    SEAT = "seat"  # a seat number, or null
    BOOL = "bool"
    TEXT = "text"
    TIME = "time"  # ISO 8601 UTC date-time
    STATUS = "status"  # a match's status
    CARD = "card"  # a card, or null
    CARDS = "cards"
    MELDS = "melds"
    LAYOFFS = "layoffs"  # [{card, meld}]
    ROLES = "roles"  # one role per seat, by seat
    ACTION = "action"  # a suggested turn action object, or null
    OUTCOME = "outcome"
    SOURCE = "source"
    HANDS = "hands"  # {seat: [cards]}
    RESULTS = "results"  # the match result's players


@dataclass(frozen=True)
class Field:
    name: str
    kind: Kind
    description: str
    example: object
    nullable: bool = False  # besides what its kind allows (seats and cards may always be null)
    hidden: bool = False  # a secret kept for audits that no viewer is ever shown


@dataclass(frozen=True)
class EventSpec:
    type: EventType
    description: str
    public: tuple[Field, ...] = ()
    # Shown only to the seats that may see them: to others a secret field is absent, or null when
    # it is public too (a card drawn from the stock).
    secret: tuple[Field, ...] = ()


F = Field
_MELDS_EXAMPLE = [["As", "2s", "3s"], ["7d", "7c", "7h"]]
_HAND_RESULT = (
    F("number", Kind.INT, "Number of the hand that ended", 3),
    F("outcome", Kind.OUTCOME, "How it ended: gin, knock, undercut or dead", "knock"),
    F("winner", Kind.SEAT, "Seat that scored (null for a dead hand)", 0),
    F("points", Kind.INT, "Points scored", 11),
    F("knocker", Kind.SEAT, "Seat that knocked (null for a dead hand)", 0),
    F("defender", Kind.SEAT, "Seat that answered the knock (null for a dead hand)", 1),
    F("discard", Kind.CARD, "The knocker's discard (null for a dead hand)", "Kd"),
    F("knocker_melds", Kind.MELDS, "The knocker's melds as declared, without lay-offs", _MELDS_EXAMPLE),
    F("knocker_deadwood_cards", Kind.CARDS, "The knocker's unmatched cards", ["4c"]),
    F("knocker_deadwood", Kind.INT, "The knocker's deadwood (null for a dead hand)", 4, nullable=True),
    F("defender_melds", Kind.MELDS, "The defender's melds", [["9h", "9s", "9d"]]),
    F("layoffs", Kind.LAYOFFS, "Cards the defender laid off on the knocker's melds", [{"card": "4s", "meld": 0}]),
    F("defender_deadwood_cards", Kind.CARDS, "The defender's remaining unmatched cards", ["Kc", "5d"]),
    F("defender_deadwood", Kind.INT, "The defender's deadwood after lay-offs (null for a dead hand)", 15, nullable=True),
    F("hands", Kind.HANDS, "Both hands as they ended, keyed by seat", {"0": ["As", "2s", "3s"], "1": ["9h", "9s", "9d"]}),
)
_MATCH_RESULT = (
    F("status", Kind.STATUS, "finished, or aborted", "finished"),
    F("winner", Kind.SEAT, "Seat that won the match (null when aborted)", 0),
    F("forfeit", Kind.SEAT, "The seat that resigned, if the match ended that way (else null)", 1),
    F("players", Kind.RESULTS, "Final figures per seat", [{"seat": 0, "hand_points": 104, "game_bonus": 100,
                                                          "line_bonus": 60, "shutout_bonus": 0, "total": 264}]),
)

# Public (null) for a draw from the stock; filled in for the drawer and a box teammate.
_DRAWN = F("card", Kind.CARD, "The card drawn: from the discard pile everyone sees it; from the stock only the "
                              "drawer (and a box teammate) does, others see null", "9c")

EVENT_TYPES: dict[EventType, EventSpec] = {spec.type: spec for spec in (
    EventSpec(EventType.CUT, "The players cut for the deal; equal ranks cut again", (
        F("cards", Kind.CARDS, "The card each seat cut, by seat", ["Kd", "4c"]),
        F("decided", Kind.BOOL, "Whether this cut decided the seats (false: equal ranks, cut again)", True))),
    EventSpec(EventType.DEAL, "A hand was dealt", (
        F("number", Kind.INT, "Number of the deal, redeals included", 1),
        F("dealer", Kind.SEAT, "Seat that dealt", 0),
        F("roles", Kind.ROLES, "Each seat's role in this hand, by seat", ["dealer", "player"]),
        F("upcard", Kind.CARD, "The card turned face up", "9c"),
        F("stock_count", Kind.INT, "Cards in the stock", 31)),
        # The deck order, for audits and replays: stored, shown to nobody.
        (F("deck", Kind.CARDS, "The shuffled deck", [], hidden=True),)),
    EventSpec(EventType.DEALT, "A seat received its ten cards (shown to that seat and its box teammate)", (),
              (F("cards", Kind.CARDS, "The cards dealt to this seat", ["As", "2s"]),)),
    EventSpec(EventType.DRAW, "A seat drew a card", (
        F("source", Kind.SOURCE, "stock or discard", "discard"),
        _DRAWN), (_DRAWN,)),
    EventSpec(EventType.PASS, "A seat declined the upcard", (F("card", Kind.CARD, "The upcard declined", "9c"),)),
    EventSpec(EventType.DISCARD, "A seat discarded", (F("card", Kind.CARD, "The card discarded", "Kd"),)),
    EventSpec(EventType.KNOCK, "A seat knocked and laid down its hand", (
        F("discard", Kind.CARD, "The knocker's discard", "Kd"),
        F("knocker", Kind.SEAT, "The knocking seat", 0),
        F("melds", Kind.MELDS, "The knocker's melds; lay-offs index this list", _MELDS_EXAMPLE),
        F("deadwood_cards", Kind.CARDS, "The knocker's unmatched cards", ["4c", "2d"]),
        F("deadwood", Kind.INT, "The knocker's deadwood count", 6),
        F("gin", Kind.BOOL, "Whether the knock is gin", False))),
    EventSpec(EventType.LAYOFF, "The defender laid down melds and laid off cards", (
        F("melds", Kind.MELDS, "The defender's melds", [["9h", "9s", "9d"]]),
        F("layoffs", Kind.LAYOFFS, "Cards laid off on the knocker's melds", [{"card": "4s", "meld": 0}]),
        F("deadwood_cards", Kind.CARDS, "The defender's remaining unmatched cards", ["Kc", "5d"]),
        F("deadwood", Kind.INT, "The defender's deadwood after lay-offs", 15))),
    EventSpec(EventType.ADVICE, "The box sitter advised the captain (shown to captain and sitter)", (), (
        F("message", Kind.TEXT, "The advice", "take the 9c"),
        F("action", Kind.ACTION, "A suggested action, or null", {"type": "draw", "source": "discard"}))),
    EventSpec(EventType.TIMEOUT, "A person's deadline passed; the service plays that seat's move (the "
                                 "events after it, marked bot)", (
        F("deadline", Kind.TIME, "The deadline that passed", "2026-12-01T10:00:00Z"),
        F("timeouts", Kind.INT, "Timeouts of this seat so far in the match", 1))),
    EventSpec(EventType.HAND_SCORED, "A hand ended and was scored", _HAND_RESULT),
    EventSpec(EventType.RESIGN, "A player resigned the match", ()),
    EventSpec(EventType.ABORT, "The integrator that created the match aborted it", ()),
    EventSpec(EventType.MATCH_FINISHED, "The match ended", _MATCH_RESULT),
    EventSpec(EventType.REMATCH, "The next match between the same players was created", (
        F("game_id", Kind.TEXT, "Id of the new match", "g_Q3xv0Jb8mPq1WZAkq5t2Rw"),)),
)}
_TYPE_BY_INDEX = tuple(EVENT_TYPES)
_INDEX_BY_TYPE = {kind: index for index, kind in enumerate(_TYPE_BY_INDEX)}


@dataclass(frozen=True)
class Event:
    seq: int
    type: EventType
    seat: int | None
    hand: int | None
    public: dict = field(default_factory=dict)
    secret: dict = field(default_factory=dict)
    seen_by: tuple[int, ...] = ()
    turn: int | None = None
    bot: bool = False
    # Milliseconds from the match's creation to the change that produced the event, set by the
    # service when it stores it (the engine reads no clock); None for events stored before.
    elapsed_ms: int | None = None


# Storage: one line of text per event, fields in the registry's order. Fields are separated by
# US (\x1f) and the public part, the secret part and the seats that may see it by RS (\x1e);
# JSON text never holds either raw, so any field may be JSON. Most events are a draw or a
# discard, a couple of dozen bytes each this way. ``elapsed_ms``, when set, is one more field
# after the public ones (events stored without it have none there).
FIELD_SEPARATOR = "\x1f"
PART_SEPARATOR = "\x1e"


def encode_event(event: Event) -> str:
    """The event as stored: compact text, positional (the field names come from ``EVENT_TYPES``)."""
    spec = EVENT_TYPES[event.type]
    head = [str(event.seq), str(_INDEX_BY_TYPE[event.type]), _number(event.seat), _number(event.hand),
            _number(event.turn), "1" if event.bot else "0"]
    public = [_pack(f.kind, event.public[f.name]) for f in spec.public]
    if event.elapsed_ms is not None:
        public.append(str(event.elapsed_ms))
    parts = [FIELD_SEPARATOR.join(head + public)]
    if event.secret:
        parts.append(FIELD_SEPARATOR.join(_pack(f.kind, event.secret[f.name]) for f in spec.secret))
        parts.append(",".join(str(seat) for seat in event.seen_by))
    return PART_SEPARATOR.join(parts)


def decode_event(stored: str) -> Event:
    """The event ``encode_event`` stored (or an event of the first storage format, JSON)."""
    if stored.startswith("{"):
        return _decode_first_format(json.loads(stored))
    public_part, *secret_parts = stored.split(PART_SEPARATOR)
    seq, kind, seat, hand, turn, bot, *public_values = public_part.split(FIELD_SEPARATOR)
    spec = EVENT_TYPES[_TYPE_BY_INDEX[int(kind)]]
    public = {f.name: _unpack(f.kind, value) for f, value in zip(spec.public, public_values)}
    elapsed = public_values[len(spec.public)] if len(public_values) > len(spec.public) else ""
    secret, seen_by = {}, ()
    if secret_parts:
        values, seen = secret_parts
        secret = {f.name: _unpack(f.kind, value) for f, value in zip(spec.secret, values.split(FIELD_SEPARATOR))}
        seen_by = tuple(int(s) for s in seen.split(",") if s)
    return Event(int(seq), spec.type, _unnumber(seat), _unnumber(hand), public, secret, seen_by, _unnumber(turn),
                 bot == "1", _unnumber(elapsed))


def redact_event(stored: str, viewer: int | None) -> dict:
    """The event as ``viewer`` (a seat, or None for the public) may see it."""
    return shown_event(decode_event(stored), viewer)


def shown_event(event: Event, viewer: int | None) -> dict:
    """The JSON form of ``event`` for ``viewer``: common fields, public fields, and the secret
    fields only when the viewer is among those who may see them."""
    shown = {"seq": event.seq, "type": event.type.value, "seat": event.seat, "hand": event.hand,
             "turn": event.turn, "bot": event.bot, **event.public}
    if viewer is not None and viewer in event.seen_by:
        shown.update(event.secret)
    return shown


def _number(value: int | None) -> str:
    return "" if value is None else str(value)


def _unnumber(text: str) -> int | None:
    return None if text == "" else int(text)


# How each kind is written: numbers and cards bare (a card list is its notations run together,
# a draw's source its first letter), anything richer as compact JSON.
_SOURCES = {"stock": "s", "discard": "d"}
_SOURCE_OF = {short: name for name, short in _SOURCES.items()}


def _pack(kind: Kind, value) -> str:
    if kind in (Kind.INT, Kind.SEAT):
        return _number(value)
    if kind is Kind.BOOL:
        return "1" if value else "0"
    if kind is Kind.CARD:
        return value or ""
    if kind is Kind.CARDS:
        return "".join(value)
    if kind is Kind.SOURCE:
        return _SOURCES[value]
    if kind is Kind.MELDS:
        value = ["".join(meld) for meld in value]
    elif kind is Kind.HANDS:
        value = {seat: "".join(cards) for seat, cards in value.items()}
    return json.dumps(value, separators=(",", ":"))


def _unpack(kind: Kind, text: str):
    if kind in (Kind.INT, Kind.SEAT):
        return _unnumber(text)
    if kind is Kind.BOOL:
        return text == "1"
    if kind is Kind.CARD:
        return text or None
    if kind is Kind.CARDS:
        return _split_cards(text)
    if kind is Kind.SOURCE:
        return _SOURCE_OF[text]
    value = json.loads(text)
    if kind is Kind.MELDS:
        return [_split_cards(meld) for meld in value]
    if kind is Kind.HANDS:
        return {seat: _split_cards(cards) for seat, cards in value.items()}
    return value


def _split_cards(text: str) -> list[str]:
    return [text[i:i + 2] for i in range(0, len(text), 2)]


def _decode_first_format(r: dict) -> Event:
    """Events stored by the first version: a JSON object with names, no turn, no bot flag."""
    kind = EventType(r["t"])
    public = dict(r["p"])
    for name in ("cards", "roles"):  # by-seat objects then, by-seat lists now
        if isinstance(public.get(name), dict):
            public[name] = [value for _, value in sorted(public[name].items(), key=lambda item: int(item[0]))]
    spec = EVENT_TYPES[kind]
    public = {f.name: public.get(f.name) for f in spec.public}
    return Event(r["q"], kind, r["s"], r["h"], public, r.get("x", {}), tuple(r.get("v", ())))
