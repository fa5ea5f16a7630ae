"""Replays of the matches asked for last, kept in this process: each one's record and its
position at every ``CHECKPOINT``-th step. A replay viewer steps through a match one request at
a time; with these, a request plays at most ``CHECKPOINT`` - 1 steps of the engine instead of
the whole match up to its step (bench/analysis.py: 37 ms at the median, 130 ms at most, for
the last step of a match replayed from its start).

Keyed by the match's id and its stored text (the service's state of it): a finished match
changes only by a rematch notice or a token re-issue, and then it is replayed afresh.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from service.records import replay

CHECKPOINT = 16
RECENT_MATCHES = 32


@dataclass(frozen=True)
class Replayed:
    """A record and its positions at steps 0, CHECKPOINT, 2 * CHECKPOINT..."""

    record: dict
    checkpoints: tuple[replay.Position, ...]

    @classmethod
    def of(cls, record: dict) -> Replayed:
        """The record played once through, keeping every CHECKPOINT-th position. Raises ReplayError."""
        return cls(record, tuple(p for p in replay.positions(record) if p.step % CHECKPOINT == 0))

    def position(self, step: int) -> replay.Position:
        """The position after ``step`` actions (0 to the record's steps)."""
        nearest = self.checkpoints[step // CHECKPOINT]
        if nearest.step == step:
            return nearest
        return next(p for p in replay.positions(self.record, since=nearest) if p.step == step)


class Recent:
    """The replays of the last ``size`` matches asked for, most recent last."""

    def __init__(self, size: int = RECENT_MATCHES) -> None:
        self._size = size
        self._entries: OrderedDict[tuple[str, str], Replayed] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str]) -> Replayed | None:
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
            return found

    def put(self, key: tuple[str, str], replayed: Replayed) -> Replayed:
        with self._lock:
            self._entries[key] = replayed
            self._entries.move_to_end(key)
            if len(self._entries) > self._size:
                self._entries.popitem(last=False)
        return replayed
