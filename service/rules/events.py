"""Events: one record per thing that happened, with a public part and a secret part.

The secret part is stored (so a match can be audited and replayed) but shown only to the
seats in ``seen_by``; the deck order of a deal is seen by nobody.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Event:
    seq: int
    type: str
    seat: int | None
    hand: int | None
    public: dict = field(default_factory=dict)
    secret: dict = field(default_factory=dict)
    seen_by: tuple[int, ...] = ()


def encode_event(event: Event) -> str:
    record = {"q": event.seq, "t": event.type, "s": event.seat, "h": event.hand, "p": event.public}
    if event.secret:
        record["x"], record["v"] = event.secret, list(event.seen_by)
    return json.dumps(record, separators=(",", ":"))


def decode_event(stored: str) -> Event:
    r = json.loads(stored)
    return Event(r["q"], r["t"], r["s"], r["h"], r["p"], r.get("x", {}), tuple(r.get("v", ())))


def redact_event(stored: str, viewer: int | None) -> dict:
    """The event as ``viewer`` (a seat, or None for the public) may see it."""
    event = decode_event(stored)
    shown = {"seq": event.seq, "type": event.type, "seat": event.seat, "hand": event.hand, **event.public}
    if viewer is not None and viewer in event.seen_by:
        shown.update(event.secret)
    return shown
