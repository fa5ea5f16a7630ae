"""A finished game's events as one compressed text, kept in the game's state hash.

A finished match keeps its events for as long as the match itself is kept (audits, late
readers of ``GET /events``), but nothing is appended to them any more except a rematch notice.
As a Redis list they take about three times the room of one zlib-compressed text (a match
between the reference bots: 10.7 KB of events, 3.9 KB compressed), and finished matches are
most of what a store holds.
"""
from __future__ import annotations

import base64
import zlib

FORMAT = "z1:"
# Stored events never hold a raw control character other than the field and part separators
# of rules/events.py (\x1f, \x1e), so the group separator is free to join them.
SEPARATOR = "\x1d"


def pack(events: list[str]) -> str:
    """``events`` (stored texts, oldest first) as one text: zlib, then Base64 (the store's
    clients read text). It runs in the move that ends a match: 0.16 ms for a match of 374
    events, where zlib's best level and Base85 (done in Python) took 0.41 ms for 7 % less."""
    packed = zlib.compress(SEPARATOR.join(events).encode("utf-8", "surrogatepass"))
    return FORMAT + base64.b64encode(packed).decode("ascii")


def unpack(text: str) -> list[str]:
    """The events ``pack`` made ``text`` of. Raises ValueError for any other text."""
    if not text.startswith(FORMAT):
        raise ValueError(f"not an events archive: {text[:8]!r}")
    packed = base64.b64decode(text[len(FORMAT):], validate=True)
    return zlib.decompress(packed).decode("utf-8", "surrogatepass").split(SEPARATOR)
